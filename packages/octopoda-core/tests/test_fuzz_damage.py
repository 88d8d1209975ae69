"""Fault and fuzz (issue 15): whatever is done to a store file, the public API answers with
a report or an ``OctopodaError``, never a raw exception.

* every column of every table set, one row at a time, to values of each other type (text,
  an int past 2**62, a negative int, a float, a blob, text that is not UTF-8, NULL where the
  schema lets it): ``verify()`` and every public read (and a write) of every agent either
  succeed or raise an ``OctopodaError``;
* random byte flips anywhere in the file (hypothesis): opening the store and the same calls
  never raise anything else.

One store with every table filled is written once; each case works on a copy of it. On
PostgreSQL (no file to flip), every column of every table is set to values of its own type
that Octopoda never writes there.
"""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from octopoda import AgentRuntime, LoopPolicy, OctopodaError, SqliteStore
from octopoda._store.sqlite.schema import MIGRATIONS

AGENTS = ("bot", "peer")


def _fill(path: Any, opener: Callable[[Any], Any] = SqliteStore) -> None:
    with opener(path) as store:
        bot = AgentRuntime("bot", store=store, policy=LoopPolicy(spend_cap_usd=50.0))
        peer = AgentRuntime("peer", store=store)
        bot.remember("user", "Alice", tags=["profile"])
        bot.remember("plan", {"tier": 2, "seats": [1, 2]}, ttl=3600)
        bot.remember("user", "Alicia")
        bot.remember("blob", b"\x00\x01binary")
        bot.log_decision("upgrade", reasoning="seats", context={"seats": 10})
        bot.snapshot("s1")
        bot.forget("plan")
        bot.create_space("team", members=["bot", "peer"])
        bot.share("doc", {"v": 1}, space="team")
        peer.share("doc", {"v": 2}, space="team")
        bot.share("doc", {"v": 3}, space="team")  # stale: a conflict
        bot.send_message("peer", {"hello": "there"})
        bot.broadcast("news", space="team")
        bot.set_goal("ship", milestones=["a", "b"])
        bot.update_progress(milestone_index=0)
        bot.record_tool_call("search", {"q": "x"}, result="r", cost_usd=0.5, run_id="t1")
        bot.pause("by hand", run_id="t1")
        bot.resume(run_id="t1")
        peer.mark_read(peer.read_messages()[0].id)
        bot.erase("blob", reason="gdpr")


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("fuzz") / "filled.db"
    _fill(path)
    return path


def _calls(agent: AgentRuntime) -> list[tuple[str, Callable[[], Any]]]:
    return [
        ("verify", agent.audit.verify),
        ("recall", lambda: agent.recall("user")),
        ("recall_history", lambda: agent.recall_history("user")),
        ("search", agent.search),
        ("timeline", agent.timeline),
        ("decisions", agent.decisions),
        ("as_of", lambda: agent.as_of(3).to_dict()),
        ("diff", lambda: agent.diff(1)),
        ("export_memories", agent.export_memories),
        ("audit.export", agent.audit.export),
        ("snapshots", agent.snapshots),
        ("read_messages", agent.read_messages),
        ("read_broadcasts", lambda: agent.read_broadcasts(space="team")),
        ("shared_items", lambda: agent.shared_items(space="team")),
        ("shared_history", lambda: agent.shared_history("doc", space="team")),
        ("shared_conflicts", lambda: agent.shared_conflicts(space="team")),
        ("get_goal", agent.get_goal),
        ("goal_history", agent.goal_history),
        ("loop_status", agent.loop_status),
        ("memory_health", agent.memory_health),
        ("runs", agent.runs),
        ("stats", agent.stats),
        ("paused", lambda: agent.paused),
        ("remember", lambda: agent.remember("fresh", 1)),
        ("restore", lambda: agent.restore("s1")),
    ]


def raw_exceptions(path: Any, opener: Callable[[Any], Any] = SqliteStore) -> Iterator[str]:
    """Open the store at ``path`` (with ``opener``) and make every call of one agent (the
    other is opened and verified); what each raised that is not an ``OctopodaError``."""
    try:
        store = opener(path)
    except OctopodaError:
        return
    except Exception as exc:
        yield f"opening the store: {type(exc).__name__}: {exc}"
        return
    try:
        for name in AGENTS:
            try:
                agent = AgentRuntime(name, store=store)
            except OctopodaError:
                continue
            except Exception as exc:
                yield f"AgentRuntime({name!r}): {type(exc).__name__}: {exc}"
                continue
            for call_name, call in _calls(agent)[: None if name == "bot" else 1]:
                try:
                    call()
                except OctopodaError:
                    pass
                except Exception as exc:
                    yield f"{name}.{call_name}: {type(exc).__name__}: {str(exc)[:120]}"
        try:
            store.agents()
            store.spaces()
        except OctopodaError:
            pass
        except Exception as exc:
            yield f"store listing: {type(exc).__name__}: {exc}"
    finally:
        store.close()


# -- every column of every table ----------------------------------------------------------------


def _columns() -> list[tuple[str, str, bool]]:
    db = sqlite3.connect(":memory:")
    try:
        for _, statements in MIGRATIONS:
            for statement in statements:
                db.execute(statement)
        tables = [
            r[0]
            for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            if r[0] not in ("sqlite_sequence", "schema_migrations")
        ]
        return [
            (table, column, not_null)
            for table in tables
            for _, column, _, not_null, _, _ in db.execute(f"PRAGMA table_info({table})")
        ]
    finally:
        db.close()


