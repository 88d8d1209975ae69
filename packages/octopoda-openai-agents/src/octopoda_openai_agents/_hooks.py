"""OctopodaRunHooks: tool calls, LLM calls and handoffs of a run into Octopoda's loop
detectors, with the breaker enforced inside the run."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

from agents import Agent, RunContextWrapper, RunHooks, Tool
from agents.items import ModelResponse

from octopoda import AgentPaused, AgentRuntime, InvalidInput, LoopPolicy

from ._common import RunPaused, Runtimes, StoreArg, parse_arguments, run_blocking

__all__ = ["SDK_ERROR_PREFIXES", "OctopodaRunHooks", "Prices", "is_sdk_tool_error"]

Prices = Mapping[str, tuple[float, float]]
"""USD per million tokens, ``{model: (input, output)}``, e.g. ``{"gpt-4.1": (2.0, 8.0)}``."""

SDK_ERROR_PREFIXES = (
    "An error occurred while running the tool",
    "An error occurred while parsing tool arguments",
)
"""How the SDK's default ``failure_error_function`` words a failed tool call."""

_KEEP_CALLS = 4096  # SDK call ids remembered per hooks object, to name them in a pause


def is_sdk_tool_error(result: object) -> bool:
    """True for the text the SDK's default failure handler returns instead of a result."""
    return isinstance(result, str) and result.startswith(SDK_ERROR_PREFIXES)


def model_name(agent: Agent[Any]) -> str:
    """The model an agent runs on, as a name (``RunConfig.model`` is not visible to hooks)."""
    model = agent.model
    if isinstance(model, str) and model:
        return model
    if model is not None:
        name = getattr(model, "model", None)
        return name if isinstance(name, str) and name else type(model).__name__
    try:
        from agents.models import get_default_model

        return str(get_default_model())
    except ImportError:  # pragma: no cover - openai-agents before get_default_model
        return "default"


def _cost(prices: Prices | None, model: str, tokens_in: int, tokens_out: int) -> float:
    if not prices or model not in prices:
        return 0.0
    per_in, per_out = prices[model]
    return (tokens_in * per_in + tokens_out * per_out) / 1_000_000


def _check_prices(prices: Prices | None) -> dict[str, tuple[float, float]] | None:
    if prices is None:
        return None
    checked: dict[str, tuple[float, float]] = {}
    for model, pair in prices.items():
        ok = isinstance(pair, (tuple, list)) and len(pair) == 2
        if not ok or not all(
            isinstance(p, (int, float)) and not isinstance(p, bool) and p >= 0 for p in pair
        ):
            raise InvalidInput(
                f"prices[{model!r}] must be (input, output) USD per million tokens, not {pair!r}"
            )
        checked[model] = (float(pair[0]), float(pair[1]))
    return checked


