"""remember_many / forget_many: one transaction, one event, all or nothing."""

from __future__ import annotations

import pytest

from octopoda import AgentRuntime, InvalidInput, InvalidValue


@pytest.fixture
def agent() -> AgentRuntime:
    return AgentRuntime("batch", store=":memory:")


def test_remember_many_is_one_event(agent: AgentRuntime) -> None:
    records = agent.remember_many({"a": 1, "b": b"x"}, tags=["t"], ttl=60)
    assert [(r.key, r.version, r.seq) for r in records] == [("a", 1, 1), ("b", 1, 1)]
    assert agent.recall("b").value == b"x" and agent.recall("a").tags == ("t",)
    assert [e.kind for e in agent.timeline()] == ["remember"]
    assert [w["key"] for w in agent.timeline()[0].payload["writes"]] == ["a", "b"]


def test_a_triple_gives_its_key_its_own_tags(agent: AgentRuntime) -> None:
    agent.remember_many([("a", 1), ("b", 2, ["own", "x"]), ("c", 3, [])], tags=["all"])
    assert [agent.recall(k).tags for k in "abc"] == [("all",), ("own", "x"), ()]
    assert [i.key for i in agent.search(tags=["own"])] == ["b"]
    assert [i.key for i in agent.search(tags=["all"])] == ["a"]
    assert [e.kind for e in agent.timeline()] == ["remember"]
    assert agent.audit.verify().ok


def test_repeated_key_gets_consecutive_versions(agent: AgentRuntime) -> None:
    records = agent.remember_many([("k", 1), ("k", 2)])
    assert [r.version for r in records] == [1, 2]
    assert agent.recall("k").value == 2


@pytest.mark.parametrize(
    ("items", "error"),
    [
        ({"ok": 1, "bad": {1, 2}}, InvalidValue),
        ([("ok", 1), ("", 2)], InvalidInput),
        ([1], InvalidInput),
        ([("ok", 1, "one string")], InvalidInput),
        ([("ok", 1, ["t"], "extra")], InvalidInput),
    ],
)
def test_bad_item_writes_nothing(agent: AgentRuntime, items: object, error: type) -> None:
    agent.remember("ok", 0)
    with pytest.raises(error):
        agent.remember_many(items)  # type: ignore[arg-type]
    assert agent.recall("ok").value == 0
    assert agent.audit.head().seq == 1


def test_forget_many_skips_missing_and_duplicates(agent: AgentRuntime) -> None:
    agent.remember_many({"a": 1, "b": 2, "c": 3})
    tombstones = agent.forget_many(["a", "missing", "b", "a"])
    assert [(t.key, t.tombstone) for t in tombstones] == [("a", True), ("b", True)]
    assert agent.keys() == ["c"]
    assert agent.forget_many(["a"]) == []
    assert agent.audit.head().seq == 2
    assert agent.audit.verify().ok
