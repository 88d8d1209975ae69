"""Loop detection: the five signals at and below their thresholds, legitimate patterns that
must not be loops, loop shapes beyond the simple ones, status decay, and ping-pong between
agents in two processes.

Time is a :class:`~octopoda.testing.FrozenClock`; stores are ``":memory:"`` or files under
``tmp_path``. Thresholds (see ``octopoda._loops``): retry 3 identical failures or 5 same
results; oscillation 2 full cycles of 2..4 states; ping-pong 4 passes with at most half as
many distinct contents; reflection 3 near-identical decisions; recall-write 3 churns.
Confidence starts at 0.8 (0.7 for same results and oscillation) and halves the remaining
doubt with every further repetition. The default policy's ``min_confidence`` is 0.8, so a
0.7 signal makes the status ``warning`` and a 0.8 one ``looping``.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import logging
import random
import subprocess
import sys
import uuid
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from octopoda import AgentRuntime, Event, LoopSignal, Octopoda, SqliteStore
from octopoda._loops import (
    LoopMonitor,
    NoveltyTracker,
    OscillationDetector,
    ReflectionDetector,
    RetryDetector,
)
from octopoda._loops.gists import is_waiting, word_gist
from octopoda.testing import FrozenClock

PROCS = Path(__file__).with_name("procs")


def _load_driver() -> Any:
    spec = importlib.util.spec_from_file_location("loop_driver", PROCS / "loop_driver.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ------------------------------------------------------------------------------- helpers


@pytest.fixture(autouse=True)
def _quiet_octopoda_logger(caplog: pytest.LogCaptureFixture) -> None:
    """Every detection logs a warning (tested in test_breaker.py); silence them here."""
    caplog.set_level(logging.CRITICAL + 1, logger="octopoda")


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock()


def make(clock: FrozenClock, agent: str = "agent", store: Any = ":memory:") -> AgentRuntime:
    return AgentRuntime(agent, store=store, clock=clock)


def active(agent: AgentRuntime, kind: str | None = None) -> list[LoopSignal]:
    return [s for s in agent.loop_status().signals if kind is None or s.kind == kind]


def the_signal(agent: AgentRuntime, kind: str) -> LoopSignal:
    found = active(agent, kind)
    assert len(found) == 1, agent.loop_status()
    return found[0]


def assert_quiet(agent: AgentRuntime) -> None:
    """No active signal now, and none was ever detected (no ``loop_detected`` event)."""
    status = agent.loop_status()
    assert status.state == "ok" and status.signals == (), status
    assert agent.loop_history() == [], agent.loop_history()
    assert agent.stats().loops_detected == 0


def assert_explained(signal: LoopSignal) -> None:
    assert signal.explanation.strip() and signal.suggestion.strip(), signal
    assert signal.subject.strip(), signal
    assert 0.0 < signal.confidence <= 1.0


def fail(agent: AgentRuntime, tool: str = "fetch", args: Any = None, error: Any = None) -> int:
    args = {"url": "https://api.example.com/v1/items"} if args is None else args
    return agent.record_tool_call(tool, args, error=error or "HTTP 503 Service Unavailable").seq


def ok(agent: AgentRuntime, tool: str, args: Any, result: Any) -> int:
    return agent.record_tool_call(tool, args, result=result).seq


# ============================================================================== retry


def test_retry_fires_at_the_third_identical_failure(clock: FrozenClock) -> None:
    agent = make(clock)
    seqs = [fail(agent)]
    clock.advance(2)
    seqs.append(fail(agent))
    assert agent.loop_status().state == "ok"  # two failures: just below the threshold
    assert active(agent) == []
    clock.advance(2)
    seqs.append(fail(agent))
    status = agent.loop_status()
    assert status.state == "looping"
    signal = the_signal(agent, "retry")
    assert signal.confidence == 0.8
    assert signal.seqs == tuple(seqs)
    assert [(e.seq, e.kind, e.name) for e in signal.events] == [
        (s, "tool_call", "fetch") for s in seqs
    ]
    assert all("api.example.com" in e.preview for e in signal.events)
    assert "fetch" in signal.explanation and "3 times" in signal.explanation
    assert "503" in signal.explanation  # what the failure was
    assert signal.detected_at == clock.now
    assert_explained(signal)


def test_retry_confidence_rises_with_each_further_failure(clock: FrozenClock) -> None:
    agent = make(clock)
    seqs = [fail(agent) for _ in range(3)]
    seen = [the_signal(agent, "retry").confidence]
    for _ in range(3):
        seqs.append(fail(agent))
        signal = the_signal(agent, "retry")
        seen.append(signal.confidence)
        assert signal.seqs == tuple(seqs)
        assert f"{len(seqs)} times" in signal.explanation
    assert seen == [0.8, 0.9, 0.95, 0.975]
    assert agent.stats().loops_detected == 1  # one loop, reported once, updated since


def test_retry_of_the_same_result_fires_at_the_fifth_call(clock: FrozenClock) -> None:
    agent = make(clock)
    seqs = [ok(agent, "search", {"q": "octopoda pricing"}, []) for _ in range(4)]
    assert active(agent) == []
    seqs.append(ok(agent, "search", {"q": "octopoda pricing"}, []))
    signal = the_signal(agent, "retry")
    assert signal.confidence == 0.7
    assert agent.loop_status().state == "warning"  # below the default min_confidence
    assert signal.seqs == tuple(seqs)
    assert "same result" in signal.explanation
    assert_explained(signal)
    seqs.append(ok(agent, "search", {"q": "octopoda pricing"}, []))
    assert the_signal(agent, "retry").confidence == 0.85
    assert the_signal(agent, "retry").seqs == tuple(seqs)
    assert agent.loop_status().state == "looping"


def test_retry_counts_errors_differing_only_in_numbers_times_and_hex_ids(
    clock: FrozenClock,
) -> None:
    agent = make(clock)
    errors = [
        "Timeout after 3012 ms at 2025-06-01T10:00:03.120Z (request 9f2c4e1a77b0)",
        "Timeout after 2987 ms at 2025-06-01T10:00:09.871Z (request 0b13ffa9c2d4)",
        "Timeout after 3104 ms at 2025-06-01T10:00:16.002Z (request 7e6d5c4b3a21)",
    ]
    seqs = [fail(agent, error=e) for e in errors]
    assert the_signal(agent, "retry").seqs == tuple(seqs)


def test_retry_counts_errors_differing_only_in_uuid_request_ids(clock: FrozenClock) -> None:
    """AWS, Azure and most HTTP APIs put a UUID request id in every error message. The
    error normaliser masks digit runs and 8+ hex runs, but a UUID's 4-hex groups such as
    "4b1c" become "#b#c", different for every request: the same failure never repeats."""
    agent = make(clock)
    seqs = [
        fail(agent, "s3_get_object", {"key": "report.csv"}, f"AccessDenied (RequestId: {rid})")
        for rid in (
            "3f2a1b4c-5d6e-4f80-91a2-b3c4d5e6f708",
            "a81bc81b-dead-4e5d-abff-90865d1e13b1",
            "c56a4180-65aa-42ec-a945-5fd21dec0538",
        )
    ]
    assert the_signal(agent, "retry").seqs == tuple(seqs)


def test_arguments_in_another_key_order_are_the_same_arguments(clock: FrozenClock) -> None:
    agent = make(clock)
    seqs = [
        fail(agent, "book", args, "sold out")
        for args in ({"a": 1, "b": [1, 2]}, {"b": [1, 2], "a": 1}, {"a": 1, "b": [1, 2]})
    ]
    assert the_signal(agent, "retry").seqs == tuple(seqs)


def test_the_same_call_failing_with_varying_errors_is_a_retry_loop(clock: FrozenClock) -> None:
    """Twelve identical calls in a row, all failing, against a flapping gateway (502,
    503, 504 in an irregular mix). Retry needs three failures with the same text in a row,
    so it never fires; the actions stream shows an oscillation warning for a moment and
    then nothing: the status at the end is ok."""
    agent = make(clock)
    errors = ["HTTP 502 Bad Gateway", "HTTP 504 Gateway Timeout", "HTTP 503 Service Unavailable"]
    for i in (0, 0, 1, 0, 1, 1, 0, 2, 0, 1, 2, 1):
        fail(agent, "fetch", {"url": "https://api.example.com/v1/items"}, errors[i])
        clock.advance(1)
    assert agent.loop_status().state == "looping"


def test_a_retry_loop_across_restarts_is_detected(tmp_path: Path, clock: FrozenClock) -> None:
    """A crash loop: each run of the agent (a new process, here a new runtime on the same
    file) calls the same tool with the same arguments, fails the same way and dies. The
    failures are in the store, but every runtime starts its detectors empty."""
    path = tmp_path / "agent.db"
    for _ in range(4):
        run = make(clock, "nightly-sync", path)
        fail(run, "sync_crm", {"since": "2025-06-01"}, "ConnectionRefusedError: [Errno 111]")
        clock.advance(60)
        last = run
    assert last.loop_status().state == "looping"


def test_a_crash_loop_after_a_long_start_up_is_detected(tmp_path: Path, clock: FrozenClock) -> None:
    """Each run reads its 60 files and asks the model 40 times (new, then the same results
    each run) before the same call fails: the failures are 100 events apart."""
    path = tmp_path / "agent.db"
    seqs = []
    for _ in range(3):
        run = make(clock, "etl", path)
        for i in range(60):
            ok(run, "read_file", {"path": f"conf/{i}.yaml"}, f"settings of part {i}: ...")
            if i < 40:
                run.record_llm_call("gpt-4o-mini", tokens_in=200)
        seqs.append(fail(run, "connect_db", {"dsn": "postgres://db/etl"}, "connection refused"))
        clock.advance(20)
        last = run
    assert the_signal(last, "retry").seqs == tuple(seqs)


def test_retry_of_exception_objects(clock: FrozenClock) -> None:
    agent = make(clock)
    seqs = [fail(agent, error=TimeoutError(f"read timed out after {t} s")) for t in (30, 31, 30)]
    signal = the_signal(agent, "retry")
    assert signal.seqs == tuple(seqs)
    assert "TimeoutError" in signal.explanation


def test_retry_interleaved_with_other_calls_is_still_a_retry(clock: FrozenClock) -> None:
    agent = make(clock)
    seqs = []
    for i in range(3):
        seqs.append(fail(agent, "charge_card", {"order": 77, "amount": 19.99}, "card declined"))
        ok(agent, "log_event", {"event": "charge failed", "n": i}, "logged")  # new args each
    assert the_signal(agent, "retry").seqs == tuple(seqs)


def test_work_acknowledged_with_ok_between_repeats_is_progress(clock: FrozenClock) -> None:
    """Calls with new arguments that only acknowledge ("sent", None) are still new work:
    a status flag toggled around them does not oscillate, and a heartbeat with the same
    result between them is not a retry. (They are not what a failing call waits for:
    the test above.)"""
    agent = make(clock)
    for i in range(6):
        agent.remember("status", "busy")
        ok(agent, "send_email", {"to": f"user{i}@example.com"}, "sent")
        ok(agent, "write_file", {"path": f"out/{i}.txt"}, None)
        agent.remember("status", "idle")
        ok(agent, "log_metric", {"name": "processed", "inc": 1}, "ok")
    assert_quiet(agent)
    for _ in range(3):  # the same without the new work: the flag oscillates
        agent.remember("status", "busy")
        agent.remember("status", "idle")
    assert active(agent, "oscillation")


def test_retry_with_a_backoff_wait_between_attempts_is_reported_as_retry(
    clock: FrozenClock,
) -> None:
    """fail, sleep(2), fail, sleep(2), fail is a plain retry with backoff. The actions
    stream sees the period-2 cycle (fail, sleep) first and reports "oscillation" at 0.85,
    above the retry signal's 0.8: the status leads with the wrong label, the very mistake
    the issue quotes from the predecessor ("mislabelled a plain retry as oscillation")."""
    agent = make(clock)
    for attempt in range(3):
        fail(agent, "call_api", {"endpoint": "/v1/orders"})
        clock.advance(1)
        if attempt < 2:
            ok(agent, "sleep", {"seconds": 2}, None)
            clock.advance(2)
    signals = agent.loop_status().signals
    assert signals[0].kind == "retry", [(s.kind, s.confidence) for s in signals]


def test_different_failures_do_not_chain(clock: FrozenClock) -> None:
    agent = make(clock)
    for error in ("HTTP 503", "HTTP 401 Unauthorized", "HTTP 503", "HTTP 401 Unauthorized"):
        fail(agent, error=error)
    assert [s.kind for s in active(agent)] != ["retry"]
    assert active(agent, "retry") == []


def test_failures_further_apart_than_the_window_do_not_chain(clock: FrozenClock) -> None:
    agent = make(clock)
    for _ in range(4):
        fail(agent)
        clock.advance(301)
    assert_quiet(agent)


def test_retry_thresholds_are_constructor_arguments() -> None:
    """The documented thresholds are arguments of the detectors (a runtime passes them
    through ``LoopPolicy(detectors=...)``); the novelty tracker keeps the chains."""
    monitor = LoopMonitor()
    detector = RetryDetector(monitor, max_failures=2, max_same_results=3, window_seconds=10)
    tracker = NoveltyTracker(monitor)
    tracker.attach([detector])
    payload = {"name": "t", "args_sha256": "a" * 64, "args_preview": "{}", "error_sha256": "e"}
    for seq, time in ((1, 0.0), (2, 1.0)):
        tracker.process(Event("x", "tool_call", dict(payload, error="boom"), time, seq))
    (signal,) = monitor.signals()
    assert (signal.kind, signal.seqs, signal.confidence) == ("retry", (1, 2), 0.8)
    ok = {"name": "u", "args_sha256": "b" * 64, "args_preview": "{}", "result_sha256": "r"}
    for seq in (3, 4):
        tracker.process(Event("x", "tool_call", ok, 2.0, seq))
    assert len(monitor.signals()) == 1
    tracker.process(Event("x", "tool_call", ok, 2.0, 5))
    assert {s.seqs for s in monitor.signals()} == {(1, 2), (3, 4, 5)}
    tracker.process(Event("x", "tool_call", ok, 13.0, 6))  # beyond the 10 s window
    assert {s.seqs for s in monitor.signals()} == {(1, 2)}

    osc = OscillationDetector(LoopMonitor(), min_cycles=3, max_period=2)
    refl = ReflectionDetector(LoopMonitor(), min_repeats=2, similarity=0.5)
    assert (osc.min_cycles, osc.max_period, refl.min_repeats) == (3, 2, 2)


# ============================================================================== oscillation


def test_a_decision_restated_word_for_word_keeps_the_state_a_full_comparison_gives() -> None:
    """A decision's gist seen before maps straight to its state; that is the state the
    comparison with every kept state gives (the first that matches), for any order of
    restatements, rewordings and other decisions."""
    texts = [
        "use postgres for the orders table",
        "use postgres for the orders table, final answer",
        "use mysql for the orders table",
        "use postgres for order 42",
        "use postgres for order 43",
        "retry the payment call",
    ]
    rng = random.Random(7)
    for similarity in (0.5, 0.8, 1.0, 1.5):
        osc = OscillationDetector(LoopMonitor(), decision_similarity=similarity)
        kept: list[tuple[Any, str]] = []
        for _ in range(300):
            text = rng.choice(texts)
            gist = word_gist(text)
            expected = next((st for g, st in kept if gist.similarity(g) >= similarity), None)
            state = osc._decision_state("db", text, gist)
            if expected is None:
                kept.append((gist, state))
                del kept[:-16]
            else:
                assert state == expected, (similarity, text)


def test_memory_key_oscillation_fires_at_two_full_cycles(clock: FrozenClock) -> None:
    agent = make(clock)
    seqs = [agent.remember("db_choice", v).seq for v in ("postgres", "mysql", "postgres")]
    assert active(agent) == []  # A, B, A: one and a half cycles
    seqs.append(agent.remember("db_choice", "mysql").seq)
    signal = the_signal(agent, "oscillation")
    assert signal.confidence == 0.7
    assert agent.loop_status().state == "warning"
    assert signal.seqs == tuple(seqs)
    assert {e.name for e in signal.events} == {"db_choice"}
    assert "db_choice" in signal.subject
    assert "2 states" in signal.explanation
    assert_explained(signal)
    seqs.append(agent.remember("db_choice", "postgres").seq)
    assert the_signal(agent, "oscillation").confidence == 0.85
    assert agent.loop_status().state == "looping"
    seqs.append(agent.remember("db_choice", "mysql").seq)
    signal = the_signal(agent, "oscillation")
    assert signal.confidence == 0.925
    assert signal.seqs == tuple(seqs)


def test_memory_key_cycling_through_three_values(clock: FrozenClock) -> None:
    agent = make(clock)
    seqs = [agent.remember("layout", v).seq for v in ("grid", "list", "cards", "grid", "list")]
    assert active(agent) == []
    seqs.append(agent.remember("layout", "cards").seq)
    signal = the_signal(agent, "oscillation")
    assert signal.seqs == tuple(seqs)
    assert "3 states" in signal.explanation


def test_a_b_c_cycle_of_tool_calls(clock: FrozenClock) -> None:
    agent = make(clock)
    plan = [("open_page", {"url": "/a"}, "A"), ("click", {"id": "next"}, "B"), ("back", {}, "C")]
    seqs = [ok(agent, *plan[i % 3]) for i in range(5)]
    assert active(agent) == []
    seqs.append(ok(agent, *plan[5 % 3]))
    signal = the_signal(agent, "oscillation")
    assert signal.seqs == tuple(seqs)
    assert [e.name for e in signal.events] == ["open_page", "click", "back"] * 2


def test_a_six_step_cycle_of_tool_calls(clock: FrozenClock) -> None:
    """A ReAct iteration of six calls (search, open, read, extract, save, check) repeated
    exactly, with nothing new: 18 identical-looking actions. Oscillation looks at periods up
    to 4 only, so the only detector left is retry's same-result rule, per call: it warns
    after 5 iterations (30 actions) and reaches looping after 6 (36 actions)."""
    agent = make(clock)
    step = [
        ("web_search", {"q": "octopoda license"}, ["https://example.org/license"]),
        ("open_url", {"url": "https://example.org/license"}, "200 OK"),
        ("read_page", {"selector": "main"}, "MIT License ..."),
        ("extract", {"field": "license"}, None),
        ("save_note", {"key": "license"}, "saved"),
        ("check_done", {"goal": "find the license"}, False),
    ]
    for _ in range(3):
        for tool, args, result in step:
            ok(agent, tool, args, result)
            clock.advance(1)
    assert agent.loop_status().state != "ok"


def test_oscillating_tool_arguments(clock: FrozenClock) -> None:
    agent = make(clock)
    seqs = [ok(agent, "set_thermostat", {"celsius": t}, "ok") for t in (20, 23, 20, 23)]
    assert the_signal(agent, "oscillation").seqs == tuple(seqs)


def test_a_cycle_of_tool_calls_names_the_calls_as_written(clock: FrozenClock) -> None:
    agent = make(clock)
    for t in (20, 23, 20, 23):
        ok(agent, "set_thermostat", {"celsius": t}, "ok")
    explanation = the_signal(agent, "oscillation").explanation
    assert "2 states (set_thermostat(celsius=20), set_thermostat(celsius=23))" in explanation


def test_oscillating_decisions_with_near_duplicate_wording(clock: FrozenClock) -> None:
    agent = make(clock)
    texts = [
        "Use PostgreSQL as the primary database for the orders service",
        "Use MySQL as the primary database for the orders service",
        "use PostgreSQL as the primary database for the orders service again",
    ]
    ctx = {"subject": "orders-db"}
    seqs = [agent.log_decision(t, context=ctx).seq for t in texts]
    assert active(agent) == []
    last = "Use MySQL as the primary database for the orders service, final answer"
    seqs.append(agent.log_decision(last, context=ctx).seq)
    signal = the_signal(agent, "oscillation")
    assert signal.seqs == tuple(seqs)
    assert "orders-db" in signal.subject


def test_a_new_state_ends_an_oscillation(clock: FrozenClock) -> None:
    agent = make(clock)
    for v in ("a", "b", "a", "b", "a"):
        agent.remember("mode", v)
    assert active(agent, "oscillation")
    agent.remember("mode", "c")
    assert agent.loop_status().state == "ok"
    assert [s.kind for s in agent.loop_history()] == ["oscillation"]


def test_repeats_are_not_oscillation(clock: FrozenClock) -> None:
    agent = make(clock)
    for v in ("a", "a", "b", "b", "b"):
        agent.remember("mode", v)
    assert active(agent, "oscillation") == []


def test_restore_undo_cycle_is_a_loop(clock: FrozenClock) -> None:
    """remember X, restore the snapshot (back to A), remember X, restore ... moves a key
    between two values forever, but a restore is not seen by any detector (oscillation
    and recall-write only look at remember/forget/shared_write events)."""
    agent = make(clock)
    agent.remember("plan", "ship on Friday")
    agent.snapshot("baseline")
    for _ in range(4):
        agent.remember("plan", "ship on Monday")
        agent.restore("baseline")
        clock.advance(1)
    assert agent.loop_status().state != "ok"


def test_writing_the_same_value_again_and_again_is_a_loop(clock: FrozenClock) -> None:
    """The predecessor's retry case: remember("last_error", same) repeatedly, nothing
    else. Oscillation skips repeats ("retry and recall-write cover repeats"), retry only
    sees tool calls and recall-write needs a read first: no detector fires, ever."""
    agent = make(clock)
    for _ in range(10):
        agent.remember("last_error", "upstream timeout")
    assert agent.loop_status().state != "ok"


# ============================================================================== ping-pong


def _pair(clock: FrozenClock, store: Any = None) -> tuple[AgentRuntime, AgentRuntime]:
    shared = store if store is not None else SqliteStore(":memory:")
    return make(clock, "planner", shared), make(clock, "coder", shared)


def test_ping_pong_fires_at_the_fourth_pass(clock: FrozenClock) -> None:
    planner, coder = _pair(clock)
    task = {"task": "fix the flaky login test", "files": ["tests/test_login.py"]}
    refs = []
    for sender, receiver in ((planner, coder), (coder, planner), (planner, coder)):
        refs.append((sender.agent_id, sender.record_handoff(receiver.agent_id, task).seq))
        clock.advance(1)
        assert active(sender) == []
    refs.append(("coder", coder.record_handoff("planner", task).seq))
    signal = the_signal(coder, "ping_pong")
    assert signal.confidence == 0.8
    assert coder.loop_status().state == "looping"
    assert [(e.agent or "coder", e.seq) for e in signal.events] == refs
    assert [e.kind for e in signal.events] == ["handoff"] * 4
    assert [e.name for e in signal.events] == ["coder", "planner", "coder", "planner"]
    assert "flaky login" in signal.events[0].preview
    assert "planner" in signal.explanation and "coder" in signal.explanation
    assert "4 times" in signal.explanation
    assert_explained(signal)
    assert active(planner) == []  # only the process/runtime that completed it knows
    clock.advance(1)
    planner.record_handoff("coder", task)
    assert the_signal(planner, "ping_pong").confidence == 0.8  # 5 passes
    clock.advance(1)
    coder.record_handoff("planner", task)
    signal = the_signal(coder, "ping_pong")
    assert signal.confidence == 0.9  # 6 passes
    assert len(signal.events) == 6


def test_ping_pong_of_two_contents_that_never_change(clock: FrozenClock) -> None:
    writer, critic = _pair(clock)
    for _ in range(2):
        writer.record_handoff("coder", "draft v1: Octopoda is a memory layer")
        clock.advance(1)
        critic.record_handoff("planner", "please tighten the first sentence")
        clock.advance(1)
    signal = the_signal(critic, "ping_pong")
    assert "2 distinct" in signal.explanation


def test_ping_pong_with_agents_sharing_one_frozen_clock(clock: FrozenClock) -> None:
    """Passes are ordered by (time, seq), but seqs of two agents are unrelated: when two
    handoffs share a timestamp (a FrozenClock, or Windows' coarse time.time() before
    Python 3.13) and one agent has more earlier events, the order is wrong and the
    ping-pong is never seen."""
    planner, coder = _pair(clock)
    for i in range(5):
        planner.remember(f"note-{i}", i)  # the planner has a longer history
    for _ in range(3):
        planner.record_handoff("coder", "task 12")
        coder.record_handoff("planner", "task 12")
    assert active(coder, "ping_pong") or active(planner, "ping_pong")


def test_handoff_cycle_among_three_agents(clock: FrozenClock) -> None:
    """triage -> billing -> tech -> triage -> ... with the same ticket: a loop no
    detector sees (ping-pong is strictly between two agents)."""
    store = SqliteStore(":memory:")
    agents = [make(clock, name, store) for name in ("triage", "billing", "tech")]
    ticket = {"ticket": 4211, "note": "not my area, passing it on"}
    for _ in range(3):
        for i, agent in enumerate(agents):
            agent.record_handoff(agents[(i + 1) % 3].agent_id, ticket)
            clock.advance(1)
    assert any(a.loop_status().state != "ok" for a in agents)


def test_ping_pong_of_content_differing_only_in_case_whitespace_and_punctuation(
    clock: FrozenClock,
) -> None:
    """Models restate a handoff with trivial differences: the same words are the same
    content (dict key order, case, spacing, trailing punctuation and newlines)."""
    planner, coder = _pair(clock)
    variants = [
        {"task": "Implement the login page", "priority": "high"},
        {"priority": "High", "task": "implement the login page."},
        {"task": "Implement  the login page\n", "priority": "high"},
        {"task": " IMPLEMENT THE LOGIN PAGE! ", "priority": "high"},
        {"priority": "high", "task": "Implement the login page"},
        {"task": "implement the login page", "priority": "high!"},
    ]
    seqs = []
    for i, content in enumerate(variants):
        sender, receiver = (planner, coder) if i % 2 == 0 else (coder, planner)
        seqs.append(sender.record_handoff(receiver.agent_id, content).seq)
        clock.advance(1)
    signal = the_signal(coder, "ping_pong")
    assert [e.seq for e in signal.events] == seqs
    assert "1 distinct" in signal.explanation


def test_messages_of_the_same_words_are_ping_pong_but_other_numbers_are_not(
    clock: FrozenClock,
) -> None:
    store = SqliteStore(":memory:")
    client = Octopoda(store=store, clock=clock)
    a, b = client.agent("a"), client.agent("b")
    for i in range(3):
        a.send_message("b", f"Can you take ticket 4211?{' ' * i}")
        b.send_message("a", f"can you take ticket 4211{'!' * i}")
        clock.advance(1)
    assert active(b, "ping_pong")
    c, d = client.agent("c"), client.agent("d")
    for i in range(6):
        c.send_message("d", f"Can you take ticket {4211 + i}?")
        d.send_message("c", f"Done with ticket {4211 + i}")
        clock.advance(1)
    assert_quiet(c)
    assert_quiet(d)


@pytest.mark.parametrize(
    "replies", [("a + b", "a - b", "a * b"), ("-5 C", "5 C", "+5 C"), ("go now?", "go now", "go")]
)
def test_messages_that_differ_in_a_sign_or_operator_are_new(
    clock: FrozenClock, replies: tuple[str, ...]
) -> None:
    team = Octopoda(store=SqliteStore(":memory:"), clock=clock)
    a, b = team.agent("a"), team.agent("b")
    for reply in replies:
        a.send_message("b", f"set x = {reply}")
        b.send_message("a", "done")
        clock.advance(1)
    assert_quiet(a)
    assert_quiet(b)


def test_a_ring_of_agents_restating_the_handoff_is_ping_pong(clock: FrozenClock) -> None:
    store = SqliteStore(":memory:")
    agents = [make(clock, name, store) for name in ("triage", "billing", "tech")]
    for n in range(3):
        for i, agent in enumerate(agents):
            note = "Not my area, passing it on" + ("." if (n + i) % 2 else "")
            agent.record_handoff(agents[(i + 1) % 3].agent_id, {"ticket": 4211, "note": note})
            clock.advance(1)
    assert any(active(a, "ping_pong") for a in agents)


def test_a_productive_exchange_is_not_ping_pong(clock: FrozenClock) -> None:
    writer, critic = _pair(clock)
    for i in range(6):
        writer.record_handoff("coder", f"draft {i}: {'more detail ' * i}")
        clock.advance(1)
        critic.record_handoff("planner", f"review {i}: tighten paragraph {i + 1}")
        clock.advance(1)
    assert_quiet(writer)
    assert_quiet(critic)


def test_new_tasks_with_the_same_acknowledgement_are_not_ping_pong(clock: FrozenClock) -> None:
    boss, worker = _pair(clock)
    for i in range(8):
        boss.record_handoff("coder", {"task": f"translate chapter {i}"})
        clock.advance(1)
        worker.record_handoff("planner", "done")
        clock.advance(1)
    assert_quiet(boss)
    assert_quiet(worker)


def test_a_nightly_handoff_and_acknowledgement_is_not_ping_pong(clock: FrozenClock) -> None:
    """A scheduler hands the same nightly job to a worker, which reports back the same
    "done" after doing new work. Ping-pong has no time window and ignores the progress
    between passes: on the second night the pair is flagged at 0.8 (looping)."""
    scheduler, worker = _pair(clock)
    for night in range(3):
        scheduler.record_handoff("coder", {"task": "run the nightly backup"})
        clock.advance(600)
        ok(worker, "backup_db", {"night": night}, {"bytes": 1_000_000 + night})
        worker.record_handoff("planner", {"status": "backup done"})
        clock.advance(86_400 - 600)
    assert_quiet(worker)
    assert_quiet(scheduler)


def test_handoffs_without_content_between_productive_turns(clock: FrozenClock) -> None:
    """Writer and critic pass control with record_handoff(to) (no content, as a framework
    handoff does) while each turn writes a new draft or review to memory: productive, but
    every pass has the same content (None), so it is flagged as ping-pong."""
    writer, critic = _pair(clock)
    for i in range(4):
        writer.remember("draft", f"draft {i}: {'a longer argument ' * (i + 1)}")
        writer.record_handoff("coder")
        clock.advance(1)
        critic.remember("review", f"review {i}: the second paragraph needs a source ({i})")
        critic.record_handoff("planner")
        clock.advance(1)
    assert_quiet(writer)
    assert_quiet(critic)


def test_fixed_handoffs_around_work_acknowledged_with_none_are_not_ping_pong(
    clock: FrozenClock,
) -> None:
    """The writer saves each new draft (write_file returns None) and hands the same note
    over; the reviewer reads the new draft and hands the same reply back."""
    writer, reviewer = _pair(clock)
    for i in range(5):
        draft = f"draft {i}: " + "more argument " * (i + 1)
        ok(writer, "write_file", {"path": "draft.md", "content": draft}, None)
        writer.record_handoff("coder", "Draft updated, please review draft.md")
        ok(reviewer, "read_file", {"path": "draft.md"}, draft)
        reviewer.record_handoff("planner", "Changes requested, see the comments in draft.md")
        clock.advance(5)
    assert_quiet(writer)
    assert_quiet(reviewer)


@pytest.mark.parametrize("work", ["translates", "repeats", "only logs"])
def test_the_same_request_and_reply_around_the_partners_work(clock: FrozenClock, work: str) -> None:
    """'next chunk please' / 'chunk done': productive while the worker translates a new
    chunk each time (its tool calls, read from the store), a loop while it only repeats
    the same call or makes calls that tell it nothing."""
    team = Octopoda(store=SqliteStore(":memory:"), clock=clock)
    boss, worker = team.agent("coordinator"), team.agent("worker")
    for i in range(6):
        boss.send_message("worker", "next chunk please")
        if work == "only logs":
            ok(worker, "log_review", {"round": i}, "ok")
            ok(worker, "now", {}, datetime.fromtimestamp(clock(), timezone.utc).isoformat())
        else:
            chunk = i if work == "translates" else 0
            ok(worker, "translate_chunk", {"chunk": chunk}, f"translated chunk {chunk}: ...")
        worker.send_message("coordinator", "chunk done")
        clock.advance(5)
    if work == "translates":
        assert_quiet(boss)
        assert_quiet(worker)
    else:
        assert active(boss, "ping_pong") or active(worker, "ping_pong")


@pytest.fixture
def driver() -> Any:
    return _load_driver()


def test_ping_pong_between_two_processes_on_one_file(tmp_path: Path, driver: Any) -> None:
    store = tmp_path / "team.db"
    SqliteStore(store).close()
    content = {"task": "summarise the Q3 report", "attempt": 1}
    with (
        driver.AgentProcess(store, "planner") as planner,
        driver.AgentProcess(store, "coder") as coder,
    ):
        passes = []
        answers = []
        for proc, to in ((planner, "coder"), (coder, "planner"), (planner, "coder")):
            answer = proc.call("handoff", to=to, content=content)
            assert answer["ok"], answer
            assert answer["status"] == {"state": "ok", "signals": []}, answer
            passes.append((proc.agent, answer["result"]))
        answer = coder.call("handoff", to="planner", content=content)
        passes.append(("coder", answer["result"]))
        answers.append(answer)
        status = answer["status"]
        assert status["state"] == "looping", status
        (signal,) = status["signals"]
        assert signal["kind"] == "ping_pong"
        assert [(e.get("agent") or "coder", e["seq"]) for e in signal["events"]] == passes
        assert signal["explanation"] and signal["suggestion"]
        # the planner's process did not complete the pattern: it has seen nothing yet
        assert planner.call("status")["status"]["state"] == "ok"
        answer = planner.call("handoff", to="coder", content=content)
        assert answer["status"]["signals"][0]["kind"] == "ping_pong"
        assert coder.call("verify")["result"] is True
    history = AgentRuntime("coder", store=store).loop_history()
    assert [(s.kind, len(s.events)) for s in history] == [("ping_pong", 4)]
    for name in ("planner", "coder"):
        assert AgentRuntime(name, store=store).audit.verify().ok


def test_the_pass_being_stored_completes_a_ping_pong_on_each_backend(
    clock: FrozenClock, any_store_url: str
) -> None:
    """The fourth pass is seen as it is stored, on PostgreSQL too (where the store shows a
    message only once its commit has ended: the pass is taken from the event)."""
    planner, coder = make(clock, "planner", any_store_url), make(clock, "coder", any_store_url)
    task = {"task": "fix the flaky login test"}
    refs = []
    for i in range(4):
        sender, receiver = (planner, coder) if i % 2 == 0 else (coder, planner)
        refs.append((sender.agent_id, sender.record_handoff(receiver.agent_id, task).seq))
        clock.advance(1)
        if i < 3:
            assert active(sender) == []
    signal = the_signal(coder, "ping_pong")
    assert [(e.agent, e.seq) for e in signal.events] == refs
    assert signal.confidence == 0.8


def test_handoffs_of_the_agent_from_another_runtime_count(
    clock: FrozenClock, any_store_url: str
) -> None:
    """A pass the same agent made through another runtime (another process, say) is read
    from the store: the runtime that completes the loop did not see it being stored."""
    first, second = make(clock, "planner", any_store_url), make(clock, "planner", any_store_url)
    coder = make(clock, "coder", any_store_url)
    task = {"task": "summarise the Q3 report"}
    refs = []
    for sender, to in ((first, "coder"), (coder, "planner"), (second, "coder"), (coder, "planner")):
        refs.append((sender.agent_id, sender.record_handoff(to, task).seq))
        clock.advance(1)
    refs.append(("planner", first.record_handoff("coder", task).seq))
    signal = the_signal(first, "ping_pong")
    assert [(e.agent, e.seq) for e in signal.events] == refs  # the second runtime's pass too


def test_ping_pong_between_processes_on_postgresql(
    postgres_databases: Callable[[], str], driver: Any
) -> None:
    url = postgres_databases()
    content = {"task": "summarise the Q3 report", "attempt": 1}
    with driver.AgentProcess(url, "planner") as planner, driver.AgentProcess(url, "coder") as coder:
        passes = []
        for proc, to in ((planner, "coder"), (coder, "planner"), (planner, "coder")):
            answer = proc.call("handoff", to=to, content=content)
            assert answer["ok"] and answer["status"]["state"] == "ok", answer
            passes.append((proc.agent, answer["result"]))
        answer = coder.call("handoff", to="planner", content=content)
        passes.append(("coder", answer["result"]))
        (signal,) = answer["status"]["signals"]
        assert signal["kind"] == "ping_pong"
        assert [(e["agent"], e["seq"]) for e in signal["events"]] == passes
    assert [s.kind for s in AgentRuntime("coder", store=url).loop_history()] == ["ping_pong"]


def test_a_pass_committed_after_a_newer_one_still_counts_on_postgresql(
    postgres_databases: Callable[[], str],
) -> None:
    """PostgreSQL draws a message's id when its commit begins, so a slow commit can become
    visible after messages with higher ids were read (here: this agent's own pass to
    another agent). Messages to this agent are read after the newest one to it, not after
    the newest id seen, so the late pass still completes the ping-pong."""
    url = postgres_databases()
    me, slow = AgentRuntime("me", store=url), AgentRuntime("slow", store=url)  # (the real
    task = {"task": "deploy the release"}  # clock: the held handoff's process uses it)
    me.send_message("fast", "status?")
    slow.record_handoff("me", task)
    me.record_handoff("slow", task)
    with subprocess.Popen(
        [sys.executable, str(PROCS / "held_handoff.py"), url, "slow", "me", json.dumps(task)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=_load_driver().child_env(),
    ) as held:
        assert held.stdin is not None and held.stdout is not None
        assert json.loads(held.stdout.readline()) == {"holding": True}  # its id is drawn
        me.send_message("fast", "status?")  # (nothing new) a higher id, committed first
        held.stdin.write("release\n")
        held.stdin.flush()
        late = json.loads(held.stdout.readline())["seq"]
        assert held.wait(timeout=60) == 0
    assert active(me) == []
    last = me.record_handoff("slow", task).seq
    signal = the_signal(me, "ping_pong")
    assert [(e.agent, e.seq) for e in signal.events][-2:] == [("slow", late), ("me", last)]
    assert len(signal.events) == 4


# ============================================================================== reflection


def test_reflection_fires_at_the_third_restatement(clock: FrozenClock) -> None:
    agent = make(clock)
    text = "I should retry the payment API call with the same parameters"
    seqs = [agent.log_decision(text).seq, agent.log_decision(text).seq]
    assert active(agent) == []
    seqs.append(agent.log_decision(text, reasoning=None).seq)
    signal = the_signal(agent, "reflection")
    assert signal.confidence == 0.8
    assert signal.seqs == tuple(seqs)
    assert [e.kind for e in signal.events] == ["decision"] * 3
    assert "3 times" in signal.explanation
    assert_explained(signal)
    seqs.append(agent.log_decision(text).seq)
    signal = the_signal(agent, "reflection")
    assert (signal.confidence, signal.seqs) == (0.9, tuple(seqs))


def test_reflection_counts_near_duplicates(clock: FrozenClock) -> None:
    agent = make(clock)
    seqs = [
        agent.log_decision(t).seq
        for t in (
            "I should retry the payment API call with the same parameters",
            "i should retry the payment api call with the same parameters.",
            "I should now retry the payment API call with the same parameters",
        )
    ]
    assert the_signal(agent, "reflection").seqs == tuple(seqs)


def test_reflection_counts_paraphrased_restatements(clock: FrozenClock) -> None:
    """The issue asks for near-duplicates, "not only exact repeats". Word+bigram Jaccard
    >= 0.8 misses ordinary rewordings: one changed word in a sentence of fewer than 14
    words, or one inserted word in fewer than 9, already falls below the threshold."""
    agent = make(clock)
    for text in (
        "I should check the server logs before changing anything.",
        "Let me check the server logs before changing anything.",
        "I need to check the server logs before I change anything.",
    ):
        agent.log_decision(text)
    assert active(agent, "reflection")


def test_new_information_between_decisions_resets_reflection(clock: FrozenClock) -> None:
    agent = make(clock)
    text = "Escalate the ticket to the billing team"
    for i in range(4):
        agent.log_decision(text)
        ok(agent, "get_ticket", {"id": 9}, {"status": "open", "comments": i})  # new result
    agent.log_decision(text)
    assert_quiet(agent)
    for i in range(4):
        agent.remember("customer_reply", f"reply number {i}")  # a new memory value
        agent.log_decision(text)
    assert_quiet(agent)


def test_a_result_seen_before_is_not_new_information(clock: FrozenClock) -> None:
    agent = make(clock)
    text = "Escalate the ticket to the billing team"
    seqs = []
    for _ in range(3):
        ok(agent, "get_ticket", {"id": 9}, {"status": "open"})  # the same result each time
        seqs.append(agent.log_decision(text).seq)
    assert the_signal(agent, "reflection").seqs == tuple(seqs)


def test_decisions_about_different_subjects_are_not_reflection(clock: FrozenClock) -> None:
    """One listing, then a decision per order with the same policy reasoning: three
    different decisions. Reflection compares decision+reasoning text only and ignores
    context["subject"], so it reports "restated the same decision 3 times" (0.8)."""
    agent = make(clock)
    ok(agent, "list_refund_requests", {}, [1001, 1002, 1003])
    for order in (1001, 1002, 1003):
        agent.log_decision(
            f"Approve refund for order {order}",
            reasoning="The amount is under the automatic approval limit, the customer has no"
            " prior refunds this quarter, and the item was reported damaged on delivery.",
            context={"subject": f"order-{order}"},
        )
    assert_quiet(agent)


def test_templated_decisions_naming_different_ids_are_not_reflection(
    clock: FrozenClock,
) -> None:
    """One subject, one template, a different order id each time, and only
    acknowledgements in between: three decisions about three orders, not one restated."""
    agent = make(clock)
    template = (
        "Approve the refund for order {} because the item arrived damaged and the customer"
        " is eligible under the 30 day policy"
    )
    for order in ("A-1001", "A-1002", "A-1003", "A-1004"):
        agent.log_decision(template.format(order), context={"subject": "refunds"})
        ok(agent, "issue_refund", {"order": order}, {"status": "refunded"})
    assert_quiet(agent)


@pytest.mark.parametrize("ids", [(42, 43, 57), (7, 8, 9)])
def test_decisions_on_small_ids_are_not_reflection(
    clock: FrozenClock, ids: tuple[int, ...]
) -> None:
    """A number is what the decision is about, however small: "order 42" and "order 43"
    are two decisions (the same number restated is a restatement)."""
    agent = make(clock)
    reasoning = "the amount is under the automatic approval limit and the item arrived damaged"
    for n in ids:
        agent.log_decision(f"Approve the refund for order {n}", reasoning=reasoning)
    assert active(agent, "reflection") == []
    for _ in range(2):
        agent.log_decision(f"Approve the refund for order {ids[-1]}", reasoning=reasoning)
    assert active(agent, "reflection")


def test_a_restatement_with_a_fresh_trace_id_is_still_reflection(clock: FrozenClock) -> None:
    agent = make(clock)
    seqs = [
        agent.log_decision(
            "Retry the payment API call with the same parameters",
            reasoning=f"the gateway timed out again (trace {trace})",
        ).seq
        for trace in ("8f3a2c1d", "c0ffee12", "9b7e4d2a")
    ]
    assert the_signal(agent, "reflection").seqs == tuple(seqs)


def test_an_hourly_check_with_the_same_outcome_is_not_reflection(clock: FrozenClock) -> None:
    """A monitoring agent checks health every hour and logs the same decision. Retry and
    oscillation have time windows (300 s, 600 s); reflection has none, so in the third hour
    it reports a loop at 0.8 and a pause policy would stop a healthy monitor."""
    agent = make(clock)
    for _ in range(4):
        ok(agent, "check_health", {}, {"api": "ok", "db": "ok"})
        agent.log_decision("All systems nominal, no action needed")
        clock.advance(3600)
    assert_quiet(agent)


# ============================================================================== recall-write


def test_recall_write_fires_at_the_third_unchanged_write_back(clock: FrozenClock) -> None:
    agent = make(clock)
    agent.remember("settings", {"theme": "dark", "lang": "en"})
    seqs = []
    for _ in range(2):
        value = agent.recall("settings").value
        seqs.append(agent.remember("settings", value).seq)
    assert active(agent) == []
    value = agent.recall("settings").value
    seqs.append(agent.remember("settings", value).seq)
    signal = the_signal(agent, "recall_write")
    assert signal.confidence == 0.8
    assert signal.seqs == tuple(seqs)
    assert [(e.seq, e.kind) for e in signal.events] == [
        x for s in seqs for x in ((0, "read"), (s, "remember"))
    ]
    assert all(e.name == "settings" for e in signal.events)
    assert "dark" in signal.events[0].preview  # the read shows the value read
    assert "unchanged" in signal.explanation and "3 times" in signal.explanation
    assert_explained(signal)
    value = agent.recall("settings").value
    seqs.append(agent.remember("settings", value).seq)
    signal = the_signal(agent, "recall_write")
    assert (signal.confidence, signal.seqs) == (0.9, tuple(seqs))


def test_recall_write_with_cycling_values(clock: FrozenClock) -> None:
    agent = make(clock)
    agent.remember("mode", "draft")
    flip = {"draft": "review", "review": "draft"}
    seqs = []
    for _ in range(4):
        seqs.append(agent.remember("mode", flip[agent.recall("mode").value]).seq)
    signal = the_signal(agent, "recall_write")
    assert signal.seqs == tuple(seqs[1:])  # the first write-back was a new value
    assert "already had" in signal.explanation
    assert active(agent, "oscillation")  # the key also oscillates


def test_a_genuinely_new_value_resets_recall_write(clock: FrozenClock) -> None:
    agent = make(clock)
    agent.remember("queue", ["a", "b"])
    for _ in range(2):
        agent.remember("queue", agent.recall("queue").value)
    agent.remember("queue", [*agent.recall("queue").value, "c"])
    agent.remember("queue", agent.recall("queue").value)
    assert active(agent, "recall_write") == []


def test_forgetting_the_key_ends_its_recall_write_churn(clock: FrozenClock) -> None:
    agent = make(clock)
    agent.remember("lease", {"owner": "a"})
    for _ in range(3):
        agent.remember("lease", agent.recall("lease").value)
    assert active(agent, "recall_write")
    agent.forget("lease")
    assert active(agent, "recall_write") == []
    agent.remember("lease", {"owner": "a"})  # written again after the forget: a new start
    agent.remember("lease", agent.recall("lease").value)
    assert active(agent, "recall_write") == []


def test_renewing_a_lease_with_its_ttl_is_not_recall_write(clock: FrozenClock) -> None:
    agent = make(clock)
    for _ in range(5):
        ok(agent, "get_job_status", {"job": "etl-9"}, {"state": "running"})
        agent.remember("lease/etl-9", {"owner": "a"}, ttl=120)
        agent.remember("lease/etl-9", agent.recall("lease/etl-9").value, ttl=120)
        ok(agent, "sleep", {"seconds": 30}, None)
        clock.advance(30)
    ok(agent, "get_job_status", {"job": "etl-9"}, {"state": "done"})
    assert_quiet(agent)
    for _ in range(3):  # the same rewrites without a TTL are churn
        agent.remember("lease/etl-9", agent.recall("lease/etl-9").value)
    assert active(agent, "recall_write")


def test_recall_is_never_written_but_feeds_recall_write(clock: FrozenClock) -> None:
    agent = make(clock)
    agent.remember("k", 1)
    agent.remember("k", 2)
    head = agent.audit.head().seq
    for _ in range(50):
        agent.recall("k")
        agent.recall("k", version=1)
        agent.recall("missing-key")
    assert agent.audit.head().seq == head
    assert [e.kind for e in agent.timeline()] == ["remember", "remember"]
    for _ in range(3):
        agent.remember("k", agent.recall("k").value)
    assert active(agent, "recall_write")
    assert agent.audit.head().seq == head + 4  # three writes and one loop_detected event
    assert agent.audit.verify().ok


# ============================================================================== legitimate


def test_paginating_with_new_arguments_or_new_results(clock: FrozenClock) -> None:
    agent = make(clock)
    for page in range(1, 30):
        ok(
            agent,
            "list_issues",
            {"repo": "octopoda", "page": page},
            [page * 10 + i for i in range(10)],
        )
    for page in range(30):
        ok(agent, "next_page", {}, {"items": [page * 10 + i for i in range(10)]})  # cursor
    ok(agent, "list_issues", {"repo": "octopoda", "page": 30}, [])  # the last page is empty
    assert_quiet(agent)


def test_polling_that_ends_in_a_new_state(clock: FrozenClock) -> None:
    agent = make(clock)
    for _ in range(4):
        ok(agent, "job_status", {"job": "build-311"}, {"state": "running"})
        clock.advance(10)
    ok(agent, "job_status", {"job": "build-311"}, {"state": "succeeded"})
    ok(agent, "download_artifact", {"job": "build-311"}, {"bytes": 18_221})
    assert_quiet(agent)


class _Rows:
    """A result that is not JSON: recorded by its repr, without the memory address."""

    def __init__(self, rows: list[int]) -> None:
        self.rows = rows


def test_the_same_non_json_result_each_time_is_a_repeat(clock: FrozenClock) -> None:
    agent = make(clock)
    seqs = [ok(agent, "query_db", {"sql": "select 1"}, _Rows([1])) for _ in range(5)]
    assert the_signal(agent, "retry").seqs == tuple(seqs)
    (event,) = [e for e in agent.timeline() if e.seq == seqs[0]]
    assert " at 0x" not in event.payload["result_preview"]


def _orders(items: list[int], n: int) -> dict[str, Any]:
    return {
        "orders": items,
        "meta": {
            "generated_at": f"2026-11-30T03:{n:02d}:00Z",
            "request_id": str(uuid.UUID(int=n + 1)),
            "took_ms": 10 + n,
        },
    }


def test_the_same_data_with_fresh_metadata_is_the_same_result(clock: FrozenClock) -> None:
    agent = make(clock)
    seqs = [ok(agent, "get_orders", {"customer": 4411}, _orders([1, 2], n)) for n in range(5)]
    assert the_signal(agent, "retry").seqs == tuple(seqs)
    first = next(e for e in agent.timeline() if e.seq == seqs[0])
    assert len(first.payload["result_gist"]) == 16  # beside the digest of the whole result
    assert (
        first.payload["result_sha256"]
        != next(e for e in agent.timeline() if e.seq == seqs[1]).payload["result_sha256"]
    )
    plain = ok(agent, "get_orders", {"customer": 1}, {"orders": [3]})
    assert "result_gist" not in next(e for e in agent.timeline() if e.seq == plain).payload
    large = ok(agent, "get_page", {"n": 1}, {"html": "x" * 20_000, "request_id": "r-1"})
    assert "result_gist" not in next(e for e in agent.timeline() if e.seq == large).payload


def test_an_error_returned_as_a_result_with_request_ids_repeats(clock: FrozenClock) -> None:
    agent = make(clock)
    seqs = [
        ok(
            agent,
            "github_api",
            {"path": "/repos/x"},
            f"Error: 429 Too Many Requests ({uuid.uuid4()})",
        )
        for _ in range(5)
    ]
    assert the_signal(agent, "retry").seqs == tuple(seqs)


def test_a_retry_with_a_fresh_idempotency_key_is_a_retry(clock: FrozenClock) -> None:
    agent = make(clock)
    seqs = []
    for _ in range(3):
        args = {"url": "https://api.example.com/charges", "idempotency_key": str(uuid.uuid4())}
        seqs.append(fail(agent, "http_post", args, "HTTP 503 Service Unavailable"))
    assert the_signal(agent, "retry").seqs == tuple(seqs)


def test_a_retry_with_a_cache_buster_is_a_retry(clock: FrozenClock) -> None:
    agent = make(clock)
    seqs = [
        fail(agent, "fetch", {"url": "https://example.com/feed", "ts": clock() + i}, "HTTP 502")
        for i in range(3)
    ]
    assert the_signal(agent, "retry").seqs == tuple(seqs)


@pytest.mark.parametrize(
    "result",
    [
        lambda i: {"slot": {"starts_at": f"2026-12-0{i + 1}T10:00:00Z", "room": "A"}},
        lambda i: {"median_latency_ms": 10 + i, "runs": 20},
    ],
)
def test_data_in_keys_that_look_like_metadata_is_data(
    clock: FrozenClock, result: Callable[[int], Any]
) -> None:
    """Only response metadata is masked: a record's own time or latency is its data."""
    agent = make(clock)
    for i in range(8):
        ok(agent, "lookup", {"what": "next"}, result(i))
    assert_quiet(agent)