class OctopodaRunHooks(RunHooks[Any]):
    """Run hooks (``Runner.run(..., hooks=OctopodaRunHooks(...))``) that record every tool
    call, LLM call and handoff of the run in Octopoda and enforce the loop policy.

    Each SDK agent is an Octopoda agent, ``agent_prefix + agent.name`` (or the id
    ``agent_ids`` maps its name to), in ``store``.

    * ``on_tool_start`` calls ``guard_tool_call``: when the agent is paused (by the breaker,
      by hand, or in another process) the run stops with :class:`RunPaused`, an
      :class:`octopoda.AgentPaused` naming the calls that formed the loop.
    * ``on_tool_end`` records the call and its result (``is_error`` decides whether a result
      is the SDK's failure text; a failure repeated with the same arguments is a retry loop
      after three calls instead of five).
    * ``on_llm_start`` refuses to call the model for a paused agent (``guard_llm_calls``),
      ``on_llm_end`` records token usage, and cost where ``prices`` names the model.
    * ``on_handoff`` records the handoff (what was handed over: the handoff call's arguments)
      so agents passing the same work back and forth are a ping-pong loop, and stops the run
      when that pauses the agent.

    ``policy`` is the :class:`octopoda.LoopPolicy` of every agent: ``LoopPolicy("pause")``
    turns detection into intervention; the default only detects and logs.
    """

    def __init__(
        self,
        store: StoreArg = None,
        *,
        policy: LoopPolicy | None = None,
        prices: Prices | None = None,
        agent_prefix: str = "",
        agent_ids: Mapping[str, str] | None = None,
        is_error: Callable[[object], bool] = is_sdk_tool_error,
        guard_llm_calls: bool = True,
    ) -> None:
        self._runtimes = Runtimes(
            store, policy=policy, agent_prefix=agent_prefix, agent_ids=agent_ids
        )
        self._prices = _check_prices(prices)
        self._is_error = is_error
        self._guard_llm = guard_llm_calls
        self._started: dict[tuple[str, str], float] = {}
        self._llm_started: dict[str, float] = {}
        self._last_calls: dict[str, list[tuple[str, Any]]] = {}
        self._calls: OrderedDict[tuple[str, int], tuple[str, str, str]] = OrderedDict()
        self._calls_lock = threading.Lock()  # written from the worker threads of many agents

    def runtime(self, agent: Agent[Any] | str) -> AgentRuntime:
        """The Octopoda runtime of an SDK agent (or agent name): ``loop_status()``,
        ``timeline()``, ``stats()``, ``resume()``, ``audit.verify()``."""
        return self._runtimes.runtime(agent if isinstance(agent, str) else agent.name)

    # -- the breaker ----------------------------------------------------------------------------

    async def _guard(self, agent: Agent[Any], name: str, args: Any = None) -> None:
        def check(runtime: AgentRuntime) -> None:
            try:
                runtime.guard_tool_call(name, args)
            except AgentPaused as exc:
                raise self._paused(runtime.agent_id, exc) from None

        await run_blocking(lambda: self._runtimes.call(agent.name, check))

    def _paused(self, agent_id: str, exc: AgentPaused) -> RunPaused:
        """The core's AgentPaused, with the SDK calls of the loop named."""
        refs = _signal_events(exc.signal)
        calls: list[tuple[str, str, str]] = []
        for ref in refs:
            seq = ref.get("seq")
            owner = ref.get("agent") or agent_id
            with self._calls_lock:
                known = self._calls.get((owner, seq)) if isinstance(seq, int) else None
            if known is not None:
                calls.append(known)
            elif ref.get("kind") == "tool_call":
                calls.append((str(ref.get("name", "")), "", str(ref.get("preview", ""))))
        message = str(exc)
        if calls:
            listed = "; ".join(
                f"{name}({args})" + (f" call_id={call_id}" if call_id else "")
                for name, call_id, args in calls
            )
            message = f"{message} The calls: {listed}."
        return RunPaused(message, exc.reason, exc.signal, tuple(calls))

    def _remember_call(self, agent_id: str, seq: int, call: tuple[str, str, str]) -> None:
        with self._calls_lock:
            self._calls[(agent_id, seq)] = call
            while len(self._calls) > _KEEP_CALLS:
                self._calls.popitem(last=False)

    # -- tools ----------------------------------------------------------------------------------

    async def on_tool_start(
        self, context: RunContextWrapper[Any], agent: Agent[Any], tool: Tool
    ) -> None:
        name, call_id, arguments = _tool_call(context, tool)
        await self._guard(agent, name, parse_arguments(arguments))
        self._started[(agent.name, call_id)] = time.perf_counter()  # the tool runs next

    async def on_tool_end(
        self, context: RunContextWrapper[Any], agent: Agent[Any], tool: Tool, result: Any
    ) -> None:
        name, call_id, arguments = _tool_call(context, tool)
        started = self._started.pop((agent.name, call_id), None)
        duration = None if started is None else (time.perf_counter() - started) * 1000
        failed = self._is_error(result)
        args = parse_arguments(arguments)

        def record(runtime: AgentRuntime) -> None:
            event = runtime.record_tool_call(
                name,
                args,
                result=None if failed else result,
                error=result if failed else None,
                duration_ms=duration,
            )
            self._remember_call(runtime.agent_id, event.seq, (name, call_id, arguments))

        await run_blocking(lambda: self._runtimes.call(agent.name, record))

    # -- LLM calls ------------------------------------------------------------------------------

    async def on_llm_start(
        self,
        context: RunContextWrapper[Any],
        agent: Agent[Any],
        system_prompt: str | None,
        input_items: list[Any],
    ) -> None:
        self._llm_started[agent.name] = time.perf_counter()
        if self._guard_llm:
            await self._guard(agent, f"llm:{model_name(agent)}")

    async def on_llm_end(
        self, context: RunContextWrapper[Any], agent: Agent[Any], response: ModelResponse
    ) -> None:
        started = self._llm_started.pop(agent.name, None)
        duration = None if started is None else (time.perf_counter() - started) * 1000
        self._last_calls[agent.name] = [
            (str(getattr(item, "name", "")), parse_arguments(getattr(item, "arguments", None)))
            for item in response.output
            if getattr(item, "type", None) == "function_call"
        ]
        usage = response.usage
        tokens_in = int(getattr(usage, "input_tokens", 0) or 0)
        tokens_out = int(getattr(usage, "output_tokens", 0) or 0)
        model = model_name(agent)
        cost = _cost(self._prices, model, tokens_in, tokens_out)

        def record(runtime: AgentRuntime) -> None:
            runtime.record_llm_call(
                model,
                cost_usd=cost,
                tokens_in=tokens_in,
                tokens_out=tokens_out,
                duration_ms=duration,
            )

        await run_blocking(lambda: self._runtimes.call(agent.name, record))

    # -- handoffs -------------------------------------------------------------------------------

    async def on_handoff(
        self, context: RunContextWrapper[Any], from_agent: Agent[Any], to_agent: Agent[Any]
    ) -> None:
        tools = {getattr(t, "name", None) for t in getattr(from_agent, "tools", ())}
        handed = [c for c in self._last_calls.get(from_agent.name, ()) if c[0] not in tools]
        to_id = self._runtimes.agent_id(to_agent.name)

        def record(runtime: AgentRuntime) -> None:
            self._runtimes.get(to_agent.name)  # open the receiving side too (same store)
            event = runtime.record_handoff(to_id, {"to": to_agent.name, "calls": handed})
            self._remember_call(
                runtime.agent_id, event.seq, (f"handoff to {to_agent.name}", "", str(handed))
            )

        await run_blocking(lambda: self._runtimes.call(from_agent.name, record))
        await self._guard(from_agent, f"handoff:{to_agent.name}")


def _tool_call(context: RunContextWrapper[Any], tool: Tool) -> tuple[str, str, str]:
    """(tool name, call id, arguments JSON) from a ToolContext; other tool kinds get a plain
    RunContextWrapper, so fall back to the tool's name."""
    name = getattr(context, "tool_name", None) or getattr(tool, "name", None) or type(tool).__name__
    call_id = getattr(context, "tool_call_id", None) or ""
    arguments = getattr(context, "tool_arguments", None) or ""
    return str(name), str(call_id), str(arguments)


def _signal_events(signal: Any) -> list[dict[str, Any]]:
    """The events of a loop signal, whether a LoopSignal or its dict form."""
    if signal is None:
        return []
    if isinstance(signal, dict):
        events = signal.get("events") or []
        return [e for e in events if isinstance(e, dict)]
    return [e._asdict() for e in getattr(signal, "events", ())]
