"""``consolidate``: near-duplicate memories found by words (no embedder) or by meaning (the
deterministic fake embedder), a dry run that changes nothing, and a merge that is one
audited event (survivors' new versions, tombstones, history kept); ``memory_health``'s
count. Runtime behaviour runs on both stores (``any_store_url``)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from octopoda import AgentRuntime, InvalidInput
from octopoda._search.duplicates import duplicate_groups, lexical_threshold, word_set
from octopoda._store import agent_namespace
from octopoda.testing import FakeEmbedder, capture_events

TEA = "The user prefers green tea in the morning"
TEA_AGAIN = "the user prefers green teas in the mornings"  # same words, other endings
PARIS = "Alice lives in Paris"
LYON = "Alice lives in Lyon"  # 2 of 4 words shared: not a duplicate


@pytest.fixture
def agent(any_store_url: str) -> Iterator[AgentRuntime]:
    with AgentRuntime("bot", store=any_store_url, embedder="") as runtime:
        yield runtime


def _fill(agent: AgentRuntime) -> None:
    agent.remember("tea.old", TEA, tags=["prefs"])
    agent.remember("city", PARIS)
    agent.remember("count.a", {"n": 3})
    agent.remember("tea.new", TEA_AGAIN, tags=["diet"])
    agent.remember("city.2", LYON)
    agent.remember("count.b", {"n": 3})  # equal value: always a group


def _head(agent: AgentRuntime) -> tuple[object, ...]:
    row = agent.store.agent("bot")
    rows = agent.store.current(agent_namespace("bot"), include_dead=True)
    return (row.head_seq, row.head_hash, tuple(rows)) if row else ()


def test_lexical_groups_keep_the_newest_and_score_each_duplicate(agent: AgentRuntime) -> None:
    _fill(agent)
    report = agent.consolidate()
    assert (report["mode"], report["threshold"], report["dry_run"]) == ("lexical", 0.75, True)
    assert report["groups"] == [
        {"keep": "count.b", "duplicates": ["count.a"], "scores": [1.0], "score": 1.0},
        {"keep": "tea.new", "duplicates": ["tea.old"], "scores": [1.0], "score": 1.0},
    ]
    assert (report["forgotten"], report["merged"], report["seq"]) == ([], [], None)
    loose = agent.consolidate(similarity_threshold=0.8)  # Jaccard 0.5: Paris and Lyon meet
    assert {"keep": "city.2", "duplicates": ["city"], "scores": [0.5], "score": 0.5} in loose[
        "groups"
    ]


def test_a_dry_run_changes_nothing(agent: AgentRuntime) -> None:
    _fill(agent)
    before = _head(agent)
    with capture_events(agent) as events:
        agent.consolidate(dry_run=True)
        agent.consolidate(similarity_threshold=0.0)
    assert events == [] and _head(agent) == before


def test_a_merge_is_one_event_with_tombstones_and_new_versions(agent: AgentRuntime) -> None:
    _fill(agent)
    with capture_events(agent) as events:
        done = agent.consolidate(dry_run=False)
    [event] = events
    assert event.kind == "consolidate" and done["seq"] == event.seq
    assert event.payload["groups"] == [
        {"keep": "count.b", "duplicates": ["count.a"], "score": 1},
        {"keep": "tea.new", "duplicates": ["tea.old"], "score": 1},
    ]
    assert sorted(done["forgotten"]) == ["count.a", "tea.old"]
    assert done["merged"] == ["count.b", "tea.new"]
    tea = agent.recall("tea.new")
    assert (tea.value, tea.version, tea.seq, tea.tags) == (
        TEA_AGAIN,
        2,
        event.seq,
        ("diet", "prefs"),
    )
    assert not agent.recall("tea.old").found and not agent.recall("count.a").found
    history = agent.recall_history("tea.old")
    assert [v.tombstone for v in history] == [True, False] and history[1].value == TEA
    assert agent.recall("city").found and agent.recall("city.2").found
    assert agent.audit.verify().ok
    assert [e.kind for e in agent.timeline()][-1] == "consolidate"
    assert agent.consolidate(dry_run=False)["seq"] is None  # nothing left to merge
    assert agent.memory_health().near_duplicates == 0


def test_memory_health_counts_near_duplicates(agent: AgentRuntime) -> None:
    assert agent.memory_health().near_duplicates == 0
    _fill(agent)
    agent.remember("tea.third", "green tea, the user prefers it in the morning")
    assert agent.memory_health().near_duplicates == 3  # tea x2 into tea.third, count.a


def test_by_meaning_with_an_embedder(any_store_url: str) -> None:
    embedder = FakeEmbedder(synonyms={"likes": "prefer", "prefers": "prefer", "loves": "prefer"})
    with AgentRuntime("bot", store=any_store_url, embedder=embedder) as agent:
        agent.remember("a", "Bob likes jazz")
        agent.remember("b", "Bob loves jazz")  # no word but Bob and jazz in common with a
        agent.remember("c", "Bob plays chess")
        report = agent.consolidate()
        assert (report["mode"], report["threshold"]) == ("semantic", 0.9)
        assert [(g["keep"], g["duplicates"]) for g in report["groups"]] == [("b", ["a"])]
        assert report["groups"][0]["score"] == pytest.approx(1.0)
        assert AgentRuntime("bot", store=agent.store, embedder="").consolidate()["groups"] == []
        assert agent.consolidate(dry_run=False)["forgotten"] == ["a"]
        assert agent.audit.verify().ok


def test_another_agents_memories_are_never_grouped(any_store_url: str) -> None:
    with (
        AgentRuntime("a", store=any_store_url, embedder="") as a,
        AgentRuntime("b", store=any_store_url, embedder="") as b,
    ):
        a.remember("x", TEA)
        b.remember("y", TEA)
        a.share("z", TEA, space="team")
        assert a.consolidate()["groups"] == [] and b.memory_health().near_duplicates == 0


def test_bad_thresholds_are_refused() -> None:
    agent = AgentRuntime("bot", store=":memory:", embedder="")
    for bad in (-0.1, 1.5, "high", True):
        with pytest.raises(InvalidInput, match="similarity_threshold"):
            agent.consolidate(similarity_threshold=bad)  # type: ignore[arg-type]


def test_words_and_thresholds() -> None:
    assert word_set(TEA) == word_set(TEA_AGAIN) == {"user", "prefer", "green", "tea", "morn"}
    assert word_set({"a": ["Bob", 3], "b": "the"}) == {"bob"}
    assert word_set("the") == {"the"}  # stopwords only: kept
    assert word_set(b"bytes") == frozenset() and word_set(42) == frozenset()
    assert [lexical_threshold(t) for t in (1.0, 0.9, 0.8, 0.5)] == [1.0, 0.75, 0.5, 0.0]
    abcd, abce = "alpha beta gamma delta", "alpha beta gamma zeta"
    groups = duplicate_groups([abcd, abce, abcd, 1, 1], 0.9)
    assert [(g.keep, g.duplicates) for g in groups] == [(0, (2,)), (3, (4,))]
    loose = duplicate_groups([abcd, abce, "other words"], 0.8)
    assert [(g.keep, g.duplicates, g.scores) for g in loose] == [(0, (1,), (0.6,))]


def test_thousands_of_memories_are_grouped_quickly() -> None:
    words = [f"w{i}" for i in range(4000)]
    values = [f"{words[i]} {words[i - 1]} {words[i - 2]} the note" for i in range(4000)]
    values += values[:100]  # 100 exact duplicates
    started = time.perf_counter()
    groups = duplicate_groups(values, 0.9)
    assert time.perf_counter() - started < 5.0
    assert sum(len(g.duplicates) for g in groups) == 100


def test_equal_bytes_values_merge_and_keep_their_bytes(agent: AgentRuntime) -> None:
    agent.remember("blob.a", b"\x00\x01raw")
    agent.remember("blob.b", b"\x00\x01raw")
    agent.remember("blob.c", b"other")
    done = agent.consolidate(dry_run=False)
    assert [(g["keep"], g["duplicates"]) for g in done["groups"]] == [("blob.b", ["blob.a"])]
    assert agent.recall("blob.b").value == b"\x00\x01raw" and agent.recall("blob.b").version == 2
    assert agent.audit.verify().ok


def test_a_merged_survivor_keeps_its_kind(agent: AgentRuntime) -> None:
    agent.remember("tea.old", TEA, kind="note")
    agent.remember("tea.new", TEA_AGAIN, kind="preference")
    agent.consolidate(dry_run=False)
    survivor = agent.recall("tea.new")
    assert survivor.version == 2 and survivor.kind == "preference"
    assert [m.key for m in agent.search(kinds=["preference"])] == ["tea.new"]
    assert agent.audit.verify().ok
