"""Runs: the hooks judge and pause loops per conversation, in real ``Runner.run`` calls.

One ``OctopodaRunHooks`` and one SDK agent serve many conversations: three users each
hitting the same failing upstream once pause nobody (an outage, reported); one user's
conversation failing three times is stopped, and only it.
"""

from __future__ import annotations

import asyncio
from importlib.metadata import version
from typing import Any

import agents
import pytest
from agents import Agent, RunConfig, Runner, function_tool
from octopoda_openai_agents import (
    OctopodaRunHooks,
    OctopodaSession,
    OctopodaTracingProcessor,
    RunPaused,
)
from octopoda_openai_agents.testing import ScriptedModel, assistant_message, function_call

from octopoda import InvalidInput, LoopPolicy, SqliteStore

SDK = tuple(int(p) for p in version("openai-agents").split(".")[:2])
OFFLINE = RunConfig(tracing_disabled=True)
ANSWER = "I could not get the weather."
USERS = ("alice", "bob", "carol")
SESSIONS = pytest.mark.skipif(SDK < (0, 20), reason="sessions receive the run context from 0.20")


def weather_agent(calls: list[str], steps: int, prefix: str = "c") -> Agent[Any]:
    """The same SDK agent for every conversation; its weather upstream is down."""

    @function_tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        calls.append(city)
        raise TimeoutError("weather service timed out after 3000 ms")

    model = ScriptedModel(
        [
            [function_call("get_weather", {"city": "Paris"}, call_id=f"{prefix}{i}")]
            for i in range(steps)
        ]
        + [[assistant_message(ANSWER)]]
    )
    return Agent(name="weather", model=model, tools=[get_weather])


def run(agent: Agent[Any], hooks: OctopodaRunHooks, **kw: Any) -> Any:
    kw.setdefault("run_config", OFFLINE)
    return asyncio.run(Runner.run(agent, "Weather in Paris?", hooks=hooks, **kw))


@SESSIONS
def test_sessions_are_runs_one_looping_session_is_stopped_alone(store: SqliteStore) -> None:
    hooks = OctopodaRunHooks(store, policy=LoopPolicy("pause"))
    sessions = {user: OctopodaSession(user, store) for user in USERS}
    calls: list[str] = []
    for user in USERS:  # each user hits the failing upstream once
        result = run(weather_agent(calls, 1, f"{user}-"), hooks, session=sessions[user])
        assert result.final_output == ANSWER
    runtime = hooks.runtime("weather")
    assert not runtime.paused and runtime.loop_status().signals == ()
    (outage,) = runtime.loop_status().outages  # reported: the same failure in 3 runs
    assert outage.tool == "get_weather" and outage.runs == USERS

    # alice's conversation goes on failing: its third failure stops it
    with pytest.raises(RunPaused) as caught:
        run(weather_agent(calls, 10, "alice-more-"), hooks, session=sessions["alice"])
    exc = caught.value
    assert exc.run_id == "alice" and exc.signal["run_id"] == "alice"
    assert "run 'alice' of agent 'weather' is paused: retry loop" in str(exc)
    assert [c[1] for c in exc.calls] == ["alice-0", "alice-more-0", "alice-more-1"]
    assert len(calls) == 3 + 2
    assert [r.id for r in runtime.runs(status="paused")] == ["alice"]

    # the others keep working, in the same hooks, agent and store
    for user in ("bob", "carol", "dave"):
        session = sessions.get(user) or OctopodaSession(user, store)
        result = run(weather_agent(calls, 1, f"{user}-again-"), hooks, session=session)
        assert result.final_output == ANSWER
    # alice stays stopped (before any model call) until her run is resumed
    with pytest.raises(RunPaused, match="run 'alice'"):
        run(weather_agent(calls, 1, "alice-blocked-"), hooks, session=sessions["alice"])
    assert len(calls) == 5 + 3
    assert runtime.resume(run_id="alice")
    result = run(weather_agent(calls, 1, "alice-after-"), hooks, session=sessions["alice"])
    assert result.final_output == ANSWER

    alice = runtime.timeline(run_id="alice", kinds=["tool_call"])
    assert [e.payload["call_id"] for e in alice][:3] == ["alice-0", "alice-more-0", "alice-more-1"]
    assert all(e.payload["run_id"] == "alice" for e in runtime.timeline(run_id="alice"))
    llm = runtime.timeline(run_id="bob", kinds=["llm_call"])
    assert len(llm) == 4 and all(e.payload["run_id"] == "bob" for e in llm)
    assert runtime.audit.verify().ok


