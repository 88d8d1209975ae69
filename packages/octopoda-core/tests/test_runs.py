"""Runs: loops are judged and paused per (agent, run), not per agent (issue 14, item 3).

One runtime serving many conversations (threads, sessions): three users each hitting the
same failing upstream once is nobody's loop (an outage, reported); one user failing three
times pauses that user's run only. The pause is in the store (every process sees it), the
timeline and the history say which run, and actions without a run id behave as before.
"""

from __future__ import annotations

import importlib.util
import logging
from pathlib import Path
from typing import Any

import pytest

from octopoda import (
    AgentPaused,
    AgentRuntime,
    InvalidInput,
    LoopPolicy,
    Outage,
    RunInfo,
    SqliteStore,
)
from octopoda.testing import FrozenClock

PROCS = Path(__file__).with_name("procs")
ARGS = {"city": "Lisbon"}
ERROR = "TimeoutError: weather API timed out after 30000 ms"
RUNS = ("thread-1", "thread-2", "thread-3")


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock()


def make(
    clock: FrozenClock, policy: LoopPolicy | None = None, store: Any = ":memory:"
) -> AgentRuntime:
    return AgentRuntime(
        "support-bot", store=store, policy=policy or LoopPolicy("pause"), clock=clock
    )


def turn(agent: AgentRuntime, run_id: str | None, call_id: str = "") -> int:
    """One tool call of a user's turn: guarded, then failing the same way every time."""
    agent.guard_tool_call("get_weather", ARGS, run_id=run_id)
    return agent.record_tool_call(
        "get_weather", ARGS, error=ERROR, run_id=run_id, call_id=call_id or None
    ).seq


# ============================================================================== the issue


def test_three_runs_each_failing_once_pause_nobody(clock: FrozenClock) -> None:
    agent = make(clock)
    seqs = [turn(agent, run) for run in RUNS]
    for run in (*RUNS, "thread-4"):  # every user, and a new one, keeps working
        agent.guard_tool_call("get_weather", ARGS, run_id=run)
    assert not agent.paused
    status = agent.loop_status()
    assert status.signals == ()
    assert status.state == "warning"  # an outage, not a loop
    (outage,) = status.outages
    assert isinstance(outage, Outage)
    assert (outage.tool, outage.runs, outage.seqs) == ("get_weather", RUNS, tuple(seqs))
    assert outage.error == ERROR
    assert [e.kind for e in agent.timeline()].count("outage_detected") == 1
    assert agent.loop_history() == []
    assert agent.runs(status="paused") == []


def test_one_run_failing_three_times_stops_only_that_run(clock: FrozenClock) -> None:
    agent = make(clock)
    first = turn(agent, "thread-2")  # other users' turns in between
    seqs = [turn(agent, "thread-1", f"call-{i}") for i in range(3)]
    with pytest.raises(AgentPaused) as info:
        agent.guard_tool_call("get_weather", ARGS, run_id="thread-1")
    exc = info.value
    assert exc.run_id == "thread-1"
    assert "run 'thread-1' of agent 'support-bot' is paused: retry loop" in str(exc)
    assert "agent.resume(run_id='thread-1')" in str(exc)
    assert exc.signal["run_id"] == "thread-1"
    assert exc.signal["kind"] == "retry"
    assert [e["seq"] for e in exc.signal["events"]] == seqs
    # the other users keep working, in this runtime and in a new one
    agent.guard_tool_call("get_weather", ARGS, run_id="thread-2")
    agent.guard_tool_call("get_weather", ARGS, run_id="thread-3")
    agent.guard_tool_call("get_weather", ARGS)  # the agent itself is not paused
    assert agent.store.agent("support-bot").status == "active"  # type: ignore[union-attr]
    assert agent.paused  # a pause is in effect: resume() has something to lift
    (signal,) = agent.loop_status().signals
    assert (signal.kind, signal.run_id, signal.seqs) == ("retry", "thread-1", tuple(seqs))
    assert agent.loop_status("thread-2").signals == ()
    assert agent.loop_status("thread-1").looping
    assert [s.run_id for s in agent.loop_history()] == ["thread-1"]
    assert agent.loop_history(run_id="thread-2") == []
    listed = {r.id: r for r in agent.runs()}
    assert set(listed) == {"thread-1", "thread-2"}
    assert listed["thread-1"].status == "paused"
    assert listed["thread-1"].pause_reason is not None
    assert listed["thread-1"].pause_reason.startswith("retry loop")
    assert listed["thread-2"] == RunInfo("thread-2", "active", clock.now, clock.now, 1, None)
    # one run read alone says the same as the list (exact ids only)
    assert agent.run_info("thread-1") == listed["thread-1"]
    assert agent.run_info("thread-2") == listed["thread-2"]
    assert agent.run_info("thread-3") is None  # (no event of it: its guard wrote nothing)
    assert agent.run_info("Thread-1") is None
    assert agent.run_info("thread") is None
    with pytest.raises(InvalidInput, match="run_id"):
        agent.run_info("")
    assert agent.audit.verify().ok
    assert first < seqs[0]


