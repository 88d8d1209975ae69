"""guard.workbench: the tools of a Workbench (AssistantAgent(workbench=...)) guarded and
recorded like guarded tools, in real agent turns; a paused run's call is an error result
saying why; a looping team stops. autogen-core 0.4.x has no Workbench: those tests skip
and guard.workbench says what to do instead."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

import autogen_core.tools
import pytest
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.conditions import TextMentionTermination
from autogen_agentchat.teams import RoundRobinGroupChat
from autogen_core.tools import FunctionTool
from octopoda_autogen import OctopodaGuard

from octopoda import InvalidInput, LoopPolicy

HAS_WORKBENCH = hasattr(autogen_core.tools, "Workbench")
needs_workbench = pytest.mark.skipif(
    not HAS_WORKBENCH, reason="autogen-core before 0.5 has no Workbench"
)
pytestmark = pytest.mark.replay


def scripted() -> Any:
    import scripted as module

    return module


def bench(guard: OctopodaGuard, agent: str = "worker") -> Any:
    from autogen_core.tools import StaticWorkbench

    s = scripted()
    tools = [
        FunctionTool(s.lookup, description="Weather."),
        FunctionTool(s.fetch, description="Fetch a URL."),
    ]
    return guard.workbench(agent, StaticWorkbench(tools))


@needs_workbench
def test_workbench_calls_run_and_are_recorded_in_an_agent_turn(store: Any) -> None:
    from autogen_core.tools import Workbench

    guard = OctopodaGuard(store, run_id="wb-run")
    s = scripted()
    workbench = bench(guard)
    assert isinstance(workbench, Workbench)
    agent = AssistantAgent(
        "worker",
        model_client=s.client(s.call("lookup", "w1", city="Oslo"), "Sunny. TERMINATE"),
        workbench=workbench,
        reflect_on_tool_use=True,
    )

    async def scenario() -> tuple[Any, list[str], Any]:
        result = await agent.run(task="Weather in Oslo?")
        names = [t["name"] for t in await workbench.list_tools()]
        return result, names, await workbench.save_state()

    result, names, state = asyncio.run(scenario())
    assert names == ["lookup", "fetch"]  # the inner workbench's tools
    assert "tools" in state  # the inner workbench's state
    executions = [m for m in result.messages if type(m).__name__ == "ToolCallExecutionEvent"]
    (outcome,) = executions[0].content
    assert outcome.content == "sunny in Oslo" and not outcome.is_error
    assert result.messages[-1].content == "Sunny. TERMINATE"
    (event,) = [e for e in guard.runtime("worker").timeline() if e.kind == "tool_call"]
    assert event.payload["name"] == "lookup"
    assert event.payload["run_id"] == "wb-run"
    assert "Oslo" in str(event.payload)
    assert event.payload["result_preview"] == '"sunny in Oslo"'  # JSON text
    if "call_id" in inspect.signature(autogen_core.tools.Workbench.call_tool).parameters:
        assert event.payload.get("call_id") == "w1"
    assert guard.runtime("worker").audit.verify().ok


@needs_workbench
def test_a_paused_run_gets_an_error_result_from_the_workbench_saying_why(store: Any) -> None:
    guard = OctopodaGuard(store, policy=LoopPolicy("pause"), run_id="fixed-run")
    guard.runtime("worker").pause("stopped by hand", run_id="fixed-run")
    s = scripted()
    agent = AssistantAgent(
        "worker",
        model_client=s.client(s.call("lookup", "k1", city="Rome"), "done"),
        workbench=bench(guard),
    )
    result = asyncio.run(agent.run(task="Weather in Rome?"))
    executions = [m for m in result.messages if type(m).__name__ == "ToolCallExecutionEvent"]
    (outcome,) = executions[0].content
    assert outcome.is_error
    assert "[octopoda] The tool 'lookup' was not run" in outcome.content
    assert "stopped by hand" in outcome.content
    assert not [e for e in guard.runtime("worker").timeline() if e.kind == "tool_call"]


@needs_workbench
def test_a_team_looping_on_a_failing_workbench_tool_stops_naming_the_calls(store: Any) -> None:
    guard = OctopodaGuard(store, policy=LoopPolicy("pause"))
    run_id, s = guard.run_id, scripted()
    worker = AssistantAgent(
        "worker",
        model_client=s.client(*[s.call("fetch", f"c{i}", url="https://x.test") for i in range(6)]),
        workbench=bench(guard),
    )
    stop = guard.termination() | TextMentionTermination("TERMINATE")
    team = RoundRobinGroupChat([worker], termination_condition=stop, max_turns=6)
    result = asyncio.run(team.run(task="Fetch it"))
    stop_reason = result.stop_reason
    assert stop_reason is not None
    assert stop_reason.startswith(f"Stopped: Octopoda paused run {run_id!r}")
    assert "retry loop" in stop_reason
    assert stop_reason.count('fetch({"url":"https://x.test"})') == 3
    events = [e for e in guard.runtime("worker").timeline() if e.kind == "tool_call"]
    assert len(events) == 3 and all("HTTP 503" in e.payload["error"] for e in events)
    assert [r.id for r in guard.runtime("worker").runs(status="paused")] == [run_id]
    assert guard.runtime("worker").audit.verify().ok


@pytest.mark.skipif(HAS_WORKBENCH, reason="this line has a Workbench")
def test_without_workbench_guard_workbench_says_to_use_guarded_tools(store: Any) -> None:
    guard = OctopodaGuard(store)
    with pytest.raises(InvalidInput, match=r"autogen-core 0.5 or later.*guard.tools"):
        guard.workbench("worker", object())  # type: ignore[arg-type]
