"""Search by meaning: ``recall_similar`` with an embedder (hybrid), ``search_vectors`` and
``put_vector``, the embedder's configuration, and what a write costs (never an embedding).
SQLite by default; PostgreSQL with pgvector under ``--store-backend=postgresql``."""

from __future__ import annotations

import re
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from octopoda import AgentRuntime, ConfigError, Embedder, EmbedderMismatch, InvalidInput
from octopoda.testing import FakeEmbedder, FrozenClock

FOOD = {w: "food" for w in ("eat", "eats", "vegetarian", "diet", "meal", "lunch", "dinner")}


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "octopoda.db")


@pytest.fixture
def embedder() -> FakeEmbedder:
    return FakeEmbedder(synonyms=FOOD | {"town": "city", "lives": "city"})


@pytest.fixture
def agent(db: str, embedder: FakeEmbedder) -> Iterator[AgentRuntime]:
    with AgentRuntime("bot", store=db, embedder=embedder) as runtime:
        yield runtime


def _fill(agent: AgentRuntime) -> None:
    agent.remember("user.diet", "Alice is vegetarian")
    agent.remember("user.city", "Alice lives in Porto")
    agent.remember("order.last", "Invoice INV-4471 was paid on Monday")
    agent.remember("user.pet", "A cat named Miso")


def test_a_paraphrase_with_no_shared_word_is_found_by_meaning(agent: AgentRuntime) -> None:
    _fill(agent)
    found = agent.recall_similar("what does she eat for lunch?")
    assert found.mode == "hybrid" and "fake-hashing-64" in str(found.note)
    assert found[0].key == "user.diet" and 0 < found[0].score <= 1
    why = found[0].why
    assert (why.method, why.vector_rank, why.lexical_rank) == ("semantic", 1, None)
    assert why.fused_score == found[0].score and why.vector_score is not None
    lexical = AgentRuntime("bot", store=agent.store, embedder="")
    assert lexical.recall_similar("what does she eat for lunch?").matches == ()


def test_exact_rare_words_are_lifted_and_marked_both(agent: AgentRuntime) -> None:
    _fill(agent)
    best = agent.recall_similar("INV-4471", limit=2)[0]
    assert best.key == "order.last" and best.why.method == "both"
    assert best.why.terms == ("inv", "4471") and best.why.lexical_rank == 1
    assert best.score > (best.why.vector_score or 0) * 0.7  # the words added to the cosine


def test_scores_are_ordered_in_range_and_filtered(agent: AgentRuntime) -> None:
    _fill(agent)
    found = agent.recall_similar("Alice town", limit=10)
    scores = [m.score for m in found]
    assert scores == sorted(scores, reverse=True) and all(0 < s <= 1 for s in scores)
    assert {m.key for m in agent.recall_similar("Alice town", min_score=scores[0])} == {
        found[0].key
    }
    assert [m.key for m in agent.recall_similar("a meal", prefix="order.")] == []
    assert len(agent.recall_similar("Alice", limit=1)) == 1


def test_a_write_never_embeds_and_a_batch_is_embedded_in_one_call(
    agent: AgentRuntime, embedder: FakeEmbedder
) -> None:
    agent.remember_many([(f"note/{i}", f"dinner plan {i}") for i in range(30)])
    agent.remember("user.diet", "vegetarian")
    assert embedder.calls == []  # write cost stays flat: nothing embedded on remember
    agent.recall_similar("food")
    assert [len(batch) for batch in embedder.calls] == [31, 1]  # the 31 memories, the query
    agent.recall_similar("food")
    assert [len(batch) for batch in embedder.calls] == [31, 1, 1]  # nothing new to embed


def test_forget_erase_and_new_versions_leave_the_vector_index(agent: AgentRuntime) -> None:
    _fill(agent)
    assert agent.recall_similar("diet")[0].key == "user.diet"
    agent.forget("user.diet")
    assert "user.diet" not in [m.key for m in agent.recall_similar("diet")]
    agent.remember("user.pet", "a goldfish who eats flakes")
    best = agent.recall_similar("what does it eat")[0]
    assert (best.key, best.item.version) == ("user.pet", 2)
    agent.erase("user.pet")
    assert "user.pet" not in [m.key for m in agent.recall_similar("eat")]


def test_another_agents_memories_never_match(db: str, embedder: FakeEmbedder) -> None:
    with (
        AgentRuntime("a", store=db, embedder=embedder) as a,
        AgentRuntime("b", store=db, embedder=embedder) as b,
    ):
        a.remember("diet", "vegetarian")
        b.remember("city", "Porto")
        assert [m.key for m in b.recall_similar("what does she eat")] != ["diet"]
        assert all(m.key == "city" for m in b.recall_similar("eat Porto", limit=10))


