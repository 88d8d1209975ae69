"""OctopodaGuard: tool calls and model calls of AutoGen agents into Octopoda's loop
detectors, with the team run as the run scope, and the breaker enforced inside the team.

AutoGen's own observation seam, the ``autogen_core.events`` logger, sees tool calls after
they ran and cannot refuse one; the seams that can are the tool and the model client an
agent is given. So the guard wraps them:

* ``guard.tools(agent_name, tools)``: each tool is guarded before it runs (a paused run's
  call is refused: the agent gets an error result that says why) and recorded after, with
  its arguments, result or error, duration and AutoGen's call id;
* ``guard.workbench(agent_name, workbench)``: the same for the tools of a ``Workbench``
  (``AssistantAgent(workbench=...)``, autogen-core 0.5 on): a refused call is an error
  ``ToolResult`` saying why;
* ``guard.model_client(agent_name, client)``: each model call is guarded and recorded
  (model, tokens, cost with ``prices``);
* ``guard.termination()``: an :class:`OctopodaTermination` that stops the team once a run is
  paused, with a stop message naming the calls of the loop. It also sees every turn of the
  team: when agent B speaks after agent A, A handed what it said to B (a handoff event), so
  two agents passing the same thing back and forth are a ping-pong loop.

Each AutoGen agent is its own Octopoda agent (``agent_prefix + name``) on one store; every
action carries the guard's ``run_id``, a new one for each team run (the termination
condition's ``reset``, which a team calls when a run ends), unless a fixed ``run_id`` is
given. Loops and pauses are per (agent, run): another team, with its own guard, goes on.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncGenerator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from autogen_agentchat.base import TerminationCondition
from autogen_agentchat.messages import BaseChatMessage, StopMessage
from autogen_core import CancellationToken
from autogen_core.models import ChatCompletionClient, CreateResult
from autogen_core.tools import BaseTool
from pydantic import BaseModel

from octopoda import AgentPaused, AgentRuntime, InvalidInput, LoopPolicy
from octopoda.integrations import (
    ActionRecorder,
    AgentRuntimes,
    Prices,
    Verdict,
    check_prices,
    cost_of,
    parse_arguments,
    run_blocking,
)

from ._common import StoreArg

if TYPE_CHECKING:
    from autogen_core.tools import Workbench

__all__ = ["GUARD_AGENT_PREFIX", "OctopodaGuard", "OctopodaTermination", "RunPaused"]

GUARD_AGENT_PREFIX = "autogen:"
"""The default agent-id prefix: AutoGen agent ``worker`` is Octopoda agent ``autogen:worker``."""


class RunPaused(AgentPaused):
    """:class:`octopoda.AgentPaused` raised inside an AutoGen run: the tool (or model) call
    was refused because its run or agent is paused. Its text is what the agent sees as the
    call's error result; ``verdict`` names the calls of the loop."""

    def __init__(self, message: str, verdict: Verdict) -> None:
        error = verdict.error
        super().__init__(message, error.reason, error.signal, run_id=verdict.run_id)
        self.verdict = verdict