def test_resume_of_a_run_lifts_only_it_and_starts_its_detection_afresh(
    clock: FrozenClock,
) -> None:
    agent = make(clock)
    for run in ("thread-1", "thread-2"):
        for _ in range(3):
            turn(agent, run)
    assert {r.id for r in agent.runs(status="paused")} == {"thread-1", "thread-2"}
    assert agent.resume(run_id="thread-1")
    assert not agent.resume(run_id="thread-1")  # nothing left to lift
    assert not agent.resume(run_id="thread-9")
    agent.guard_tool_call("get_weather", ARGS, run_id="thread-1")
    with pytest.raises(AgentPaused):
        agent.guard_tool_call("get_weather", ARGS, run_id="thread-2")
    assert agent.loop_status("thread-1").signals == ()  # afresh
    turn(agent, "thread-1")  # one more failure is no loop yet
    agent.guard_tool_call("get_weather", ARGS, run_id="thread-1")
    assert agent.resume()  # None: every paused run (and the agent)
    assert not agent.paused and agent.runs(status="paused") == []
    resumed = agent.timeline(kinds=["resumed"])
    assert [e.payload.get("run_id") for e in resumed] == ["thread-1", "thread-2"]


def test_pause_scope_agent_pauses_the_whole_agent(clock: FrozenClock) -> None:
    agent = make(clock, LoopPolicy("pause", pause_scope="agent"))
    for _ in range(3):
        turn(agent, "thread-1")
    for run in (*RUNS, None):
        with pytest.raises(AgentPaused) as info:
            agent.guard_tool_call("get_weather", ARGS, run_id=run)
        assert info.value.run_id is None
    assert agent.runs(status="paused") == []  # the agent's own pause
    assert agent.stats().paused and agent.resume() and not agent.paused


def test_actions_without_a_run_pause_the_agent_as_before(clock: FrozenClock) -> None:
    agent = make(clock)
    seqs = [turn(agent, None) for _ in range(3)]
    with pytest.raises(AgentPaused) as info:
        agent.guard_tool_call("get_weather", ARGS, run_id="thread-1")
    assert info.value.run_id is None
    assert str(info.value).startswith("agent 'support-bot' is paused: retry loop")
    assert agent.store.agent("support-bot").status == "paused"  # type: ignore[union-attr]
    (signal,) = agent.loop_history()
    assert signal.run_id is None and signal.seqs == tuple(seqs)
    assert "run_id" not in agent.timeline(kinds=["loop_detected"])[0].payload
    assert agent.runs() == []


