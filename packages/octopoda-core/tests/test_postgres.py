"""The PostgreSQL store against a real server (see conftest.py): the shared conformance
suite, the runtime on both stores, values PostgreSQL treats specially, the statements of a
write, lost connections, migrations, many concurrent writer processes, and switching a
working example to PostgreSQL by the environment variable alone.

Skipped without a server, except when CI is set (then they fail).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from octopoda import (
    AgentRuntime,
    ConfigError,
    Event,
    InvalidInput,
    Pipeline,
    SchemaTooNew,
    SqliteStore,
    StorageError,
    VersionConflict,
)
from octopoda.store import MemoryWrite, agent_namespace
from octopoda.testing import StoreConformance

if TYPE_CHECKING:
    from octopoda import PostgresStore

ROOT = Path(__file__).resolve().parents[3]
PROCESS_TIMEOUT = 240.0
WRITES = int(os.environ.get("OCTOPODA_TEST_PG_WRITES", "500"))  # per process


def open_pg(url: str, **kwargs: Any) -> PostgresStore:
    from octopoda import PostgresStore

    return PostgresStore(url, **kwargs)


def admin(url: str) -> Any:
    import psycopg

    return psycopg.connect(url, autocommit=True)


def json_write(key: str, text: str, namespace: str = "agent:a", **kw: Any) -> MemoryWrite:
    digest = hashlib.sha256(text.encode()).hexdigest()
    return MemoryWrite(namespace, key, "json", text, digest, **kw)


def commit(store: Any, writes: list[MemoryWrite], agent: str = "a", **kw: Any) -> Any:
    return store.commit(Event(agent, "t", {}, 1000.0), writes, Pipeline(), **kw)


@pytest.fixture
def pg(postgres_clean_url: str) -> Iterator[PostgresStore]:
    store = open_pg(postgres_clean_url)
    yield store
    store.close()


class TestPostgresStore(StoreConformance):
    @pytest.fixture
    def store(self, pg: PostgresStore) -> PostgresStore:
        return pg


# -- the runtime on both stores ---------------------------------------------------------------


def test_runtime_smoke_on_both_stores(any_store_url: str) -> None:
    clock = iter(float(t) for t in range(1_700_000_000, 1_700_001_000))
    agent = AgentRuntime("bot", store=any_store_url, clock=lambda: next(clock))
    agent.remember("user", {"name": "Alice", "langs": ["fr", "日本語"]}, tags=["profile"])
    agent.remember("user", {"name": "Alice B."}, tags=["profile"])
    agent.remember("blob", b"\x00\x01\xff")
    assert agent.recall("user").value == {"name": "Alice B."}
    assert agent.recall("blob").value == b"\x00\x01\xff"
    assert [v.version for v in agent.recall_history("user")] == [2, 1]
    assert [i.key for i in agent.search(tags=["profile"])] == ["user"]
    snap = agent.snapshot("before")
    decision = agent.log_decision("ship it", reasoning="tests pass", context={"build": 7})
    agent.forget("blob")
    assert not agent.recall("blob").found
    agent.remember("late", 1)
    changes = agent.diff(decision.seq)
    assert "blob" in changes.removed and "late" in changes.added
    restored = agent.restore("before")
    assert restored.snapshot_seq == snap.seq and agent.recall("blob").value == b"\x00\x01\xff"
    bundle = agent.export_memories()
    other = AgentRuntime("copy", store=any_store_url)
    assert other.import_memories(bundle).keys == 3  # user, blob, late (forgotten by restore)
    assert other.recall("user").value == {"name": "Alice B."}
    assert [d.decision for d in agent.decisions()] == ["ship it"]
    assert agent.audit.verify().ok and other.audit.verify().ok


def test_shared_spaces_and_messages_on_both_stores(any_store_url: str) -> None:
    alice = AgentRuntime("alice", store=any_store_url)
    bob = AgentRuntime("bob", store=any_store_url)
    alice.create_space("team", members=["bob"])
    first = alice.share("plan", "A", space="team")
    with pytest.raises(VersionConflict):
        bob.share("plan", "B", space="team", expected_version=0)
    assert bob.share("plan", "B", space="team", expected_version=first.version).version == 2
    sent = alice.send_message("bob", {"hi": 1})
    inbox = bob.read_messages()
    assert [m.id for m in inbox] == [sent.id]
    bob.mark_read(sent.id)
    assert bob.read_messages(unread_only=True) == []
    assert alice.audit.verify().ok and bob.audit.verify().ok


# -- values, keys and ordering -------------------------------------------------------------------


def test_a_nul_inside_a_json_value_round_trips(pg: PostgresStore) -> None:
    agent = AgentRuntime("a", store=pg)
    agent.remember("k", {"text": "before\x00after", "\x00": ["\x00"]})
    assert agent.recall("k").value == {"text": "before\x00after", "\x00": ["\x00"]}
    row = pg.latest(agent_namespace("a"), "k")
    assert row is not None and "\\u0000" in row.data
    assert agent.audit.verify().ok


def test_text_postgresql_cannot_hold_is_refused_before_anything_is_stored(
    pg: PostgresStore,
) -> None:
    with pytest.raises(InvalidInput, match="NUL"):
        commit(pg, [json_write("k", "1", tags=("bad\x00tag",))])
    with pytest.raises(InvalidInput, match="NUL"):
        commit(pg, [json_write("k", '"raw\x00nul"')])
    with pytest.raises(InvalidInput, match="surrogate"):
        commit(pg, [json_write("k\ud800", "1")])
    assert pg.agents() == []
    # A lookup of such text finds nothing, as in SQLite (no stored name holds a NUL).
    assert pg.latest("agent:a", "bad\x00key") is None
    assert pg.history("agent:a", "bad\x00key") == []
    assert pg.current("agent:a", prefix="k\x00") == []
    assert pg.agent("a\x00") is None


def test_json_text_round_trips_byte_for_byte(pg: PostgresStore) -> None:
    text = '{"b": 1,  "a":[1.0, 2e3, "\\u00e9", "é", "\\ud83d\\ude00"]}'
    event, _ = commit(pg, [json_write("k", text)])
    row = pg.latest("agent:a", "k")
    assert row is not None and row.data == text and isinstance(row.data, str)
    assert hashlib.sha256(row.data.encode()).hexdigest() == event.payload["writes"][0]["sha256"]
    blob = bytes(range(256))
    commit(pg, [MemoryWrite("agent:a", "b", "bytes", blob, hashlib.sha256(blob).hexdigest())])
    stored = pg.latest("agent:a", "b")
    assert stored is not None and type(stored.data) is bytes and stored.data == blob
    assert pg.value_bytes("agent:a") == len(text.encode()) + 256


def test_keys_sort_like_sqlite_binary(pg: PostgresStore, tmp_path: Path) -> None:
    keys = ["b", "B", "a", "é", "e", "Z", "_", "a b", "ab", "\U0001f600", "\uffff", "~", "0"]
    sqlite = SqliteStore(str(tmp_path / "s.db"))
    try:
        for store in (pg, sqlite):
            commit(store, [json_write(k, "1") for k in keys])
            commit(store, [], agent="Zed")
            commit(store, [], agent="alpha")
        assert [r.key for r in pg.current("agent:a")] == [r.key for r in sqlite.current("agent:a")]
        assert [r.key for r in pg.current("agent:a")] == sorted(keys)
        assert [a.id for a in pg.agents()] == [a.id for a in sqlite.agents()]
    finally:
        sqlite.close()


# -- statements and locks ---------------------------------------------------------------------


def test_a_remember_is_three_statements_in_two_round_trips(
    postgres_clean_url: str, tmp_path: Path
) -> None:
    import psycopg

    from octopoda._store.postgres import schema as q
    from octopoda._store.postgres.locks import lock_plan, lock_statement

    statements: list[str] = []
    store = open_pg(postgres_clean_url, min_size=1, max_size=1, tracer=statements.append)
    trace = tmp_path / "libpq.trace"
    try:
        agent = AgentRuntime("bot", store=store)
        agent.remember("warm", 0)
        statements.clear()
        with trace.open("w") as out:
            with store._pool().connection() as conn:  # the pool's only connection
                conn.pgconn.trace(out.fileno())
                conn.pgconn.set_trace_flags(psycopg.pq.Trace.SUPPRESS_TIMESTAMPS)
            agent.remember("k", {"v": 1})
            with store._pool().connection() as conn:
                conn.pgconn.untrace()
        lock_sql, _ = lock_statement(*lock_plan("bot", [("agent:bot", "k")]))
        assert lock_sql.count("pg_advisory_xact_lock") == 3  # agent, namespace, key
        assert statements == [  # (no BEGIN or COMMIT: the pipeline's Sync commits)
            lock_sql,
            q.HEAD_AND_KEY,  # ---- round trip 1 ends; the pipeline runs here
            q.INSERT_MEMORY_AND_EVENT,  # ---- round trip 2: the row, the event, the new head
        ]
        directions = [line.split("\t")[0] for line in trace.read_text().splitlines()]
        turns = sum(1 for pair in itertools.pairwise(directions) if pair == ("F", "B"))
        assert turns == 2, trace.read_text()  # the client waits for the server twice
        statements.clear()
        agent.recall("k")
        assert statements == [q.READS.latest]
    finally:
        store.close()


def test_a_guarded_run_call_is_one_statement(postgres_clean_url: str) -> None:
    from octopoda import LoopPolicy
    from octopoda._store.postgres import schema as q

    statements: list[str] = []
    store = open_pg(postgres_clean_url, min_size=1, max_size=1, tracer=statements.append)
    try:
        agent = AgentRuntime("bot", store=store, policy=LoopPolicy("pause"))
        agent.record_tool_call("t", {"a": 1}, result=1, run_id="thread-1")
        statements.clear()
        agent.guard_tool_call("t", {"a": 1}, run_id="thread-1")
        assert statements == [q.RUN_READS.agent_and_run]
    finally:
        store.close()


def test_lock_plan_order_and_bulk_mode() -> None:
    from octopoda._store.postgres.locks import KEY_LOCK_LIMIT, lock_id, lock_plan
    from octopoda.store import CreateSpace, Op, ResolveConflict, SendMessage

    slots = [("agent:a", "k2"), ("space:x", "k1"), ("agent:a", "k1")]
    ids, shared = lock_plan("a", slots)
    assert ids[0] == lock_id(b"agent", "a") and shared[0] is False  # the chain head
    assert ids[1:3] == sorted({lock_id(b"namespace", "agent:a"), lock_id(b"namespace", "space:x")})
    assert shared[1:3] == [True, True]
    assert ids[3:6] == sorted(lock_id(b"key", ns, k) for ns, k in slots)
    assert shared[3:6] == [False] * 3
    assert (ids[6:], shared[6:]) == ([lock_id(b"space", "x")], [True])  # membership stays put

    ops: list[Op] = [
        SendMessage("b", None, "info", "1", "sha"),
        CreateSpace("y", None),
        ResolveConflict(7, "mine"),
        SendMessage(None, "y", "info", "1", "sha"),
    ]
    ids, shared = lock_plan("a", [], ops)
    expected = {
        lock_id(b"inbox", "b"): False,
        lock_id(b"space", "y"): False,  # created here: exclusive wins over the send's shared
        lock_id(b"conflict", "7"): False,
        lock_id(b"space-inbox", "y"): False,
    }
    assert ids[0] == lock_id(b"agent", "a")
    assert dict(zip(ids[1:], shared[1:], strict=True)) == expected and ids[1:] == sorted(expected)

    bulk = [("agent:a", f"k{i}") for i in range(KEY_LOCK_LIMIT + 1)]
    ids, shared = lock_plan("a", bulk)
    assert ids == [lock_id(b"agent", "a"), lock_id(b"namespace", "agent:a")]
    assert shared == [False, False]


@pytest.mark.parametrize("first", ["remember", "status"])
def test_an_agents_row_comes_with_its_first_event_and_not_with_a_refused_one(
    pg: PostgresStore, first: str
) -> None:
    from octopoda import VersionConflict

    now = [49.0]
    agent = AgentRuntime("fresh", store=pg, clock=lambda: now[0])
    with pytest.raises(VersionConflict):
        agent._commit("note", {}, [], expected_seq=3)  # refused by the planner
    assert pg.agent("fresh") is None and pg.agents() == []
    now[0] = 50.0
    if first == "remember":  # (the memory row, the event and the agent row: one statement)
        agent.remember("k", 1)
    else:
        agent._commit("paused", {}, status=("paused", "why"))
    row = pg.agent("fresh")
    assert row is not None
    assert (row.created_at, row.head_seq, row.last_active) == (50.0, 1, 50.0)
    assert (row.status, row.status_reason) == (
        ("active", None) if first == "remember" else ("paused", "why")
    )
    assert row.head_hash == next(iter(pg.events("fresh"))).hash
    now[0] = 51.0
    agent.remember("k", 2)
    row = pg.agent("fresh")
    assert row is not None and (row.created_at, row.head_seq, row.last_active) == (50.0, 2, 51.0)
    assert agent.recall("k").value == 2


@pytest.mark.parametrize("writes", [0, 1])
def test_a_plain_commit_holds_its_locks_from_the_head_read_to_its_commit(
    pg: PostgresStore, postgres_clean_url: str, writes: int
) -> None:
    """A plain commit sends no BEGIN: its two round trips are one implicit transaction, which
    the pipeline's Sync ends (not the flush that fetches round trip 1)."""
    from octopoda._store.postgres.locks import lock_id

    commit(pg, [json_write("k", "0")])
    held = (
        "SELECT (classid::bigint << 32) | objid::bigint FROM pg_locks"
        " WHERE locktype = 'advisory' AND granted"  # (this test's database only: other
        " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
    )  # tests and sessions may hold locks of their own databases on the same server)
    seen: list[Any] = []
    with admin(postgres_clean_url) as other:

        def between_round_trips(event: Event) -> Event:  # (the pipeline runs here)
            locks = {r[0] for r in other.execute(held)}
            stored = other.execute("SELECT count(*) FROM events WHERE agent = 'a'").fetchone()
            seen.append((lock_id(b"agent", "a") in locks, stored[0]))
            return Pipeline().run(event)

        event, _ = pg.commit(
            Event("a", "t", {}, 1001.0), [json_write("k", "1")][:writes], between_round_trips
        )
        assert seen == [(True, 1)]  # the agent's lock held, the event not yet visible
        assert other.execute(held).fetchall() == []  # committed: every lock released
        row = other.execute("SELECT seq, hash FROM events WHERE agent = 'a' AND seq = 2")
        assert row.fetchone() == (2, event.hash)
    assert pg.agent("a").head_seq == 2  # type: ignore[union-attr]