def test_an_explicit_run_id_from_the_context_wins(store: SqliteStore) -> None:
    hooks = OctopodaRunHooks(
        store, policy=LoopPolicy("pause"), run_id=lambda ctx: ctx.context["user"]
    )
    calls: list[str] = []
    for user in USERS:
        result = run(weather_agent(calls, 1), hooks, context={"user": user})
        assert result.final_output == ANSWER
    assert not hooks.runtime("weather").paused
    with pytest.raises(RunPaused) as caught:
        run(weather_agent(calls, 10), hooks, context={"user": "bob"})
    assert caught.value.run_id == "bob" and len(calls) == 3 + 2
    result = run(weather_agent(calls, 1), hooks, context={"user": "alice"})
    assert result.final_output == ANSWER
    with pytest.raises(RunPaused):
        run(weather_agent(calls, 1), hooks, context={"user": "bob"})


def test_without_a_session_each_runner_run_is_its_own_run(store: SqliteStore) -> None:
    hooks = OctopodaRunHooks(store, policy=LoopPolicy("pause"))
    calls: list[str] = []
    for _ in range(3):  # two failures per run, three runs: no run loops
        assert run(weather_agent(calls, 2), hooks).final_output == ANSWER
    runtime = hooks.runtime("weather")
    assert not runtime.paused and len(runtime.runs()) == 3
    assert all(r.id.startswith("run_") for r in runtime.runs())
    with pytest.raises(RunPaused):
        run(weather_agent(calls, 10), hooks)  # three failures in one run
    assert run(weather_agent(calls, 1), hooks).final_output == ANSWER  # a new run goes on
    assert len(runtime.runs(status="paused")) == 1


def test_a_fixed_run_id_and_the_option_is_checked(store: SqliteStore) -> None:
    hooks = OctopodaRunHooks(store, run_id="ticket-7")
    run(weather_agent([], 1), hooks)
    assert [r.id for r in hooks.runtime("weather").runs()] == ["ticket-7"]
    with pytest.raises(InvalidInput, match="run_id"):
        OctopodaRunHooks(store, run_id=7)  # type: ignore[arg-type]


@pytest.fixture
def tracing_on() -> Any:
    agents.set_trace_processors([])  # nothing exported: no processor at all
    agents.set_tracing_disabled(False)
    yield
    agents.set_tracing_disabled(True)


@pytest.mark.usefixtures("tracing_on")
def test_the_trace_group_id_is_the_run(store: SqliteStore) -> None:
    hooks = OctopodaRunHooks(store)
    config = RunConfig(tracing_disabled=False, group_id="thread-42")
    for _ in range(2):
        run(weather_agent([], 1), hooks, run_config=config)
    runtime = hooks.runtime("weather")
    assert [r.id for r in runtime.runs()] == ["thread-42"]
    assert len(runtime.timeline(run_id="thread-42", kinds=["tool_call"])) == 2
    run(weather_agent([], 1), hooks, run_config=RunConfig(tracing_disabled=False))
    runs = runtime.runs()
    assert len(runs) == 2 and runs[0].id.startswith("trace_")  # the trace's own id


def test_the_tracing_processor_records_each_trace_s_run(store: SqliteStore) -> None:
    processor = OctopodaTracingProcessor(store)
    agents.set_trace_processors([processor])
    agents.set_tracing_disabled(False)
    try:
        config = RunConfig(tracing_disabled=False, group_id="thread-9")
        asyncio.run(Runner.run(weather_agent([], 1), "go", run_config=config))
    finally:
        agents.set_tracing_disabled(True)
        agents.set_trace_processors([])
    (event,) = processor.runtime("weather").timeline(kinds=["tool_call"])
    assert event.payload["run_id"] == "thread-9" and "error" in event.payload
