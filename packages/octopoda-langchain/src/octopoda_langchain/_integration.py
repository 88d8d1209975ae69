"""The ``octopoda.integrations`` entry point of octopoda-langchain (``octopoda.init()``).

Cheap to import: neither LangChain nor the adapter's handler is imported until
``activate`` runs, which ``init`` does once ``langchain_core`` is imported.
"""

from __future__ import annotations

from octopoda.integrations import Deactivate, InitContext, Integration

__all__ = ["integration"]


def activate(context: InitContext) -> Deactivate:
    """Puts one Octopoda callback handler into every LangChain run (see ``_instrument``)."""
    from ._instrument import activate as install

    return install(context)


integration = Integration(
    name="langchain",
    modules=("langchain_core",),
    distribution="langchain-core",
    supported=">=0.3.70,<2",
    activate=activate,
    description=(
        "a callback handler in every LangChain/LangGraph run (langchain_core's"
        " register_configure_hook): tool and model calls, loop detection, a paused run"
        " raises AgentPaused at its next tool or model call"
    ),
)