def test_lock_statement_takes_every_planned_lock_in_its_mode(postgres_clean_url: str) -> None:
    import psycopg

    from octopoda._store.postgres.locks import LOCK, LOCK_CALLS_LIMIT, lock_plan, lock_statement

    few = lock_plan("a", [("agent:a", "k"), ("space:x", "k")])
    many = lock_plan("a", [("agent:a", f"k{i}") for i in range(LOCK_CALLS_LIMIT)])
    assert len(few[0]) <= LOCK_CALLS_LIMIT < len(many[0])
    assert lock_statement(*many)[0] == LOCK  # past the limit: one array statement
    held = (
        "SELECT (classid::bigint << 32) | objid::bigint, mode = 'ShareLock' FROM pg_locks"
        " WHERE locktype = 'advisory' AND pid = pg_backend_pid()"
    )
    with psycopg.connect(postgres_clean_url) as conn:
        for ids, shared in (few, many):
            sql, params = lock_statement(ids, shared)
            conn.execute(sql, params)
            assert dict(conn.execute(held).fetchall()) == dict(zip(ids, shared, strict=True))
            conn.rollback()  # (transaction-level locks: released)
            assert conn.execute(held).fetchall() == []
            conn.rollback()


def test_a_commit_of_many_keys_does_not_exhaust_the_lock_table(pg: PostgresStore) -> None:
    writes = [json_write(f"k{i:05d}", str(i)) for i in range(5000)]
    _, versions = commit(pg, writes)
    assert versions == [1] * 5000
    _, versions = commit(pg, writes[:40] + writes[:40])
    assert versions == [2] * 40 + [3] * 40
    assert len(pg.current("agent:a")) == 5000


