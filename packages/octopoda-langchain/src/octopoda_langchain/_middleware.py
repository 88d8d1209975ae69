"""OctopodaMiddleware: records every tool and model call of a LangChain 1.x agent, and
enforces Octopoda's breaker inside the agent loop."""

from __future__ import annotations

import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any, Literal

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from octopoda import AgentRuntime, InvalidInput, LoopPolicy
from octopoda.integrations import (
    ActionRecorder,
    Prices,
    Target,
    Verdict,
    check_prices,
    paused_note,
    resolve_runtime,
    run_blocking,
)

from ._recording import (
    blocked_tool_message,
    call_id_of_message,
    cost_usd,
    is_blocked_tool_message,
    is_control_flow,
    model_name,
    stopped_message,
    thread_of_config,
    token_usage,
    tool_outcome,
)

try:
    from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
except ImportError as exc:  # LangChain < 1.0 (or not installed): no agent middleware
    raise ImportError(
        "OctopodaMiddleware needs LangChain 1.x (langchain.agents.middleware):"
        " pip install 'octopoda-langchain[agents]'. The saver, store, callback handler and"
        " chat history work without it."
    ) from exc

__all__ = ["OctopodaMiddleware"]

OnPause = Literal["stop", "block_tools"]


def _ai_message(response: Any) -> AIMessage | None:
    """The AIMessage inside whatever a model handler returned."""
    if isinstance(response, AIMessage):
        return response
    inner = getattr(response, "model_response", None)  # ExtendedModelResponse
    result = getattr(inner if inner is not None else response, "result", None)
    for message in result or ():
        if isinstance(message, AIMessage):
            return message
    return None


def blocked_streak(messages: Any) -> int:
    """Tool calls blocked in a row at the end of the conversation (since the user last
    spoke, or a tool last ran)."""
    streak = 0
    for message in reversed(list(messages or ())):
        if isinstance(message, HumanMessage):
            break
        if isinstance(message, ToolMessage):
            if not is_blocked_tool_message(message):
                break
            streak += 1
    return streak


def run_of(request: Any) -> str | None:
    """The run of a tool or model call: the LangGraph thread it runs in (the runnable
    config's ``configurable.thread_id``), None without one (the agent's default run)."""
    config = getattr(getattr(request, "runtime", None), "config", None)  # a ToolRuntime
    if config is None:
        try:
            from langgraph.config import get_config

            config = get_config()
        except (ImportError, RuntimeError):  # outside a runnable: no thread
            return None
    return thread_of_config(config)


def _with_note(message: ToolMessage, note: str) -> ToolMessage:
    content = message.content
    if isinstance(content, str):
        new: Any = f"{content}\n\n{note}" if content else note
    else:
        new = [*content, {"type": "text", "text": note}]
    return message.model_copy(update={"content": new})