def test_expired_memories_are_not_found_by_meaning(db: str, embedder: FakeEmbedder) -> None:
    clock = FrozenClock()
    with AgentRuntime("bot", store=db, embedder=embedder, clock=clock) as agent:
        agent.remember("lunch", "a vegetarian lunch", ttl=60)
        assert [m.key for m in agent.recall_similar("meal")] == ["lunch"]
        clock.advance(120)
        assert agent.recall_similar("meal").matches == ()


def test_a_changed_model_is_reported_with_the_reindex_command(db: str) -> None:
    with AgentRuntime("bot", store=db, embedder=FakeEmbedder(32)) as agent:
        agent.remember("k", "vegetarian dinner")
        agent.recall_similar("dinner")
    with AgentRuntime("bot", store=db, embedder=FakeEmbedder(16)) as agent:
        with pytest.raises(EmbedderMismatch, match=r"fake-hashing-32.*octopoda reindex"):
            agent.recall_similar("dinner")
        assert agent.reindex() == 1
        assert agent.store.vector_model() == ("fake-hashing-16", 16)
        assert agent.recall_similar("dinner")[0].key == "k"


def test_search_vectors_with_the_callers_own_embeddings(db: str) -> None:
    with AgentRuntime("crew", store=db, embedder="") as agent:
        agent.remember("a", "first")
        agent.remember("b", "second")
        agent.put_vector("a", [1.0, 0.0, 0.0], model="my-model")
        agent.put_vector("b", [0.0, 1.0, 1.0], model="my-model")
        found = agent.search_vectors([0.0, 0.0, 2.0], limit=5)
        assert found.mode == "vector" and [m.key for m in found] == ["b", "a"]
        assert found[0].score == pytest.approx(0.5**0.5, abs=1e-6) and found[1].score == 0
        assert found[0].why.method == "semantic" and found[0].why.vector_rank == 1
        assert [m.key for m in agent.search_vectors([0, 1, 1], min_score=0.5)] == ["b"]
        agent.remember("b", "changed")  # the vector was of version 1
        assert [m.key for m in agent.search_vectors([0.0, 1.0, 1.0])] == ["a"]
        with pytest.raises(EmbedderMismatch):
            agent.put_vector("b", [1.0, 0.0], model="my-model")
        with pytest.raises(InvalidInput):
            agent.put_vector("a", [float("nan"), 0.0, 1.0], model="my-model")