def test_compare_and_set_between_two_hosts(postgres_clean_url: str) -> None:
    host_a, host_b = open_pg(postgres_clean_url), open_pg(postgres_clean_url)
    try:
        commit(host_a, [json_write("k", "1", "space:s", expected_version=0)], agent="x")
        with pytest.raises(VersionConflict) as caught:
            commit(host_b, [json_write("k", "2", "space:s", expected_version=0)], agent="y")
        assert (caught.value.expected, caught.value.actual) == (0, 1)
        _, versions = commit(host_b, [json_write("k", "2", "space:s", expected_version=1)], "y")
        assert versions == [2]
        assert host_a.agent("y") is not None and host_a.agent("y").head_seq == 1  # type: ignore[union-attr]
    finally:
        host_a.close()
        host_b.close()


def test_operations_are_checked_inside_the_commit(pg: PostgresStore) -> None:
    from octopoda import AccessDenied, NotFound
    from octopoda.store import CreateSpace, MarkRead, ResolveConflict, SendMessage

    commit(pg, [], agent="owner", ops=[CreateSpace("club", ("owner",))])
    with pytest.raises(InvalidInput, match="already exists"):
        commit(pg, [], agent="other", ops=[CreateSpace("club", None)])
    with pytest.raises(AccessDenied, match="not a member of space 'club'"):
        commit(pg, [json_write("k", "1", "space:club")], agent="outsider")
    with pytest.raises(AccessDenied):
        commit(pg, [], agent="outsider", ops=[SendMessage(None, "club", "info", "1", "x")])
    assert pg.latest("space:club", "k") is None and pg.agent("outsider") is None
    event, _ = commit(pg, [], agent="owner", ops=[SendMessage("bob", None, "info", '"hi"', "h")])
    message_id = event.payload["message_id"]
    with pytest.raises(NotFound):
        commit(pg, [], agent="eve", ops=[MarkRead(message_id)])
    commit(pg, [], agent="bob", ops=[MarkRead(message_id)])
    with pytest.raises(NotFound):
        commit(pg, [], agent="bob", ops=[MarkRead(message_id)])  # read already
    [message] = pg.messages(party="bob")
    assert (message.id, message.body, message.body_sha256) == (message_id, '"hi"', "h")
    with pytest.raises(NotFound, match="no open conflict"):
        commit(pg, [], agent="owner", ops=[ResolveConflict(99, "mine")])