def test_calls_on_different_ids_are_different_calls(clock: FrozenClock) -> None:
    """A UUID that names what to act on is not a nonce."""
    agent = make(clock)
    for _ in range(8):
        ok(agent, "delete_user", {"user_id": str(uuid.uuid4())}, "ok")
    assert_quiet(agent)


def test_new_data_with_fresh_metadata_is_progress(clock: FrozenClock) -> None:
    agent = make(clock)
    for n in range(8):
        ok(agent, "get_orders", {"customer": 4411, "page": "next"}, _orders([n, n + 1], n))
    assert_quiet(agent)


@pytest.mark.parametrize(
    ("name", "waits"),
    [
        ("sleep", True),
        ("time.sleep", True),
        ("wait_for_job", True),
        ("WaitUntilReady", True),
        ("exponential_backoff", True),
        ("pause_seconds", True),
        ("delay", True),
        ("pause_subscription", False),
        ("get_delivery_delay", False),
        ("join_waitlist", False),
        ("idle_timeout_config", False),
    ],
)
def test_which_tools_wait(name: str, waits: bool) -> None:
    assert is_waiting(name) is waits


def test_a_tool_whose_name_only_contains_a_waiting_word_can_retry(clock: FrozenClock) -> None:
    agent = make(clock)
    error = "StripeInvalidRequestError: subscription is canceled and cannot be paused"
    seqs = [fail(agent, "pause_subscription", {"subscription_id": "sub_1NqX"}, error)]
    seqs += [fail(agent, "pause_subscription", {"subscription_id": "sub_1NqX"}, error)]
    seqs += [fail(agent, "pause_subscription", {"subscription_id": "sub_1NqX"}, error)]
    assert the_signal(agent, "retry").seqs == tuple(seqs)


