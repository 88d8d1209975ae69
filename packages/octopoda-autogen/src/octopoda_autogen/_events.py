"""Every AutoGen agent's tool and model calls, from AutoGen's own event loggers (what
``octopoda.init`` installs; no agent, tool or model client is wrapped).

AutoGen logs what its agents do to two loggers, its official process-wide seam:

* ``autogen_agentchat.EVENT_LOGGER_NAME`` (``"autogen_agentchat.events"``): an
  ``AssistantAgent`` logs a ``ToolCallRequestEvent`` (the model's tool calls, with the
  model call's usage) at DEBUG *before* the tools run, and a ``ToolCallExecutionEvent``
  (their results) after;
* ``autogen_core.EVENT_LOGGER_NAME`` (``"autogen_core.events"``): a model client of
  autogen-ext (OpenAI, Azure, Anthropic, Ollama, ...) logs an ``LLMCallEvent`` with the
  call's prompt and completion tokens at INFO.

:class:`EventRecorder` is a ``logging.Handler`` on both. A request is guarded (each of its
calls through the run's breaker) and remembered; its execution is recorded as tool calls
(arguments, result or error, duration, AutoGen's call id), a call to a handoff tool
(``transfer_to_<agent>``) as a handoff. Model calls: an ``LLMCallEvent`` is one (tokens,
cost by ``prices``); a client that logs none (a scripted one) is counted from the usage of
the request. Raising from a handler stops the agent: a paused run's next request (or the
execution that paused it) raises :class:`~octopoda_autogen.RunPaused`, whose message names
the loop and its calls (under ``LoopPolicy("raise")``, the call that completed the loop
raises ``LoopDetected``). The loggers are set to DEBUG only while installed, and only if they
would drop these records; records below the level a logger had are seen by this handler
alone (a filter keeps them from the program's own handlers). Nothing is written to stdout.

Runs: a team's run is ``team:<team id>`` (the key of the agent handling the message,
``MessageHandlerContext.agent_id().key``, a UUID); an agent run outside a team is
``autogen-run-<12 hex digits>``, a new one for each asyncio task that runs agents (so the
next program with the same agent id never finds its run paused by this one).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
import time
import uuid
import weakref
from collections import OrderedDict
from typing import Any

from autogen_agentchat import EVENT_LOGGER_NAME as AGENTCHAT_EVENTS
from autogen_agentchat.messages import ToolCallExecutionEvent, ToolCallRequestEvent
from autogen_core import EVENT_LOGGER_NAME as CORE_EVENTS
from autogen_core import MessageHandlerContext
from autogen_core.logging import LLMCallEvent

from octopoda import AgentRuntime, LoopDetected
from octopoda.integrations import (
    ActionRecorder,
    AgentRuntimes,
    FrameworkCall,
    Prices,
    Verdict,
    check_prices,
    cost_of,
    parse_arguments,
)

from ._guard import RunPaused, blocked_text, stop_text

__all__ = ["HANDOFF_PREFIX", "LOGGERS", "EventRecorder"]

LOGGERS = (AGENTCHAT_EVENTS, CORE_EVENTS)
"""The loggers the recorder is a handler of."""

HANDOFF_PREFIX = "transfer_to_"
"""How the name of AutoGen's handoff tools begins (``Handoff(target="b").name``)."""

UNKNOWN_MODEL = "unknown"
"""The model of a call known only from a request's usage (AutoGen does not name it there)."""

_KEEP = 4096
log = logging.getLogger("octopoda")


def _is_error(result: Any) -> bool:
    flag = getattr(result, "is_error", None)
    if flag is not None:
        return bool(flag)
    # autogen-agentchat 0.4 has no is_error: a failed call's content is "Error: <exception>"
    return str(getattr(result, "content", "")).startswith("Error: ")