# -- failures -------------------------------------------------------------------------------


def terminate_store_connections(url: str) -> int:
    with admin(url) as conn:
        rows = conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname ="
            " current_database() AND application_name = 'octopoda'"
        ).fetchall()
    return len(rows)


def test_reads_and_writes_survive_terminated_connections(postgres_clean_url: str) -> None:
    store = open_pg(postgres_clean_url, min_size=2, max_size=4)
    try:
        agent = AgentRuntime("a", store=store)
        agent.remember("k", 1)
        assert terminate_store_connections(postgres_clean_url) >= 1
        assert agent.recall("k").value == 1
        assert terminate_store_connections(postgres_clean_url) >= 1
        assert agent.remember("k", 2).version == 2
        assert agent.audit.verify().ok
    finally:
        store.close()


def test_a_connection_lost_after_chaining_reports_the_outcome(postgres_clean_url: str) -> None:
    store = open_pg(postgres_clean_url)
    try:
        agent = AgentRuntime("a", store=store)
        agent.remember("k", 1)

        def kill_connection(event: Event) -> Event:
            terminate_store_connections(postgres_clean_url)
            return event

        agent.pipeline.processors.append(kill_connection)
        with pytest.raises(StorageError, match="nothing was stored, so it is safe to repeat"):
            agent.remember("k", 2)
        agent.pipeline.processors.remove(kill_connection)
        assert agent.recall("k").version == 1
        assert agent.remember("k", 3).version == 2
        assert agent.audit.verify().ok
    finally:
        store.close()


