"""The AutoGen integration of :func:`octopoda.init` (entry point ``autogen`` of the group
``octopoda.integrations``).

Importing this module imports neither AutoGen nor the rest of the adapter; ``activate``
does, once ``autogen_agentchat`` is imported. It adds a handler to AutoGen's event loggers
(``autogen_agentchat.events`` and ``autogen_core.events``, see ``_events.py``): every
``AssistantAgent``'s tool calls (guarded before they run, recorded after), handoffs and
model calls (tokens, cost by ``prices``), per team run, all under the one Octopoda agent;
a run the loop policy paused is stopped with :class:`octopoda_autogen.RunPaused`, naming
the loop and its calls. Memory and model contexts stay explicit
(``AssistantAgent(memory=[OctopodaMemory(...)])``).
"""

from __future__ import annotations

from octopoda.integrations import Deactivate, InitContext, Integration, OneActivation

__all__ = ["integration"]


def _install(ctx: InitContext) -> Deactivate:
    from ._events import EventRecorder

    recorder = EventRecorder(ctx.runtimes, prices=ctx.prices)
    recorder.install()
    return recorder.uninstall


integration = Integration(
    name="autogen",
    modules=("autogen_agentchat",),
    distribution="autogen-agentchat",
    supported=">=0.4.5,<0.8",
    activate=OneActivation(_install),
    description=(
        "AutoGen: a handler on the autogen_agentchat.events and autogen_core.events loggers"
        " (tool calls guarded and recorded, handoffs, model calls with tokens; loop breaker)"
    ),
)
