"""A memory's kind (``remember(kind=)``, ``search(kinds=)``), end to end on SQLite and
PostgreSQL (``any_store_url``; ``--store-backend=remote`` runs them over a server too):
written per version, read back everywhere, filtered on, audited, exported and imported,
refused when unusable (the store unchanged), and added to stores made before kinds."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from octopoda import AgentRuntime, InvalidInput, SqliteStore
from octopoda.testing import FakeEmbedder, FrozenClock


def _agent(url: str, name: str = "bot", **kw: Any) -> AgentRuntime:
    return AgentRuntime(name, store=url, clock=FrozenClock(1_700_000_000.0), **kw)


def _keys(items: Any) -> list[str]:
    return [i.key for i in items]


def test_a_kind_is_written_and_read_back_per_version(any_store_url: str) -> None:
    agent = _agent(any_store_url)
    written = agent.remember("user/diet", "vegetarian", kind="preference", tags=["p"])
    assert (written.kind, written.tombstone) == ("preference", False)
    assert agent.remember("user/diet", "vegan").kind is None
    agent.remember("user/diet", "vegan, no honey", kind="fact")
    assert agent.recall("user/diet").kind == "fact"
    assert agent.recall("user/diet", version=1).kind == "preference"
    history = agent.recall_history("user/diet")
    assert [(v.version, v.kind) for v in history] == [(3, "fact"), (2, None), (1, "preference")]
    agent.forget("user/diet")
    assert agent.recall_history("user/diet", limit=1)[0].kind is None  # (a tombstone)
    batch = agent.remember_many({"a": 1, "b": 2}, kind="summary")
    assert [r.kind for r in batch] == ["summary", "summary"]
    assert [(i.key, i.kind) for i in agent.search()] == [("a", "summary"), ("b", "summary")]
    assert agent.audit.verify().ok


def test_search_keeps_the_kinds_asked_for_with_or_without_a_query(any_store_url: str) -> None:
    agent = _agent(any_store_url)
    agent.remember("diet", "likes green tea", kind="preference")
    agent.remember("city", "lives in Porto, drinks tea", kind="fact")
    agent.remember("week", "tea every morning", kind="summary", tags=["w"])
    agent.remember("note", "tea")
    assert _keys(agent.search(kinds=["fact", "preference"])) == ["city", "diet"]
    assert _keys(agent.search(kinds=("summary",), tags=["w"])) == ["week"]
    assert _keys(agent.search("d", kinds=["preference", "fact"])) == ["diet"]
    assert _keys(agent.search(kinds=[])) == ["city", "diet", "note", "week"]  # no filter
    assert sorted(_keys(agent.search(query="tea", kinds=["fact", "summary"]))) == ["city", "week"]
    found = agent.search(query="porto", kinds=iter(["fact"]))
    assert [(i.key, i.kind) for i in found] == [("city", "fact")]
    assert agent.search(query="porto", kinds=["preference"]) == []
    similar = agent.recall_similar("tea", kinds=["preference"])
    assert [m.key for m in similar.matches] == ["diet"]
    agent.remember("diet", "likes coffee now", kind="fact")  # the current version's kind counts
    assert _keys(agent.search(kinds=["preference"])) == []
    assert _keys(agent.search(kinds=["fact"], limit=1, offset=1)) == ["diet"]


def test_search_vectors_and_hybrid_recall_keep_the_kinds_asked_for(any_store_url: str) -> None:
    embedder = FakeEmbedder(synonyms={"drink": "tea"})
    agent = _agent(any_store_url, embedder=embedder)
    agent.remember("diet", "green tea", kind="preference")
    agent.remember("shop", "tea shop", kind="fact")
    agent.remember("other", "tea")
    hybrid = agent.recall_similar("drink", kinds=["fact"])
    assert hybrid.mode == "hybrid" and [m.key for m in hybrid.matches] == ["shop"]
    (tea,) = embedder.embed(["tea"])
    assert {m.key for m in agent.search_vectors(tea).matches} == {"diet", "shop", "other"}
    by_vector = agent.search_vectors(tea, kinds=["fact", "preference"])
    assert sorted((m.key, m.item.kind) for m in by_vector.matches) == [
        ("diet", "preference"),
        ("shop", "fact"),
    ]


def test_as_of_keeps_the_kinds_of_then(any_store_url: str) -> None:
    agent = _agent(any_store_url)
    agent.remember("k", "first draft", kind="summary")
    agent.remember("j", "other", kind="fact")
    decision = agent.log_decision("ship the draft")
    agent.remember("k", "final text", kind="fact")
    assert _keys(agent.search(kinds=["summary"], as_of=decision)) == ["k"]
    assert _keys(agent.search(kinds=["summary"])) == []
    assert _keys(agent.search(query="draft", kinds=["summary"], as_of=decision.seq)) == ["k"]
    then = agent.as_of(decision)
    assert then.recall("k").kind == "summary"
    assert [(i.key, i.kind) for i in then.search(kinds=["fact"])] == [("j", "fact")]
    snap = agent.snapshot("before")
    agent.remember("k", "final text", kind="note")  # same value, another kind
    restored = agent.restore(snap.name)
    assert restored.restored == ("k",) and agent.recall("k").kind == "fact"


def test_export_and_import_keep_kinds(any_store_url: str, tmp_path: Path) -> None:
    agent = _agent(any_store_url)
    agent.remember("k", 1, kind="fact")
    agent.remember("k", 2)
    agent.remember("j", b"\x00bytes", kind="blob")
    bundle = agent.export_memories()
    versions = {m["key"]: m["versions"] for m in bundle["memories"]}
    assert versions["k"][0]["kind"] == "fact" and "kind" not in versions["k"][1]
    copy = _agent(any_store_url, "copy")
    copy.import_memories(bundle)
    assert [v.kind for v in copy.recall_history("k")] == [None, "fact"]
    assert copy.recall("j").kind == "blob" and copy.audit.verify().ok
    path = tmp_path / "bundle.json"
    agent.export_memories_to(path)
    from_file = _agent(any_store_url, "from_file")
    from_file.import_memories(path.read_text("utf-8"))
    assert [v.kind for v in from_file.recall_history("k")] == [None, "fact"]
    bundle["memories"][0]["versions"][0]["kind"] = "bad\nkind"
    with pytest.raises(InvalidInput, match=r"memories\[0\].versions\[0\].*printable"):
        _agent(any_store_url, "refused").import_memories(bundle)


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        ("", "printable"),
        ("   ", "not only spaces"),
        ("fact\n", "no control characters"),
        ("a\x00b", "printable"),
        ("\ud800", "printable"),
        ("x" * 65, "65 characters long; the limit is 64"),
        (3, "not int"),
        (b"fact", "not bytes"),
        (["fact"], "not list"),
    ],
)
def test_an_unusable_kind_is_refused_and_nothing_is_stored(
    any_store_url: str, kind: Any, message: str
) -> None:
    agent = _agent(any_store_url)
    agent.remember("k", "kept", kind="fact")
    head = agent.audit.head()
    with pytest.raises(InvalidInput, match=message):
        agent.remember("k", "new", kind=kind)
    with pytest.raises(InvalidInput, match=message):
        agent.remember_many({"k": "new", "j": 1}, kind=kind)
    assert agent.audit.head() == head
    assert (agent.recall("k").value, agent.recall("k").kind) == ("kept", "fact")
    assert agent.keys() == ["k"]
    assert agent.remember("k", "x" * 10, kind="x" * 64).kind == "x" * 64  # (the longest)


@pytest.mark.parametrize(
    ("kinds", "message"),
    [
        ("fact", r"not one string; use \['fact'\]"),
        (b"fact", "list of kinds"),
        (7, "list of kinds"),
        ({"fact": 1}, "list of kinds"),
        ([None], "None is not one"),
        (["fact", ""], "printable"),
        ([1], "not int"),
    ],
)
def test_unusable_kinds_filters_are_refused(any_store_url: str, kinds: Any, message: str) -> None:
    agent = _agent(any_store_url)
    agent.remember("k", "tea", kind="fact")
    for search in (
        lambda: agent.search(kinds=kinds),
        lambda: agent.search(query="tea", kinds=kinds),
        lambda: agent.search(kinds=kinds, as_of=1),
        lambda: agent.recall_similar("tea", kinds=kinds),
    ):
        with pytest.raises(InvalidInput, match=message):
            search()


def _sqlite_without_kinds(path: Path) -> None:
    """Take a store file back to schema 7, as Octopoda wrote it before kinds existed."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:  # (and before 0009_search_text_in_docs: FTS5 kept its own copy of the text)
        conn.execute("DROP TABLE search_text")
        conn.execute(
            "CREATE VIRTUAL TABLE search_text USING fts5(body, tokenize ="
            " 'porter unicode61 remove_diacritics 2')"
        )
        conn.execute("INSERT INTO search_text (rowid, body) SELECT id, body FROM search_docs")
        conn.execute("ALTER TABLE search_docs DROP COLUMN body")
        conn.execute("ALTER TABLE memories DROP COLUMN kind")
        conn.execute("DELETE FROM schema_migrations WHERE name >= '0008_memory_kind'")
        conn.execute("PRAGMA user_version = 7")
    finally:
        conn.close()