def test_a_plain_commit_refused_at_commit_time_stores_nothing(postgres_clean_url: str) -> None:
    """Octopoda's schema has no deferred constraint, but a database's own may refuse a
    plain commit at its Sync (no COMMIT statement): the store settles the outcome."""
    store = open_pg(postgres_clean_url)
    try:
        agent = AgentRuntime("a", store=store)
        agent.remember("k", 1)
        with admin(postgres_clean_url) as conn:
            conn.execute(
                "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
                " IF NEW.payload LIKE '%%refused%%' THEN RAISE EXCEPTION 'refused'; END IF;"
                " RETURN NULL; END $$"
            )
            conn.execute(
                "CREATE CONSTRAINT TRIGGER refuse AFTER INSERT ON events DEFERRABLE"
                " INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION refuse()"
            )
        with pytest.raises(StorageError, match="nothing was stored, so it is safe to repeat"):
            agent.remember("refused", 2)
        assert not agent.recall("refused").found
        assert agent.remember("k", 3).version == 2
        assert agent.audit.verify().ok
    finally:
        store.close()


def test_a_driver_failure_at_the_pipelines_end_is_settled_by_the_server(
    postgres_clean_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """psycopg can fail with an error of its own at the pipeline's last Sync (seen: an
    IndexError from its result queue when the server refused the implicit commit). Once
    every statement was sent the store asks the server, as after a broken connection:
    stored, the write returns; not stored, a StorageError says it is safe to repeat."""
    import psycopg

    store = open_pg(postgres_clean_url)
    try:
        agent = AgentRuntime("a", store=store)
        agent.remember("k", 1)
        original = psycopg.Pipeline.__exit__

        def then_fail(self: Any, *exc: Any) -> None:
            original(self, *exc)  # the commit happens
            raise IndexError("pop from an empty deque")

        monkeypatch.setattr(psycopg.Pipeline, "__exit__", then_fail)
        assert agent.remember("k", 2).version == 2  # stored: the write returns
        monkeypatch.undo()

        def refused_then_fail(self: Any, *exc: Any) -> None:
            try:
                original(self, *exc)  # the server refuses the commit
            except psycopg.Error:
                raise IndexError("pop from an empty deque") from None  # (psycopg's bug)

        with admin(postgres_clean_url) as conn:  # (refuses a key at commit time)
            conn.execute(
                "CREATE OR REPLACE FUNCTION refuse_key() RETURNS trigger LANGUAGE plpgsql"
                " AS $$ BEGIN IF NEW.payload LIKE '%%refused%%' THEN"
                " RAISE EXCEPTION 'refused'; END IF; RETURN NULL; END $$"
            )
            conn.execute(
                "CREATE CONSTRAINT TRIGGER refuse_key AFTER INSERT ON events DEFERRABLE"
                " INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION refuse_key()"
            )
        monkeypatch.setattr(psycopg.Pipeline, "__exit__", refused_then_fail)
        with pytest.raises(StorageError, match="nothing was stored, so it is safe to repeat"):
            agent.remember("refused", 3)
        monkeypatch.undo()
        assert not agent.recall("refused").found
        assert agent.remember("k", 4).version == 3
        assert agent.audit.verify().ok
    finally:
        store.close()


def test_a_writer_stuck_holding_the_agent_lock_times_out_clearly(
    postgres_clean_url: str,
) -> None:
    from octopoda._store.postgres.locks import lock_id

    store = open_pg(postgres_clean_url, lock_timeout=0.3)
    try:
        agent = AgentRuntime("a", store=store)
        agent.remember("k", 1)
        with admin(postgres_clean_url) as holder, holder.transaction():
            holder.execute("SELECT pg_advisory_xact_lock(%s)", (lock_id(b"agent", "a"),))
            with pytest.raises(StorageError, match="lock_timeout"):
                agent.remember("k", 2)
        assert agent.remember("k", 3).version == 2  # released: writes go on
    finally:
        store.close()


def test_errors_say_what_to_do(postgres_admin_url: str) -> None:
    from octopoda._store.postgres.driver import redact_url

    with pytest.raises(StorageError, match="check that the server runs"):
        open_pg("postgresql://nobody:secret@127.0.0.1:1/x?connect_timeout=2")
    missing = postgres_admin_url.rsplit("/", 1)[0] + "/octopoda_no_such_database"
    with pytest.raises(StorageError, match="createdb"):
        open_pg(missing)
    with pytest.raises(ConfigError):
        open_pg("postgresql://[bad")
    assert redact_url("postgresql://u:pw@h:5/db?password=x&sslmode=require") == (
        "postgresql://u:***@h:5/db?password=***&sslmode=require"
    )
    with pytest.raises(ConfigError, match="max_size"):
        open_pg(postgres_admin_url, min_size=3, max_size=2)


def test_a_closed_store_says_so(pg: PostgresStore) -> None:
    pg.close()
    with pytest.raises(StorageError, match="closed"):
        pg.agents()
    pg.close()  # twice is fine


def test_info_and_integrity_check(pg: PostgresStore) -> None:
    from octopoda._store.postgres.schema import MIGRATIONS

    commit(pg, [json_write("k", "1")])
    info = pg.info()
    assert info["backend"] == "postgresql"
    assert info["migrations"] == [name for name, _ in MIGRATIONS]
    assert info["server_version"].split(".")[0] >= "15" and info["size_bytes"] > 0
    assert pg.integrity_check() == ["ok"]
    with admin(postgres_url_of(pg)) as conn:
        conn.execute("UPDATE agents SET head_seq = 5 WHERE id = 'a'")
    assert pg.integrity_check() == ["agent 'a': head is #5, its last event #1"]


def postgres_url_of(store: PostgresStore) -> str:
    return store._url


# -- migrations ---------------------------------------------------------------------------------


def schema_url(url: str, schema: str) -> str:
    with admin(url) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        conn.execute(f"CREATE SCHEMA {schema}")
    return f"{url}?options=-csearch_path%3D{schema}"


def test_a_newer_schema_is_refused(postgres_url: str) -> None:
    url = schema_url(postgres_url, "newer")
    open_pg(url).close()
    with admin(url) as conn:
        conn.execute("INSERT INTO newer.schema_migrations VALUES ('9999_future', 0)")
    with pytest.raises(SchemaTooNew, match="9999_future"):
        open_pg(url)


def test_another_applications_tables_are_not_touched(postgres_url: str) -> None:
    url = schema_url(postgres_url, "rails")
    with admin(url) as conn:
        conn.execute("CREATE TABLE rails.schema_migrations (version text PRIMARY KEY)")
    with pytest.raises(StorageError, match="another application"):
        open_pg(url)
    url = schema_url(postgres_url, "shop")
    with admin(url) as conn:
        conn.execute("CREATE TABLE shop.events (id int)")
    with pytest.raises(StorageError, match="another application"):
        open_pg(url)


OPENER = r"""
import json, sys, time
from octopoda import AgentRuntime
from octopoda import PostgresStore
url, agent, start_at = sys.argv[1], sys.argv[2], float(sys.argv[3])
while time.time() < start_at:
    time.sleep(0.001)
store = PostgresStore(url)
AgentRuntime(agent, store=store).remember("hello", agent)
store.close()
print(json.dumps({"ok": agent}))
"""


def run_together(script: str, argv: list[list[str]], delay: float = 1.5) -> list[dict[str, Any]]:
    """Start one process per argument list; they begin work at the same moment."""
    start_at = str(time.time() + delay)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OCTOPODA_")}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script, *args, start_at],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for args in argv
    ]
    results: list[dict[str, Any]] = []
    try:
        for proc in procs:
            out, err = proc.communicate(timeout=PROCESS_TIMEOUT)
            assert proc.returncode == 0, err
            results.append(json.loads(out))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    return results