def test_a_failing_wait_is_a_retry(clock: FrozenClock) -> None:
    agent = make(clock)
    error = "TimeoutError: waiting for selector '#submit' failed: timeout 5000ms exceeded"
    seqs = [fail(agent, "wait_for_selector", {"selector": "#submit"}, error) for _ in range(3)]
    assert the_signal(agent, "retry").seqs == tuple(seqs)


def test_waiting_for_a_job_that_never_changes_is_a_loop(clock: FrozenClock) -> None:
    """wait_for_job blocks and reports the state: a poll, judged like one."""
    agent = make(clock)
    seqs = []
    for _ in range(10):
        seqs.append(ok(agent, "wait_for_job", {"job": "build-7"}, {"status": "running"}))
        clock.advance(20)
    signal = the_signal(agent, "retry")
    assert signal.seqs == tuple(seqs) and "polled 10 times" in signal.explanation


def test_a_backoff_that_reports_its_delay_does_not_hide_the_retry(clock: FrozenClock) -> None:
    agent = make(clock)
    seqs = []
    for i in range(3):
        seqs.append(fail(agent, "fetch", {"url": "https://api.example.com"}, "HTTP 503"))
        ok(agent, "sleep", {"seconds": 2**i}, {"slept": 2**i})
        clock.advance(2**i)
    assert the_signal(agent, "retry").seqs == tuple(seqs)