def test_caps_count_every_run_and_pause_the_agent(clock: FrozenClock) -> None:
    agent = make(clock, LoopPolicy(max_tool_calls=4))
    for i in range(4):
        agent.record_tool_call("search", {"q": i}, result=i, run_id=RUNS[i % 3])
    with pytest.raises(AgentPaused, match="tool-call cap") as info:
        agent.guard_tool_call("search", run_id="thread-3")
    assert info.value.run_id is None


def test_a_manual_pause_of_a_run(clock: FrozenClock) -> None:
    agent = make(clock, LoopPolicy())
    agent.pause("maintenance of this thread", run_id="thread-1")
    with pytest.raises(AgentPaused, match="maintenance of this thread"):
        agent.guard_tool_call("get_weather", run_id="thread-1")
    agent.guard_tool_call("get_weather", run_id="thread-2")
    stats = agent.stats()
    assert stats.paused and stats.paused_runs == ("thread-1",)
    assert stats.pause_reason == "maintenance of this thread"
    assert agent.resume("thread-1") and not agent.stats().paused


# ============================================================================== events


def test_events_carry_the_run_and_the_call_id(clock: FrozenClock) -> None:
    agent = make(clock, LoopPolicy())
    tool = agent.record_tool_call("t", {"a": 1}, result=2, run_id="r1", call_id="call_7")
    llm = agent.record_llm_call("gpt-4.1", tokens_in=5, run_id="r1", call_id="resp_1")
    handoff = agent.record_handoff("billing", {"why": "refund"}, run_id="r2")
    decision = agent.log_decision("refund", run_id="r2")
    message = agent.send_message("billing", {"hi": 1}, run_id="r2")
    plain = agent.record_tool_call("t", {"a": 1}, result=2)
    assert (tool.payload["run_id"], tool.payload["call_id"]) == ("r1", "call_7")
    assert (llm.payload["run_id"], llm.payload["call_id"]) == ("r1", "resp_1")
    assert handoff.payload["run_id"] == "r2" and message.run_id == "r2"
    assert "run_id" not in plain.payload and "call_id" not in plain.payload
    assert [e.seq for e in agent.timeline(run_id="r1")] == [tool.seq, llm.seq]
    r2 = agent.timeline(run_id="r2")
    assert [e.seq for e in r2] == [handoff.seq, decision.seq, r2[-1].seq]
    assert agent.timeline(run_id="r1", kinds=["llm_call"]) == [llm]
    received = AgentRuntime("billing", store=agent.store).read_messages()
    assert [(m.message_type, m.run_id) for m in received] == [("handoff", "r2"), ("info", "r2")]
    assert agent.audit.verify().ok


@pytest.mark.parametrize(
    "bad", ["", 7, "x" * 513, "a\x00b", "\ud800"], ids=["empty", "int", "long", "nul", "surrogate"]
)
def test_run_and_call_ids_are_checked(clock: FrozenClock, bad: Any) -> None:
    agent = make(clock)
    with pytest.raises(InvalidInput, match=r"run_id|run id"):
        agent.record_tool_call("t", run_id=bad)
    with pytest.raises(InvalidInput, match=r"call_id|call id"):
        agent.record_llm_call("m", call_id=bad)
    with pytest.raises(InvalidInput):
        agent.guard_tool_call("t", run_id=bad)
    with pytest.raises(InvalidInput):
        agent.runs(status="stopped")
    assert agent.timeline() == []


def test_a_guarded_run_call_is_one_statement(tmp_path: Path, clock: FrozenClock) -> None:
    statements: list[str] = []
    store = SqliteStore(tmp_path / "a.db", tracer=statements.append)
    agent = AgentRuntime("bot", store=store, policy=LoopPolicy("pause"), clock=clock)
    agent.record_tool_call("t", {"a": 1}, result=1, run_id="r1")
    statements.clear()
    agent.guard_tool_call("t", {"a": 1}, run_id="r1")
    assert len(statements) == 1 and "runs" in statements[0], statements


# ============================================================================== detectors