VALUES: dict[str, Any] = {  # (each a type the column does not hold; a float is an int's)
    "text": "x",
    "big-int": 2**62,
    "blob": b"\xff\x00",
    "not-utf8": "CAST(X'FF61' AS TEXT)",
    "json-list": "[1]",
    "null": None,
}
COLUMNS = _columns()


def tamper(path: Path, table: str, column: str, value: Any) -> bool:
    """Set ``column`` of the table's first row (every row of a WITHOUT ROWID table) to
    ``value``; False when the schema refuses it."""
    sql_value = value if isinstance(value, str) and value.startswith("CAST(") else "?"
    params = () if sql_value != "?" else (value,)
    first = f"rowid = (SELECT MIN(rowid) FROM {table})"
    db = sqlite3.connect(path, isolation_level=None)
    try:
        for where in (first, "1"):
            try:
                db.execute(f"UPDATE {table} SET {column} = {sql_value} WHERE {where}", params)
                return True
            except sqlite3.IntegrityError:  # a key the table already holds, NOT NULL
                return False
            except sqlite3.OperationalError as exc:
                if "rowid" not in str(exc):
                    raise
        return False
    finally:
        db.close()


@pytest.mark.parametrize(
    ("table", "column", "not_null"), COLUMNS, ids=[f"{t}.{c}" for t, c, _ in COLUMNS]
)
def test_tampering_any_column_never_raises_a_raw_exception(
    filled: Path, tmp_path: Path, table: str, column: str, not_null: bool
) -> None:
    failures: list[str] = []
    for label, value in VALUES.items():
        if value is None and not_null:
            continue
        path = tmp_path / f"{label}.db"
        shutil.copy(filled, path)
        if tamper(path, table, column, value):
            failures += [f"{label}: {f}" for f in raw_exceptions(path)]
    assert failures == [], "\n".join(failures[:20])


# -- random byte flips ------------------------------------------------------------------------


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    derandomize=True,
)
@given(
    flips=st.lists(
        st.tuples(st.floats(0, 1, exclude_max=True), st.integers(1, 255)), min_size=1, max_size=8
    )
)
def test_random_byte_flips_never_raise_a_raw_exception(
    filled: Path, tmp_path: Path, flips: list[tuple[float, int]]
) -> None:
    path = tmp_path / "flipped.db"
    data = bytearray(filled.read_bytes())
    for where, xor in flips:
        data[int(where * len(data))] ^= xor
    path.write_bytes(bytes(data))
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    failures = list(raw_exceptions(path))
    assert failures == [], "\n".join(failures[:20])


# -- every column of every table, on PostgreSQL ------------------------------------------------

PG_VALUES: dict[str, list[Any]] = {  # per data type: values the column takes but must not hold
    "text": ["x", "", "[1]"],
    "bigint": [-1, 2**62],
    "integer": [-1, 2**30],
    "double precision": [-1.5, 1e300],
    "jsonb": ['"x"', "[1]", "{}"],
    "bytea": [b"\xff\x00"],
    "boolean": [True, False],
    "tsvector": [""],
}


def _pg_columns(url: str) -> list[tuple[str, str, str, bool]]:
    import psycopg

    with psycopg.connect(url) as conn:
        return [
            (t, c, d, n == "YES")
            for t, c, d, n in conn.execute(
                "SELECT table_name, column_name, data_type, is_nullable"
                " FROM information_schema.columns WHERE table_schema = current_schema()"
                " AND table_name <> 'schema_migrations' ORDER BY table_name, ordinal_position"
            )
        ]


def _pg_refill(url: str) -> None:
    import psycopg

    from octopoda._store.postgres.schema import TABLES

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"TRUNCATE {', '.join(TABLES)} RESTART IDENTITY")
    _fill(url, _pg_store)


def _pg_store(url: str) -> Any:
    from octopoda.store import PostgresStore

    return PostgresStore(url, min_size=0, max_size=2)


def test_tampering_any_column_on_postgresql_never_raises_a_raw_exception(
    postgres_clean_url: str,
) -> None:
    """Each column of each table set to one value of its type that Octopoda would never
    write there (the values cycle per type; NULL where the schema allows it), on a freshly
    filled store: verify and every public call answer or raise an OctopodaError. One column
    of every table per round (a round: a refilled store, then every call)."""
    import psycopg

    url = postgres_clean_url
    _pg_store(url).close()  # the tables
    by_table: dict[str, list[tuple[str, Any]]] = {}
    picks: dict[str, int] = {}
    for table, column, data_type, nullable in _pg_columns(url):
        values = PG_VALUES.get(data_type, ["x"])
        n = picks[data_type] = picks.get(data_type, -1) + 1
        value = None if nullable and n % 3 == 2 else values[n % len(values)]
        by_table.setdefault(table, []).append((column, value))
    failures: list[str] = []
    for round_ in range(max(len(columns) for columns in by_table.values())):
        _pg_refill(url)
        changed = []
        with psycopg.connect(url, autocommit=True) as conn:
            for table, columns in by_table.items():
                if round_ >= len(columns):
                    continue
                column, value = columns[round_]
                try:
                    conn.execute(
                        f"UPDATE {table} SET {column} = %s"
                        f" WHERE ctid = (SELECT ctid FROM {table} LIMIT 1)",
                        (value,),
                    )
                except psycopg.Error:  # a constraint refuses it: nothing to read back
                    continue
                changed.append(f"{table}.{column}={value!r}")
        failures += [f"{changed}: {f}" for f in raw_exceptions(url, _pg_store)]
    assert failures == [], "\n".join(failures[:20])
