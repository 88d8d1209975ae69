"""OctopodaRunHooks: tool calls, LLM calls and handoffs of a run into Octopoda's loop
detectors, per conversation, with the breaker enforced inside the run."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, Final

from agents import Agent, RunContextWrapper, RunHooks, Tool
from agents.items import ModelResponse

from octopoda import AgentRuntime, InvalidInput, LoopPolicy
from octopoda.integrations import (
    ActionRecorder,
    AgentRuntimes,
    FrameworkCall,
    Prices,
    Verdict,
    check_prices,
    cost_of,
    parse_arguments,
    run_blocking,
)

from ._common import RunPaused, StoreArg
from ._runs import CONVERSATIONS

__all__ = ["SDK_ERROR_PREFIXES", "OctopodaRunHooks", "Prices", "RunIdOption", "is_sdk_tool_error"]

SDK_ERROR_PREFIXES = (
    "An error occurred while running the tool",
    "An error occurred while parsing tool arguments",
)
"""How the SDK's default ``failure_error_function`` words a failed tool call."""

RunIdOption = str | Callable[[RunContextWrapper[Any]], "str | None"] | None
"""``OctopodaRunHooks(run_id=...)``: one run id for every run, or a callable of the run's
context (``lambda ctx: ctx.context.user_id``; None: the automatic id), or None (automatic:
the session's id, the trace's group id, else one run per ``Runner.run``)."""

_KEEP_RESPONSES: Final = 1024  # the last model response's calls, per (run, agent)


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


def _run_paused(verdict: Verdict) -> RunPaused:
    """The core's refusal as the SDK exception, with the SDK calls of the loop named."""
    error = verdict.error
    return RunPaused(
        verdict.message, error.reason, error.signal, verdict.calls, run_id=verdict.run_id
    )


