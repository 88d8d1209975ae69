"""OctopodaGuard in teams: a RoundRobinGroupChat whose agent keeps calling a failing tool
is stopped by OctopodaTermination with a message naming the calls; the paused agent gets an
error result saying why; a second team in the same process is unaffected; model calls are
recorded; the chain verifies."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

import pytest

pytestmark = pytest.mark.replay

from autogen_agentchat.agents import AssistantAgent  # noqa: E402
from autogen_agentchat.conditions import TextMentionTermination  # noqa: E402
from autogen_agentchat.messages import StopMessage  # noqa: E402
from autogen_agentchat.teams import RoundRobinGroupChat  # noqa: E402
from autogen_core.tools import BaseTool, FunctionTool  # noqa: E402
from octopoda_autogen import OctopodaGuard, OctopodaTermination  # noqa: E402

from octopoda import LoopPolicy  # noqa: E402

# AutoGen passes its call ids to tools from 0.6 on (run_json's call_id); before, the calls are
# named by tool and arguments only.
PASSES_CALL_IDS = "call_id" in inspect.signature(BaseTool.run_json).parameters


def scripted() -> Any:
    import scripted as module

    return module


def looping_team(guard: OctopodaGuard, calls: int = 6) -> RoundRobinGroupChat:
    s = scripted()
    worker_client = s.client(
        *[s.call("fetch", f"c{i}", url="https://x.test") for i in range(calls)]
    )
    worker = AssistantAgent(
        "worker",
        model_client=guard.model_client("worker", worker_client),
        tools=guard.tools("worker", [FunctionTool(s.fetch, description="Fetch a URL.")]),
    )
    stop = guard.termination() | TextMentionTermination("TERMINATE")
    return RoundRobinGroupChat([worker], termination_condition=stop, max_turns=calls)


def working_team(guard: OctopodaGuard) -> RoundRobinGroupChat:
    s = scripted()
    worker = AssistantAgent(
        "worker",
        model_client=guard.model_client(
            "worker", s.client(s.call("lookup", "w1", city="Oslo"), "It is sunny. TERMINATE")
        ),
        tools=guard.tools("worker", [FunctionTool(s.lookup, description="Weather.")]),
        reflect_on_tool_use=True,
    )
    stop = guard.termination() | TextMentionTermination("TERMINATE")
    return RoundRobinGroupChat([worker], termination_condition=stop, max_turns=4)


def test_a_looping_team_stops_with_a_message_naming_the_calls(store: Any) -> None:
    guard = OctopodaGuard(store, policy=LoopPolicy("pause"))
    other = OctopodaGuard(store, policy=LoopPolicy("pause"))
    run_id = guard.run_id

    async def scenario() -> tuple[Any, Any]:
        return await looping_team(guard).run(task="Fetch it"), await working_team(other).run(
            task="Weather in Oslo?"
        )

    result, unaffected = asyncio.run(scenario())
    stop = result.stop_reason  # the StopMessage's text
    assert stop is not None and stop.startswith(f"Stopped: Octopoda paused run {run_id!r}")
    assert "retry loop" in stop
    assert 'The calls: fetch({"url":"https://x.test"})' in stop
    assert stop.count('fetch({"url":"https://x.test"})') == 3
    if PASSES_CALL_IDS:
        assert "call_id=c0;" in stop and "call_id=c1;" in stop and "call_id=c2." in stop
    assert not any(isinstance(m, StopMessage) and "TERMINATE" in m.content for m in result.messages)
    # three failures of the same call: the retry signal paused the run after the third
    worker = guard.runtime("worker")
    tool_events = [e for e in worker.timeline() if e.kind == "tool_call"]
    runs = [e.payload.get("run_id") for e in tool_events]
    assert runs.count(run_id) == 3
    assert runs.count(other.run_id) == 0  # its run ended: the guard moved on to the next
    assert len(runs) == 4  # the other team's one lookup, in its own run
    assert [r.id for r in worker.runs(status="paused")] == [run_id]
    # the second team (its own guard and run, the same agent names and store) finished
    assert "TERMINATE" in unaffected.messages[-1].content
    assert worker.audit.verify().ok


def test_a_paused_run_gives_the_agent_an_error_result_saying_why(store: Any) -> None:
    guard = OctopodaGuard(store, policy=LoopPolicy("pause"), run_id="fixed-run")
    guard.runtime("worker").pause("stopped by hand", run_id="fixed-run")
    s = scripted()
    agent = AssistantAgent(
        "worker",
        model_client=s.client(s.call("lookup", "k1", city="Rome"), "done"),
        tools=guard.tools("worker", [FunctionTool(s.lookup, description="Weather.")]),
    )
    result = asyncio.run(agent.run(task="Weather in Rome?"))
    executions = [m for m in result.messages if type(m).__name__ == "ToolCallExecutionEvent"]
    (outcome,) = executions[0].content
    assert getattr(outcome, "is_error", True)  # no is_error field before 0.4.6
    assert "[octopoda] The tool 'lookup' was not run" in outcome.content
    assert "stopped by hand" in outcome.content
    assert not [e for e in guard.runtime("worker").timeline() if e.kind == "tool_call"]


def test_model_calls_are_recorded_with_tokens_and_the_termination_resets(store: Any) -> None:
    guard = OctopodaGuard(store)
    first = guard.run_id

    async def scenario() -> None:
        await working_team(guard).run(task="Weather?")

    asyncio.run(scenario())
    llm = [e for e in guard.runtime("worker").timeline() if e.kind == "llm_call"]
    assert len(llm) == 2
    assert llm[0].payload["tokens_in"] == 10 and llm[0].payload["tokens_out"] == 5
    assert {e.payload.get("run_id") for e in llm} == {first}
    assert guard.run_id != first  # the team's end of run started the next one


def test_termination_is_an_autogen_termination_condition(store: Any) -> None:
    from autogen_agentchat.base import TerminationCondition

    guard = OctopodaGuard(store)
    condition = guard.termination()
    assert isinstance(condition, OctopodaTermination)
    assert isinstance(condition, TerminationCondition)
    assert asyncio.run(condition([])) is None and not condition.terminated


def test_two_agents_passing_the_same_thing_back_and_forth_are_a_ping_pong(store: Any) -> None:
    s = scripted()
    guard = OctopodaGuard(store, policy=LoopPolicy("pause"))
    planner = AssistantAgent(
        "planner", model_client=s.client(*["Executor, please ship the report."] * 8)
    )
    executor = AssistantAgent(
        "executor", model_client=s.client(*["Planner, I cannot ship it; over to you."] * 8)
    )
    stop = guard.termination() | TextMentionTermination("TERMINATE")
    team = RoundRobinGroupChat([planner, executor], termination_condition=stop, max_turns=16)
    result = asyncio.run(team.run(task="Ship the report"))
    assert result.stop_reason is not None
    assert "ping" in result.stop_reason.lower() or "pong" in result.stop_reason.lower()
    assert "handoff to autogen:" in result.stop_reason  # the passes, named
    turns = [m for m in result.messages if getattr(m, "source", "") in ("planner", "executor")]
    assert len(turns) < 16  # stopped well before max_turns
    handoffs = [e for e in guard.runtime("planner").timeline() if e.kind == "handoff"]
    assert handoffs and all(e.payload.get("run_id") for e in handoffs)
    assert guard.runtime("planner").audit.verify().ok
    assert guard.runtime("executor").audit.verify().ok


def test_a_selector_team_passing_the_same_thing_back_and_forth_is_stopped(store: Any) -> None:
    from autogen_agentchat.teams import SelectorGroupChat

    s = scripted()
    guard = OctopodaGuard(store, policy=LoopPolicy("pause"))
    planner = AssistantAgent(
        "planner", model_client=s.client(*["Executor, please ship the report."] * 8)
    )
    executor = AssistantAgent(
        "executor", model_client=s.client(*["Planner, I cannot ship it; over to you."] * 8)
    )
    selector = s.client(*["executor", "planner"] * 8)  # the model that picks who speaks
    stop = guard.termination() | TextMentionTermination("TERMINATE")
    team = SelectorGroupChat(
        [planner, executor], model_client=selector, termination_condition=stop, max_turns=16
    )
    result = asyncio.run(team.run(task="Ship the report"))
    assert result.stop_reason is not None and "ping_pong loop" in result.stop_reason
    turns = [m for m in result.messages if getattr(m, "source", "") in ("planner", "executor")]
    assert len(turns) < 16
    assert guard.runtime("planner").audit.verify().ok


def test_a_swarm_handing_off_back_and_forth_is_stopped(store: Any) -> None:
    from autogen_agentchat.teams import Swarm

    s = scripted()
    guard = OctopodaGuard(store, policy=LoopPolicy("pause"))
    alice = AssistantAgent(
        "alice",
        model_client=s.client(*[s.call("transfer_to_bob", f"a{i}") for i in range(8)]),
        handoffs=["bob"],
    )
    bob = AssistantAgent(
        "bob",
        model_client=s.client(*[s.call("transfer_to_alice", f"b{i}") for i in range(8)]),
        handoffs=["alice"],
    )
    stop = guard.termination() | TextMentionTermination("TERMINATE")
    team = Swarm([alice, bob], termination_condition=stop, max_turns=16)
    result = asyncio.run(team.run(task="Who owns the refund?"))
    assert result.stop_reason is not None and "ping_pong loop" in result.stop_reason
    handoffs = [m for m in result.messages if type(m).__name__ == "HandoffMessage"]
    assert 4 <= len(handoffs) < 16
    assert guard.runtime("alice").audit.verify().ok and guard.runtime("bob").audit.verify().ok