def test_the_same_handoff_once_per_run_is_no_ping_pong(clock: FrozenClock) -> None:
    triage = make(clock)
    billing = AgentRuntime("billing", store=triage.store, policy=LoopPolicy("pause"), clock=clock)
    for run in (*RUNS, "thread-4"):  # each conversation routed there and back once
        triage.record_handoff("billing", {"to": "billing"}, run_id=run)
        billing.record_handoff("support-bot", {"to": "triage"}, run_id=run)
    assert triage.loop_status().signals == () and billing.loop_status().signals == ()
    for _ in range(3):  # one conversation bouncing: its ping-pong
        triage.record_handoff("billing", {"to": "billing"}, run_id="thread-9")
        billing.record_handoff("support-bot", {"to": "triage"}, run_id="thread-9")
    kinds = {s.kind for s in triage.loop_status().signals + billing.loop_status().signals}
    assert kinds == {"ping_pong"}
    paused = {r.id for a in (triage, billing) for r in a.runs(status="paused")}
    assert paused == {"thread-9"}
    billing.guard_tool_call("refund", run_id="thread-1")


def test_decisions_are_restated_only_within_a_run(clock: FrozenClock) -> None:
    agent = make(clock, LoopPolicy())
    first = agent.log_decision("Refund the order and close the ticket", run_id="r1")
    other = agent.log_decision("Refund the order and close the ticket", run_id="r2")
    again = agent.log_decision("Refund the order and close the ticket", run_id="r1")
    assert first.repeats_seq is None and other.repeats_seq is None
    assert again.repeats_seq == first.seq


def test_run_states_are_bounded_and_keep_looping_runs(clock: FrozenClock) -> None:
    agent = make(clock)
    agent._guard.runs.max_runs = 8
    for _ in range(3):
        turn(agent, "looping")
    for i in range(40):
        agent.record_tool_call("lookup", {"i": i}, result=i, run_id=f"user-{i}")
    assert len(agent._guard.runs) == 1 + 8
    assert agent._guard.runs.peek("looping") is not None  # not idle: kept
    assert agent._guard.runs.peek("user-0") is None
    assert agent.runs(status="paused")[0].id == "looping"
    assert agent.stats().loops_detected == 1


def test_a_new_runtime_rebuilds_each_run_from_the_replay(
    tmp_path: Path, clock: FrozenClock
) -> None:
    path = tmp_path / "a.db"
    agent = make(clock, LoopPolicy(), store=path)
    seqs = [turn(agent, "thread-1") for _ in range(3)]
    turn(agent, "thread-2")
    agent.close()
    again = make(clock, LoopPolicy(), store=path)
    (signal,) = again.loop_status().signals
    assert (signal.run_id, signal.seqs) == ("thread-1", tuple(seqs))
    assert again.loop_status("thread-2").signals == ()
    assert again.stats().loops_detected == 0  # not recorded twice
    assert [e.kind for e in again.timeline()].count("loop_detected") == 1


# ============================================================================== outages


def test_an_outage_ends_when_the_tool_works_and_is_never_a_pause(clock: FrozenClock) -> None:
    agent = make(clock, LoopPolicy("pause", outage_runs=4))
    for run in RUNS:
        turn(agent, run)
    assert agent.loop_status().outages == ()  # 3 runs: below this policy's 4
    turn(agent, "thread-4")
    assert len(agent.loop_status().outages) == 1
    assert agent.loop_status("thread-4").outages == agent.loop_status().outages
    assert agent.loop_status("thread-9").outages == ()
    for run in ("thread-5", "thread-6"):  # it goes on: still one outage, recorded once
        turn(agent, run)
    assert len(agent.loop_status().outages[0].runs) == 6
    agent.record_tool_call("get_weather", ARGS, result={"temp": 21}, run_id="thread-7")
    assert agent.loop_status() == ("ok", ())
    assert [e.kind for e in agent.timeline()].count("outage_detected") == 1
    assert not agent.paused


