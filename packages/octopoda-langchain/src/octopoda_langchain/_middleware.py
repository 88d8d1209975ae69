"""OctopodaMiddleware: records every tool and model call of a LangChain 1.x agent, and
enforces Octopoda's breaker inside the agent loop."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any, Literal

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from octopoda import AgentPaused, AgentRuntime, InvalidInput, LoopPolicy

from ._recording import (
    Prices,
    blocked_tool_message,
    check_prices,
    cost_usd,
    is_blocked_tool_message,
    is_control_flow,
    model_name,
    paused_note,
    stopped_message,
    token_usage,
    tool_outcome,
)
from ._target import Target, resolve_runtime, to_thread

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
    * When the breaker has paused the agent (a loop with ``LoopPolicy("pause")``, a spend or
      tool-call cap, or ``agent.pause()`` in any process), a tool is not run: the model gets
      a ``ToolMessage`` saying why. With ``on_pause="stop"`` (the default) the model is not
      called either: the run ends with an ``AIMessage`` that says why. ``"block_tools"``
      only blocks tools and lets the model answer; a model that calls blocked tools
      ``max_blocked_calls`` times in a row (3) is not called again: the run ends as with
      ``"stop"``, instead of running to the graph's recursion limit.

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

    # -- tools ----------------------------------------------------------------------------

    def _guard(self, call: dict[str, Any]) -> ToolMessage | None:
        try:
            self.agent.guard_tool_call(str(call.get("name") or "tool"), call.get("args"))
        except AgentPaused as exc:
            return blocked_tool_message(call, exc)
        return None

    def _record(self, call: dict[str, Any], result: Any, error: Any, started: float) -> bool:
        """Record the call; True when recording it paused the agent."""
        was_paused = self.agent.paused
        self.agent.record_tool_call(
            str(call.get("name") or "tool"),
            call.get("args"),
            result=result,
            error=error,
            duration_ms=(time.perf_counter() - started) * 1e3,
        )
        return not was_paused and self.agent.paused

    def _after_tool(self, call: dict[str, Any], response: Any, started: float) -> Any:
        result, error = tool_outcome(response)
        if self._record(call, result, error, started) and isinstance(response, ToolMessage):
            reason = self.agent.stats().pause_reason or "paused"
            return _with_note(response, paused_note(self.agent.agent_id, reason))
        return response

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        call = request.tool_call
        blocked = self._guard(call)
        if blocked is not None:
            return blocked
        started = time.perf_counter()
        try:
            response = handler(request)
        except Exception as exc:
            if not is_control_flow(exc):
                self._record(call, None, exc, started)
            raise
        return self._after_tool(call, response, started)

    async def awrap_tool_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        call = request.tool_call
        blocked = await to_thread(self._guard, call)
        if blocked is not None:
            return blocked
        started = time.perf_counter()
        try:
            response = await handler(request)
        except Exception as exc:
            if not is_control_flow(exc):
                await to_thread(self._record, call, None, exc, started)
            raise
        return await to_thread(self._after_tool, call, response, started)

    # -- models ---------------------------------------------------------------------------

    def _stopped(self, request: ModelRequest) -> ModelResponse | None:
        """The answer instead of a model call: while paused (``on_pause="stop"``), or once
        the model has called blocked tools ``max_blocked_calls`` times in a row."""
        if self.on_pause != "stop":
            streak = blocked_streak(getattr(request, "messages", None))
            if streak < self.max_blocked_calls or not self.agent.paused:
                return None
            reason = self.agent.stats().pause_reason or "paused"
            why = f"{reason}; the model called blocked tools {streak} times in a row"
            return ModelResponse(result=[stopped_message(self.agent.agent_id, None, why)])
        try:
            self.agent.guard_tool_call(f"model:{model_name(None, request.model)}")
        except AgentPaused as exc:
            return ModelResponse(result=[stopped_message(self.agent.agent_id, exc, "paused")])
        return None

    def _record_model(self, request: Any, response: Any, started: float) -> None:
        if not self.record_models:
            return
        message = _ai_message(response)
        tokens = token_usage(message)
        name = model_name(message, request.model)
        self.agent.record_llm_call(
            name,
            cost_usd=cost_usd(message, name, tokens, self.prices),
            tokens_in=tokens[0],
            tokens_out=tokens[1],
            duration_ms=(time.perf_counter() - started) * 1e3,
        )

    def wrap_model_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        stopped = self._stopped(request)
        if stopped is not None:
            return stopped
        started = time.perf_counter()
        response = handler(request)
        self._record_model(request, response, started)
        return response

    async def awrap_model_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        stopped = await to_thread(self._stopped, request)
        if stopped is not None:
            return stopped
        started = time.perf_counter()
        response = await handler(request)
        await to_thread(self._record_model, request, response, started)
        return response