class _Below(logging.Filter):
    """On a logger whose level was lowered for the recorder: a record below the level the
    logger had goes to the recorder alone."""

    def __init__(self, recorder: EventRecorder, logger: logging.Logger, level: int) -> None:
        super().__init__()
        self._recorder, self._logger, self._level = recorder, logger, level

    def _had(self) -> int:
        if self._level != logging.NOTSET:
            return self._level
        parent = self._logger.parent
        return parent.getEffectiveLevel() if parent is not None else logging.WARNING

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= self._had():
            return True
        self._recorder.handle(record)
        return False


class EventRecorder(logging.Handler):
    """Records AutoGen's tool and model calls under ``runtimes`` and enforces the loop
    policy (see the module's docstring). :meth:`install` and :meth:`uninstall`."""

    def __init__(self, runtimes: AgentRuntimes, *, prices: Prices | None = None) -> None:
        super().__init__(level=logging.DEBUG)
        self.runtimes = runtimes
        self.recorder = ActionRecorder()
        self.prices = check_prices(prices) if prices is not None else None
        self._lock = threading.Lock()
        self._requests: OrderedDict[str, tuple[str, Any, str, float]] = OrderedDict()
        self._done: OrderedDict[tuple[str, str], None] = OrderedDict()
        self._counted: dict[str, int] = {}  # run -> LLMCallEvents not yet matched
        self._task_runs: weakref.WeakKeyDictionary[asyncio.Task[Any], str] = (
            weakref.WeakKeyDictionary()
        )
        self._installed: list[tuple[logging.Logger, int, _Below | None]] = []

    # -- installation -------------------------------------------------------------------------

    def install(self) -> None:
        """Add the handler to AutoGen's event loggers (once)."""
        if self._installed:
            return
        for name in LOGGERS:
            logger = logging.getLogger(name)
            level, below = logger.level, None
            if logger.getEffectiveLevel() > logging.DEBUG:
                below = _Below(self, logger, level)
                logger.addFilter(below)
                logger.setLevel(logging.DEBUG)
            logger.addHandler(self)
            self._installed.append((logger, level, below))

    def uninstall(self) -> None:
        """Remove the handler, the filters and the levels it set."""
        installed, self._installed = self._installed, []
        for logger, level, below in installed:
            logger.removeHandler(self)
            if below is not None:
                logger.removeFilter(below)
                logger.setLevel(level)

    # -- the handler --------------------------------------------------------------------------

    def handle(self, record: logging.LogRecord) -> bool:
        # no handler lock: AutoGen's agents log from one event loop; the runtimes lock the
        # store calls. A RunPaused raised here is what stops the agent.
        self.emit(record)
        return True

    def emit(self, record: logging.LogRecord) -> None:
        event = record.msg
        try:
            if isinstance(event, ToolCallRequestEvent):
                self._request(event)
            elif isinstance(event, ToolCallExecutionEvent):
                self._execution(event)
            elif isinstance(event, LLMCallEvent):
                self._llm_event(event)
        except (RunPaused, LoopDetected):  # the breaker, and LoopPolicy("raise")
            raise
        except Exception:  # a store error must not break the agent
            log.exception("octopoda-autogen: could not record %s", type(event).__name__)

    # -- runs ---------------------------------------------------------------------------------

    def _run_id(self) -> str:
        try:
            return f"team:{MessageHandlerContext.agent_id().key}"
        except RuntimeError:
            pass
        try:
            task = asyncio.current_task()
        except RuntimeError:
            task = None
        if task is None:
            return "autogen-run"  # (AutoGen's agents always run in a task)
        with self._lock:
            run = self._task_runs.get(task)
            if run is None:
                run = self._task_runs[task] = f"autogen-run-{uuid.uuid4().hex[:12]}"
            return run

    def _once(self, call_id: str, phase: str) -> bool:
        """Whether ``(call_id, phase)`` is new (autogen-agentchat 0.4's teams log each event
        a second time, from their output collector)."""
        key = (call_id, phase)
        with self._lock:
            if key in self._done:
                return False
            self._done[key] = None
            while len(self._done) > _KEEP:
                self._done.popitem(last=False)
            return True

    # -- recording ----------------------------------------------------------------------------

    def _llm(self, source: str, run_id: str, model: str, tokens_in: int, tokens_out: int) -> None:
        cost = cost_of(self.prices, model, tokens_in, tokens_out) if self.prices else 0.0
        self.runtimes.call(
            source,
            lambda rt: self.recorder.llm_call(
                rt, model, tokens_in=tokens_in, tokens_out=tokens_out, cost_usd=cost,
                run_id=run_id,
            ),
        )  # fmt: skip

    def _llm_event(self, event: LLMCallEvent) -> None:
        run_id = self._run_id()
        response = event.kwargs.get("response")
        model = response.get("model") if isinstance(response, dict) else None
        with self._lock:
            self._counted[run_id] = self._counted.get(run_id, 0) + 1
        self._llm("", run_id, str(model or UNKNOWN_MODEL), event.prompt_tokens,
                  event.completion_tokens)  # fmt: skip

    def _guard(self, name: str, args: Any, run_id: str, rt: AgentRuntime) -> Verdict | None:
        return self.recorder.guard(rt, name, args, run_id=run_id)

    def _request(self, event: ToolCallRequestEvent) -> None:
        calls = [c for c in event.content if self._once(str(c.id), "request")]
        if not calls:
            return
        source, run_id = str(event.source), self._run_id()
        with self._lock:
            counted = self._counted.pop(run_id, 0)
        usage = event.models_usage
        if not counted and usage is not None:  # a client that logs no LLMCallEvent
            self._llm(source, run_id, UNKNOWN_MODEL, usage.prompt_tokens, usage.completion_tokens)
        now = time.perf_counter()
        for call in calls:
            args = parse_arguments(call.arguments)
            with self._lock:
                self._requests[str(call.id)] = (call.name, args, call.arguments, now)
                while len(self._requests) > _KEEP:
                    self._requests.popitem(last=False)
            verdict = self.runtimes.call(
                source, functools.partial(self._guard, call.name, args, run_id)
            )
            if verdict is not None:
                raise RunPaused(blocked_text(verdict, call.name), verdict)

    def _execution(self, event: ToolCallExecutionEvent) -> None:
        source, run_id = str(event.source), self._run_id()
        for result in event.content:
            call_id = str(result.call_id)
            if not self._once(call_id, "execution"):
                continue
            with self._lock:
                request = self._requests.pop(call_id, None)
            verdict = self.runtimes.call(
                source,
                functools.partial(self._record, source, run_id, call_id, result, request),
            )
            if verdict is not None:
                raise RunPaused(stop_text(verdict), verdict)

    def _record(
        self,
        source: str,
        run_id: str,
        call_id: str,
        result: Any,
        request: tuple[str, Any, str, float] | None,
        rt: AgentRuntime,
    ) -> Verdict | None:
        """Record one executed call; the verdict when it paused the run."""
        name = str(getattr(result, "name", "") or (request[0] if request else "tool"))
        args, text = (request[1], request[2]) if request else (None, None)
        duration = (time.perf_counter() - request[3]) * 1000 if request else None
        if name.startswith(HANDOFF_PREFIX):
            target = name[len(HANDOFF_PREFIX) :]
            call = FrameworkCall(f"handoff {source} -> {target}", call_id, "")
            event = self.recorder.handoff(
                rt, self.runtimes.agent_id(target), {"from": source, "to": target},
                run_id=run_id, call_id=call_id, call=call,
            )  # fmt: skip
        else:
            error = _is_error(result)
            event = self.recorder.tool_call(
                rt, name, args,
                result=None if error else result.content,
                error=result.content if error else None,
                duration_ms=duration, run_id=run_id, call_id=call_id, arguments=text,
            )  # fmt: skip
        if self.recorder.paused_by(rt, event) is None:
            return None
        return self.recorder.guard(rt, name, args, run_id=run_id)