def test_a_wait_that_returns_news_is_progress(clock: FrozenClock) -> None:
    """wait_for_epoch blocks, then returns new metrics: the same decision after each is a
    supervisor following the run, not reflection."""
    agent = make(clock)
    for epoch in range(5):
        ok(agent, "start_epoch", {"run": "resnet-7"}, "ok")
        loss = round(1.5 / (epoch + 1), 4)
        ok(agent, "wait_for_epoch", {"run": "resnet-7"}, {"epoch": epoch, "val_loss": loss})
        agent.log_decision(
            "Validation loss is still decreasing, continue training",
            context={"subject": "training"},
        )
        clock.advance(60)
    assert_quiet(agent)
    for _ in range(3):  # the same metrics read again without waiting: nothing new
        ok(agent, "get_epoch_metrics", {"run": "resnet-7"}, {"epoch": 4, "val_loss": 0.3})
        agent.log_decision(
            "Validation loss is still decreasing, continue training",
            context={"subject": "training"},
        )
    assert active(agent, "reflection")


def test_the_same_verdict_after_each_wait_is_a_periodic_check(clock: FrozenClock) -> None:
    """check, decide, sleep: a monitor restating "all healthy" every few minutes, or after
    each wait, is not thinking in circles."""
    agent = make(clock)
    for _ in range(6):
        ok(agent, "check_health", {}, {"api": "ok", "db": "ok"})
        agent.log_decision("All services healthy, no action needed", context={"subject": "health"})
        ok(agent, "sleep", {"seconds": 60}, None)
        clock.advance(60)
    assert active(agent, "reflection") == []
    looping = make(clock, "short-sleeps")
    for _ in range(3):  # a second's sleep between restatements is no periodic check
        looping.log_decision("Retry the deployment")
        ok(looping, "sleep", {"seconds": 1}, None)
        clock.advance(1)
    assert active(looping, "reflection")
    other = make(clock, "every-4-minutes")
    for _ in range(6):
        other.log_decision("All services healthy, no action needed")
        clock.advance(240)
    assert active(other, "reflection") == []
    for _ in range(3):  # the same verdict three times in a minute, nothing in between
        other.log_decision("All services healthy, no action needed")
        clock.advance(20)
    assert active(other, "reflection")


