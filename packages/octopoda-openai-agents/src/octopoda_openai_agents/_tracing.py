"""OctopodaTracingProcessor: function spans of the SDK's tracing into Octopoda."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from agents.tracing import AgentSpanData, FunctionSpanData, Span, Trace, TracingProcessor

from octopoda import AgentRuntime, LoopPolicy, OctopodaError
from octopoda.integrations import ActionRecorder, AgentRuntimes, parse_arguments

from ._common import StoreArg
from ._hooks import is_sdk_tool_error

__all__ = ["OctopodaTracingProcessor"]

logger = logging.getLogger("octopoda")

_KEEP_SPANS = 4096


def _duration_ms(span: Span[Any]) -> float | None:
    try:
        started = datetime.fromisoformat(str(span.started_at))
        ended = datetime.fromisoformat(str(span.ended_at))
    except (TypeError, ValueError):
        return None
    return max(0.0, (ended - started).total_seconds() * 1000)


class OctopodaTracingProcessor(TracingProcessor):
    """Records every function span (tool name, input, output, error, duration) as a tool
    call of the agent whose span contains it, through the same loop detectors as the hooks.

    It never exports anything: ``agents.set_trace_processors([OctopodaTracingProcessor()])``
    replaces the SDK's default exporter (nothing leaves the machine), and
    ``agents.add_trace_processor(...)`` adds it beside the exporter. Tracing cannot stop a
    run; use :class:`OctopodaRunHooks` for the breaker (and not both, or calls are recorded
    twice). Spans outside any agent span go to the agent ``default_agent``. Each call's run
    is its trace's conversation: the trace's ``group_id`` (``RunConfig(group_id=...)``),
    else the trace's id (one run per ``Runner.run``).
    """

    def __init__(
        self,
        store: StoreArg = None,
        *,
        policy: LoopPolicy | None = None,
        agent_prefix: str = "",
        agent_ids: Mapping[str, str] | None = None,
        default_agent: str = "openai-agents",
        is_error: Callable[[object], bool] = is_sdk_tool_error,
    ) -> None:
        self._runtimes = AgentRuntimes(
            store, policy=policy, agent_prefix=agent_prefix, agent_ids=agent_ids
        )
        self._recorder = ActionRecorder()
        self._default = default_agent
        self._is_error = is_error
        # open spans: span id -> (parent id, agent name for agent spans); a function span
        # belongs to the nearest agent span above it (turn spans sit in between from 0.20)
        self._open: dict[str, tuple[str | None, str | None]] = {}
        self._traces: dict[str, str] = {}  # open trace id -> its run (group id, or itself)
        self._lock = threading.Lock()

    def runtime(self, agent_name: str) -> AgentRuntime:
        """The Octopoda runtime of an SDK agent name."""
        return self._runtimes.runtime(agent_name)

    def on_trace_start(self, trace: Trace) -> None:
        group = getattr(trace, "group_id", None)
        run = group if isinstance(group, str) and group else trace.trace_id
        with self._lock:
            self._traces[trace.trace_id] = run
            while len(self._traces) > _KEEP_SPANS:
                self._traces.pop(next(iter(self._traces)))

    def on_trace_end(self, trace: Trace) -> None:
        with self._lock:
            self._traces.pop(trace.trace_id, None)

    def on_span_start(self, span: Span[Any]) -> None:
        data = span.span_data
        name = data.name if isinstance(data, AgentSpanData) else None
        with self._lock:
            self._open[span.span_id] = (span.parent_id, name)
            while len(self._open) > _KEEP_SPANS:
                self._open.pop(next(iter(self._open)))

    def _agent_of(self, span_id: str | None) -> str:
        for _ in range(64):  # the nesting is shallow; the bound guards against cycles
            entry = self._open.get(span_id or "")
            if entry is None:
                break
            if entry[1] is not None:
                return entry[1]
            span_id = entry[0]
        return self._default

    def on_span_end(self, span: Span[Any]) -> None:
        data = span.span_data
        with self._lock:
            agent = self._agent_of(span.parent_id)
            self._open.pop(span.span_id, None)
            run = self._traces.get(span.trace_id) or span.trace_id or None
        if not isinstance(data, FunctionSpanData):
            return
        error: Any = span.error
        if error:
            error = error.get("message", "error") if isinstance(error, dict) else str(error)
            detail = span.error.get("data") if isinstance(span.error, dict) else None
            if isinstance(detail, dict) and detail.get("error"):
                error = f"{error}: {detail['error']}"
        elif self._is_error(data.output):
            error = data.output
        try:
            self._runtimes.call(
                agent,
                lambda runtime: self._recorder.tool_call(
                    runtime,
                    data.name,
                    parse_arguments(data.input),
                    result=None if error else data.output,
                    error=error or None,
                    duration_ms=_duration_ms(span),
                    run_id=run,
                ),
            )
        except OctopodaError:
            # A tracing processor must not break the run it observes; the store's error says
            # what failed and what to do.
            logger.exception("octopoda: could not record the function span of %r", data.name)

    def shutdown(self) -> None:
        pass

    def force_flush(self) -> None:
        pass