class OctopodaMiddleware(AgentMiddleware):
    """Octopoda inside ``create_agent(..., middleware=[OctopodaMiddleware(agent)])``.

    * Every tool call is checked with ``guard_tool_call`` before it runs and recorded with
      ``record_tool_call`` after (its result, or its error: an exception or an error
      ``ToolMessage``), so Octopoda's loop detectors see the agent act.
    * Every model call is recorded with ``record_llm_call``: model, tokens, duration and the
      cost the response reports (or ``prices``: USD per million input/output tokens).
    * Each call is in its run: the LangGraph thread (``configurable.thread_id`` of the
      config the graph runs with), so loops are judged, and paused, per conversation; tool
      calls carry the model's tool call id, model calls the LLM run's id. A graph invoked
      without a thread id records in the agent's default run (a loop there pauses the
      agent, as without runs).
    * When the breaker has paused the thread (a loop with ``LoopPolicy("pause")``; with
      ``pause_scope="agent"`` the whole agent) or the agent (a spend or tool-call cap, or
      ``agent.pause()`` in any process), a tool is not run: the model gets a
      ``ToolMessage`` saying why. With ``on_pause="stop"`` (the default) the model is not
      called either: the run ends with an ``AIMessage`` that says why. ``"block_tools"``
      only blocks tools and lets the model answer; a model that calls blocked tools
      ``max_blocked_calls`` times in a row (3) is not called again: the run ends as with
      ``"stop"``, instead of running to the graph's recursion limit. Other threads go on;
      ``agent.resume(run_id=thread_id)`` lets a paused thread continue.

    ``agent``: an ``AgentRuntime`` or an agent id (then ``store`` and ``policy`` open it).
    Sync and async agents both work; async hooks run store I/O in a worker thread.

    Order: list it *after* LangChain's ``ToolRetryMiddleware`` (``middleware=[
    ToolRetryMiddleware(...), OctopodaMiddleware(agent)]``), so it wraps the tool itself and
    sees, and can stop, every attempt. Listed before it, it sees one call per model turn
    whatever the retries: a tool failing the same way ran 21 times (7 attempts x 3 turns)
    before the pause, against 3 the other way round.
    """

    def __init__(
        self,
        agent: AgentRuntime | str,
        *,
        store: Target = None,
        policy: LoopPolicy | None = None,
        on_pause: OnPause = "stop",
        prices: Prices | None = None,
        record_models: bool = True,
        max_blocked_calls: int = 3,
    ) -> None:
        super().__init__()
        if on_pause not in ("stop", "block_tools"):
            raise InvalidInput(f"on_pause must be 'stop' or 'block_tools', not {on_pause!r}")
        if (
            isinstance(max_blocked_calls, bool)
            or not isinstance(max_blocked_calls, int)
            or max_blocked_calls < 1
        ):
            raise InvalidInput(f"max_blocked_calls must be an int >= 1, not {max_blocked_calls!r}")
        if isinstance(agent, AgentRuntime):
            self.agent = resolve_runtime(agent, agent.agent_id, policy)[0]
        elif isinstance(agent, str):
            self.agent = resolve_runtime(store, agent, policy)[0]
        else:
            raise InvalidInput(f"agent must be an AgentRuntime or an agent id, not {agent!r}")
        self.on_pause: OnPause = on_pause
        self.prices = check_prices(prices)
        self.record_models = record_models
        self.max_blocked_calls = max_blocked_calls
        self._recorder = ActionRecorder()
        self._lock = threading.Lock()  # one call at a time into the runtime's detectors

    # -- tools ----------------------------------------------------------------------------

    def _guard(self, call: dict[str, Any], run: str | None) -> ToolMessage | None:
        name = str(call.get("name") or "tool")
        with self._lock:
            verdict = self._recorder.guard(self.agent, name, call.get("args"), run_id=run)
        return None if verdict is None else blocked_tool_message(call, verdict)

    def _record(
        self, call: dict[str, Any], run: str | None, outcome: tuple[Any, Any], started: float
    ) -> str | None:
        """Record the call; the note to add to its result when recording it paused the run
        (or the agent), else None."""
        name, args = str(call.get("name") or "tool"), call.get("args")
        with self._lock:
            event = self._recorder.tool_call(
                self.agent,
                name,
                args,
                result=outcome[0],
                error=outcome[1],
                duration_ms=(time.perf_counter() - started) * 1e3,
                run_id=run,
                call_id=str(call.get("id") or "") or None,
            )
            reason = self._recorder.paused_by(self.agent, event)
            if reason is None:
                return None
            # what is refused now: the run, or (a cap, pause_scope="agent") the whole agent
            verdict = self._recorder.guard(self.agent, name, args, run_id=run)
        scope = verdict.run_id if verdict is not None else run
        return paused_note(self.agent.agent_id, reason, scope)

    def _after_tool(self, call: dict[str, Any], run: str | None, response: Any, t0: float) -> Any:
        note = self._record(call, run, tool_outcome(response), t0)
        if note is not None and isinstance(response, ToolMessage):
            return _with_note(response, note)
        return response

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        call, run = request.tool_call, run_of(request)
        blocked = self._guard(call, run)
        if blocked is not None:
            return blocked
        started = time.perf_counter()
        try:
            response = handler(request)
        except Exception as exc:
            if not is_control_flow(exc):
                self._record(call, run, (None, exc), started)
            raise
        return self._after_tool(call, run, response, started)

    async def awrap_tool_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        call, run = request.tool_call, run_of(request)
        blocked = await run_blocking(self._guard, call, run)
        if blocked is not None:
            return blocked
        started = time.perf_counter()
        try:
            response = await handler(request)
        except Exception as exc:
            if not is_control_flow(exc):
                await run_blocking(self._record, call, run, (None, exc), started)
            raise
        return await run_blocking(self._after_tool, call, run, response, started)

    # -- models ---------------------------------------------------------------------------

    def _model_verdict(self, request: Any, run: str | None) -> Verdict | None:
        name = f"model:{model_name(None, request.model)}"
        with self._lock:
            return self._recorder.guard(self.agent, name, run_id=run)

    def _stopped(self, request: ModelRequest, run: str | None) -> ModelResponse | None:
        """The answer instead of a model call: while the agent or the run is paused
        (``on_pause="stop"``), or once the model has called blocked tools
        ``max_blocked_calls`` times in a row."""
        agent_id = self.agent.agent_id
        if self.on_pause != "stop":
            streak = blocked_streak(getattr(request, "messages", None))
            if streak < self.max_blocked_calls:
                return None
            verdict = self._model_verdict(request, run)
            if verdict is None:
                return None
            why = f"{verdict.reason}; the model called blocked tools {streak} times in a row"
            return ModelResponse(result=[stopped_message(agent_id, verdict.error, why)])
        verdict = self._model_verdict(request, run)
        if verdict is None:
            return None
        return ModelResponse(result=[stopped_message(agent_id, verdict.error)])

    def _record_model(self, request: Any, run: str | None, response: Any, t0: float) -> None:
        if not self.record_models:
            return
        message = _ai_message(response)
        tokens = token_usage(message)
        name = model_name(message, request.model)
        with self._lock:
            self._recorder.llm_call(
                self.agent,
                name,
                cost_usd=cost_usd(message, name, tokens, self.prices),
                tokens_in=tokens[0],
                tokens_out=tokens[1],
                duration_ms=(time.perf_counter() - t0) * 1e3,
                run_id=run,
                call_id=call_id_of_message(message),
            )

    def wrap_model_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        run = run_of(request)
        stopped = self._stopped(request, run)
        if stopped is not None:
            return stopped
        started = time.perf_counter()
        response = handler(request)
        self._record_model(request, run, response, started)
        return response

    async def awrap_model_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        run = run_of(request)
        stopped = await run_blocking(self._stopped, request, run)
        if stopped is not None:
            return stopped
        started = time.perf_counter()
        response = await handler(request)
        await run_blocking(self._record_model, request, run, response, started)
        return response