def test_polling_with_a_wait_between_polls_is_not_a_loop(clock: FrozenClock) -> None:
    """poll, wait, poll, wait, ... until the job is done. The actions stream sees a
    period-2 cycle: oscillation at the second wait (0.7) and looping (0.85) at the third
    poll: with LoopPolicy("pause") a healthy poller is paused before its job
    finishes. Retry already allows 4 identical polls; the wait makes it stricter."""
    agent = make(clock)
    for _ in range(4):
        ok(agent, "job_status", {"job": "build-311"}, {"state": "running"})
        ok(agent, "wait", {"seconds": 10}, None)
        clock.advance(10)
    ok(agent, "job_status", {"job": "build-311"}, {"state": "succeeded"})
    assert_quiet(agent)


def test_polling_several_jobs_in_turn_is_not_a_loop(clock: FrozenClock) -> None:
    """status(j1), status(j2), sleep, ... : the tool-call sequence cycles through two
    states, but the calls wait in between: polling, which retry judges per job."""
    agent = make(clock)
    for _ in range(9):
        for job in ("j1", "j2"):
            ok(agent, "get_job_status", {"job": job}, {"state": "running"})
        ok(agent, "sleep", {"seconds": 15}, None)
        clock.advance(15)
    for job in ("j1", "j2"):
        ok(agent, "get_job_status", {"job": job}, {"state": "done"})
    assert_quiet(agent)