def test_a_sqlite_file_from_before_kinds_is_upgraded_in_place(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with SqliteStore(path) as store, AgentRuntime("bot", store=store) as agent:
        agent.remember("k", "old tea", tags=["t"])
        agent.remember("j", "other")
    _sqlite_without_kinds(path)
    with closing(sqlite3.connect(path)) as conn:
        columns = [r[1] for r in conn.execute("PRAGMA table_info(memories)")]
    assert "kind" not in columns
    with SqliteStore(path) as store, AgentRuntime("bot", store=store) as agent:
        assert "0008_memory_kind" in store.info()["migrations"]
        assert agent.recall("k").kind is None and agent.recall("k").tags == ("t",)
        agent.remember("k", "new tea", kind="fact")
        assert [v.kind for v in agent.recall_history("k")] == ["fact", None]
        assert _keys(agent.search(query="tea", kinds=["fact"])) == ["k"]
        assert agent.audit.verify().ok
    with SqliteStore(path, read_only=True) as store:  # (migrated: a reader opens it as is)
        assert store.latest("agent:bot", "k").kind == "fact"  # type: ignore[union-attr]


def test_a_postgres_database_from_before_kinds_is_upgraded_in_place(
    postgres_clean_url: str,
) -> None:
    import psycopg

    from octopoda import PostgresStore

    with PostgresStore(postgres_clean_url) as store, AgentRuntime("bot", store=store) as agent:
        agent.remember("k", "old tea")
    conn: Any = psycopg.connect(postgres_clean_url, autocommit=True)
    try:  # back to schema 7
        conn.execute("ALTER TABLE memories DROP COLUMN kind")
        conn.execute("DELETE FROM schema_migrations WHERE name = '0008_memory_kind'")
    finally:
        conn.close()
    with PostgresStore(postgres_clean_url) as store, AgentRuntime("bot", store=store) as agent:
        assert agent.recall("k").kind is None
        agent.remember("k", "new tea", kind="fact")
        assert _keys(agent.search(query="tea", kinds=["fact"])) == ["k"]
        assert [v.kind for v in agent.recall_history("k")] == ["fact", None]
        assert agent.audit.verify().ok


def test_audit_verify_sees_a_kind_changed_outside_octopoda(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with SqliteStore(path) as store, AgentRuntime("bot", store=store) as agent:
        agent.remember("k", "v", kind="fact")
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        conn.execute("UPDATE memories SET kind = 'preference'")
    with SqliteStore(path) as store, AgentRuntime("bot", store=store) as agent:
        report = agent.audit.verify()
        assert not report.ok and report.first_bad_seq == 1
        assert "differs from its audited write" in str(report.reason)
