"""Which conversation a run belongs to: the run id the hooks give every action.

A run is the conversation: the ``OctopodaSession``'s id when the run has one, else the
trace's ``group_id`` (``RunConfig(group_id=...)``, with tracing on), else one run per
``Runner.run`` (the trace's id with tracing on, a fresh ``run_<hex>`` without). An explicit
``run_id=`` of ``OctopodaRunHooks`` wins over all of these.

How the hooks know: every copy the SDK makes of a run's context (the ``ToolContext`` of a
tool call, the agent hooks' context, a nested agent-as-tool run's fork) shares the run's
``Usage`` object, so that object identifies the run. ``OctopodaSession`` is context-aware
(the SDK, 0.20 and later, hands it the run's context before the first model call) and
notes its session id for that run; the hooks resolve the other cases on the run's first
hook and keep the answer while the run's ``Usage`` lives (weakly referenced: the 4096 most
recently active runs are kept, so a process with fewer runs under way never forgets one).
"""

from __future__ import annotations

import threading
import uuid
import weakref
from collections import OrderedDict
from typing import Any, Final

__all__ = ["CONVERSATIONS", "Conversations"]

_KEPT: Final = 4096  # runs remembered (the most recently active)


def _key_object(context: Any) -> Any:
    usage = getattr(context, "usage", None)
    return context if usage is None else usage


def _trace_ids() -> tuple[str | None, str | None]:
    """The current trace's group id and trace id (None for either when tracing is off)."""
    try:
        from agents.tracing import get_current_trace
    except ImportError:  # pragma: no cover - every supported SDK has it
        return None, None
    trace = get_current_trace()
    if trace is None:
        return None, None
    group = getattr(trace, "group_id", None)
    trace_id = getattr(trace, "trace_id", None)
    real = isinstance(trace_id, str) and trace_id and trace_id != "no-op"
    return (group if isinstance(group, str) and group else None), (trace_id if real else None)


class Conversations:
    """Run contexts to run ids, kept while each run's ``Usage`` object lives."""

    def __init__(self) -> None:
        # id(the run's Usage) -> (a weak reference to it, the run id); an entry whose
        # object died (its id may be reused) is never taken for a live one: see known()
        self._ids: OrderedDict[int, tuple[Any, str]] = OrderedDict()
        self._lock = threading.Lock()

    def note(self, context: Any, run_id: str) -> None:
        """The run of ``context`` is the conversation ``run_id`` (a session's id)."""
        target = _key_object(context)
        try:
            ref: Any = weakref.ref(target)
        except TypeError:  # not weakly referenceable: held (bounded) instead
            ref = target
        with self._lock:
            self._ids[id(target)] = (ref, run_id)
            self._ids.move_to_end(id(target))
            if len(self._ids) > _KEPT:
                for key in [k for k, (r, _) in self._ids.items() if _dead(r)]:
                    del self._ids[key]
                while len(self._ids) > _KEPT:
                    self._ids.popitem(last=False)

    def known(self, context: Any) -> str | None:
        """The run id noted for ``context``'s run, if any."""
        target = _key_object(context)
        with self._lock:
            found = self._ids.get(id(target))
            if found is None:
                return None
            ref, run_id = found
            alive = ref() if isinstance(ref, weakref.ref) else ref
            if alive is not target:
                return None
            self._ids.move_to_end(id(target))
            return run_id

    def resolve(self, context: Any) -> str:
        """The run id of ``context``'s run: noted (a session), else the trace's group id
        (or a ``ToolContext``'s run config's), else this run's own id (noted for its later
        hooks)."""
        known = self.known(context)
        if known is not None:
            return known
        group, trace_id = _trace_ids()
        config = getattr(context, "run_config", None)  # (a ToolContext, 0.21+)
        group = group or getattr(config, "group_id", None) or None
        run_id = group if isinstance(group, str) else (trace_id or f"run_{uuid.uuid4().hex}")
        self.note(context, run_id)
        return run_id


def _dead(ref: Any) -> bool:
    return isinstance(ref, weakref.ref) and ref() is None


CONVERSATIONS: Final = Conversations()
"""The one registry the sessions and the hooks of a process share."""