def test_an_outage_ends_after_its_window(clock: FrozenClock, caplog: Any) -> None:
    agent = make(clock)
    with caplog.at_level(logging.WARNING, logger="octopoda"):
        for run in RUNS:
            turn(agent, run)
    assert "outage: get_weather failed the same way in 3 runs" in caplog.text
    event = agent.timeline(kinds=["outage_detected"])[0]
    assert event.payload["runs"] == list(RUNS) and "run_id" not in event.payload
    clock.advance(601)
    assert agent.loop_status().outages == ()
    for run in RUNS:  # a new outage later is recorded again
        turn(agent, run)
    assert len(agent.timeline(kinds=["outage_detected"])) == 2


def test_policy_options_of_runs_are_checked() -> None:
    with pytest.raises(InvalidInput, match="pause_scope"):
        LoopPolicy("pause", pause_scope="thread")
    with pytest.raises(InvalidInput, match="outage_runs"):
        LoopPolicy(outage_runs=1)
    with pytest.raises(InvalidInput, match="outage_window_seconds"):
        LoopPolicy(outage_window_seconds=0)


# ============================================================================== processes


def _driver() -> Any:
    spec = importlib.util.spec_from_file_location("loop_driver", PROCS / "loop_driver.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_run_pause_is_seen_by_another_process_and_lifted_there(tmp_path: Path) -> None:
    db = tmp_path / "agents.db"
    SqliteStore(db).close()
    with _driver().AgentProcess(db, "support-bot", {"on_loop": "pause"}) as bot:
        for _ in range(3):
            answer = bot.call("tool", name="get_weather", args=ARGS, error=ERROR, run="t1")
        assert answer["paused"] is True
        operator = AgentRuntime("support-bot", store=db)
        with pytest.raises(AgentPaused) as info:
            operator.guard_tool_call("get_weather", ARGS, run_id="t1")
        assert info.value.run_id == "t1" and "retry loop" in info.value.reason
        operator.guard_tool_call("get_weather", ARGS, run_id="t2")
        assert bot.call("guard", name="get_weather", args=ARGS, run="t2")["ok"]
        assert operator.resume(run_id="t1")
        answer = bot.call("guard", name="get_weather", args=ARGS, run="t1")
        assert answer["ok"] and answer["paused"] is False, answer
        assert bot.call("status", run="t1")["result"]["signals"] == []
    fresh = AgentRuntime("support-bot", store=db)
    kinds = [(e.kind, e.payload.get("run_id")) for e in fresh.timeline(kinds=["paused", "resumed"])]
    assert kinds == [("paused", "t1"), ("resumed", "t1")]
    assert fresh.audit.verify().ok


def test_a_runtime_opened_during_a_pause_lets_a_resume_from_elsewhere_take(
    tmp_path: Path, clock: FrozenClock
) -> None:
    """A runtime that starts while a run (or the agent) is paused replays the loop that
    paused it; once the pause is lifted in another runtime, it must not pause again on
    the replayed signal."""
    path = tmp_path / "a.db"
    first = make(clock, store=path)
    for _ in range(3):
        turn(first, "t1")
    for _ in range(3):
        turn(first, None)  # and the agent itself
    second = make(clock, store=path)
    assert second.loop_status("t1").looping  # replayed
    with pytest.raises(AgentPaused):
        second.guard_tool_call("get_weather", ARGS, run_id="t1")
    assert first.resume()  # the agent and t1, in the other runtime
    second.guard_tool_call("get_weather", ARGS, run_id="t1")
    second.guard_tool_call("get_weather", ARGS)
    assert not second.paused and second.loop_status() == ("ok", ())
    third = make(clock, store=path)  # replays the pauses and the resumes
    third.guard_tool_call("get_weather", ARGS, run_id="t1")
    assert third.loop_status().signals == ()
