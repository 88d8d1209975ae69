"""Search by words: ``search(query=...)`` and ``recall_similar`` on the store's full-text
index (SQLite FTS5; PostgreSQL full text with ``--store-backend=postgresql``, see
conftest.py): read-after-write, forget/erase/TTL removal, as-of, isolation, any text."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from octopoda import AgentRuntime, InvalidInput, SimilarResults
from octopoda.testing import FrozenClock


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "octopoda.db")


@pytest.fixture
def agent(db: str) -> Iterator[AgentRuntime]:
    with AgentRuntime("bot", store=db) as runtime:
        yield runtime


def keys(items: list[object]) -> list[str]:
    return [item.key for item in items]  # type: ignore[attr-defined]


def test_a_returned_write_is_found_at_once(agent: AgentRuntime) -> None:
    agent.remember("user/diet", {"likes": ["green tea", "oat milk"], "avoids": "coffee"})
    assert keys(agent.search(query="tea")) == ["user/diet"]
    agent.remember("user/diet", {"likes": "espresso"})
    assert agent.search(query="tea") == []
    found = agent.search(query="espresso")
    assert [(i.key, i.value, i.version) for i in found] == [("user/diet", {"likes": "espresso"}, 2)]


def test_words_of_the_key_and_of_strings_only(agent: AgentRuntime) -> None:
    agent.remember("favourite_colour", 42)
    agent.remember("blob", b"tea tea tea")
    agent.remember("note", {"count": 7, "flag": True, "text": None})
    assert keys(agent.search(query="colour")) == ["favourite_colour"]
    assert keys(agent.search(query="blob")) == ["blob"]
    assert agent.search(query="tea") == []  # bytes are not read
    assert agent.search(query="7") == [] and agent.search(query="true") == []


def test_ranking_case_plurals_and_any_word(agent: AgentRuntime) -> None:
    agent.remember("a", "The user prefers TEAS in the morning")
    agent.remember("b", "tea, tea and more tea; tea is life")
    agent.remember("c", "coffee only")
    assert keys(agent.search(query="tea")) == ["b", "a"]
    assert keys(agent.search(query="Tea coffee")) == ["b", "a", "c"] or set(
        keys(agent.search(query="Tea coffee"))
    ) == {"a", "b", "c"}
    assert keys(agent.search(query="prefer")) == ["a"]


def test_prefix_tags_limit_and_offset_narrow_a_query(agent: AgentRuntime) -> None:
    agent.remember("user/a", "tea", tags=["pref"])
    agent.remember("user/b", "tea tea", tags=["pref", "old"])
    agent.remember("team/c", "tea tea tea")
    assert keys(agent.search("user/", query="tea")) == ["user/b", "user/a"]
    assert keys(agent.search(query="tea", tags=["old"])) == ["user/b"]
    assert keys(agent.search(query="tea", limit=1)) == ["team/c"]
    assert keys(agent.search(query="tea", limit=2, offset=1)) == ["user/b", "user/a"]
    # without a query: the listing by key, as before
    assert keys(agent.search("user/")) == ["user/a", "user/b"]
    assert keys(agent.search(tags=["pref"])) == ["user/a", "user/b"]


def test_forget_and_erase_remove_a_key_from_results(agent: AgentRuntime) -> None:
    agent.remember("k1", "secret plan alpha")
    agent.remember("k2", "public plan beta")
    agent.forget("k1")
    assert keys(agent.search(query="plan")) == ["k2"]
    agent.erase("k2", reason="request")
    assert agent.search(query="plan") == []
    assert agent.search(query="beta") == [] and agent.search(query="public") == []
    agent.remember("k2", "plan gamma")  # a later write is indexed again
    assert keys(agent.search(query="plan")) == ["k2"]
    agent.forget_many(["k2"])
    assert agent.recall_similar("plan").matches == ()


def test_an_expired_value_is_not_found(db: str) -> None:
    clock = FrozenClock()
    with AgentRuntime("bot", store=db, clock=clock) as agent:
        agent.remember("session", "temporary token", ttl=60)
        agent.remember("durable", "temporary but kept")
        assert keys(agent.search(query="temporary")) == ["session", "durable"] or set(
            keys(agent.search(query="temporary"))
        ) == {"session", "durable"}
        clock.advance(61)
        assert keys(agent.search(query="temporary")) == ["durable"]
        agent.forget_expired()
        assert keys(agent.search(query="token")) == []


def test_another_agents_memories_never_match(db: str) -> None:
    with AgentRuntime("alice", store=db) as alice, AgentRuntime("bob", store=db) as bob:
        alice.remember("diet", "vegetarian, loves tea")
        bob.remember("diet", "carnivore")
        bob.remember("other", "tea tea tea")
        assert keys(alice.search(query="tea")) == ["diet"]
        assert keys(bob.search(query="tea")) == ["other"]
        assert keys(bob.search(query="vegetarian")) == []
        alice.forget("diet")
        assert keys(bob.search(query="tea")) == ["other"]
        alice.create_space("team")
        alice.share("lunch", "tea at noon", space="team")
        assert keys(alice.search(query="noon")) == []  # a space is not the agent's memory


@pytest.mark.parametrize(
    "query",
    [
        '"tea',
        "tea OR",
        "NEAR(tea coffee)",
        "tea*",
        "^tea",
        "col:tea",
        "tea AND NOT coffee",
        "'; DROP TABLE memories; --",
        "tea' OR '1'='1",
        "a & b | !c <-> d:*",
        "(((",
        "\\",
        "%_%",
        "\x00tea",
        "\ud800tea",
    ],
)
def test_any_text_is_a_safe_query(agent: AgentRuntime, query: str) -> None:
    agent.remember("drink", "tea")
    found = agent.search(query=query)
    assert keys(found) in ([], ["drink"])
    assert isinstance(agent.recall_similar(query), SimilarResults)
    assert agent.recall("drink").value == "tea"  # nothing was dropped


def test_a_query_without_words_finds_nothing(agent: AgentRuntime) -> None:
    agent.remember("k", "tea")
    assert agent.search(query="") == []
    assert agent.search(query="*** ... !!!") == []
    with pytest.raises(InvalidInput, match="query must be a str"):
        agent.search(query=5)  # type: ignore[arg-type]


def test_unicode_text_and_queries(agent: AgentRuntime) -> None:
    agent.remember("café", {"note": "Crème brûlée au café, naïve résumé"})
    agent.remember("städte", ["München", "Köln", "Zürich"])
    agent.remember("emoji", "🍵 matcha lover")
    agent.remember("ru", "Пользователь любит чай")
    assert keys(agent.search(query="brûlée")) == ["café"]
    assert keys(agent.search(query="Zürich")) == ["städte"]
    assert keys(agent.search(query="matcha 🍵")) == ["emoji"]
    assert keys(agent.search(query="чай")) == ["ru"]


def test_special_text_in_values_is_stored_and_found(agent: AgentRuntime) -> None:
    nasty = 'O\'Reilly said "hi"; DROP TABLE x; -- 100% _done_ \\ NEAR(a b) tea*'
    agent.remember("quote", nasty)
    agent.remember("nul", "before\x00rhubarb")
    assert keys(agent.search(query="reilly")) == ["quote"]
    assert agent.search(query="reilly")[0].value == nasty
    assert keys(agent.search(query="rhubarb")) == ["nul"]


def test_search_as_of_an_earlier_point(agent: AgentRuntime) -> None:
    first = agent.remember("pref", "likes tea")
    agent.remember("pref", "likes coffee")
    agent.remember("other", "tea party")
    assert keys(agent.search(query="tea")) == ["other"]
    assert keys(agent.search(query="tea", as_of=first.seq)) == ["pref"]
    assert keys(agent.search(query="coffee", as_of=first.seq)) == []
    assert keys(agent.search(as_of=first.seq)) == ["pref"]
    decision = agent.log_decision("serve tea")
    assert set(keys(agent.search(query="tea", as_of=decision))) == {"other"}


def test_recall_similar_ranks_scores_and_explains(agent: AgentRuntime) -> None:
    agent.remember("user/diet", "The user eats vegetarian food and drinks green tea")
    agent.remember("user/name", "Alice")
    agent.remember("ops/db", "the database runs on PostgreSQL")
    result = agent.recall_similar("what does the user eat?")
    assert result.mode == "lexical"
    assert result.note is not None and "no embedder is configured" in result.note
    assert [m.key for m in result] == ["user/diet", "user/name"]
    best = result[0]
    assert best.score == 1.0  # both content words ("user", "eat") are in it
    assert 0.0 < result[1].score < 1.0
    assert best.why.method == "lexical" and best.why.lexical_rank >= 1
    assert best.why.lexical_score > 0
    assert set(best.why.terms) >= {"user", "eat"}
    assert best.why.vector_rank is None
    assert best.value.startswith("The user eats")
    assert all(0.0 <= m.score <= 1.0 for m in result)
    assert [m.key for m in agent.recall_similar("user eat", min_score=0.9)] == ["user/diet"]
    assert len(agent.recall_similar("user", limit=1)) == 1
    assert not agent.recall_similar("kubernetes")


def test_recall_similar_checks_its_arguments(agent: AgentRuntime) -> None:
    with pytest.raises(InvalidInput, match="min_score"):
        agent.recall_similar("x", min_score=2)
    with pytest.raises(InvalidInput, match="limit"):
        agent.recall_similar("x", limit=0)


def test_remember_many_indexes_every_key(agent: AgentRuntime) -> None:
    agent.remember_many({f"fact/{i}": f"fact number {i} about topic{i % 3}" for i in range(30)})
    assert len(agent.search(query="topic1", limit=None)) == 10
    assert len(agent.search(query="fact", limit=None)) == 30


def test_restore_and_import_are_searchable(agent: AgentRuntime, tmp_path: Path) -> None:
    agent.remember("k", "original words")
    agent.snapshot("s")
    agent.remember("k", "replaced")
    agent.restore("s")
    assert keys(agent.search(query="original")) == ["k"]
    assert agent.search(query="replaced") == []
