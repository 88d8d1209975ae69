"""The ``octopoda.integrations`` entry point of octopoda-openai-agents (``octopoda.init()``).

Cheap to import: neither the Agents SDK nor the adapter's hooks are imported until
``activate`` runs, which ``init`` does once ``agents`` is imported.
"""

from __future__ import annotations

from octopoda.integrations import Deactivate, InitContext, Integration

__all__ = ["integration"]


def activate(context: InitContext) -> Deactivate:
    """Gives every ``Runner`` run Octopoda's run hooks (see ``_instrument``)."""
    from ._instrument import activate as install

    return install(context)


integration = Integration(
    name="openai_agents",
    modules=("agents",),
    distribution="openai-agents",
    supported=">=0.8,<0.25",
    activate=activate,
    description=(
        "OctopodaRunHooks in every Runner.run/run_sync/run_streamed (the SDK's default"
        " agent runner, agents.run.set_default_agent_runner, which the SDK marks"
        " experimental; a run's own hooks still run): tool and LLM calls, handoffs, loop"
        " detection, a paused conversation raises RunPaused"
    ),
)