class OctopodaRunHooks(RunHooks[Any]):
    """Run hooks (``Runner.run(..., hooks=OctopodaRunHooks(...))``) that record every tool
    call, LLM call and handoff of the run in Octopoda and enforce the loop policy.

    Each SDK agent is an Octopoda agent, ``agent_prefix + agent.name`` (or the id
    ``agent_ids`` maps its name to), in ``store``. Each action carries its run: the
    conversation (the ``OctopodaSession``'s id, else the trace's group id, else one run
    per ``Runner.run``; ``run_id=`` to say it yourself), so loops are judged, and paused,
    per conversation: one user's loop stops that user's runs only.

    * ``on_tool_start`` calls ``guard_tool_call``: when the agent or the conversation is
      paused (by the breaker, by hand, or in another process) the run stops with
      :class:`RunPaused`, an :class:`octopoda.AgentPaused` naming the calls that formed
      the loop.
    * ``on_tool_end`` records the call (with the SDK's call id) and its result (``is_error``
      decides whether a result is the SDK's failure text; a failure repeated with the same
      arguments is a retry loop after three calls instead of five).
    * ``on_llm_start`` refuses to call the model for a paused agent or conversation
      (``guard_llm_calls``), ``on_llm_end`` records token usage, and cost where ``prices``
      names the model.
    * ``on_handoff`` records the handoff (what was handed over: the handoff call's
      arguments) so agents passing the same work back and forth are a ping-pong loop, and
      stops the run when that pauses the agent.

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
        run_id: RunIdOption = None,
    ) -> None:
        if run_id is not None and not isinstance(run_id, str) and not callable(run_id):
            raise InvalidInput(f"run_id must be a str, a callable or None, not {run_id!r}")
        runtimes = AgentRuntimes(
            store, policy=policy, agent_prefix=agent_prefix, agent_ids=agent_ids
        )
        self._setup(runtimes, prices, is_error, guard_llm_calls, run_id)

    @classmethod
    def _of(cls, runtimes: AgentRuntimes, prices: Prices | None = None) -> OctopodaRunHooks:
        """Hooks recording through ``runtimes`` (``octopoda.init``'s, which map every SDK
        agent to one Octopoda agent), with the defaults of every other option."""
        hooks = cls.__new__(cls)
        hooks._setup(runtimes, prices, is_sdk_tool_error, True, None)
        return hooks

    def _setup(
        self,
        runtimes: AgentRuntimes,
        prices: Prices | None,
        is_error: Callable[[object], bool],
        guard_llm_calls: bool,
        run_id: RunIdOption,
    ) -> None:
        self._runtimes = runtimes
        self._prices = check_prices(prices)
        self._is_error = is_error
        self._guard_llm = guard_llm_calls
        self._run_id = run_id
        self._recorder = ActionRecorder()
        self._last_calls: OrderedDict[tuple[str, str], list[tuple[str, Any, str]]] = OrderedDict()

    def runtime(self, agent: Agent[Any] | str) -> AgentRuntime:
        """The Octopoda runtime of an SDK agent (or agent name): ``loop_status()``,
        ``runs()``, ``timeline(run_id=...)``, ``stats()``, ``resume()``, ``audit.verify()``."""
        return self._runtimes.runtime(agent if isinstance(agent, str) else agent.name)

    def run_id(self, context: RunContextWrapper[Any]) -> str:
        """The run (conversation) id the hooks give the actions of ``context``'s run."""
        option = self._run_id
        if isinstance(option, str):
            return option
        if option is not None:
            chosen = option(context)
            if chosen is not None:
                return chosen
        return CONVERSATIONS.resolve(context)

    # -- the breaker ----------------------------------------------------------------------------

    async def _guard(self, agent: Agent[Any], name: str, run: str, args: Any = None) -> None:
        def check(runtime: AgentRuntime) -> None:
            verdict = self._recorder.guard(runtime, name, args, run_id=run)
            if verdict is not None:
                raise _run_paused(verdict)

        await run_blocking(self._runtimes.call, agent.name, check)

    # -- tools ----------------------------------------------------------------------------------

    async def on_tool_start(
        self, context: RunContextWrapper[Any], agent: Agent[Any], tool: Tool
    ) -> None:
        name, call_id, arguments = _tool_call(context, tool)
        run = self.run_id(context)
        await self._guard(agent, name, run, parse_arguments(arguments))
        self._recorder.start((run, agent.name, call_id))  # the tool runs next

    async def on_tool_end(
        self, context: RunContextWrapper[Any], agent: Agent[Any], tool: Tool, result: Any
    ) -> None:
        name, call_id, arguments = _tool_call(context, tool)
        run = self.run_id(context)
        duration = self._recorder.elapsed_ms((run, agent.name, call_id))
        failed = self._is_error(result)

        def record(runtime: AgentRuntime) -> None:
            self._recorder.tool_call(
                runtime,
                name,
                parse_arguments(arguments),
                result=None if failed else result,
                error=result if failed else None,
                duration_ms=duration,
                run_id=run,
                call_id=call_id,
                arguments=arguments,
            )

        await run_blocking(self._runtimes.call, agent.name, record)

    # -- LLM calls ------------------------------------------------------------------------------

    async def on_llm_start(
        self,
        context: RunContextWrapper[Any],
        agent: Agent[Any],
        system_prompt: str | None,
        input_items: list[Any],
    ) -> None:
        run = self.run_id(context)
        self._recorder.start((run, agent.name, "llm"))
        if self._guard_llm:
            await self._guard(agent, f"llm:{model_name(agent)}", run)

    async def on_llm_end(
        self, context: RunContextWrapper[Any], agent: Agent[Any], response: ModelResponse
    ) -> None:
        run = self.run_id(context)
        duration = self._recorder.elapsed_ms((run, agent.name, "llm"))
        self._remember_response(run, agent.name, response)
        usage = response.usage
        tokens_in = int(getattr(usage, "input_tokens", 0) or 0)
        tokens_out = int(getattr(usage, "output_tokens", 0) or 0)
        model = model_name(agent)
        response_id = getattr(response, "response_id", None)

        def record(runtime: AgentRuntime) -> None:
            self._recorder.llm_call(
                runtime,
                model,
                tokens_in=tokens_in,
                tokens_out=tokens_out,
                cost_usd=cost_of(self._prices, model, tokens_in, tokens_out),
                duration_ms=duration,
                run_id=run,
                call_id=response_id if isinstance(response_id, str) else None,
            )

        await run_blocking(self._runtimes.call, agent.name, record)

    def _remember_response(self, run: str, agent: str, response: ModelResponse) -> None:
        """The function calls of an agent's last model response in a run (a handoff is one
        of them: what it handed over)."""
        key = (run, agent)
        self._last_calls[key] = [
            (
                str(getattr(item, "name", "")),
                parse_arguments(getattr(item, "arguments", None)),
                str(getattr(item, "call_id", "") or ""),
            )
            for item in response.output
            if getattr(item, "type", None) == "function_call"
        ]
        self._last_calls.move_to_end(key)
        while len(self._last_calls) > _KEEP_RESPONSES:
            self._last_calls.popitem(last=False)

    # -- handoffs -------------------------------------------------------------------------------

    async def on_handoff(
        self, context: RunContextWrapper[Any], from_agent: Agent[Any], to_agent: Agent[Any]
    ) -> None:
        run = self.run_id(context)
        tools = {getattr(t, "name", None) for t in getattr(from_agent, "tools", ())}
        calls = self._last_calls.get((run, from_agent.name), [])
        handed_calls = [c for c in calls if c[0] not in tools]
        handed = [(name, args) for name, args, _ in handed_calls]
        call_id = next((c[2] for c in handed_calls if c[2]), None)
        to_id = self._runtimes.agent_id(to_agent.name)
        named = FrameworkCall(f"handoff to {to_agent.name}", "", str(handed))

        def record(runtime: AgentRuntime) -> None:
            self._runtimes.get(to_agent.name)  # open the receiving side too (same store)
            self._recorder.handoff(
                runtime,
                to_id,
                {"to": to_agent.name, "calls": handed},
                run_id=run,
                call_id=call_id,
                call=named,
            )

        await run_blocking(self._runtimes.call, from_agent.name, record)
        await self._guard(from_agent, f"handoff:{to_agent.name}", run)


def _tool_call(context: RunContextWrapper[Any], tool: Tool) -> tuple[str, str, str]:
    """(tool name, call id, arguments JSON) from a ToolContext; other tool kinds get a plain
    RunContextWrapper, so fall back to the tool's name."""
    name = getattr(context, "tool_name", None) or getattr(tool, "name", None) or type(tool).__name__
    call_id = getattr(context, "tool_call_id", None) or ""
    arguments = getattr(context, "tool_arguments", None) or ""
    return str(name), str(call_id), str(arguments)
