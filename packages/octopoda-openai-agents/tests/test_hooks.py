"""OctopodaRunHooks: the loop breaker, usage and cost, handoff ping-pong."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from agents import Agent, RunConfig, Runner, function_tool
from octopoda_openai_agents import OctopodaRunHooks, OctopodaSession, RunPaused
from octopoda_openai_agents.testing import ScriptedModel, assistant_message, function_call, usage

from octopoda import AgentPaused, InvalidInput, LoopPolicy, SqliteStore

OFFLINE = RunConfig(tracing_disabled=True)


def run(agent: Agent[Any], hooks: OctopodaRunHooks, **kw: Any) -> Any:
    return asyncio.run(Runner.run(agent, "go", hooks=hooks, run_config=OFFLINE, **kw))


def weather_agent(calls: list[str], steps: int = 10) -> Agent[Any]:
    @function_tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        calls.append(city)
        raise TimeoutError("weather service timed out after 3000 ms")

    model = ScriptedModel(
        [[function_call("get_weather", {"city": "Paris"}, call_id=f"c{i}")] for i in range(steps)]
        + [[assistant_message("I could not get the weather.")]]
    )
    return Agent(name="weather", model=model, tools=[get_weather])


def test_the_breaker_stops_a_tool_retry_loop(store: SqliteStore) -> None:
    calls: list[str] = []
    agent = weather_agent(calls)
    hooks = OctopodaRunHooks(store, policy=LoopPolicy("pause"))
    session = OctopodaSession("chat", store)
    with pytest.raises(AgentPaused) as caught:
        run(agent, hooks, session=session)
    exc = caught.value
    assert isinstance(exc, RunPaused)
    assert calls == ["Paris"] * 3  # the third failure paused the agent; no fourth call
    message = str(exc)
    assert "retry loop" in message and "get_weather" in message
    for call_id in ("c0", "c1", "c2"):
        assert f"call_id={call_id}" in message
    assert [c[1] for c in exc.calls] == ["c0", "c1", "c2"]
    assert all(c[0] == "get_weather" and c[2] == '{"city":"Paris"}' for c in exc.calls)
    assert exc.signal["kind"] == "retry"

    runtime = hooks.runtime(agent)
    assert runtime.paused
    assert [s.kind for s in runtime.loop_history()] == ["retry"]
    kinds = [e.kind for e in runtime.timeline()]
    assert kinds.count("tool_call") == 3 and kinds[-2:] == ["loop_detected", "paused"]
    failed = [e.payload for e in runtime.timeline(kinds=["tool_call"])]
    assert all("error" in p and p["args_preview"] == '{"city":"Paris"}' for p in failed)
    assert runtime.audit.verify().ok
    assert session.runtime.audit.verify().ok
    assert len(asyncio.run(session.get_items())) == 7  # input + 3 x (call, output)

    # once the cause is fixed and the agent resumed, it runs again
    assert runtime.resume()
    assert not runtime.paused


def test_a_paused_agent_does_not_start(store: SqliteStore) -> None:
    calls: list[str] = []
    hooks = OctopodaRunHooks(store)
    hooks.runtime("weather").pause("maintenance window")
    with pytest.raises(RunPaused, match="maintenance window"):
        run(weather_agent(calls), hooks)
    # without the LLM guard the run reaches the tool call, which is refused
    hooks = OctopodaRunHooks(store, guard_llm_calls=False)
    with pytest.raises(RunPaused, match="maintenance window"):
        run(weather_agent(calls), hooks)
    assert calls == []


def test_without_a_policy_loops_are_detected_not_stopped(store: SqliteStore) -> None:
    calls: list[str] = []
    hooks = OctopodaRunHooks(store)
    result = run(weather_agent(calls, steps=4), hooks)
    assert result.final_output == "I could not get the weather."
    assert len(calls) == 4
    runtime = hooks.runtime("weather")
    assert not runtime.paused and [s.kind for s in runtime.loop_history()] == ["retry"]


def test_progress_is_not_a_loop(store: SqliteStore) -> None:
    counter = iter(range(100))

    @function_tool
    def poll(job: str) -> str:
        """Poll a job."""
        return f"{next(counter) * 10}% done"

    model = ScriptedModel(
        [[function_call("poll", {"job": "j1"}, call_id=f"p{i}")] for i in range(8)]
        + [[assistant_message("done")]]
    )
    hooks = OctopodaRunHooks(store, policy=LoopPolicy("pause"))
    result = run(Agent(name="poller", model=model, tools=[poll]), hooks)
    assert result.final_output == "done"
    runtime = hooks.runtime("poller")
    assert runtime.loop_history() == [] and not runtime.paused
    results = [e.payload["result_preview"] for e in runtime.timeline(kinds=["tool_call"])]
    assert results[:2] == ['"0% done"', '"10% done"']
    assert all(e.payload["duration_ms"] >= 0 for e in runtime.timeline(kinds=["tool_call"]))


def test_llm_usage_and_cost_are_recorded(store: SqliteStore) -> None:
    @function_tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    model = ScriptedModel(
        [[function_call("add", {"a": 2, "b": 3}, call_id="c1")], [assistant_message("5")]],
        default_usage=usage(1000, 500),
    )
    agent = Agent(name="calc", model=model, tools=[add])
    hooks = OctopodaRunHooks(store, prices={"ScriptedModel": (2.0, 8.0)}, agent_prefix="app/")
    run(agent, hooks)
    runtime = hooks.runtime(agent)
    assert runtime.agent_id == "app/calc"
    stats = runtime.stats()
    assert (stats.llm_calls, stats.tool_calls) == (2, 1)
    assert (stats.tokens_in, stats.tokens_out) == (2000, 1000)
    assert stats.spend_usd == pytest.approx(2 * (1000 * 2.0 + 500 * 8.0) / 1e6)
    llm = runtime.timeline(kinds=["llm_call"])[0].payload
    assert llm["model"] == "ScriptedModel" and llm["cost_usd"] == pytest.approx(0.006)


def test_a_spend_cap_stops_the_run(store: SqliteStore) -> None:
    calls: list[str] = []
    agent = weather_agent(calls)
    agent.model = ScriptedModel(
        [[function_call("get_weather", {"city": "Rome"}, call_id="c1")]],
        default_usage=usage(1000, 500),
    )
    hooks = OctopodaRunHooks(
        store,
        policy=LoopPolicy(spend_cap_usd=0.005),
        prices={"ScriptedModel": (2.0, 8.0)},
    )
    with pytest.raises(RunPaused, match="spend cap"):
        run(agent, hooks)
    assert calls == []  # the first call cost $0.006: the tool call was refused


def test_unknown_models_cost_nothing_and_prices_are_checked(store: SqliteStore) -> None:
    with pytest.raises(InvalidInput, match="per million tokens"):
        OctopodaRunHooks(store, prices={"m": (1.0,)})  # type: ignore[dict-item]
    with pytest.raises(InvalidInput):
        OctopodaRunHooks(store, prices={"m": (-1.0, 1.0)})


def test_handoff_ping_pong_is_stopped(store: SqliteStore) -> None:
    triage = Agent(name="triage", instructions="Route.")
    billing = Agent(name="billing", instructions="Bill.")
    triage.handoffs = [billing]
    billing.handoffs = [triage]
    triage.model = ScriptedModel(
        [[function_call("transfer_to_billing", {}, call_id=f"t{i}")] for i in range(10)]
    )
    billing.model = ScriptedModel(
        [[function_call("transfer_to_triage", {}, call_id=f"b{i}")] for i in range(10)]
    )
    hooks = OctopodaRunHooks(store, policy=LoopPolicy("pause"))
    with pytest.raises(RunPaused, match=r"ping_pong|ping-pong") as caught:
        run(triage, hooks, max_turns=30)
    assert "handoff to" in str(caught.value)
    handoffs = [
        (e.agent, e.payload["to"])
        for name in ("triage", "billing")
        for e in hooks.runtime(name).timeline(kinds=["handoff"])
    ]
    assert ("triage", "billing") in handoffs and ("billing", "triage") in handoffs
    assert len(handoffs) <= 5
    for name in ("triage", "billing"):
        assert hooks.runtime(name).audit.verify().ok


def test_without_a_policy_handoffs_go_on(store: SqliteStore) -> None:
    triage = Agent(name="triage")
    billing = Agent(name="billing")
    triage.handoffs = [billing]
    billing.handoffs = [triage]
    triage.model = ScriptedModel(
        [[function_call("transfer_to_billing", {}, call_id=f"t{i}")] for i in range(3)]
        + [[assistant_message("all settled")]]
    )
    billing.model = ScriptedModel(
        [[function_call("transfer_to_triage", {}, call_id=f"b{i}")] for i in range(3)]
    )
    hooks = OctopodaRunHooks(store)  # detection only: the run goes on
    result = run(triage, hooks, max_turns=30)
    assert result.final_output == "all settled"
    assert hooks.runtime("triage").stats().operations.get("handoff") == 3