class OctopodaGuard:
    """Loop detection and the breaker for AutoGen agents and teams.

    ``store``: a path, URL or open :class:`octopoda.Store` (see :data:`StoreArg`).
    ``policy``: e.g. ``LoopPolicy("pause")``; the default only detects and warns.
    ``run_id``: one fixed run id; None: a new id for each team run. ``prices``: USD per
    million input and output tokens by model, for the cost of model calls.
    """

    def __init__(
        self,
        store: StoreArg = None,
        *,
        policy: LoopPolicy | None = None,
        run_id: str | None = None,
        agent_prefix: str = GUARD_AGENT_PREFIX,
        prices: Prices | None = None,
    ) -> None:
        self._runtimes = AgentRuntimes(store, policy=policy, agent_prefix=agent_prefix)
        self._recorder = ActionRecorder()
        self._fixed = run_id
        self._run_id = run_id or _new_run_id()
        self._prices = check_prices(prices) if prices is not None else None
        self._names: list[str] = []
        self._verdict: Verdict | None = None
        self._last: tuple[str, str] | None = None  # the last speaker of this run, what it said

    @property
    def run_id(self) -> str:
        """The run the guard's actions carry now (the team run)."""
        return self._run_id

    def new_run(self) -> str:
        """Start a new run (what a team's end of run does through the termination's reset);
        a fixed ``run_id`` stays."""
        self._run_id = self._fixed or _new_run_id()
        self._verdict = None
        self._last = None
        return self._run_id

    def runtime(self, agent_name: str) -> AgentRuntime:
        """The Octopoda runtime of AutoGen agent ``agent_name``."""
        if agent_name not in self._names:
            self._names.append(agent_name)
        return self._runtimes.runtime(agent_name)

    @property
    def verdict(self) -> Verdict | None:
        """The breaker's verdict once a call of this run was refused or paused the run."""
        return self._verdict

    # -- wrapping -----------------------------------------------------------------------------

    def tools(
        self, agent_name: str, tools: Sequence[BaseTool[Any, Any]]
    ) -> list[BaseTool[Any, Any]]:
        """``tools`` guarded and recorded as AutoGen agent ``agent_name``'s calls (plain
        functions: wrap them in ``FunctionTool`` first)."""
        self.runtime(agent_name)
        return [GuardedTool(self, agent_name, tool) for tool in tools]

    def model_client(self, agent_name: str, client: ChatCompletionClient) -> ChatCompletionClient:
        """``client`` with each call guarded and recorded as ``agent_name``'s."""
        self.runtime(agent_name)
        return GuardedModelClient(self, agent_name, client)

    def workbench(self, agent_name: str, workbench: Workbench) -> Workbench:
        """``workbench`` (an ``autogen_core.tools.Workbench``, autogen-core 0.5 and later)
        with each tool call guarded and recorded as ``agent_name``'s, like :meth:`tools`:
        ``AssistantAgent(..., workbench=guard.workbench("worker", StaticWorkbench(tools)))``.
        A refused call returns an error ``ToolResult`` that says why."""
        try:
            from ._workbench import GuardedWorkbench
        except ImportError as exc:
            raise InvalidInput(
                "guard.workbench needs autogen-core 0.5 or later (autogen_core.tools.Workbench);"
                " on 0.4.x pass the tools through guard.tools(...)"
            ) from exc
        self.runtime(agent_name)
        return GuardedWorkbench(self, agent_name, workbench)

    def termination(self) -> OctopodaTermination:
        """A termination condition that stops the team when this guard's run is paused."""
        return OctopodaTermination(self)

    # -- the breaker --------------------------------------------------------------------------

    def _guard_sync(self, agent_name: str, name: str, args: Any) -> Verdict | None:
        run_id = self._run_id
        verdict = self._runtimes.call(
            agent_name, lambda rt: self._recorder.guard(rt, name, args, run_id=run_id)
        )
        if verdict is not None:
            self._verdict = verdict
        return verdict

    async def guard(self, agent_name: str, name: str, args: Any = None) -> Verdict | None:
        """None when ``agent_name`` may make the call ``name`` now, else the verdict."""
        return await run_blocking(self._guard_sync, agent_name, name, args)

    async def check(self) -> Verdict | None:
        """The verdict when any agent of this guard is paused in this run (one store read
        per agent), else None."""
        if self._verdict is not None:
            return self._verdict
        for name in list(self._names):
            verdict = await self.guard(name, "team turn")
            if verdict is not None:
                return verdict
        return None

    async def record_turns(self, messages: Sequence[Any]) -> None:
        """Record the team's turns as handoffs: when agent B speaks after agent A, A handed
        what it said to B (so two agents passing the same thing back and forth are a
        ping-pong loop). Messages from the user and from outside the team start afresh."""
        for message in messages:
            source, text = _turn(message)
            if source is None:
                continue
            last, self._last = self._last, (source, text)
            if last is None or last[0] == source:
                continue
            await self._handoff(last[0], source, last[1])

    async def _handoff(self, sender: str, receiver: str, content: str) -> None:
        run_id, to_agent = self._run_id, self._runtimes.agent_id(receiver)
        self.runtime(sender)

        def record(rt: AgentRuntime) -> None:
            event = self._recorder.handoff(rt, to_agent, content, run_id=run_id)
            if self._recorder.paused_by(rt, event) is not None:
                verdict = self._recorder.guard(rt, f"handoff:{receiver}", run_id=run_id)
                if verdict is not None:
                    self._verdict = verdict

        await run_blocking(self._runtimes.call, sender, record)

    async def record_tool(
        self,
        agent_name: str,
        tool: str,
        arguments: Mapping[str, Any],
        *,
        result: Any = None,
        error: BaseException | str | None = None,
        duration_ms: float,
        call_id: str | None,
    ) -> None:
        run_id = self._run_id

        def record(rt: AgentRuntime) -> None:
            event = self._recorder.tool_call(
                rt,
                tool,
                dict(arguments),
                result=result,
                error=error,
                duration_ms=duration_ms,
                run_id=run_id,
                call_id=call_id,
            )
            if self._recorder.paused_by(rt, event) is not None:
                verdict = self._recorder.guard(rt, tool, dict(arguments), run_id=run_id)
                if verdict is not None:
                    self._verdict = verdict

        await run_blocking(self._runtimes.call, agent_name, record)

    async def record_llm(
        self, agent_name: str, model: str, result: CreateResult, duration_ms: float
    ) -> None:
        usage = result.usage
        tokens_in, tokens_out = usage.prompt_tokens, usage.completion_tokens
        cost = cost_of(self._prices, model, tokens_in, tokens_out) if self._prices else 0.0
        run_id = self._run_id
        await run_blocking(
            self._runtimes.call,
            agent_name,
            lambda rt: self._recorder.llm_call(
                rt,
                model,
                tokens_in=tokens_in,
                tokens_out=tokens_out,
                cost_usd=cost,
                duration_ms=duration_ms,
                run_id=run_id,
            ),
        )


