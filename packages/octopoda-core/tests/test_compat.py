"""Octopoda 3.3.4's method names on AgentRuntime: same call shapes, this library's records."""

from __future__ import annotations

import pytest

from octopoda import AgentRuntime, NotSupported, SnapshotNotFound
from octopoda.testing import FrozenClock


@pytest.fixture
def agent() -> AgentRuntime:
    return AgentRuntime("bot", store=":memory:", clock=FrozenClock(1_700_000_000.0))


def test_334_positional_call_shapes_work(agent: AgentRuntime) -> None:
    agent.remember("prefs", {"theme": "dark"}, ["ui"])  # tags positional, as in 3.3.4
    assert agent.recall("prefs").tags == ("ui",)
    decision = agent.log_decision("Keep VPS", "cheaper", {"cost": 5})
    assert (decision.reasoning, decision.context) == ("cheaper", {"cost": 5})


def test_restore_without_a_name_restores_the_latest_snapshot(agent: AgentRuntime) -> None:
    with pytest.raises(SnapshotNotFound, match="has no snapshot to restore"):
        agent.restore()
    agent.remember("k", 1)
    agent.snapshot("one")
    agent.remember("k", 2)
    agent.snapshot("two")
    agent.remember("k", 3)
    assert agent.restore().snapshot == "two"
    assert agent.recall("k").value == 2


def test_remember_with_ttl_expires(agent: AgentRuntime) -> None:
    clock = FrozenClock(1_700_000_000.0)
    bot = AgentRuntime("ttl", store=agent.store, clock=clock)
    record = bot.remember_with_ttl("otp", "1234", 60, ["auth"])
    assert record.version == 1 and bot.recall("otp").value == "1234"
    assert bot.recall("otp").expires_at == pytest.approx(1_700_000_060.0)
    clock.advance(61)
    assert not bot.recall("otp").found
    assert bot.cleanup_expired() == {"deleted": 1, "agent_id": "ttl"}
    assert bot.recall_history("otp")[0].tombstone


def test_remember_important_is_a_tag(agent: AgentRuntime) -> None:
    agent.remember_important("vip", "always answer", "critical")
    assert agent.recall("vip").tags == ("importance:critical",)


def test_handoff_claim_and_complete_a_task(agent: AgentRuntime) -> None:
    worker = AgentRuntime("worker", store=agent.store)
    agent.handoff("t-1", "worker", {"todo": "summarise"})
    agent.handoff("t-10", "worker", {"todo": "other"})
    task = worker.claim_task("t-1")  # exact id: 3.3.4 prefix-matched "t-1" to "t-10" too
    assert (task.found, task.payload, task.from_agent) == (True, {"todo": "summarise"}, "bot")
    assert worker.read_messages(unread_only=True)[0].body["task_id"] == "t-10"
    assert not worker.claim_task("t-").found
    done = worker.complete_task("t-1", {"summary": "ok"})
    assert done.found
    [reply] = agent.read_messages()
    assert (reply.message_type, reply.body) == (
        "task_complete",
        {"task_id": "t-1", "result": {"summary": "ok"}},
    )
    assert agent.audit.verify().ok and worker.audit.verify().ok


def test_consolidate_merges_exact_duplicates_only_when_asked(agent: AgentRuntime) -> None:
    agent.remember("a", "same")
    agent.remember("b", "same")
    agent.remember("c", "other")
    report = agent.consolidate()
    assert report["groups"] == [{"keep": "b", "duplicates": ["a"], "scores": [1.0], "score": 1.0}]
    assert (report["dry_run"], report["forgotten"], report["merged"]) == (True, [], [])
    assert agent.recall("a").found
    assert agent.consolidate(dry_run=False)["forgotten"] == ["a"]
    assert not agent.recall("a").found and len(agent.recall_history("a")) == 2


def test_forget_by_tag_and_loop_names(agent: AgentRuntime) -> None:
    agent.remember("x", 1, ["tmp"])
    agent.remember("y", 2, ["tmp"])
    agent.remember("z", 3)
    assert agent.forget_by_tag("tmp")["keys"] == ["x", "y"]
    assert agent.keys() == ["z"]
    assert agent.get_loop_status().state == agent.loop_status().state
    assert agent.get_loop_history(hours=1) == []
    assert agent.get_stats().operations == agent.stats().operations
    assert agent.flush() == {"pending": 0, "timed_out": False}


@pytest.mark.parametrize(
    ("call", "replacement"),
    [
        (lambda a: a.related("Alice"), "search(query=entity_name)"),
        (lambda a: a.remember_safe("k", 1), "share(key, value, expected_version=...)"),
        (lambda a: a.share_safe("k", 1), "expected_version"),
        (lambda a: a.detect_conflicts("k", 1), "shared_conflicts()"),
        (lambda a: a.subscribe_shared("s", print), "read_broadcasts"),
        (lambda a: a.usage_analytics(), "stats() and memory_health()"),
        (lambda a: a.get_brain_status(), "loop_status()"),
        (lambda a: a.get_dashboard_url(), "octopoda serve"),
        (lambda a: a.search_filtered(query="x"), "search(query=..., tags=[...])"),
    ],
)
def test_methods_without_an_equivalent_name_the_replacement(
    agent: AgentRuntime, call: object, replacement: str
) -> None:
    with pytest.raises(NotSupported, match=r"Octopoda 3\.3\.4 method") as info:
        call(agent)  # type: ignore[operator]
    assert replacement in str(info.value)
    assert isinstance(info.value, NotImplementedError)


def test_334_share_read_shared_export_and_import_shapes(agent: AgentRuntime) -> None:
    agent.share("price", "$2.1B", "research")  # space positional, as in 3.3.4
    shared = agent.read_shared("price", "research")
    assert (shared.value, shared.author) == ("$2.1B", "bot")
    agent.remember("a", 1)
    bundle = agent.export_memories(False)
    with pytest.raises(NotSupported, match=r"snapshots\(\) lists"):
        agent.export_memories(include_snapshots=True)
    other = AgentRuntime("other", store=agent.store)
    other.remember("a", "mine")
    skipped = other.import_memories(bundle, False)  # overwrite=False: existing keys stay
    assert skipped.skipped_keys == ("a",) and other.recall("a").value == "mine"
    appended = other.import_memories(bundle, overwrite=True, allow_duplicate=True)
    assert appended.versions == 1 and other.recall("a").value == 1
