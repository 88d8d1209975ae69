"""The action recorder: a framework's tool calls, LLM calls and handoffs into Octopoda
events, each with its run and the framework's call id, and the breaker's verdict naming the
framework's calls of a loop."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any, Final

from .._errors import AgentPaused
from .._records import Event
from .._runtime.runtime import AgentRuntime
from ._verdicts import FrameworkCall, Verdict

__all__ = ["ActionRecorder"]

KEEP_CALLS: Final = 4096
"""Framework calls remembered per recorder (by agent and seq), to name them in a pause."""


class ActionRecorder:
    """Records what a framework's agents do, through their runtimes, with run and call ids.

    * ``guard`` before a tool (or model) call: None, or the :class:`Verdict` of a paused
      agent or run, naming the framework's calls of the loop.
    * ``tool_call``, ``llm_call`` and ``handoff`` after: the event, which goes through the
      loop detectors of its run (``run_id``: a thread, session, crew or team run id);
      ``call_id`` is the framework's id of the call. The recorder remembers each call by
      (agent, seq), so that a verdict can list the framework's calls (name, call id,
      arguments) behind a signal's seqs.
    * ``paused_by(runtime, event)``: the reason when recording that action paused its run
      or the agent (for a note on the call's result), without a store read.
    * ``start(key)`` and ``elapsed_ms(key)`` time a call between two framework hooks.

    One recorder serves any number of runtimes (an adapter's agents, on one store: a
    ping-pong names both sides' calls). Its methods are synchronous; an asynchronous
    adapter runs them with ``run_blocking``. It is safe to use from several threads.
    """

    def __init__(self, *, keep_calls: int = KEEP_CALLS) -> None:
        self._keep = keep_calls
        self._calls: OrderedDict[tuple[str, int], FrameworkCall] = OrderedDict()
        self._started: dict[Hashable, float] = {}
        self._lock = threading.Lock()

    # -- timing -------------------------------------------------------------------------------

    def start(self, key: Hashable) -> None:
        """A call identified by ``key`` (e.g. ``(agent, call_id)``) starts now (the oldest
        of more than ``keep_calls`` unfinished calls is forgotten)."""
        started = self._started
        started[key] = time.perf_counter()
        if len(started) > self._keep:
            started.pop(next(iter(started)), None)

    def elapsed_ms(self, key: Hashable) -> float | None:
        """Milliseconds since ``start(key)`` (and forget it); None if it never started."""
        started = self._started.pop(key, None)
        return None if started is None else (time.perf_counter() - started) * 1000

    # -- the breaker ------------------------------------------------------------------------

    def guard(
        self, runtime: AgentRuntime, name: str, args: Any = None, *, run_id: str | None = None
    ) -> Verdict | None:
        """``runtime.guard_tool_call``: None when the call may go ahead, else the verdict."""
        try:
            runtime.guard_tool_call(name, args, run_id=run_id)
        except AgentPaused as exc:
            return self.verdict(runtime.agent_id, exc)
        return None

    def verdict(self, agent_id: str, exc: AgentPaused) -> Verdict:
        """The verdict of ``exc`` (refused for ``agent_id``), with the framework's calls of
        its signal: those this recorder saw, else the tool calls as the signal names them."""
        calls: list[FrameworkCall] = []
        for ref in _signal_events(exc.signal):
            seq, owner = ref.get("seq"), ref.get("agent") or agent_id
            with self._lock:
                known = self._calls.get((owner, seq)) if isinstance(seq, int) else None
            if known is not None:
                calls.append(known)
            elif ref.get("kind") == "tool_call":
                calls.append(
                    FrameworkCall(str(ref.get("name", "")), "", str(ref.get("preview", "")))
                )
        signal = exc.signal if isinstance(exc.signal, dict) else None
        return Verdict(agent_id, exc.run_id, exc.reason, signal, tuple(calls), exc)

    @staticmethod
    def paused_by(runtime: AgentRuntime, event: Event) -> str | None:
        """The reason when recording ``event`` (an action this recorder just recorded)
        paused its run or the agent, else None: what to put in a :func:`paused_note` on the
        call's result. Reads nothing from the store."""
        return runtime._paused_by(event)

    def remember(self, agent_id: str, seq: int, call: FrameworkCall) -> None:
        """The framework call behind ``agent_id``'s event ``seq``."""
        with self._lock:
            self._calls[(agent_id, seq)] = call
            while len(self._calls) > self._keep:
                self._calls.popitem(last=False)

    # -- recording --------------------------------------------------------------------------

    def tool_call(
        self,
        runtime: AgentRuntime,
        name: str,
        args: Any = None,
        *,
        result: Any = None,
        error: Any = None,
        duration_ms: float | None = None,
        run_id: str | None = None,
        call_id: str | None = None,
        arguments: str | None = None,
    ) -> Event:
        """Record a tool call that ran (``result``, or ``error``: an exception or text).
        ``arguments``: the arguments' text as the framework had it (for naming the call;
        default: the event's preview)."""
        event = runtime.record_tool_call(
            name,
            args,
            result=result,
            error=error,
            duration_ms=duration_ms,
            run_id=run_id,
            call_id=call_id or None,
        )
        text = arguments if arguments is not None else str(event.payload.get("args_preview", ""))
        self.remember(runtime.agent_id, event.seq, FrameworkCall(name, call_id or "", text))
        return event

    def llm_call(
        self,
        runtime: AgentRuntime,
        model: str,
        *,
        tokens_in: int = 0,
        tokens_out: int = 0,
        cost_usd: float = 0.0,
        duration_ms: float | None = None,
        run_id: str | None = None,
        call_id: str | None = None,
    ) -> Event:
        """Record an LLM call: model, tokens, cost (``cost_of`` a price table), duration."""
        return runtime.record_llm_call(
            model,
            cost_usd=cost_usd,
            tokens_in=tokens_in,
            tokens_out=tokens_out,
            duration_ms=duration_ms,
            run_id=run_id,
            call_id=call_id or None,
        )

    def handoff(
        self,
        runtime: AgentRuntime,
        to_agent: str,
        content: Any = None,
        *,
        run_id: str | None = None,
        call_id: str | None = None,
        call: FrameworkCall | None = None,
    ) -> Event:
        """Record a handoff to the Octopoda agent ``to_agent`` (``content``: what was handed
        over); ``call`` names it in a verdict (default: "handoff to ...")."""
        event = runtime.record_handoff(to_agent, content, run_id=run_id, call_id=call_id or None)
        named = call or FrameworkCall(f"handoff to {to_agent}", call_id or "", "")
        self.remember(runtime.agent_id, event.seq, named)
        return event


def _signal_events(signal: Any) -> list[dict[str, Any]]:
    """The events of a loop signal, whether a LoopSignal or its dict form."""
    if signal is None:
        return []
    if isinstance(signal, dict):
        events = signal.get("events") or []
        return [e for e in events if isinstance(e, dict)]
    return [e._asdict() for e in getattr(signal, "events", ())]