def _turn(message: Any) -> tuple[str | None, str]:
    """(speaker, text) of a team message that is an agent's turn, else (None, "")."""
    if not isinstance(message, BaseChatMessage):
        return None, ""  # events inside a turn (tool call requests, memory queries, ...)
    source = getattr(message, "source", None)
    if not isinstance(source, str) or not source or source == "user":
        return None, ""
    to_text = getattr(message, "to_text", None)
    text = to_text() if callable(to_text) else str(getattr(message, "content", ""))
    return source, str(text)


def _new_run_id() -> str:
    return f"team-run-{uuid.uuid4().hex[:12]}"


class GuardedTool(BaseTool[BaseModel, Any]):
    """An AutoGen tool guarded by an :class:`OctopodaGuard` (same name, schema and result)."""

    def __init__(self, guard: OctopodaGuard, agent_name: str, tool: BaseTool[Any, Any]) -> None:
        super().__init__(
            args_type=tool.args_type(),
            return_type=tool.return_type(),
            name=tool.name,
            description=tool.description,
        )
        self._octopoda = guard
        self._agent = agent_name
        self.inner = tool

    @property
    def schema(self) -> Any:
        return self.inner.schema

    def return_value_as_string(self, value: Any) -> str:
        return self.inner.return_value_as_string(value)

    async def run(self, args: BaseModel, cancellation_token: CancellationToken) -> Any:
        return await self.inner.run(args, cancellation_token)

    async def run_json(
        self,
        args: Mapping[str, Any],
        cancellation_token: CancellationToken,
        call_id: str | None = None,
    ) -> Any:
        guard, name = self._octopoda, self.name
        verdict = await guard.guard(self._agent, name, parse_arguments(dict(args)))
        if verdict is not None:
            raise RunPaused(blocked_text(verdict, name), verdict)
        started = time.perf_counter()
        try:
            if call_id is None:
                result = await self.inner.run_json(args, cancellation_token)
            else:
                result = await self.inner.run_json(args, cancellation_token, call_id=call_id)
        except Exception as exc:
            elapsed = (time.perf_counter() - started) * 1000
            await guard.record_tool(
                self._agent, name, args, error=exc, duration_ms=elapsed, call_id=call_id
            )
            raise
        elapsed = (time.perf_counter() - started) * 1000
        await guard.record_tool(
            self._agent,
            name,
            args,
            result=self.inner.return_value_as_string(result),
            duration_ms=elapsed,
            call_id=call_id,
        )
        return result


