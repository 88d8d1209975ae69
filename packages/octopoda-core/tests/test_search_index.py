"""The SQLite search index is brought up to date by searches, not by writes
(``_store/sqlite/search_index.py``): a write runs no statement on the index, the next
search indexes it (a returned write is still found at once), a read-only connection still
answers, and processes writing and searching one file at once find every acknowledged
write."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from octopoda import AgentRuntime, SqliteStore

PROCS = Path(__file__).parent / "procs"
TIMEOUT = 120.0


@pytest.fixture
def sqlite_path(tmp_path: Path) -> Path:
    return tmp_path / "search.db"


def keys(items: list[object]) -> list[str]:
    return [item.key for item in items]  # type: ignore[attr-defined]


def test_writes_do_not_touch_the_index(sqlite_path: Path) -> None:
    statements: list[str] = []
    store = SqliteStore(sqlite_path, tracer=statements.append)
    with store, AgentRuntime("bot", store=store) as agent:
        statements.clear()  # (the migrations: they create the index)
        agent.remember("a", "green tea")
        agent.remember_many({"b": "black tea", "c": {"drink": "coffee"}})
        agent.forget("a")
        assert not [s for s in statements if "search_" in s]
        statements.clear()
        assert keys(agent.search(query="tea")) == ["b"]
        assert any("search_text" in s for s in statements)  # indexed by the search
        statements.clear()
        assert keys(agent.search(query="coffee")) == ["c"]
        # nothing written since: no write transaction at all
        assert not [s for s in statements if s.startswith("BEGIN")]
        agent.remember("b", "rooibos")
        assert agent.search(query="tea") == []
        assert keys(agent.search(query="rooibos")) == ["b"]


def test_another_store_on_the_file_indexes_what_this_one_wrote(sqlite_path: Path) -> None:
    writer = AgentRuntime("bot", store=str(sqlite_path))
    reader = AgentRuntime("bot", store=str(sqlite_path))
    with writer, reader:
        assert reader.search(query="tea") == []
        writer.remember("a", "green tea")
        assert keys(reader.search(query="tea")) == ["a"]
        writer.remember("a", "espresso")
        writer.remember("b", "oolong tea")
        assert keys(writer.search(query="tea")) == ["b"]
        assert keys(reader.search(query="espresso")) == ["a"]


def test_a_read_only_connection_searches_the_index_as_it_is(sqlite_path: Path) -> None:
    with SqliteStore(sqlite_path) as store, AgentRuntime("bot", store=store) as agent:
        agent.remember("a", "green tea")
        agent.remember("b", "black tea")
        assert sorted(keys(agent.search(query="tea"))) == ["a", "b"]
        agent.remember("c", "white tea")  # not indexed yet
        agent.remember("a", "espresso")  # the index still has "green tea" for it
        store._connection().execute("PRAGMA query_only = ON")  # writes now fail: readonly
        assert keys(agent.search(query="tea")) == ["b"]  # no crash; a stale key left out
        assert agent.search(query="espresso") == []  # (not indexed: found once writable)
        store._connection().execute("PRAGMA query_only = OFF")
        assert sorted(keys(agent.search(query="tea"))) == ["b", "c"]
        assert keys(agent.search(query="espresso")) == ["a"]


def _fts_sound(store: SqliteStore) -> None:
    """FTS5's own check of the index against its text (the search_docs rows): raises
    sqlite3.DatabaseError (SQLITE_CORRUPT) if any word indexed is not in the text or the
    other way round."""
    conn = store._connection()
    conn.execute("INSERT INTO search_text (search_text, rank) VALUES ('integrity-check', 1)")


def test_a_new_version_with_the_same_text_only_moves_the_version(sqlite_path: Path) -> None:
    statements: list[str] = []
    store = SqliteStore(sqlite_path, tracer=statements.append)
    with store, AgentRuntime("bot", store=store) as agent:
        agent.remember("a", {"note": "green tea", "cups": 1})
        agent.remember("b", "black tea")
        assert sorted(keys(agent.search(query="tea"))) == ["a", "b"]
        statements.clear()
        agent.remember("a", {"note": "green tea", "cups": 2})  # the same strings
        [found] = agent.search(query="green")
        assert (found.key, found.value, found.version) == ("a", {"note": "green tea", "cups": 2}, 2)
        assert [s for s in statements if s.startswith("UPDATE search_docs SET version")]
        ours = [s for s in statements if not s.startswith("-- ")]  # (not FTS5's own)
        assert not [s for s in ours if "search_text" in s and "MATCH" not in s]
        agent.remember("a", {"note": "oolong", "cups": 3})  # new words replace the old
        agent.remember("b", "black tea")
        agent.forget("b")
        assert keys(agent.search(query="tea")) == []
        assert keys(agent.search(query="oolong")) == ["a"]
        _fts_sound(store)
        agent.remember("b", "black tea again")
        agent.erase("a")
        assert keys(agent.search(query="tea")) == ["b"]
        assert agent.search(query="oolong") == []
        _fts_sound(store)


def test_processes_writing_and_searching_at_once_find_every_write(sqlite_path: Path) -> None:
    # The stores are SqliteStore objects, not paths, so that --store-backend=postgresql
    # (which makes a path a PostgreSQL schema) leaves them on the file the processes share.
    with (
        SqliteStore(sqlite_path) as store,
        AgentRuntime("bot", store=store) as agent,  # the file exists: no race
    ):
        agent.remember("seed", "zebra")
    env = {k: v for k, v in os.environ.items() if not k.startswith("OCTOPODA_")}
    n = 25
    runs = [("bot", "apple"), ("bot", "pear"), ("other", "plum")]  # two share one agent
    procs = [
        subprocess.Popen(
            [sys.executable, str(PROCS / "search_writer.py"), str(sqlite_path), agent, w, str(n)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for agent, w in runs
    ]
    try:
        for proc in procs:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        start = time.time() + 0.05
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write(f"go {start}\n")
            proc.stdin.flush()
        outs = [proc.communicate(timeout=TIMEOUT) for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    reports = [json.loads(out) for out, _ in outs]
    assert reports == [{"missed": [], "error": None}] * len(runs), [err for _, err in outs]
    with SqliteStore(sqlite_path) as store:
        with AgentRuntime("bot", store=store) as bot:
            found = keys(bot.search(query="zebra", limit=None))
            assert sorted(found) == sorted(
                ["seed"] + [f"{w}-{i}" for a, w in runs if a == "bot" for i in range(n)]
            )
        with AgentRuntime("other", store=store) as other:
            assert len(other.search(query="zebra", limit=None)) == n


def test_postgres_stores_writing_and_searching_at_once_find_every_write(
    postgres_clean_url: str,
) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from octopoda import PostgresStore

    def run(word: str) -> list[str]:
        missed = []
        with PostgresStore(postgres_clean_url) as store, AgentRuntime("bot", store=store) as a:
            for i in range(15):
                a.remember(f"{word}-{i}", f"{word}{i} zebra")
                if keys(a.search(query=f"{word}{i}")) != [f"{word}-{i}"]:
                    missed.append(f"{word}-{i}")
        return missed

    with PostgresStore(postgres_clean_url) as store, AgentRuntime("bot", store=store) as agent:
        agent.remember("seed", "zebra")  # the schema exists: no migration race
        with ThreadPoolExecutor(3) as pool:
            assert list(pool.map(run, ["apple", "pear", "plum"])) == [[], [], []]
        assert len(agent.search(query="zebra", limit=None)) == 1 + 3 * 15
        agent.erase("seed")
        assert "seed" not in keys(agent.search(query="zebra", limit=None))
        found = store._fetchall("SELECT count(*) FROM memory_search WHERE key = 'seed'", ())
        assert found == [(0,)]
