"""Limits and argument checks (issue 15): one depth limit for values, numbers out of range
and arguments of the wrong type all raise ``InvalidInput`` (an ``OctopodaError``) with a
message that says what to pass, on both stores (``any_store_url``); reads never leak
``RecursionError``."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from typing import Any

import pytest

from octopoda import (
    AgentRuntime,
    InvalidBundle,
    InvalidInput,
    InvalidValue,
    OctopodaError,
    StorageError,
    verify_audit_bundle,
)
from octopoda._values import MAX_DEPTH


def nested(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth - 1):
        value = [value]
    return value


def deep_text(depth: int) -> str:
    return "[" * depth + "]" * depth


def called_deep(frames: int, call: Callable[[], Any]) -> Any:
    """``call()`` from ``frames`` Python frames further down the stack."""
    if frames == 0:
        return call()
    return called_deep(frames - 1, call)


@pytest.fixture
def agent(any_store_url: str) -> AgentRuntime:
    return AgentRuntime("bot", store=any_store_url)


# -- item 3: one depth limit ------------------------------------------------------------------


def test_the_depth_limit_holds_on_remember_and_share(agent: AgentRuntime) -> None:
    agent.remember("ok", nested(MAX_DEPTH))
    agent.remember("ok-dict", {"a": nested(MAX_DEPTH - 1)})
    for value in (nested(MAX_DEPTH + 1), {"a": nested(MAX_DEPTH)}, nested(990), nested(50_000)):
        with pytest.raises(InvalidValue, match=f"depth passes the limit of {MAX_DEPTH}"):
            agent.remember("deep", value)
    agent.create_space("team")
    with pytest.raises(InvalidValue, match="depth"):
        agent.share("deep", nested(MAX_DEPTH + 1), space="team")
    assert not agent.recall("deep").found


def test_values_at_the_limit_read_back_from_a_deep_stack(agent: AgentRuntime) -> None:
    agent.remember("k", nested(MAX_DEPTH))
    agent.remember("k", nested(MAX_DEPTH))
    seq = agent.recall("k").seq
    assert called_deep(200, lambda: agent.recall("k").value) == nested(MAX_DEPTH)
    assert len(called_deep(200, lambda: agent.recall_history("k"))) == 2
    called_deep(200, agent.search)
    called_deep(200, lambda: agent.as_of(seq).to_dict())
    called_deep(200, agent.export_memories)
    called_deep(200, agent.timeline)


def test_a_deep_value_stored_before_the_limit_never_raises_recursion_error(tmp_path: Any) -> None:
    path = str(tmp_path / "o.db")
    agent = AgentRuntime("bot", store=path)
    agent.remember("k", [1])
    db = sqlite3.connect(path)
    db.execute("UPDATE memories SET value = ?", (deep_text(990),))
    db.commit()
    db.close()
    reads: list[Callable[[], Any]] = [
        lambda: agent.recall("k"),
        lambda: agent.recall_history("k"),
        agent.search,
        lambda: agent.as_of(1).to_dict(),
        agent.export_memories,
        agent.audit.verify,
    ]
    for read in reads:
        try:
            called_deep(200, read)
        except StorageError as exc:
            assert "'k' v1" in str(exc)


def test_the_depth_limit_holds_on_a_decision_context(agent: AgentRuntime) -> None:
    agent.log_decision("fine", context={"a": nested(MAX_DEPTH - 1)})
    for context in ({"a": nested(MAX_DEPTH + 1)}, {"a": nested(100_000)}):
        with pytest.raises(InvalidValue, match=r"depth|deeply"):
            agent.log_decision("too deep", context=context)
    circular: dict[str, Any] = {}
    circular["self"] = circular
    with pytest.raises(InvalidValue):
        agent.log_decision("circular", context=circular)
    assert [d.decision for d in agent.decisions()] == ["fine"]


def test_deep_tool_arguments_are_recorded_not_raised(agent: AgentRuntime) -> None:
    agent.record_tool_call("search", {"q": nested(100_000)}, result=nested(5000))
    assert agent.audit.verify().ok


def test_import_memories_refuses_deep_input(agent: AgentRuntime) -> None:
    bundle = agent.export_memories()
    text = json.dumps(bundle)
    deep = text.replace('"memories": []', f'"memories": {deep_text(100_000)}')
    assert deep != text
    with pytest.raises(InvalidBundle):
        agent.import_memories(deep)
    item = {"version": 1, "created_at": 1.0, "encoding": "json", "value": nested(MAX_DEPTH + 1)}
    bundle["memories"] = [{"key": "k", "versions": [item]}]
    with pytest.raises(InvalidBundle, match="depth"):
        agent.import_memories(bundle)
    assert not agent.recall("k").found


def test_verify_audit_bundle_refuses_deep_input(agent: AgentRuntime) -> None:
    agent.remember("k", 1)
    bundle = agent.audit.export()
    with pytest.raises(InvalidBundle):
        verify_audit_bundle(deep_text(100_000))
    with pytest.raises(InvalidBundle):
        verify_audit_bundle(json.dumps(bundle)[:-1] + f', "x": {deep_text(100_000)}}}')
    bundle["events"][0]["payload"]["extra"] = nested(1000)
    with pytest.raises(InvalidBundle, match="nested too deeply"):
        verify_audit_bundle(bundle)
    with pytest.raises(OctopodaError):
        verify_audit_bundle(json.dumps({"format": "octopoda.audit", "events": nested(50)}))


# -- item 4: numbers out of range -------------------------------------------------------------

BIG = 2**63
HUGE = 2**1100


OUT_OF_RANGE: dict[str, Callable[[AgentRuntime], Any]] = {
    "recall(version=2**63)": lambda a: a.recall("k", version=BIG),
    "as_of(2**63)": lambda a: a.as_of(BIG),
    "diff(2**63)": lambda a: a.diff(BIG),
    "diff(1, 2**63)": lambda a: a.diff(1, BIG),
    "timeline(after_seq=2**63)": lambda a: a.timeline(after_seq=BIG),
    "timeline(since=2**63)": lambda a: a.timeline(since=BIG),
    "timeline(until=2**1100)": lambda a: a.timeline(until=HUGE),
    "timeline(since=inf)": lambda a: a.timeline(since=float("inf")),
    "timeline(limit=2**63)": lambda a: a.timeline(limit=BIG),
    "search(limit=2**63)": lambda a: a.search(limit=BIG),
    "search(offset=2**63)": lambda a: a.search(offset=BIG),
    "recall_history(limit=2**63)": lambda a: a.recall_history("k", limit=BIG),
    "shared_history(limit=2**63)": lambda a: a.shared_history("k", limit=BIG),
    "shared_items(limit=2**63)": lambda a: a.shared_items(limit=BIG),
    "read_messages(limit=2**63)": lambda a: a.read_messages(limit=BIG),
    "read_messages(after_id=2**63)": lambda a: a.read_messages(after_id=BIG),
    "mark_read(2**63)": lambda a: a.mark_read(BIG),
    "resolve_conflict(2**63)": lambda a: a.resolve_conflict(BIG),
    "decisions(limit=2**63)": lambda a: a.decisions(limit=BIG),
    "remember(ttl=2**1100)": lambda a: a.remember("k", 1, ttl=HUGE),
    "remember(ttl=1e300)": lambda a: a.remember("k", 1, ttl=1e300),
    "remember_many(ttl=2**1100)": lambda a: a.remember_many({"k": 1}, ttl=HUGE),
    "share(ttl=2**1100)": lambda a: a.share("k", 1, ttl=HUGE),
    "share(ttl=inf)": lambda a: a.share("k", 1, ttl=float("inf")),
    "share(ttl=nan)": lambda a: a.share("k", 1, ttl=float("nan")),
    "share(expected_version=2**63)": lambda a: a.share("k", 1, expected_version=BIG),
    "forget_stale(2**1100)": lambda a: a.forget_stale(HUGE),
    "memory_health(2**1100)": lambda a: a.memory_health(stale_after_seconds=HUGE),
}


@pytest.mark.parametrize("name", OUT_OF_RANGE)
def test_numbers_out_of_range_raise_invalid_input(agent: AgentRuntime, name: str) -> None:
    agent.remember("k", 1)
    agent.share("k", 1)
    head = agent.audit.head()
    with pytest.raises(InvalidInput, match=r"2\*\*63 - 1|up to 1e\+12|finite") as raised:
        OUT_OF_RANGE[name](agent)
    assert len(str(raised.value)) < 300
    assert agent.audit.head() == head  # nothing was written


# -- item 5: argument types -------------------------------------------------------------------

WRONG_TYPES: dict[str, Callable[[AgentRuntime], Any]] = {
    "remember(tags=0)": lambda a: a.remember("k", 1, tags=0),
    "remember(tags=b'x')": lambda a: a.remember("k", 1, tags=b"x"),
    "remember(tags={'a': 1})": lambda a: a.remember("k", 1, tags={"a": 1}),
    "search(tags=0)": lambda a: a.search(tags=0),
    "share(tags=0)": lambda a: a.share("k", 1, tags=0),
    "timeline(since='x')": lambda a: a.timeline(since="x"),
    "timeline(until=[])": lambda a: a.timeline(until=[]),
    "timeline(after_seq='1')": lambda a: a.timeline(after_seq="1"),
    "timeline(kinds=0)": lambda a: a.timeline(kinds=0),
    "timeline(kinds='remember')": lambda a: a.timeline(kinds="remember"),
    "timeline(kinds=[1])": lambda a: a.timeline(kinds=[1]),
    "mark_read('1')": lambda a: a.mark_read("1"),
    "recall(version='1')": lambda a: a.recall("k", version="1"),
}
EXPECTED_HEADS = [
    *(0, "1", [], {}, (float("nan"), "0" * 64), (float("inf"), "a"), (1,), (1, 2)),
    *((-1, "0" * 64), (1, "xyz"), {"seq": 1}, (True, "0" * 64), "1:" + "0" * 64),
]


@pytest.mark.parametrize("name", WRONG_TYPES)
def test_arguments_of_the_wrong_type_raise_invalid_input(agent: AgentRuntime, name: str) -> None:
    agent.remember("k", 1)
    head = agent.audit.head()
    with pytest.raises(InvalidInput):
        WRONG_TYPES[name](agent)
    assert agent.audit.head() == head


@pytest.mark.parametrize("head", EXPECTED_HEADS, ids=repr)
def test_an_expected_head_of_the_wrong_shape_raises_invalid_input(
    agent: AgentRuntime, head: Any
) -> None:
    agent.remember("k", 1)
    with pytest.raises(InvalidInput, match="expected_head"):
        agent.audit.verify(expected_head=head)
    bundle = agent.audit.export()
    with pytest.raises(InvalidInput, match="expected_head"):
        verify_audit_bundle(bundle, expected_head=head)
    real = agent.audit.head()
    assert agent.audit.verify(expected_head=(real.seq, real.hash.upper())).ok
    assert agent.audit.verify(expected_head=list(real)).ok


def test_a_timeline_since_a_datetime(agent: AgentRuntime) -> None:
    from datetime import datetime, timezone

    agent.remember("k", 1)
    assert len(agent.timeline(since=datetime(2000, 1, 1, tzinfo=timezone.utc))) == 1
    assert agent.timeline(since=datetime(3000, 1, 1, tzinfo=timezone.utc)) == []
    with pytest.raises(InvalidInput, match="naive"):
        agent.timeline(since=datetime(2000, 1, 1))
