"""Search on shared spaces: ``search_shared`` (by words, BM25) and ``recall_similar_shared``
(lexical, hybrid with the fake embedder), membership, and isolation from the agents' own
memories. Both stores (``any_store_url``); ``--store-backend=remote`` runs them over the
remote store."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from octopoda import AccessDenied, AgentRuntime, InvalidInput, SimilarResults
from octopoda.testing import FakeEmbedder

FOOD = {"eats": "food", "diet": "food", "pasta": "food", "vegetarian": "food"}


@pytest.fixture
def pair(any_store_url: str) -> Iterator[tuple[AgentRuntime, AgentRuntime]]:
    with (
        AgentRuntime("a", store=any_store_url, embedder="") as a,
        AgentRuntime("b", store=any_store_url, embedder="") as b,
    ):
        a.share("plan", "ship the release on Friday", space="team")
        b.share("owner", "Bob owns the release notes", space="team")
        b.share("lunch", "pizza on Friday", space="team", tags=["social"])
        a.share("other", "the release is elsewhere", space="elsewhere")
        a.remember("mine", "my own release checklist")
        fillers = ("Carol likes tea", "the office is in Lyon", "standup at 9", "a blue door")
        for i, filler in enumerate(fillers * 3):  # (a common word's idf is about 0)
            b.share(f"filler.{i}", filler, space="team")
        yield a, b


def test_words_rank_a_spaces_values_with_their_authors(
    pair: tuple[AgentRuntime, AgentRuntime],
) -> None:
    a, b = pair
    found = a.search_shared("release friday", space="team")
    assert (found[0].key, found[0].author, found[0].space) == ("plan", "a", "team")  # both words
    assert sorted((v.key, v.author) for v in found[1:]) == [("lunch", "b"), ("owner", "b")]
    assert [v.key for v in b.search_shared("friday", space="team", tags=["social"])] == ["lunch"]
    assert [v.key for v in a.search_shared("release friday", space="team", limit=1)] == ["plan"]
    assert [v.key for v in a.search_shared(space="team", prefix="l")] == ["lunch"]  # listing
    assert (
        a.search_shared("", space="team") == [] and a.search_shared("nothing", space="team") == []
    )


def test_a_space_search_and_an_own_search_never_meet(
    pair: tuple[AgentRuntime, AgentRuntime],
) -> None:
    a, b = pair
    assert "mine" not in [v.key for v in a.search_shared("release", space="team")]
    assert [v.key for v in a.search_shared("release", space="elsewhere")] == ["other"]
    assert [i.key for i in a.search(query="release")] == ["mine"]
    assert b.search(query="release") == [] and not b.recall_similar("release")
    assert {m.key for m in a.recall_similar_shared("release", space="team")} == {"plan", "owner"}


def test_forgotten_and_new_versions_are_current_only(
    pair: tuple[AgentRuntime, AgentRuntime],
) -> None:
    a, b = pair
    b.share("plan", "ship on Monday instead", space="team")  # a stale write: still a version
    assert [v.key for v in a.search_shared("release", space="team")] == ["owner"]
    found = a.search_shared("monday", space="team")
    assert [(v.key, v.version, v.author) for v in found] == [("plan", 2, "b")]


def test_similar_shared_is_lexical_without_an_embedder_and_says_so(
    pair: tuple[AgentRuntime, AgentRuntime],
) -> None:
    a, _ = pair
    found = a.recall_similar_shared("release on friday", space="team", limit=3)
    assert isinstance(found, SimilarResults) and found.mode == "lexical" and found.note
    assert (found[0].key, found[0].score) == ("plan", 1.0)
    assert sorted((m.key, m.score) for m in found[1:]) == [("lunch", 0.5), ("owner", 0.5)]
    assert found[0].why.terms == ("release", "friday")
    best = a.recall_similar_shared("friday", space="team", min_score=1)
    assert {m.key for m in best} == {"plan", "lunch"}
    with pytest.raises(InvalidInput, match="limit"):
        a.recall_similar_shared("x", space="team", limit=0)


def test_similar_shared_is_hybrid_with_an_embedder(any_store_url: str) -> None:
    embedder = FakeEmbedder(synonyms=FOOD)
    with (
        AgentRuntime("a", store=any_store_url, embedder=embedder) as a,
        AgentRuntime("b", store=any_store_url, embedder=embedder) as b,
    ):
        b.share("diet", "Carol is vegetarian", space="team")
        b.share("car", "Carol drives a red car", space="team")
        a.remember("mine", "Carol eats pasta")  # a's own: never a match of the space
        found = a.recall_similar_shared("what food does Carol like", space="team", limit=5)
        assert found.mode == "hybrid" and found[0].key == "diet"
        assert found[0].why.vector_rank == 1 and "mine" not in [m.key for m in found]
        assert [m.key for m in a.recall_similar("food", limit=5)] == ["mine"]


def test_a_non_member_is_refused_as_read_shared_refuses(any_store_url: str) -> None:
    with (
        AgentRuntime("a", store=any_store_url, embedder="") as a,
        AgentRuntime("c", store=any_store_url, embedder="") as c,
    ):
        a.create_space("private", members=["b"])
        a.share("k", "secret plans", space="private")
        with pytest.raises(AccessDenied) as read:
            c.read_shared("k", space="private")
        for search in (c.search_shared, c.recall_similar_shared):
            with pytest.raises(AccessDenied) as refused:
                search("secret", space="private")
            assert str(refused.value) == str(read.value)
        assert [v.key for v in a.search_shared("secret", space="private")] == ["k"]


def test_a_listed_value_counts_as_seen(pair: tuple[AgentRuntime, AgentRuntime]) -> None:
    a, _ = pair
    a.search_shared("bob", space="team")  # a now saw b's "owner"
    assert a.share("owner", "Alice owns them now", space="team").conflict_id is None