def test_polling_several_jobs_that_never_finish_is_a_retry_per_job(clock: FrozenClock) -> None:
    agent = make(clock)
    polls: dict[str, list[int]] = {"j1": [], "j2": []}
    for _ in range(11):
        for job in ("j1", "j2"):
            polls[job].append(ok(agent, "get_job_status", {"job": job}, {"state": "running"}))
        ok(agent, "sleep", {"seconds": 15}, None)
        clock.advance(15)
    signals = sorted(active(agent), key=lambda s: s.seqs)
    # (the first poll of j2 was something the agent had not done: j1's chain starts after)
    assert [(s.kind, s.seqs) for s in signals] == [
        ("retry", tuple(polls["j2"])),
        ("retry", tuple(polls["j1"][1:])),
    ]
    assert "polled 11 times" in signals[0].explanation
    assert "polled 10 times" in signals[1].explanation
    # without the waits, the sequence is an oscillation after two cycles
    other = make(clock, "no-waits")
    for _ in range(2):
        for job in ("j1", "j2"):
            ok(other, "get_job_status", {"job": job}, {"state": "running"})
    assert the_signal(other, "oscillation").confidence == 0.7


def test_a_faq_bot_answering_popular_questions_again_is_not_a_loop(clock: FrozenClock) -> None:
    """The same retrieval for the next user who asks the same question, other questions
    in between: asked anew, not again and again."""
    agent = make(clock)
    questions = ["opening hours", "return policy", "opening hours", "shipping cost"] * 6
    for q in questions:
        agent.record_llm_call("gpt-4o-mini", tokens_in=300)
        ok(agent, "retrieve_docs", {"query": q, "k": 3}, [{"doc": f"kb/{q}.md", "text": q}])
        agent.record_llm_call("gpt-4o-mini", tokens_in=600)
        clock.advance(20)
    assert_quiet(agent)


