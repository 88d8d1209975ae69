"""Migration 0006_search indexes the memories a store already holds, on SQLite and on
PostgreSQL, as the write path would have: the current, live version of each key (JSON
strings and the key; bytes by the key only; tombstoned and erased keys not at all)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from octopoda import AgentRuntime, SqliteStore


def _fill(agent: AgentRuntime) -> None:
    agent.remember("user/diet", {"likes": ["green tea", "oat milk"], "n": 3})
    agent.remember("user/diet", {"likes": "espresso"})  # the current version counts
    agent.remember("photo", b"\x89PNG tea")
    agent.remember("gone", "forgotten tea")
    agent.forget("gone")
    agent.remember("secret", "erased tea")
    agent.erase("secret")
    agent.remember("städte", "Zürich and Köln")


def _expect(agent: AgentRuntime) -> None:
    found = {q: [i.key for i in agent.search(query=q)] for q in ("espresso", "tea", "photo")}
    assert found == {"espresso": ["user/diet"], "tea": [], "photo": ["photo"]}
    assert [i.key for i in agent.search(query="diet")] == ["user/diet"]
    assert [i.key for i in agent.search(query="zürich")] == ["städte"]


def test_sqlite_backfill(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with SqliteStore(path) as store, AgentRuntime("bot", store=store) as agent:
        _fill(agent)
        _expect(agent)
    conn = sqlite3.connect(path, isolation_level=None)
    try:  # back to schema 5, as a file written before search existed
        conn.execute("DROP TABLE search_text")
        conn.execute("DROP TABLE search_docs")
        conn.execute("DROP TABLE search_marks")
        for table in ("vector_model", "memory_vectors", "vector_marks"):  # (0007_vectors)
            conn.execute(f"DROP TABLE {table}")
        conn.execute("ALTER TABLE memories DROP COLUMN kind")  # (0008_memory_kind)
        conn.execute("DELETE FROM schema_migrations WHERE name >= '0006_search'")
        conn.execute("PRAGMA user_version = 5")
    finally:
        conn.close()
    with SqliteStore(path) as store, AgentRuntime("bot", store=store) as agent:
        _expect(agent)
        assert "0006_search" in store.info()["migrations"]


def test_sqlite_text_moves_into_search_docs(tmp_path: Path) -> None:
    """0009: a file whose FTS5 table holds its own copy of the text (schema 8) keeps its
    index, text and doc ids; the writes not yet indexed are indexed by the next search."""
    path = tmp_path / "eight.db"
    with SqliteStore(path) as store, AgentRuntime("bot", store=store) as agent:
        _fill(agent)
        _expect(agent)
        agent.remember("late", "oolong, not indexed yet")
    conn = sqlite3.connect(path, isolation_level=None)
    try:  # back to schema 8: search_text as 0006_search made it
        conn.execute("DROP TABLE search_text")
        conn.execute(
            "CREATE VIRTUAL TABLE search_text USING fts5(body, tokenize ="
            " 'porter unicode61 remove_diacritics 2')"
        )
        conn.execute("INSERT INTO search_text (rowid, body) SELECT id, body FROM search_docs")
        conn.execute("ALTER TABLE search_docs DROP COLUMN body")
        conn.execute("DELETE FROM schema_migrations WHERE name >= '0009_search_text_in_docs'")
        conn.execute("PRAGMA user_version = 8")
        ids = conn.execute("SELECT id, key FROM search_docs ORDER BY id").fetchall()
    finally:
        conn.close()
    with SqliteStore(path) as store, AgentRuntime("bot", store=store) as agent:
        assert "0009_search_text_in_docs" in store.info()["migrations"]
        assert store._fetchall("SELECT id, key FROM search_docs ORDER BY id", ()) == ids
        assert [i.key for i in agent.search(query="oolong")] == ["late"]
        _expect(agent)
        agent.remember("user/diet", {"likes": "matcha"})
        assert [i.key for i in agent.search(query="matcha")] == ["user/diet"]
        assert agent.search(query="espresso") == []
        store._connection().execute(
            "INSERT INTO search_text (search_text, rank) VALUES ('integrity-check', 1)"
        )


def _drop_vector_tables(conn: Any) -> None:
    """Back to schema 5 on PostgreSQL: 0007_vectors's tables and 0008's column too."""
    for table in ("memory_vectors", "vector_model", "vector_marks"):
        conn.execute(f"DROP TABLE IF EXISTS {table}")
    conn.execute("ALTER TABLE memories DROP COLUMN IF EXISTS kind")
    conn.execute("DELETE FROM schema_migrations WHERE name >= '0006_search'")


def test_postgres_backfill(postgres_clean_url: str) -> None:
    import psycopg

    from octopoda import PostgresStore

    with PostgresStore(postgres_clean_url) as store, AgentRuntime("bot", store=store) as agent:
        _fill(agent)
        _expect(agent)
    conn: Any = psycopg.connect(postgres_clean_url, autocommit=True)
    try:
        conn.execute("DROP TABLE memory_search")
        conn.execute("DROP TABLE search_marks")
        _drop_vector_tables(conn)
    finally:
        conn.close()
    with PostgresStore(postgres_clean_url) as store, AgentRuntime("bot", store=store) as agent:
        _expect(agent)


@pytest.mark.parametrize("value", ["plain \\u0000 text", {"k": "nul \x00 inside"}])
def test_postgres_backfill_of_text_jsonb_cannot_hold(postgres_clean_url: str, value: Any) -> None:
    import psycopg

    from octopoda import PostgresStore

    with PostgresStore(postgres_clean_url) as store, AgentRuntime("bot", store=store) as agent:
        agent.remember("odd", value)
    conn: Any = psycopg.connect(postgres_clean_url, autocommit=True)
    try:
        conn.execute("DROP TABLE memory_search")
        conn.execute("DROP TABLE search_marks")
        _drop_vector_tables(conn)
    finally:
        conn.close()
    with PostgresStore(postgres_clean_url) as store, AgentRuntime("bot", store=store) as agent:
        assert [i.key for i in agent.search(query="odd")] == ["odd"]