def test_six_hosts_migrate_one_empty_database_at_once(
    postgres_databases: Callable[[], str],
) -> None:
    from octopoda._store.postgres.schema import MIGRATIONS

    url = postgres_databases()
    results = run_together(OPENER, [[url, f"host{i}"] for i in range(6)])
    assert sorted(r["ok"] for r in results) == [f"host{i}" for i in range(6)]
    with admin(url) as conn:
        names = [r[0] for r in conn.execute("SELECT name FROM schema_migrations ORDER BY name")]
    assert names == [name for name, _ in MIGRATIONS]
    store = open_pg(url)
    try:
        for i in range(6):
            assert AgentRuntime(f"host{i}", store=store).audit.verify().ok
    finally:
        store.close()


def test_threads_share_one_store(postgres_clean_url: str) -> None:
    import threading

    store = open_pg(postgres_clean_url, max_size=4)
    errors: list[BaseException] = []

    def write(t: int) -> None:
        agent = AgentRuntime("threads", store=store)
        try:
            for i in range(40):
                agent.remember("shared", [t, i])
                agent.remember(f"t{t}", i)
        except BaseException as exc:  # reported below
            errors.append(exc)

    try:
        threads = [threading.Thread(target=write, args=(t,)) for t in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        agent = AgentRuntime("threads", store=store)
        assert [v.version for v in agent.recall_history("shared")] == list(range(320, 0, -1))
        assert agent.audit.verify().ok and store.agent("threads").head_seq == 640  # type: ignore[union-attr]
    finally:
        store.close()


FORKER = r"""
import os, sys, warnings
warnings.simplefilter("ignore", DeprecationWarning)  # fork() with the pool's threads running
from octopoda import AgentRuntime
url = sys.argv[1]
agent = AgentRuntime("forker", store=url)
agent.remember("before", 0)
pid = os.fork()
if pid == 0:  # the child writes through the runtime (and store) it inherited
    try:
        for i in range(30):
            agent.remember(f"child{i}", i)
        AgentRuntime("child", store=url).remember("hello", 1)
    except BaseException as exc:
        print(f"child failed: {exc!r}", file=sys.stderr)
        os._exit(1)
    os._exit(0)
for i in range(30):
    agent.remember(f"parent{i}", i)
_, status = os.waitpid(pid, 0)
assert status == 0, status
agent.remember("after", 1)
print("{}")
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_writes_through_the_store_it_inherited(postgres_clean_url: str) -> None:
    [result] = run_together(FORKER, [[postgres_clean_url]], delay=0.0)
    assert result == {}
    store = open_pg(postgres_clean_url)
    try:
        agent = AgentRuntime("forker", store=store)
        assert len(agent.keys()) == 62
        assert agent.audit.verify().ok and store.agent("forker").head_seq == 62  # type: ignore[union-attr]
        assert store.agent("child") is not None
    finally:
        store.close()


# -- many writers ----------------------------------------------------------------------------

WRITER = r"""
import json, sys, time
from octopoda import AgentRuntime
url, agent_id, writes, mode, start_at = sys.argv[1:6]
own = AgentRuntime(agent_id, store=url)
team = AgentRuntime("team", store=url)
errors, acks = [], []
while time.time() < float(start_at):
    time.sleep(0.001)
for i in range(int(writes)):
    value = {"agent": agent_id, "i": i}
    try:
        if mode == "own":  # its own agent's keys
            key = f"k{i % 50}"
            acks.append(["agent:" + agent_id, key, own.remember(key, value).version])
        elif i % 2 == 0:  # the shared key of one agent id, written by four processes
            acks.append(["agent:team", "counter", team.remember("counter", value).version])
        else:  # a key of a shared space, written by four agent ids
            acks.append(["space:global", "board", own.share("board", value).version])
    except Exception as exc:
        errors.append(f"{type(exc).__name__}: {exc}")
print(json.dumps({"agent": agent_id, "errors": errors, "acks": acks}))
"""


def test_eight_processes_write_concurrently_without_loss(postgres_clean_url: str) -> None:
    """The acceptance run, scaled by OCTOPODA_TEST_PG_WRITES (500 writes per process here;
    the benchmark runs more): four processes write their own keys, four write shared keys
    only, alternating between one agent id's key and a shared space's key."""
    url, n = postgres_clean_url, WRITES
    argv = [[url, f"w{p}", str(n), "own" if p < 4 else "shared"] for p in range(8)]
    results = run_together(WRITER, argv)
    assert [e for r in results for e in r["errors"]] == []
    acked = {(ns, key, version): r["agent"] for r in results for ns, key, version in r["acks"]}
    store = open_pg(url)
    try:
        stored = {  # (namespace, key, version) -> the writer named in the stored value
            (ns, row.key, row.version): json.loads(row.data)["agent"]
            for ns in {ns for ns, _, _ in acked}
            for row in store.all_versions(ns)
        }
        assert len(acked) == 8 * n  # every write acknowledged once, under its own version
        assert stored == acked  # nothing lost, nothing extra, each version its writer's
        for p in range(4):  # own keys k0..k49: versions 1..n/50
            heads = {r.key: r.version for r in store.current(agent_namespace(f"w{p}"))}
            assert heads == {f"k{k}": len(range(k, n, 50)) for k in range(50)}
        shared = {("agent:team", "counter"): (n + 1) // 2, ("space:global", "board"): n // 2}
        for (namespace, key), per_process in shared.items():
            versions = [h.version for h in store.history(namespace, key)]
            assert versions == list(range(4 * per_process, 0, -1)), key  # gapless, no dupes
        for agent in [f"w{p}" for p in range(8)] + ["team"]:
            report = AgentRuntime(agent, store=store).audit.verify()
            assert report.ok, (agent, report)
        assert store.agent("team").head_seq == 4 * ((n + 1) // 2)  # type: ignore[union-attr]
        assert store.integrity_check() == ["ok"]
    finally:
        store.close()


# -- switching stores by configuration -------------------------------------------------------


def test_the_quickstart_runs_on_postgresql_by_environment_variable(
    postgres_clean_url: str, tmp_path: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OCTOPODA_")}
    env.update(OCTOPODA_DATABASE_URL=postgres_clean_url, OCTOPODA_HOME=str(tmp_path / "home"))
    script = str(ROOT / "examples" / "quickstart.py")
    runs = [
        subprocess.run([sys.executable, script], env=env, capture_output=True, text=True)
        for _ in range(2)
    ]
    for run in runs:
        assert run.returncode == 0, run.stderr
        assert "audit chain: verified" in run.stdout
        assert "store: postgresql://" in run.stdout
    assert "remembered from an earlier run: user_name = 'Alice'" in runs[1].stdout
    assert not (tmp_path / "home").exists()  # no SQLite file was created


def test_one_store_per_url_and_process(
    postgres_clean_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from octopoda import PostgresStore

    first = AgentRuntime("a", store=postgres_clean_url)
    second = AgentRuntime("b", store=postgres_clean_url, durability="full")
    assert isinstance(first.store, PostgresStore) and first.store is second.store
    monkeypatch.setenv("OCTOPODA_DATABASE_URL", postgres_clean_url)
    assert AgentRuntime("c").store is first.store
    first.store.close()
    assert AgentRuntime("d").store is not first.store  # a closed store is replaced


def test_without_the_extra_the_error_names_the_install_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)
    for name in [m for m in sys.modules if m.startswith("octopoda._store.postgres.")]:
        monkeypatch.delitem(sys.modules, name)  # imported again, without psycopg
    with pytest.raises(ConfigError, match=r"pip install 'octopoda-core\[postgres\]'"):
        AgentRuntime("a", store="postgresql://postgres@127.0.0.1:5432/postgres")


def test_pgvector_is_available_in_ci(postgres_url: str) -> None:
    if not os.environ.get("CI"):
        pytest.skip("pgvector is only required in CI (.ci/run installs it)")
    with admin(postgres_url) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        assert conn.execute("SELECT '[1,2]'::vector <-> '[1,3]'::vector").fetchone()[0] == 1.0