def test_no_embedder_is_lexical_and_says_so(db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OCTOPODA_EMBEDDER", raising=False)
    with AgentRuntime("bot", store=db) as agent:
        agent.remember("user.diet", "vegetarian")
        found = agent.recall_similar("vegetarian")
        assert agent.embedder is None and found.mode == "lexical"
        assert found[0].why.vector_rank is None and "no embedder" in str(found.note)
        with pytest.raises(ConfigError, match="reindex needs an embedder"):
            agent.reindex()


def test_a_plain_callable_is_an_embedder(db: str) -> None:
    def embed(texts: list[str]) -> list[list[float]]:
        return [[1.0, float("tea" in t)] for t in texts]

    with AgentRuntime("bot", store=db, embedder=embed) as agent:
        agent.remember("drink", "green tea")
        agent.remember("city", "Porto")
        assert isinstance(agent.embedder, Embedder)
        assert [m.key for m in agent.recall_similar("tea", limit=1)] == ["drink"]
        assert agent.store.vector_model() == (embed.__qualname__, 2)


def test_octopoda_embedder_names_a_factory(db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    module = types.ModuleType("my_embedders")
    module.make = lambda: FakeEmbedder(8, name="from-env")  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "my_embedders", module)
    monkeypatch.setenv("OCTOPODA_EMBEDDER", "my_embedders:make")
    with AgentRuntime("bot", store=db) as agent:
        assert agent.embedder is not None and agent.embedder.name == "from-env"
    monkeypatch.setenv("OCTOPODA_EMBEDDER", "nowhere.at_all:make")
    with pytest.raises(ConfigError, match=re.escape("OCTOPODA_EMBEDDER='nowhere.at_all:make'")):
        AgentRuntime("bot", store=db)
    with pytest.raises(ConfigError, match="not known"):
        AgentRuntime("bot", store=db, embedder="word2vec")


def test_octopoda_embed_missing_names_the_extra(db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "octopoda_embed", None)  # (not installed)
    monkeypatch.setenv("OCTOPODA_EMBEDDER", "octopoda-embed")
    with pytest.raises(ConfigError, match=r"pip install 'octopoda-core\[ai\]'"):
        AgentRuntime("bot", store=db)


def test_a_broken_embedder_is_named(db: str) -> None:
    with AgentRuntime("bot", store=db, embedder=lambda texts: [[1.0]]) as agent:
        agent.remember("a", "x")
        agent.remember("b", "y")
        with pytest.raises(InvalidInput, match="returned 1 vectors for 2 texts"):
            agent.recall_similar("x")


@pytest.mark.parametrize("numpy", [False, True])
def test_the_matrix_ranks_the_same_with_and_without_numpy(
    numpy: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    from octopoda._search import vectors
    from octopoda._search.embedders import pack, unit, unpack

    if numpy:
        pytest.importorskip("numpy")
    else:
        monkeypatch.setattr(vectors, "_numpy", lambda: None)
    rows = [(f"k{i}", 1, pack(unit([1.0, i / 10, (i % 3) / 5]))) for i in range(12)]
    matrix = vectors.VectorMatrix(rows, 3)
    query = unit([0.2, 1.0, 0.1])
    best = matrix.top(query, 4)
    exact = sorted(
        ((i, vectors.cosine(query, unpack(r[2]))) for i, r in enumerate(rows)),
        key=lambda p: -p[1],
    )[:4]
    assert [i for i, _ in best] == [i for i, _ in exact]
    assert [s for _, s in best] == pytest.approx([s for _, s in exact], abs=1e-6)
    assert len(matrix.top(query, 100)) == 12 and matrix.top(query, 0) == []


def test_the_client_gives_its_embedder_to_every_agent(db: str, embedder: FakeEmbedder) -> None:
    from octopoda import Octopoda

    client = Octopoda(db, embedder=embedder)
    try:
        agent = client.agent("bot")
        assert agent.embedder is embedder
        agent.remember("user.diet", "vegetarian")
        assert agent.recall_similar("what does she eat").mode == "hybrid"
    finally:
        client.close()


def test_a_store_from_before_vectors_migrates_and_embeds_what_it_holds(
    tmp_path: Path, embedder: FakeEmbedder
) -> None:
    import sqlite3

    from octopoda import SqliteStore

    path = tmp_path / "old.db"
    with SqliteStore(path) as store, AgentRuntime("bot", store=store, embedder="") as agent:
        agent.remember("user.diet", "vegetarian")
        agent.remember("user.city", "Porto")
    conn = sqlite3.connect(path, isolation_level=None)
    try:  # back to schema 6, as a file written before vectors existed
        conn.execute("DROP TABLE search_text")  # (and before 0009_search_text_in_docs)
        conn.execute(
            "CREATE VIRTUAL TABLE search_text USING fts5(body, tokenize ="
            " 'porter unicode61 remove_diacritics 2')"
        )
        conn.execute("INSERT INTO search_text (rowid, body) SELECT id, body FROM search_docs")
        conn.execute("ALTER TABLE search_docs DROP COLUMN body")
        for table in ("vector_model", "memory_vectors", "vector_marks"):
            conn.execute(f"DROP TABLE {table}")
        conn.execute("ALTER TABLE memories DROP COLUMN kind")  # (0008_memory_kind)
        conn.execute("DELETE FROM schema_migrations WHERE name >= '0007_vectors'")
        conn.execute("PRAGMA user_version = 6")
    finally:
        conn.close()
    with SqliteStore(path) as store, AgentRuntime("bot", store=store, embedder=embedder) as agent:
        assert "0007_vectors" in store.info()["migrations"]
        assert agent.recall_similar("what does she eat")[0].key == "user.diet"
        assert [len(batch) for batch in embedder.calls] == [2, 1]


def test_a_callable_in_a_new_process_may_first_only_drop(db: str) -> None:
    def embed(texts: list[str]) -> list[list[float]]:
        return [[1.0, float("tea" in t)] for t in texts]

    with AgentRuntime("bot", store=db, embedder=embed) as agent:
        agent.remember("drink", "green tea")
        agent.remember("city", "Porto")
        agent.recall_similar("tea")
    with AgentRuntime("bot", store=db, embedder=embed) as agent:  # dimension not known yet
        agent.forget("city")  # the next catch-up has only a key to drop
        assert [m.key for m in agent.recall_similar("tea")] == ["drink"]


@pytest.mark.parametrize("limit", [1, 5, 30])
def test_filters_that_leave_few_of_the_best_vectors(agent: AgentRuntime, limit: int) -> None:
    # The best vectors' memories are read a few more than missing at a time: a filter that
    # most of them fail still finds the best that pass, in order.
    for i in range(240):
        tags = ["rare"] if i % 9 == 4 else None
        agent.remember(f"{'x' if i % 5 else 'y'}.{i:03d}", f"note {i} of topic{i % 13}", tags)
    query = agent.embedder.embed(["a note of topic3"])[0]  # type: ignore[union-attr]
    everything = agent.search_vectors(query, limit=1000)
    assert len(everything) == 240
    for filters in ({"tags": ["rare"]}, {"prefix": "y."}, {"prefix": "y.", "tags": ["rare"]}):
        found = agent.search_vectors(query, limit=limit, **filters)  # type: ignore[arg-type]
        passing = [
            m
            for m in everything
            if m.key.startswith(filters.get("prefix", ""))  # type: ignore[arg-type]
            and ("tags" not in filters or "rare" in m.item.tags)
        ]
        assert [m.score for m in found] == [m.score for m in passing[:limit]]
        above = found[-1].score
        assert {m.key for m in found if m.score > above} == {
            m.key for m in passing[:limit] if m.score > above
        }
