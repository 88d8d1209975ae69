"""``AgentRuntime.erase``: content removed for good, history and audit trail kept.

Runtime behaviour runs on both stores (``any_store_url``: SQLite, then PostgreSQL when a
server is reachable); tampering and the bytes left on disk are checked on SQLite files with
raw ``sqlite3`` connections, as an attacker or a forensic reader would look at them.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from octopoda import (
    AgentRuntime,
    EraseResult,
    InvalidInput,
    InvalidKey,
    SqliteStore,
    VerifyReport,
)
from octopoda._values import MAX_KEY_LENGTH, MAX_REASON_LENGTH
from octopoda.testing import FrozenClock

SECRET = "alice.secret@example.com"


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock(1_750_000_000.0)


@pytest.fixture
def sqlite_path(tmp_path: Path) -> Path:
    return tmp_path / "octopoda.db"


@pytest.fixture
def store(sqlite_path: Path) -> Iterator[SqliteStore]:
    s = SqliteStore(sqlite_path)
    yield s
    s.close()


def _history(agent: AgentRuntime, key: str) -> list[tuple[Any, ...]]:
    return [
        (v.version, v.value, v.tombstone, v.erased, v.created_at, v.tags, v.seq, v.author)
        for v in agent.recall_history(key)
    ]


def _dump(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    db = sqlite3.connect(path)
    try:
        return {
            table: db.execute(f"SELECT * FROM {table} ORDER BY 1, 2, 3").fetchall()
            for table in ("agents", "memories", "events")
        }
    finally:
        db.close()


def _fresh_verify(path: Path, agent: str = "bot") -> VerifyReport:
    with SqliteStore(path) as store:
        return AgentRuntime(agent, store=store).audit.verify()


# -- the operation, on both stores ------------------------------------------------------------


def test_erase_removes_every_value_and_keeps_the_history(
    any_store_url: str, clock: FrozenClock
) -> None:
    agent = AgentRuntime("bot", store=any_store_url, clock=clock)
    agent.remember("email", SECRET, tags=["pii"])
    clock.advance(1)
    agent.remember("email", SECRET.encode())
    clock.advance(1)
    agent.forget("email")
    clock.advance(1)
    agent.remember("email", "new." + SECRET, ttl=3600)
    agent.remember("plan", "pro")
    before = _history(agent, "email")
    clock.advance(1)

    erased = agent.erase("email", reason="GDPR request 2025-114")

    assert erased == EraseResult("email", (1, 2, 4), clock.now, 6)
    assert not agent.recall("email") and agent.recall("email").value is None
    for version in (1, 2, 3, 4):
        assert not agent.recall("email", version=version)
    after = _history(agent, "email")
    # Every version is still there with its time, tags, seq and author; only values are gone.
    assert [row[:4] for row in after] == [
        (4, None, False, True),
        (3, None, True, False),  # the tombstone held nothing and stays a tombstone
        (2, None, False, True),
        (1, None, False, True),
    ]
    assert [row[4:] for row in after] == [row[4:] for row in before]
    event = agent.timeline()[-1]
    assert (event.seq, event.kind, event.time) == (6, "erase", clock.now)
    assert event.payload == {
        "erased": [{"key": "email", "versions": [1, 2, 4]}],
        "reason": "GDPR request 2025-114",
    }
    assert agent.recall("plan").value == "pro"
    assert agent.keys() == ["plan"]
    health = agent.memory_health()
    assert (health.keys, health.forgotten_keys) == (1, 1)
    report = agent.audit.verify()
    assert report.ok, report
    assert (report.checked, report.memories_checked) == (6, 5)

    # The key lives on: the next write is version 5, and verification still holds.
    clock.advance(1)
    written = agent.remember("email", "bob@example.com")
    assert (written.version, written.seq) == (5, 7)
    assert agent.recall("email").value == "bob@example.com"
    assert agent.audit.verify().ok


def test_erase_without_a_reason_records_none(any_store_url: str) -> None:
    agent = AgentRuntime("bot", store=any_store_url)
    agent.remember("k", 1)
    erased = agent.erase("k")
    assert erased is not None and erased.versions == (1,)
    assert agent.timeline()[-1].payload == {"erased": [{"key": "k", "versions": [1]}]}


def test_erase_of_a_forgotten_key_removes_its_old_values(any_store_url: str) -> None:
    agent = AgentRuntime("bot", store=any_store_url)
    agent.remember("k", SECRET)
    agent.forget("k")
    assert agent.recall_history("k")[1].value == SECRET  # forgotten: still stored...
    assert agent.recall("k", version=1).value == SECRET  # ...and readable by version
    erased = agent.erase("k")
    assert erased is not None and erased.versions == (1,)
    assert not agent.recall("k", version=1)
    assert agent.audit.verify().ok


def test_erase_with_nothing_to_erase_returns_none_and_writes_nothing(
    any_store_url: str,
) -> None:
    agent = AgentRuntime("bot", store=any_store_url)
    agent.remember("once", 1)
    assert agent.erase("once") is not None
    agent.remember("forgotten", 2)
    agent.forget("forgotten")
    assert agent.erase("forgotten") is not None  # v1 erased; v2 is a tombstone
    head = agent.audit.head()
    for key in ("missing", "once", "forgotten", "ONCE", "onc"):
        assert agent.erase(key) is None, key
    assert agent.audit.head() == head
    kinds = [e.kind for e in agent.timeline()]
    assert kinds == ["remember", "erase", "remember", "forget", "erase"]


def test_keys_are_exact(any_store_url: str) -> None:
    agent = AgentRuntime("bot", store=any_store_url)
    keys = ["user", "user_name", "user.email", "User", "use"]
    agent.remember_many({k: f"value of {k}" for k in keys})
    erased = agent.erase("user")
    assert erased is not None and erased.key == "user"
    assert agent.keys() == sorted(k for k in keys if k != "user")
    for key in keys[1:]:
        assert agent.recall(key).value == f"value of {key}"
        assert not any(v.erased for v in agent.recall_history(key))


def test_agents_are_isolated(any_store_url: str) -> None:
    upper = AgentRuntime("Bot", store=any_store_url)
    lower = AgentRuntime("bot", store=any_store_url)
    upper.remember("k", "upper")
    lower.remember("k", "lower")
    assert upper.erase("k") is not None
    assert not upper.recall("k")
    assert lower.recall("k").value == "lower"
    assert [e.kind for e in lower.timeline()] == ["remember"]
    assert upper.audit.verify().ok and lower.audit.verify().ok


def test_restore_across_an_erased_value(any_store_url: str) -> None:
    agent = AgentRuntime("bot", store=any_store_url)
    agent.remember("secret", SECRET)
    agent.remember("plan", "pro")
    agent.snapshot("before")
    agent.remember("plan", "free")
    agent.erase("secret")

    # The erased value cannot come back: at the snapshot the key counts as absent.
    first = agent.restore("before")
    assert (first.restored, first.removed) == (("plan",), ())
    assert not agent.recall("secret")
    assert agent.recall("plan").value == "pro"

    # A value written after the erase is tombstoned, as for a key created after the snapshot.
    agent.remember("secret", "written later")
    second = agent.restore("before")
    assert (second.restored, second.removed) == ((), ("secret",))
    assert not agent.recall("secret")
    assert [v.tombstone for v in agent.recall_history("secret")] == [True, False, False]
    assert agent.audit.verify().ok


def test_as_of_timeline_and_diff_across_an_erase(any_store_url: str) -> None:
    agent = AgentRuntime("bot", store=any_store_url)
    agent.remember("secret", SECRET)
    agent.remember("plan", "pro")
    decision = agent.log_decision("Offer the annual plan", context={"why": "test"})
    erased = agent.erase("secret", reason="user asked")
    assert erased is not None

    # Gone at every point in time: what the agent knew then no longer includes the value.
    assert not decision.memory().recall("secret")
    assert decision.memory().to_dict() == {"plan": "pro"}
    assert agent.as_of(1).to_dict() == {}
    assert not agent.as_of(1).recall("secret")
    assert [item.key for item in agent.as_of(decision.seq).search()] == ["plan"]
    diff = agent.diff(0)
    assert (diff.added, diff.changed, diff.removed) == ({"plan": "pro"}, {}, {})
    assert not agent.diff(decision.seq, erased.seq)
    events = agent.timeline(kinds=["erase"])
    assert [(e.seq, e.payload["reason"]) for e in events] == [(erased.seq, "user asked")]


def test_export_after_erase_round_trips_into_another_agent(any_store_url: str) -> None:
    agent = AgentRuntime("bot", store=any_store_url)
    agent.remember("secret", SECRET, tags=["pii"])
    agent.remember("secret", b"\x00" + SECRET.encode())
    agent.remember("plan", "pro")
    agent.erase("secret")
    agent.remember("secret", "replaced")

    bundle = agent.export_memories()
    text = json.dumps(bundle)
    assert SECRET not in text and "AGFsaWNl" not in text  # neither as JSON nor as base64
    versions = {m["key"]: m["versions"] for m in bundle["memories"]}
    assert [(v["version"], v["encoding"], "value" in v) for v in versions["secret"]] == [
        (1, "erased", False),
        (2, "erased", False),
        (3, "json", True),
    ]
    assert versions["secret"][0]["tags"] == ["pii"]

    copy = AgentRuntime("copy", store=any_store_url)
    result = copy.import_memories(text)
    assert (result.keys, result.versions) == (2, 2)  # erased versions are not imported
    assert copy.recall("secret").value == "replaced"
    assert [v.version for v in copy.recall_history("secret")] == [1]
    assert copy.recall("plan").value == "pro"
    assert copy.audit.verify().ok and agent.audit.verify().ok


# -- input validation -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "reason", "error", "message"),
    [
        ("", None, InvalidKey, "must not be empty"),
        (5, None, InvalidKey, "must be a str"),
        (None, None, InvalidKey, "must be a str"),
        ("a\x00b", None, InvalidKey, "NUL"),
        ("k" * (MAX_KEY_LENGTH + 1), None, InvalidKey, "the limit is"),
        ("\ud800", None, InvalidKey, "surrogate"),
        ("k", "", InvalidInput, "blank"),
        ("k", "   ", InvalidInput, "blank"),
        ("k", 42, InvalidInput, "must be a str or None"),
        ("k", "why\x00", InvalidInput, "NUL"),
        ("k", "r" * (MAX_REASON_LENGTH + 1), InvalidInput, "the limit is"),
        ("k", "\udfff", InvalidInput, "surrogate"),
    ],
)
def test_bad_input_raises_and_changes_nothing(
    sqlite_path: Path,
    store: SqliteStore,
    key: Any,
    reason: Any,
    error: type[Exception],
    message: str,
) -> None:
    agent = AgentRuntime("bot", store=store)
    agent.remember("k", SECRET)
    before = _dump(sqlite_path)
    with pytest.raises(error, match=message):
        agent.erase(key, reason=reason)
    assert _dump(sqlite_path) == before
    assert agent.recall("k").value == SECRET


# -- audit verification -------------------------------------------------------------------------


def _raw(path: Path, sql: str, *params: Any) -> None:
    db = sqlite3.connect(path, isolation_level=None)
    try:
        assert db.execute(sql, params).rowcount == 1, sql
    finally:
        db.close()


def test_verify_detects_an_erasure_without_an_erase_event(
    sqlite_path: Path, store: SqliteStore
) -> None:
    agent = AgentRuntime("bot", store=store)
    agent.remember("k", "one")  # seq 1
    agent.remember("k", "two")  # seq 2
    agent.remember("other", "x")  # seq 3
    assert agent.erase("other") is not None  # seq 4: a legitimate erasure of another key
    assert _fresh_verify(sqlite_path).ok
    _raw(
        sqlite_path,
        "UPDATE memories SET value = NULL, erased = 1 WHERE key = 'k' AND version = 2",
    )
    report = _fresh_verify(sqlite_path)
    assert not report.ok
    assert report.first_bad_seq == 2
    assert report.reason == "memory 'k' v2 was erased without an erase event"


def test_verify_detects_an_erased_row_that_an_earlier_erase_event_cannot_cover(
    sqlite_path: Path, store: SqliteStore
) -> None:
    agent = AgentRuntime("bot", store=store)
    agent.remember("k", "one")  # seq 1
    agent.erase("k")  # seq 2 erases v1
    agent.remember("k", "two")  # seq 3 writes v2, which no erase event lists
    _raw(sqlite_path, "UPDATE memories SET value = NULL, erased = 1 WHERE version = 2")
    report = _fresh_verify(sqlite_path)
    assert (report.ok, report.first_bad_seq) == (False, 3)
    assert report.reason == "memory 'k' v2 was erased without an erase event"


def test_verify_detects_an_erased_value_stored_again(sqlite_path: Path, store: SqliteStore) -> None:
    agent = AgentRuntime("bot", store=store)
    agent.remember("k", SECRET)  # seq 1
    agent.remember("plan", "pro")  # seq 2
    erased = agent.erase("k")  # seq 3
    assert erased is not None and erased.seq == 3
    # Put the exact original value back: its digest matches the write event again.
    _raw(
        sqlite_path,
        "UPDATE memories SET value = ?, erased = 0 WHERE key = 'k'",
        json.dumps(SECRET),
    )
    report = _fresh_verify(sqlite_path)
    assert (report.ok, report.first_bad_seq) == (False, 3)
    assert report.reason == "erase event 3 lists 'k' v1 but its value is still stored"


def test_verify_detects_an_erased_row_that_kept_its_value(
    sqlite_path: Path, store: SqliteStore
) -> None:
    agent = AgentRuntime("bot", store=store)
    agent.remember("k", SECRET)
    agent.erase("k")
    _raw(sqlite_path, "UPDATE memories SET value = ? WHERE key = 'k'", json.dumps(SECRET))
    report = _fresh_verify(sqlite_path)
    assert (report.ok, report.first_bad_seq) == (False, 1)
    assert report.reason == "memory 'k' v1 differs from its audited write"


def test_verify_still_checks_an_erased_rows_other_columns(
    sqlite_path: Path, store: SqliteStore
) -> None:
    agent = AgentRuntime("bot", store=store)
    agent.remember("k", SECRET, tags=["pii"])
    agent.erase("k")
    _raw(sqlite_path, "UPDATE memories SET tags = NULL WHERE key = 'k'")
    report = _fresh_verify(sqlite_path)
    assert (report.ok, report.first_bad_seq) == (False, 1)
    assert report.reason is not None and "differs from its audited write" in report.reason


# -- the bytes on disk (SQLite) -----------------------------------------------------------------


def _on_disk(path: Path) -> tuple[bytes, bytes]:
    wal = Path(f"{path}-wal")
    return path.read_bytes(), wal.read_bytes() if wal.exists() else b""


def test_erased_bytes_are_in_neither_the_database_nor_the_wal(sqlite_path: Path) -> None:
    statements: list[str] = []
    store = SqliteStore(sqlite_path, tracer=statements.append)
    try:
        conn = store._connection()
        # As on SQLite builds where it is off by default: the erase itself must turn it on.
        # (Copies that page splits made before the erase are out of its reach on such
        # builds; docs/audit.md says so. This history causes no split.)
        conn.execute("PRAGMA secure_delete = OFF")
        agent = AgentRuntime("bot", store=store)
        short = SECRET.encode()
        long = ("LONGSECRET-" * 2000).encode()  # 22 KB: spills into overflow pages
        agent.remember("email", SECRET)
        agent.remember("document", long.decode(), tags=["pii"])
        agent.remember_many({f"kept{i:02d}": "x" * 40 for i in range(10)})
        agent.remember("email", {"old": SECRET})
        # the search indexes them (its words: lower-cased, stemmed by porter)
        assert [i.key for i in agent.search(query="longsecret")] == ["document"]
        db, wal = _on_disk(sqlite_path)
        assert short in db + wal and long[:4000] in db + wal  # the test can fail
        assert b"longsecret" in db + wal

        statements.clear()
        assert agent.erase("email") is not None
        assert agent.erase("document") is not None

        db, wal = _on_disk(sqlite_path)
        assert short not in db and short not in wal
        assert b"LONGSECRET-" not in db and b"LONGSECRET-" not in wal
        # nor the words the search index made of it (lower-cased, stemmed by porter)
        assert b"longsecret" not in db and b"longsecret" not in wal
        assert wal == b""  # checkpointed and truncated
        assert conn.execute("PRAGMA secure_delete").fetchone()[0] == 0  # restored
        update = next(i for i, s in enumerate(statements) if s.startswith("UPDATE memories"))
        assert statements[update - 1] == "PRAGMA secure_delete = ON"
        restored = statements.index("PRAGMA secure_delete = OFF", update)
        ours = [s for s in statements[update + 1 : restored] if not s.startswith("-- ")]
        assert [s.split(" ")[0:3] for s in ours] == [  # the key leaves the search index
            ["DELETE", "FROM", "search_text"],
            ["DELETE", "FROM", "search_docs"],
            ["DELETE", "FROM", "memory_vectors"],  # and its vector
            ["INSERT", "INTO", "search_text"],  # ('optimize': its segments merged)
        ]
        commit = statements.index("COMMIT")
        assert "PRAGMA wal_checkpoint(TRUNCATE)" in statements[commit:]
        assert agent.recall("kept00").value == "x" * 40
        assert agent.audit.verify().ok
    finally:
        store.close()


def test_a_reader_holding_the_wal_does_not_fail_or_stall_the_erase(
    sqlite_path: Path, store: SqliteStore
) -> None:
    agent = AgentRuntime("bot", store=store)
    agent.remember("k", SECRET)
    reader = sqlite3.connect(sqlite_path, isolation_level=None)
    try:
        reader.execute("BEGIN")
        assert reader.execute("SELECT COUNT(*) FROM memories").fetchone() == (1,)
        started = time.monotonic()
        erased = agent.erase("k")
        assert time.monotonic() - started < 5.0  # not the 30 s busy timeout
        assert erased is not None and not agent.recall("k")
        # The reader keeps its snapshot; the erasure is committed for everyone else.
        assert reader.execute("SELECT erased FROM memories").fetchone() == (0,)
        reader.execute("COMMIT")
        assert reader.execute("SELECT erased, value FROM memories").fetchone() == (1, None)
    finally:
        reader.close()
    assert _fresh_verify(sqlite_path).ok
