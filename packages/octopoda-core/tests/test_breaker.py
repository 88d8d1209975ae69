"""The circuit breaker: LoopPolicy validation, warn (the default), pause (persisted, seen by
other processes, lifted by resume), raise, min_confidence, the spend and tool-call caps, and
agent.stats().

Time is a :class:`~octopoda.testing.FrozenClock`; the multi-process tests run
``procs/loop_agent.py`` in real interpreters on one store file.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import math
from pathlib import Path
from typing import Any

import pytest

from octopoda import (
    AgentPaused,
    AgentRuntime,
    InvalidInput,
    LoopDetected,
    LoopPolicy,
    LoopSignal,
    OctopodaError,
    SqliteStore,
)
from octopoda.testing import FrozenClock

PROCS = Path(__file__).with_name("procs")


def _load_driver() -> Any:
    spec = importlib.util.spec_from_file_location("loop_driver", PROCS / "loop_driver.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def driver() -> Any:
    return _load_driver()


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock()


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "agents.db"
    SqliteStore(path).close()
    return path


def make(
    clock: FrozenClock,
    policy: LoopPolicy | None = None,
    agent: str = "agent",
    store: Any = ":memory:",
) -> AgentRuntime:
    return AgentRuntime(agent, store=store, policy=policy, clock=clock)


ARGS = {"city": "Lisbon"}
ERROR = "TimeoutError: weather API timed out after 30000 ms"


def fail(agent: AgentRuntime, tool: str = "get_weather") -> int:
    return agent.record_tool_call(tool, ARGS, error=ERROR).seq


def kinds(agent: AgentRuntime) -> list[str]:
    return [e.kind for e in agent.timeline()]


# ============================================================================== the policy


@pytest.mark.parametrize(
    "kwargs",
    [
        {"on_loop": "stop"},
        {"on_loop": "PAUSE"},
        {"on_loop": ""},
        {"on_loop": None},
        {"min_confidence": -0.01},
        {"min_confidence": 1.01},
        {"min_confidence": math.nan},
        {"min_confidence": math.inf},
        {"min_confidence": "0.9"},
        {"min_confidence": True},
        {"spend_cap_usd": -1.0},
        {"spend_cap_usd": math.nan},
        {"spend_cap_usd": math.inf},
        {"spend_cap_usd": "5"},
        {"spend_window_seconds": 0},
        {"spend_window_seconds": -60},
        {"spend_window_seconds": math.nan},
        {"max_tool_calls": -1},
        {"max_tool_calls": 2.5},
        {"max_tool_calls": True},
        {"max_tool_calls": "10"},
    ],
)
def test_invalid_policies_are_refused(kwargs: dict[str, Any]) -> None:
    with pytest.raises(InvalidInput) as info:
        LoopPolicy(**kwargs)
    assert isinstance(info.value, ValueError)
    (name,) = kwargs
    assert name in str(info.value)


def test_valid_policies_and_defaults() -> None:
    default = LoopPolicy()
    assert (default.on_loop, default.min_confidence, default.spend_cap_usd) == ("warn", 0.8, None)
    assert default.max_tool_calls is None and default.spend_window_seconds == 3600.0
    edge = LoopPolicy("pause", min_confidence=0, spend_cap_usd=0, max_tool_calls=0)
    assert edge.min_confidence == 0.0 and edge.max_tool_calls == 0
    assert LoopPolicy("raise", min_confidence=1).min_confidence == 1.0
    assert "pause" in repr(edge)
    assert AgentRuntime("a", store=":memory:").policy.on_loop == "warn"


def test_runtime_refuses_a_policy_that_is_not_a_loop_policy() -> None:
    """Not accepted silently (the first write would fail with AttributeError after being
    stored)."""
    for policy in ("pause", {"on_loop": "pause"}, 0.9):
        with pytest.raises(InvalidInput):
            AgentRuntime("a", store=":memory:", policy=policy)  # type: ignore[arg-type]


def test_recording_validates_its_inputs(clock: FrozenClock) -> None:
    agent = make(clock)
    bad_calls = [
        lambda: agent.record_tool_call("", ARGS),
        lambda: agent.record_tool_call(None, ARGS),  # type: ignore[arg-type]
        lambda: agent.record_tool_call("t", ARGS, cost_usd=-0.01),
        lambda: agent.record_tool_call("t", ARGS, cost_usd=math.nan),
        lambda: agent.record_tool_call("t", ARGS, tokens_in=1.5),  # type: ignore[arg-type]
        lambda: agent.record_tool_call("t", ARGS, tokens_out=-1),
        lambda: agent.record_tool_call("t", ARGS, duration_ms=-3),
        lambda: agent.record_llm_call(""),
        lambda: agent.record_llm_call("gpt", cost_usd=-1),
        lambda: agent.record_handoff(""),
        lambda: agent.pause(""),
    ]
    for call in bad_calls:
        with pytest.raises(InvalidInput):
            call()
    assert kinds(agent) == []  # nothing was recorded


def test_recorded_actions_keep_digests_and_previews(clock: FrozenClock) -> None:
    agent = make(clock)
    big = {"text": "x" * 5000}
    event = agent.record_tool_call(
        "summarise", big, result="y" * 5000, cost_usd=0.01, tokens_in=10, duration_ms=12.5
    )
    p = event.payload
    assert len(p["args_sha256"]) == 64 and len(p["result_sha256"]) == 64
    assert len(p["args_preview"]) <= 120 and len(p["result_preview"]) <= 120
    assert (p["cost_usd"], p["tokens_in"], p["duration_ms"]) == (0.01, 10, 12.5)
    failed = agent.record_tool_call("summarise", big, error=ValueError("bad input"))
    assert failed.payload["error"] == "ValueError: bad input"
    assert "result_sha256" not in failed.payload
    llm = agent.record_llm_call("gpt-4o", cost_usd=0.002, tokens_in=100, tokens_out=20)
    assert llm.payload == {"model": "gpt-4o", "cost_usd": 0.002, "tokens_in": 100, "tokens_out": 20}
    handoff = agent.record_handoff("reviewer", {"draft": 1})
    assert handoff.payload["to"] == "reviewer" and "draft" in handoff.payload["preview"]
    assert agent.audit.verify().ok


# ============================================================================== warn


def test_the_default_policy_warns_in_the_log_and_never_pauses(
    clock: FrozenClock, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    caplog.set_level(logging.WARNING, logger="octopoda")
    agent = make(clock)
    seqs = []
    for _ in range(10):
        agent.guard_tool_call("get_weather", ARGS)  # never raises
        seqs.append(fail(agent))
    assert agent.loop_status().state == "looping"
    assert agent.loop_status().signals[0].confidence > 0.99
    assert not agent.paused
    assert agent.stats().paused is False
    assert "paused" not in kinds(agent)
    records = [r for r in caplog.records if r.name == "octopoda"]
    assert len(records) == 1  # one loop, announced once
    (record,) = records
    assert record.levelno == logging.WARNING
    message = record.getMessage()
    assert "retry" in message and "get_weather" in message
    assert "events 1, 2, 3" in message
    assert capsys.readouterr().out == ""  # never printed to stdout


# ============================================================================== pause


def test_pause_stops_the_agent_and_names_the_loop(clock: FrozenClock) -> None:
    agent = make(clock, LoopPolicy("pause"))
    seqs = [fail(agent), fail(agent)]
    agent.guard_tool_call("get_weather", ARGS)  # below the threshold: not paused
    seqs.append(fail(agent))
    assert agent.paused
    with pytest.raises(AgentPaused) as info:
        agent.guard_tool_call("get_weather", ARGS)
    exc = info.value
    assert isinstance(exc, OctopodaError)
    text = str(exc)
    assert "retry loop" in text and "get_weather" in text
    assert f"events {', '.join(map(str, seqs))}" in text
    assert "resume()" in text
    assert "retry loop" in exc.reason
    assert exc.signal["kind"] == "retry"
    assert [e["seq"] for e in exc.signal["events"]] == seqs
    stats = agent.stats()
    assert stats.paused and stats.pause_reason is not None and "retry" in stats.pause_reason
    # every other tool is stopped too, until resume()
    with pytest.raises(AgentPaused):
        agent.guard_tool_call("send_email", {"to": "ops@example.com"})
    assert kinds(agent) == ["tool_call"] * 3 + ["loop_detected", "paused"]
    paused_event = agent.timeline(kinds=["paused"])[0]
    assert paused_event.payload["signal"]["kind"] == "retry"
    assert agent.audit.verify().ok


def test_a_pause_reason_shows_the_call_as_written(clock: FrozenClock) -> None:
    agent = make(clock, LoopPolicy("pause"))
    for _ in range(3):
        agent.record_tool_call("fetch", {"url": "https://example.com", "page": 2}, error=ERROR)
    with pytest.raises(AgentPaused) as info:
        agent.guard_tool_call("fetch", {"url": "https://example.com", "page": 2})
    reason = info.value.reason
    assert reason.startswith(
        'retry loop (80%): fetch was called 3 times as fetch(page=2, url="https://example.com")'
    )
    assert "{" not in reason and "'" not in reason  # neither JSON objects nor Python reprs
    assert "(events 1, 2, 3);" in reason  # one agent's events: by seq alone


def test_a_ping_pong_pause_reason_names_each_events_agent(clock: FrozenClock) -> None:
    """The passes of a ping-pong are events of two agents, whose seqs are unrelated: each
    is named with its agent (researcher#2, not a bare 2 beside the coder's 2)."""
    store = SqliteStore(":memory:")
    researcher = make(clock, agent="researcher", store=store)
    coder = make(clock, LoopPolicy("pause"), agent="coder", store=store)
    researcher.remember("notes", "the first draft")  # (its seqs run ahead of the coder's)
    refs = []
    for sender, to in ((researcher, "coder"), (coder, "researcher")) * 2:
        refs.append(f"{sender.agent_id}#{sender.record_handoff(to, {'task': 'review'}).seq}")
        clock.advance(1)
    with pytest.raises(AgentPaused) as info:
        coder.guard_tool_call("run_tests")
    assert refs == ["researcher#2", "coder#1", "researcher#3", "coder#2"]
    assert f"(events {', '.join(refs)});" in info.value.reason
    assert info.value.reason.startswith("ping_pong loop (80%): researcher and coder passed")


@pytest.mark.parametrize(
    ("name", "preview", "text"),
    [
        ("fetch", '{"url":"https://example.com"}', 'fetch(url="https://example.com")'),
        (
            "search",
            '{"filters":{"lang":"en"},"q":"loops"}',
            'search(filters={"lang": "en"}, q="loops")',
        ),
        ("add", "[1,2]", "add(1, 2)"),
        ("say", '"hello"', 'say("hello")'),
        ("now", "null", "now()"),
        ("tag", '{"a b":true}', 'tag("a b"=true)'),
        ("read", '{"path":"/very/long/path/' + "x" * 100 + "...", None),
    ],
)
def test_calls_read_as_written(name: str, preview: str, text: str | None) -> None:
    from octopoda._loops.signals import call_text

    shown = call_text(name, preview)
    if text is None:  # a preview cut short: as it is, within 80 characters
        assert shown.startswith('read({"path":"/very/long/path/xx') and shown.endswith("...)")
        assert len(shown) == 80
    else:
        assert shown == text


def test_resume_lifts_the_pause(clock: FrozenClock) -> None:
    agent = make(clock, LoopPolicy("pause"))
    for _ in range(3):
        fail(agent)
    assert agent.paused
    assert agent.resume() is True
    assert not agent.paused
    assert agent.loop_status().state == "ok"
    agent.guard_tool_call("get_weather", ARGS)
    agent.record_tool_call("get_weather", ARGS, result={"temp_c": 21})
    assert agent.resume() is False  # not paused: nothing to lift, nothing recorded
    assert kinds(agent) == ["tool_call"] * 3 + ["loop_detected", "paused", "resumed", "tool_call"]
    assert agent.audit.verify().ok


def test_a_manual_pause_and_resume(clock: FrozenClock) -> None:
    agent = make(clock)
    agent.pause("operator: investigating a bad deploy")
    with pytest.raises(AgentPaused) as info:
        agent.guard_tool_call("deploy", {})
    assert info.value.reason == "operator: investigating a bad deploy"
    assert info.value.signal is None
    assert agent.stats().pause_reason == "operator: investigating a bad deploy"
    assert agent.resume()
    agent.guard_tool_call("deploy", {})
    assert kinds(agent) == ["paused", "resumed"]


def test_a_pause_is_seen_by_another_process_and_lifted_by_resume(
    db: Path, clock: FrozenClock, driver: Any
) -> None:
    with driver.AgentProcess(db, "weather-bot") as other:
        assert other.call("guard", name="get_weather", args=ARGS)["ok"]
        agent = make(clock, LoopPolicy("pause"), "weather-bot", db)
        seqs = [fail(agent) for _ in range(3)]
        assert agent.paused
        answer = other.call("guard", name="get_weather", args=ARGS)
        assert not answer["ok"], answer
        error = answer["error"]
        assert error["type"] == "AgentPaused"
        assert "retry loop" in error["message"]
        assert f"events {', '.join(map(str, seqs))}" in error["message"]
        assert "retry loop" in error["reason"]
        assert answer["paused"] is True
        assert agent.resume()
        answer = other.call("guard", name="get_weather", args=ARGS)
        assert answer["ok"] and answer["paused"] is False, answer
    fresh = AgentRuntime("weather-bot", store=db)
    assert [e.kind for e in fresh.timeline(kinds=["paused", "resumed"])] == ["paused", "resumed"]
    assert fresh.audit.verify().ok


def test_resume_from_another_process_lets_the_paused_process_continue(
    db: Path, driver: Any
) -> None:
    """The agent process loops and pauses itself; an operator resumes it from another
    process. The paused process still holds the loop signal in memory (resume() only
    resets the monitor of the runtime that calls it), so its next guard_tool_call finds
    the policy tripped again and re-pauses with the old reason: the resume never takes.
    Waiting does not help either: LoopGuard.tripped() reads monitor.signals() without the
    current time, so the 600 s expiry is not applied (an hour later it still re-pauses,
    unless something happens to call loop_status() first)."""
    with driver.AgentProcess(db, "weather-bot", {"on_loop": "pause"}) as bot:
        for _ in range(3):
            answer = bot.call("tool", name="get_weather", args=ARGS, error=ERROR)
        assert answer["paused"] is True
        operator = AgentRuntime("weather-bot", store=db)
        assert operator.paused
        assert operator.resume()
        assert not operator.paused
        answer = bot.call("guard", name="get_weather", args=ARGS)
        assert answer["ok"], answer["error"]
        assert answer["paused"] is False


# ============================================================================== raise


def test_raise_policy_raises_from_the_call_that_completes_the_loop(clock: FrozenClock) -> None:
    agent = make(clock, LoopPolicy("raise"))
    seqs = [fail(agent), fail(agent)]
    with pytest.raises(LoopDetected) as info:
        fail(agent)
    signal = info.value.signal
    assert isinstance(signal, LoopSignal)
    assert signal.kind == "retry"
    assert signal.seqs == (*seqs, seqs[-1] + 1)
    assert "retry loop" in str(info.value) and "get_weather" in str(info.value)
    # the action itself is stored, and so is the detection; the agent is not paused
    assert kinds(agent) == ["tool_call"] * 3 + ["loop_detected"]
    assert not agent.paused
    agent.guard_tool_call("get_weather", ARGS)
    with pytest.raises(LoopDetected):  # continuing the loop raises again
        fail(agent)
    assert agent.audit.verify().ok


def test_raise_policy_does_not_raise_from_unrelated_later_calls(clock: FrozenClock) -> None:
    """The policy raises "from the call that completed the loop", but the signal stays
    active (25 actions or 600 s), and every later recording call re-raises it: the agent
    catches LoopDetected, writes down what happened, and that remember() raises too."""
    agent = make(clock, LoopPolicy("raise"))
    fail(agent)
    fail(agent)
    with pytest.raises(LoopDetected):
        fail(agent)
    agent.remember("incident", "weather API down; switching to the cached forecast")
    agent.record_tool_call("get_cached_forecast", ARGS, result={"temp_c": 19})


# ============================================================================== min_confidence


def test_min_confidence_filters_weaker_signals(clock: FrozenClock) -> None:
    agent = make(clock, LoopPolicy("pause", min_confidence=0.9))
    for _ in range(3):
        fail(agent)
    status = agent.loop_status()
    assert (status.state, status.signals[0].confidence) == ("warning", 0.8)
    assert not agent.paused
    agent.guard_tool_call("get_weather", ARGS)
    fail(agent)  # 0.9
    assert agent.paused
    assert agent.loop_status().state == "looping"


def test_a_weak_signal_below_the_default_confidence_does_not_pause(clock: FrozenClock) -> None:
    agent = make(clock, LoopPolicy("pause"))
    for value in ("a", "b", "a", "b"):
        agent.remember("mode", value)  # oscillation at 0.7
    assert agent.loop_status().state == "warning"
    assert not agent.paused
    agent.remember("mode", "a")  # 0.85
    assert agent.paused


def test_raise_respects_min_confidence(clock: FrozenClock) -> None:
    agent = make(clock, LoopPolicy("raise", min_confidence=0.95))
    for _ in range(4):
        fail(agent)  # 0.8, 0.9: no raise
    with pytest.raises(LoopDetected) as info:
        fail(agent)
    assert info.value.signal.confidence == 0.95


# ============================================================================== caps


def test_spend_cap_counts_only_the_window(clock: FrozenClock) -> None:
    policy = LoopPolicy(spend_cap_usd=1.0, spend_window_seconds=60)
    agent = make(clock, policy)
    agent.record_llm_call("gpt-4o", cost_usd=0.6)
    clock.advance(30)
    agent.record_tool_call("search", {"q": 1}, result=[1], cost_usd=0.3)
    assert not agent.paused  # 0.9
    clock.advance(31)  # the first 0.6 is now outside the window
    agent.record_llm_call("gpt-4o", cost_usd=0.3)
    assert not agent.paused  # 0.6 in the window, 1.2 overall
    agent.guard_tool_call("search", {"q": 2})
    clock.advance(5)
    agent.record_llm_call("gpt-4o", cost_usd=0.1)
    assert not agent.paused  # 0.7
    agent.record_llm_call("gpt-4o", cost_usd=0.3)
    assert not agent.paused  # exactly 1.0 is not over the cap
    agent.record_llm_call("gpt-4o", cost_usd=0.05)
    assert agent.paused
    with pytest.raises(AgentPaused) as info:
        agent.guard_tool_call("search", {"q": 3})
    assert "spend cap" in info.value.reason and "60s" in info.value.reason
    assert info.value.signal is None
    stats = agent.stats()
    assert stats.spend_usd == pytest.approx(1.65)
    assert stats.llm_calls == 5 and stats.tool_calls == 1


def test_spend_cap_costs_age_out_while_waiting(clock: FrozenClock) -> None:
    agent = make(clock, LoopPolicy(spend_cap_usd=1.0, spend_window_seconds=60))
    agent.record_llm_call("gpt-4o", cost_usd=0.9)
    clock.advance(120)
    agent.record_llm_call("gpt-4o", cost_usd=0.9)
    assert not agent.paused
    agent.guard_tool_call("search", {})


def test_spend_cap_counts_the_agents_spend_from_an_earlier_run(
    db: Path, clock: FrozenClock
) -> None:
    """Spend is summed in the memory of one runtime. An agent restarted within the window
    (a new process, a crash loop, a cron job) starts from $0, and so does a second worker
    process of the same agent: together they spend $1.20 against a $1.00 cap unpaused."""
    policy = LoopPolicy(spend_cap_usd=1.0, spend_window_seconds=3600)
    first = make(clock, policy, "summariser", db)
    first.record_llm_call("gpt-4o", cost_usd=0.6)
    clock.advance(60)
    second = make(clock, policy, "summariser", db)
    second.record_llm_call("gpt-4o", cost_usd=0.6)
    assert second.paused


def test_max_tool_calls(clock: FrozenClock) -> None:
    agent = make(clock, LoopPolicy(max_tool_calls=3))
    for i in range(3):
        agent.guard_tool_call("lookup", {"i": i})
        agent.record_tool_call("lookup", {"i": i}, result=i)
        agent.record_llm_call("gpt-4o")  # LLM calls do not count
    assert agent.paused
    with pytest.raises(AgentPaused) as info:
        agent.guard_tool_call("lookup", {"i": 3})
    assert "tool-call cap" in info.value.reason and "3" in info.value.reason
    assert kinds(agent).count("paused") == 1


def test_max_tool_calls_zero_blocks_the_first_call(clock: FrozenClock) -> None:
    agent = make(clock, LoopPolicy(max_tool_calls=0))
    with pytest.raises(AgentPaused):
        agent.guard_tool_call("lookup", {})
    assert agent.paused


def test_caps_apply_with_the_warn_policy(clock: FrozenClock) -> None:
    agent = make(clock, LoopPolicy("warn", spend_cap_usd=0.5))
    for _ in range(5):
        fail(agent)  # a loop: warn only
    assert not agent.paused
    agent.record_llm_call("gpt-4o", cost_usd=0.75)
    assert agent.paused


# ============================================================================== stats


def test_stats(clock: FrozenClock) -> None:
    agent = make(clock, LoopPolicy("pause"))
    empty = agent.stats()
    assert empty.operations == {} and empty.tool_calls == 0 and empty.spend_usd == 0.0
    assert empty.read_latency_us["count"] == 0 and empty.write_latency_us["p50"] == 0.0
    assert (empty.loops_detected, empty.paused, empty.pause_reason) == (0, False, None)

    for i in range(3):
        agent.remember(f"k{i}", {"i": i})
    agent.recall("k0")
    agent.recall("k1")
    agent.recall("missing")
    agent.record_tool_call("search", {"q": "a"}, result=[1], cost_usd=0.01, tokens_in=5)
    agent.record_llm_call("gpt-4o", cost_usd=0.02, tokens_in=100, tokens_out=40)
    agent.record_llm_call("gpt-4o", cost_usd=0.03, tokens_in=200, tokens_out=60)
    agent.log_decision("use the cached result")
    stats = agent.stats()
    assert stats.operations == {"remember": 3, "tool_call": 1, "llm_call": 2, "decision": 1}
    assert (stats.tool_calls, stats.llm_calls) == (1, 2)
    assert stats.spend_usd == pytest.approx(0.06)
    assert (stats.tokens_in, stats.tokens_out) == (305, 100)
    for latency, count in ((stats.read_latency_us, 3), (stats.write_latency_us, 3)):
        assert latency["count"] == count
        assert 0 < latency["p50"] <= latency["p95"] <= latency["p99"]
    assert (stats.loops_detected, stats.paused, stats.pause_reason) == (0, False, None)

    for _ in range(3):
        fail(agent)
    stats = agent.stats()
    assert stats.loops_detected == 1
    assert stats.paused is True
    assert stats.pause_reason is not None and stats.pause_reason.startswith("retry loop")
    assert stats.tool_calls == 4
    json.dumps(stats._asdict())  # plain data


def test_guard_tool_call_returns_quickly_when_not_paused(clock: FrozenClock) -> None:
    agent = make(clock)
    for _ in range(1000):
        assert agent.guard_tool_call("search", {"q": "x"}) is None
    assert kinds(agent) == []  # a guard is not an action