def blocked_text(verdict: Verdict, tool: str) -> str:
    """What the agent sees as a refused call's error result: why, and the loop's calls."""
    return verdict.blocked_tool_text(tool) + _calls(verdict)


def _calls(verdict: Verdict) -> str:
    if not verdict.calls:
        return ""
    return " The calls: " + "; ".join(c.text() for c in verdict.calls) + "."


class GuardedModelClient(ChatCompletionClient):
    """A model client whose calls an :class:`OctopodaGuard` guards and records."""

    def __init__(self, guard: OctopodaGuard, agent_name: str, client: ChatCompletionClient) -> None:
        self._octopoda = guard
        self._agent = agent_name
        self.inner = client

    def _model(self) -> str:
        info = self.inner.model_info
        return str(info.get("family") or type(self.inner).__name__)

    async def _refuse_if_paused(self) -> None:
        verdict = await self._octopoda.guard(self._agent, f"llm:{self._model()}")
        if verdict is not None:
            raise RunPaused(verdict.stopped_text() + _calls(verdict), verdict)

    async def create(self, messages: Sequence[Any], **kwargs: Any) -> CreateResult:
        await self._refuse_if_paused()
        started = time.perf_counter()
        result = await self.inner.create(messages, **kwargs)
        elapsed = (time.perf_counter() - started) * 1000
        await self._octopoda.record_llm(self._agent, self._model(), result, elapsed)
        return result

    async def create_stream(
        self, messages: Sequence[Any], **kwargs: Any
    ) -> AsyncGenerator[str | CreateResult, None]:
        await self._refuse_if_paused()
        started = time.perf_counter()
        async for chunk in self.inner.create_stream(messages, **kwargs):
            if isinstance(chunk, CreateResult):
                elapsed = (time.perf_counter() - started) * 1000
                await self._octopoda.record_llm(self._agent, self._model(), chunk, elapsed)
            yield chunk

    async def close(self) -> None:
        await self.inner.close()

    def actual_usage(self) -> Any:
        return self.inner.actual_usage()

    def total_usage(self) -> Any:
        return self.inner.total_usage()

    def count_tokens(self, messages: Sequence[Any], **kwargs: Any) -> int:
        return self.inner.count_tokens(messages, **kwargs)

    def remaining_tokens(self, messages: Sequence[Any], **kwargs: Any) -> int:
        return self.inner.remaining_tokens(messages, **kwargs)

    @property
    def capabilities(self) -> Any:
        return self.inner.capabilities

    @property
    def model_info(self) -> Any:
        return self.inner.model_info


class OctopodaTermination(TerminationCondition):
    """Stops a team once its :class:`OctopodaGuard`'s run is paused (a loop under a pause
    policy, a cap, or a pause from another process), with a stop message naming the loop's
    calls. Combine it: ``guard.termination() | TextMentionTermination("TERMINATE")``.
    ``reset`` (called by the team when a run ends) starts the guard's next run."""

    def __init__(self, guard: OctopodaGuard) -> None:
        self._octopoda = guard
        self._terminated = False

    @property
    def terminated(self) -> bool:
        return self._terminated

    async def __call__(self, messages: Sequence[Any]) -> StopMessage | None:
        if self._terminated:
            raise _already_terminated()
        await self._octopoda.record_turns(messages)
        verdict = await self._octopoda.check()
        if verdict is None:
            return None
        self._terminated = True
        return StopMessage(content=stop_text(verdict), source="OctopodaTermination")

    async def reset(self) -> None:
        self._terminated = False
        self._octopoda.new_run()


def stop_text(verdict: Verdict) -> str:
    """The team's stop message: who is paused, why, and the calls of the loop."""
    return verdict.stopped_text() + _calls(verdict)


def _already_terminated() -> BaseException:
    from autogen_agentchat.base import TerminatedException

    return TerminatedException("Termination condition has already been reached")