def test_a_monitor_checking_once_a_minute_is_not_a_loop(clock: FrozenClock) -> None:
    """The same empty queue every minute for an hour: polling at a rate that burns
    nothing. Polled ten times within five minutes, it is a loop."""
    agent = make(clock)
    for _ in range(60):
        ok(agent, "check_queue", {"queue": "inbox"}, [])
        ok(agent, "sleep", {"seconds": 60}, None)
        clock.advance(60)
    ok(agent, "check_queue", {"queue": "inbox"}, [{"id": 7, "task": "resize images"}])
    assert_quiet(agent)
    seqs = []
    for _ in range(10):
        seqs.append(ok(agent, "check_queue", {"queue": "inbox"}, []))
        ok(agent, "sleep", {"seconds": 15}, None)
        clock.advance(15)
    signal = the_signal(agent, "retry")
    assert signal.seqs == tuple(seqs) and "polled 10 times" in signal.explanation


def test_timer_driven_polls_of_two_jobs_are_polling(clock: FrozenClock) -> None:
    """No wait tool: a scheduler polls two jobs every 30 seconds."""
    agent = make(clock)
    for _ in range(8):
        ok(agent, "get_job_status", {"job_id": "train-a"}, {"state": "running"})
        clock.advance(1)
        ok(agent, "get_job_status", {"job_id": "train-b"}, {"state": "running"})
        clock.advance(29)
    assert_quiet(agent)


@pytest.mark.parametrize("thinking", [7, 45])
def test_a_slow_model_repeating_a_call_is_not_polling(clock: FrozenClock, thinking: int) -> None:
    """Seconds of thinking between identical calls (a model call each time) is a repeat,
    not a poll, however long the model takes."""
    agent = make(clock)
    seqs = []
    for _ in range(5):
        agent.record_llm_call("o3", tokens_in=800, tokens_out=60)
        clock.advance(thinking)
        seqs.append(ok(agent, "search", {"q": "octopoda docs"}, ["https://example.org/a"]))
    assert the_signal(agent, "retry").seqs == tuple(seqs)
    other = make(clock, "alternating")
    for _ in range(2):  # and a slow model alternating two calls oscillates
        for q in ("octopoda docs", "octopoda source"):
            other.record_llm_call("o3", tokens_in=800, tokens_out=60)
            clock.advance(thinking)
            ok(other, "search", {"q": q}, [f"https://example.org/{q[-4:]}"])
    assert active(other, "oscillation")


def test_a_retry_that_then_succeeds(clock: FrozenClock) -> None:
    agent = make(clock)
    fail(agent)
    clock.advance(1)
    fail(agent)
    clock.advance(2)
    ok(agent, "fetch", {"url": "https://api.example.com/v1/items"}, [{"id": 1}])
    assert_quiet(agent)


def test_a_detected_retry_clears_on_success(clock: FrozenClock) -> None:
    agent = make(clock)
    seqs = [fail(agent) for _ in range(4)]
    assert agent.loop_status().state == "looping"
    ok(agent, "fetch", {"url": "https://api.example.com/v1/items"}, [{"id": 1}])
    assert agent.loop_status().state == "ok"
    (past,) = agent.loop_history()
    assert (past.kind, past.seqs) == ("retry", tuple(seqs[:3]))


def test_a_counter_that_increases(clock: FrozenClock) -> None:
    agent = make(clock)
    agent.remember("processed", 0)
    for _ in range(40):
        agent.remember("processed", agent.recall("processed").value + 1)
    assert agent.recall("processed").value == 40
    assert_quiet(agent)


# -- bookkeeping between repeats is not progress


def _iso(moment: float, *, utc: bool) -> str:
    if utc:
        return datetime.fromtimestamp(moment, timezone.utc).isoformat().replace("+00:00", "Z")
    return datetime.fromtimestamp(moment).isoformat()  # naive local time


BOOKKEEPING: dict[str, Callable[[FrozenClock, int], Any]] = {
    "an attempt counter": lambda clock, i: i + 1,
    "a countdown": lambda clock, i: 10 - i,
    "the time as epoch seconds": lambda clock, i: clock(),
    "the time as epoch milliseconds": lambda clock, i: int(clock() * 1000),
    "the time in ISO 8601 UTC": lambda clock, i: _iso(clock(), utc=True),
    "the local time in ISO 8601": lambda clock, i: _iso(clock(), utc=False),
}


@pytest.mark.parametrize("what", BOOKKEEPING)
def test_a_retry_that_writes_bookkeeping_is_still_a_retry(clock: FrozenClock, what: str) -> None:
    """Counting attempts or stamping the time between identical failures learns nothing.
    (A counter's first value is news: there is no step yet, so its chain starts after.)"""
    agent = make(clock)
    seqs = []
    for i in range(4):
        seqs.append(fail(agent, "charge_card", {"order": 8812}, "CardDeclined: insufficient funds"))
        agent.remember("attempt_marker", BOOKKEEPING[what](clock, i))
        clock.advance(2)
    first = 1 if "count" in what else 0
    assert the_signal(agent, "retry").seqs == tuple(seqs[first:])


def test_handoffs_passed_back_with_turn_counters_are_ping_pong(clock: FrozenClock) -> None:
    planner, coder = _pair(clock)
    task = {"task": "implement login"}
    for turn in range(3):
        planner.remember("turn", turn)
        planner.record_handoff("coder", task)
        coder.remember("turn", turn)
        coder.record_handoff("planner", task)
        clock.advance(1)
    assert active(coder, "ping_pong") or active(planner, "ping_pong")


NEWS: dict[str, Callable[[FrozenClock, int], Any]] = {
    "readings": lambda clock, i: [101.25, 99.5, 102.75, 98.0][i],
    "counts that jump": lambda clock, i: [3, 7, 12, 20][i],
    "dates ahead": lambda clock, i: _iso(clock() + 86400 * (i + 1), utc=True),
    "a value that holds a time": lambda clock, i: {"at": clock(), "reading": i},
}


@pytest.mark.parametrize("what", NEWS)
def test_numbers_and_times_that_are_news_are_progress(clock: FrozenClock, what: str) -> None:
    """Only a step of one or the current time is bookkeeping: other numbers, times ahead,
    and values that merely contain a time are new information."""
    agent = make(clock)
    for i in range(4):
        agent.remember("price", NEWS[what](clock, i))
        agent.log_decision("Hold the position and check the market again later")
        fail(agent, "place_order", {"side": "buy"}, "market closed")
        clock.advance(2)
    assert_quiet(agent)


def test_interleaved_unrelated_tools(clock: FrozenClock) -> None:
    agent = make(clock)
    for i in range(20):
        ok(agent, "get_weather", {"city": ["Paris", "Oslo", "Lima"][i % 3], "day": i}, 10 + i)
        ok(agent, "convert_currency", {"amount": i, "to": "EUR"}, round(i * 0.92, 2))
        ok(agent, "get_time", {"tz": "UTC"}, f"12:{i:02d}")
    assert_quiet(agent)


def test_a_long_task_repeating_a_call_with_changing_results(clock: FrozenClock) -> None:
    agent = make(clock)
    for depth in range(200, 0, -2):
        ok(agent, "queue_depth", {"queue": "emails"}, depth)
        ok(agent, "send_batch", {"queue": "emails", "ids": [depth, depth - 1]}, {"sent": 2})
        clock.advance(1)
    assert_quiet(agent)


def test_draining_a_queue_with_a_fixed_acknowledgement(clock: FrozenClock) -> None:
    """A worker drains a queue: send_next() (same arguments) acknowledges {"sent": 1}
    every time, while queue_depth shows the progress. The retry run of send_next ignores
    the new results between its calls: "returned the same result" from the 5th message,
    looping from the 6th, confidence 1.0 by the end."""
    agent = make(clock)
    for depth in range(40, 0, -1):
        ok(agent, "queue_depth", {"queue": "emails"}, depth)
        ok(agent, "send_next", {"queue": "emails"}, {"sent": 1})
        clock.advance(1)
    assert_quiet(agent)


def test_alternating_between_two_files_with_changing_content(clock: FrozenClock) -> None:
    agent = make(clock)
    for i in range(12):
        for path in ("src/app.py", "tests/test_app.py"):
            content = f"# revision {i} of {path}\n" + "pass\n" * i
            ok(agent, "write_file", {"path": path, "content": content}, "written")
            agent.remember(f"file:{path}", content)
    assert_quiet(agent)


def test_the_same_decision_restated_after_new_tool_results(clock: FrozenClock) -> None:
    agent = make(clock)
    for i in range(6):
        ok(agent, "search_flights", {"to": "LIS"}, [{"price": 120 + i}])
        agent.log_decision("Wait for a cheaper flight before booking", context={"subject": "lis"})
    assert_quiet(agent)


def test_edit_then_rerun_tests_is_not_a_retry_loop(clock: FrozenClock) -> None:
    """A coding agent runs the tests, edits the code (new content each time) and runs
    them again; the same test fails twice more and passes on the fourth run. Each edit is
    new information, but the retry run ignores everything between two calls of the
    stream: "run_tests failed the same way 3 times" (0.8, looping) after the 3rd run, and
    a pause policy stops the agent one edit before its fix."""
    agent = make(clock)
    failure = "AssertionError: test_parse_date: expected 2025-01-31, got 2025-01-30"
    for attempt in range(3):
        fail(agent, "run_tests", {"path": "tests/"}, failure)
        ok(agent, "read_file", {"path": "src/dates.py", "rev": attempt}, f"source rev {attempt}")
        ok(agent, "write_file", {"path": "src/dates.py", "patch": f"fix #{attempt}"}, "ok")
        clock.advance(30)
    ok(agent, "run_tests", {"path": "tests/"}, "41 passed")
    assert_quiet(agent)


def test_a_status_flag_toggling_while_new_jobs_are_processed(clock: FrozenClock) -> None:
    """A worker sets status=busy, processes a new job, stores its result and sets
    status=idle, job after job. Every job is new, yet the status key's busy/idle cycle is
    reported as oscillation (0.98 after 4 jobs): the key stream ignores progress elsewhere.
    The same happens with a per-item phase key (download/parse/store for each document)."""
    agent = make(clock)
    for job in range(4):
        agent.remember("status", "busy")
        ok(agent, "process_job", {"job": job}, {"job": job, "rows": 100 + job})
        agent.remember(f"result/{job}", {"rows": 100 + job})
        agent.remember("status", "idle")
        clock.advance(5)
    assert_quiet(agent)


