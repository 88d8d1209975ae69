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

import threading
from typing import Any

from octopoda.integrations import Deactivate, InitContext, Integration

__all__ = ["integration"]

_lock = threading.Lock()
_active: dict[str, Any] = {}


def _activate(ctx: InitContext) -> Deactivate:
    from ._events import EventRecorder

    with _lock:
        if _active.get("context") is ctx:
            undo: Deactivate = _active["undo"]
            return undo  # activating with the same context again changes nothing
        previous = _active.get("undo")
    if previous is not None:
        previous()  # another context: this one replaces it

    recorder = EventRecorder(ctx.runtimes, prices=ctx.prices)
    recorder.install()
    done = threading.Event()

    def deactivate() -> None:
        if done.is_set():
            return
        done.set()
        with _lock:
            if _active.get("undo") is deactivate:
                _active.clear()
        recorder.uninstall()

    with _lock:
        _active.update(context=ctx, undo=deactivate)
    return deactivate


integration = Integration(
    name="autogen",
    modules=("autogen_agentchat",),
    distribution="autogen-agentchat",
    supported=">=0.4.5,<0.8",
    activate=_activate,
    description=(
        "AutoGen: a handler on the autogen_agentchat.events and autogen_core.events loggers"
        " (tool calls guarded and recorded, handoffs, model calls with tokens; loop breaker)"
    ),
)