def test_batch_phases_per_document_are_not_oscillation(clock: FrozenClock) -> None:
    agent = make(clock)
    for doc in range(3):
        for phase in ("download", "parse", "store"):
            agent.remember("phase", phase)
            ok(agent, phase, {"doc": doc}, f"{phase} of document {doc}")
    assert_quiet(agent)


def test_per_item_decisions_alternating_verdicts(clock: FrozenClock) -> None:
    """Templated decisions on different orders (no subject given), each after fetching
    that order: approve, reject, approve, reject, approve. The decision stream without a
    subject clusters "Approve ... 1001" with "Approve ... 1003" and reports oscillation."""
    agent = make(clock)
    for order in range(1001, 1006):
        ok(agent, "get_order", {"id": order}, {"id": order, "total": order % 7 * 10})
        verdict = "Approve" if order % 2 else "Reject"
        agent.log_decision(
            f"{verdict} the refund request for customer order number {order} after reviewing"
            " the order history and the refund policy"
        )
    assert_quiet(agent)


# -- realistic mixed traces (none of them is a loop)


def test_trace_research_agent(clock: FrozenClock) -> None:
    agent = make(clock, "researcher")
    queries = ["sqlite wal mode", "sqlite busy timeout", "wal checkpoint starvation"]
    for n, query in enumerate(queries):
        agent.record_llm_call("gpt-4o", tokens_in=900, tokens_out=120, cost_usd=0.004)
        hits = [f"https://example.org/{query.replace(' ', '-')}/{i}" for i in range(3)]
        ok(agent, "web_search", {"q": query}, hits)
        for url in hits:
            ok(agent, "fetch_page", {"url": url}, f"text of {url}")
            agent.remember(f"notes/{url}", f"summary of {url}")
        agent.remember("open_questions", queries[n + 1 :])
        agent.log_decision(f"Read more about {query}", context={"subject": "research"})
        clock.advance(20)
    agent.log_decision("Write the report now", context={"subject": "research"})
    agent.remember("report", "WAL mode with a busy timeout avoids most lock errors")
    assert_quiet(agent)


def test_trace_support_agent_with_one_transient_error(clock: FrozenClock) -> None:
    store = SqliteStore(":memory:")
    agent = make(clock, "support", store)
    human = make(clock, "human", store)
    for ticket in range(5):
        ok(agent, "get_ticket", {"id": ticket}, {"id": ticket, "text": f"problem {ticket}"})
        if ticket == 2:
            fail(agent, "get_customer", {"ticket": ticket}, "HTTP 502 Bad Gateway (req 1f9a7c3e)")
            clock.advance(2)
        ok(agent, "get_customer", {"ticket": ticket}, {"name": f"customer {ticket}"})
        agent.remember(f"ticket/{ticket}/summary", f"customer {ticket} reports problem {ticket}")
        agent.log_decision(f"Reply to ticket {ticket} with the reset guide")
        if ticket % 2:
            agent.record_handoff("human", {"ticket": ticket, "draft": f"reply {ticket}"})
            human.record_handoff("support", {"ticket": ticket, "approved": True})
        clock.advance(30)
    assert_quiet(agent)
    assert_quiet(human)


def test_trace_coding_agent_until_the_tests_pass(clock: FrozenClock) -> None:
    agent = make(clock, "coder")
    results = ["3 failed, 38 passed", "2 failed, 39 passed", "1 failed, 40 passed", "41 passed"]
    for attempt, result in enumerate(results):
        ok(agent, "run_tests", {"path": "tests/"}, result)
        if result == "41 passed":
            break
        for path in ("src/parser.py", "src/lexer.py"):
            ok(agent, "read_file", {"path": path}, f"{path} at attempt {attempt}")
            ok(agent, "edit_file", {"path": path, "patch": f"{path} fix {attempt}"}, "applied")
        agent.remember("attempts", attempt + 1)
        clock.advance(40)
    agent.log_decision("Open a pull request", reasoning="all tests pass")
    assert_quiet(agent)


def test_trace_data_pipeline(clock: FrozenClock) -> None:
    agent = make(clock, "etl")
    cursor: str | None = "c0"
    rows = 0
    page = 0
    while cursor is not None:
        page += 1
        batch = [f"row-{page}-{i}" for i in range(50)]
        next_cursor = f"c{page}" if page < 25 else None
        ok(agent, "fetch_rows", {"cursor": cursor}, {"rows": batch, "next": next_cursor})
        rows += len(batch)
        ok(agent, "load_rows", {"table": "events", "count": len(batch), "page": page}, "ok")
        agent.remember("progress", {"rows": rows, "cursor": next_cursor})
        cursor = next_cursor
        clock.advance(3)
    assert agent.recall("progress").value == {"rows": 1250, "cursor": None}
    assert_quiet(agent)


def test_trace_llm_calls_and_reads_only(clock: FrozenClock) -> None:
    agent = make(clock, "chat")
    agent.remember("profile", {"name": "Ada"})
    for _ in range(100):
        agent.recall("profile")
        agent.record_llm_call("gpt-4o-mini", tokens_in=300, tokens_out=80, cost_usd=0.0002)
    assert_quiet(agent)


# ============================================================================== decay


def _retry_loop(agent: AgentRuntime) -> tuple[int, ...]:
    seqs = tuple(fail(agent) for _ in range(3))
    assert agent.loop_status().state == "looping"
    return seqs


def test_status_returns_to_ok_after_other_actions(clock: FrozenClock) -> None:
    """Actions that bring nothing new (LLM calls) keep a loop current for 25 actions."""
    agent = make(clock)
    seqs = _retry_loop(agent)
    for _ in range(25):
        agent.record_llm_call("gpt-4o-mini", tokens_in=10)
    assert agent.loop_status().state == "looping"  # 25 other actions: still flagged
    agent.record_llm_call("gpt-4o-mini", tokens_in=10)
    assert agent.loop_status() == (("ok", ()))  # 26 other actions: the agent moved on
    (past,) = agent.loop_history()
    assert (past.kind, past.seqs, past.confidence) == ("retry", seqs, 0.8)


def test_status_returns_to_ok_after_three_steps_of_progress(clock: FrozenClock) -> None:
    """New values (or results, or messages) elsewhere: the agent has moved on after three."""
    agent = make(clock)
    agent.remember("noise", "same")
    seqs = _retry_loop(agent)
    for i in range(2):
        agent.remember(f"note-{i}", i)
        agent.remember("noise", "same")  # not new: the key already had it
    assert agent.loop_status().state == "looping"
    agent.remember("note-2", 2)
    assert agent.loop_status() == (("ok", ()))
    (past,) = agent.loop_history()
    assert (past.kind, past.seqs) == ("retry", seqs)
    assert [fail(agent) for _ in range(3)] and agent.loop_status().state == "looping"


def test_status_returns_to_ok_after_600_seconds(clock: FrozenClock) -> None:
    agent = make(clock)
    _retry_loop(agent)
    clock.advance(599)
    assert agent.loop_status().state == "looping"
    clock.advance(2)
    assert agent.loop_status().state == "ok"
    assert [s.kind for s in agent.loop_history()] == ["retry"]


def test_a_loop_that_resumes_after_decay_is_detected_again(clock: FrozenClock) -> None:
    agent = make(clock)
    _retry_loop(agent)
    clock.advance(601)
    assert agent.loop_status().state == "ok"
    _retry_loop(agent)
    assert [s.kind for s in agent.loop_history()] == ["retry", "retry"]


def test_loop_history_is_in_the_audit_chain(clock: FrozenClock) -> None:
    agent = make(clock)
    t0 = clock.now
    retry_seqs = _retry_loop(agent)
    clock.advance(100)
    t1 = clock.now
    agent.remember("cfg", 1)
    for _ in range(3):
        agent.remember("cfg", agent.recall("cfg").value)
    agent.remember("cfg", 2)  # progress: both signals over
    for i in range(30):
        agent.remember(f"other-{i}", i)
    assert agent.loop_status().state == "ok"
    history = agent.loop_history()
    assert [(s.kind, s.detected_at) for s in history] == [("retry", t0), ("recall_write", t1)]
    assert history[0].seqs == retry_seqs
    assert all(s.explanation and s.suggestion for s in history)
    assert [s.kind for s in agent.loop_history(since=t1)] == ["recall_write"]
    assert len(agent.loop_history(limit=1)) == 1
    events = agent.timeline(kinds=["loop_detected"])
    assert [e.payload["kind"] for e in events] == ["retry", "recall_write"]
    assert events[0].seq == retry_seqs[-1] + 1  # recorded right after the completing call
    report = agent.audit.verify()
    assert report.ok and report.checked == agent.audit.head().seq


def test_loop_history_sees_detections_of_other_runtimes(tmp_path: Path, clock: FrozenClock) -> None:
    path = tmp_path / "agents.db"
    first = make(clock, "worker", path)
    seqs = _retry_loop(first)
    second = make(clock, "worker", path)
    # A new runtime replays the agent's recent events, so an ongoing loop stays visible
    # across a restart; the detection is not recorded twice.
    assert [(s.kind, s.seqs) for s in second.loop_status().signals] == [("retry", seqs)]
    assert [(s.kind, s.seqs) for s in second.loop_history()] == [("retry", seqs)]
    assert second.stats().loops_detected == 0


def test_status_to_dict_round_trips_the_events(clock: FrozenClock) -> None:
    agent = make(clock)
    seqs = _retry_loop(agent)
    as_dict = agent.loop_status().to_dict()
    assert as_dict["state"] == "looping"
    (signal,) = as_dict["signals"]
    assert signal["kind"] == "retry"
    assert [e["seq"] for e in signal["events"]] == list(seqs)
    assert {"kind", "name", "preview"} <= set(signal["events"][0])


# ============================================================================== scale


def test_many_streams_stay_bounded_and_quiet(clock: FrozenClock) -> None:
    agent = make(clock)
    for i in range(3000):
        ok(agent, f"tool-{i % 40}", {"i": i}, i)
        if i % 3 == 0:
            agent.remember(f"key-{i}", uuid.uuid4().hex)
    assert_quiet(agent)


def test_confidence_never_decreases_while_a_loop_continues(clock: FrozenClock) -> None:
    agent = make(clock)
    confidences = []
    for i in range(12):
        fail(agent)
        if i >= 2:
            confidences.append(the_signal(agent, "retry").confidence)
    assert all(a <= b for a, b in itertools.pairwise(confidences))
    assert confidences[-1] < 1.0
