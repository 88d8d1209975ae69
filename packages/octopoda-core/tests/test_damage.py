"""A damaged or tampered store is reported, never a crash (issue 15).

Each test damages a store the way a bad disk, a careless script or an attacker would (raw
SQL through a separate connection), then opens it again: opening works, ``verify`` names the
first bad seq or row, reads and writes of what is damaged raise an ``OctopodaError`` that
names it. Runtime behaviour runs on both stores (``any_store_url``: SQLite, then PostgreSQL
when a server is reachable).
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from octopoda import AgentRuntime, AuditChainBroken, LoopPolicy, SqliteStore, StorageError
from octopoda._audit.chain import event_hash
from octopoda._store.config import is_postgres_url
from octopoda.cli import build_cli

AGENT = "bot"


def raw(url: str, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Run one statement on the store behind ``url`` outside Octopoda; its rows."""
    if is_postgres_url(url):
        import psycopg

        with psycopg.connect(url, autocommit=True) as conn:
            cursor = conn.execute(sql.replace("?", "%s"), params)  # type: ignore[arg-type]
            return cursor.fetchall() if cursor.description else []
    db = sqlite3.connect(url, isolation_level=None)
    try:
        return db.execute(sql, params).fetchall()
    finally:
        db.close()


def written(url: str) -> AgentRuntime:
    agent = AgentRuntime(AGENT, store=url)
    agent.remember("k", 1)
    agent.remember("k", 2)
    agent.log_decision("keep going", context={"k": 2})
    return agent


def rechain_last(url: str, payload_text: str) -> int:
    """Give the agent's last event another payload with a hash that matches it (and move the
    stored head), as an attacker who knows the format would; its seq."""
    seq, time, kind, prev = raw(
        url,
        "SELECT seq, time, kind, prev_hash FROM events WHERE agent = ? ORDER BY seq DESC LIMIT 1",
        (AGENT,),
    )[0]
    h = event_hash(AGENT, kind, payload_text, prev, seq, time)
    raw(url, "UPDATE events SET payload = ?, hash = ? WHERE agent = ? AND seq = ?",
        (payload_text, h, AGENT, seq))  # fmt: skip
    raw(url, "UPDATE agents SET head_hash = ? WHERE id = ?", (h, AGENT))
    return int(seq)


# -- item 1: an event payload that cannot be read back -----------------------------------------


def test_a_cut_event_payload_opens_verifies_and_refuses_writes(any_store_url: str) -> None:
    written(any_store_url)
    raw(any_store_url, "UPDATE events SET payload = substr(payload, 2) WHERE seq = 1")
    agent = AgentRuntime(AGENT, store=any_store_url)  # opening works
    report = agent.audit.verify()
    assert (report.ok, report.first_bad_seq) == (False, 1)
    assert agent.recall("k").value == 2  # reads of the memory still work
    with pytest.raises(AuditChainBroken, match=r"event seq 1 of agent 'bot' is damaged"):
        agent.remember("k", 3)
    with pytest.raises(AuditChainBroken, match="seq 1"):
        agent.log_decision("again")
    with pytest.raises(AuditChainBroken, match="seq 1"):
        agent.timeline()
    assert raw(any_store_url, "SELECT MAX(seq) FROM events") == [(3,)]  # nothing written


@pytest.mark.parametrize(
    ("payload", "opens_writable"),
    [
        ("[1, 2]", False),
        ('"text"', False),
        ("{", False),
        ('{"a": }', False),
        ('{"writes": [1]}', True),
        ('{"writes": [{"version": 1}]}', True),
        ('{"writes": "k"}', True),
        ('{"cost_usd": "x", "run_id": 5}', True),
    ],
)
def test_a_rechained_payload_of_the_wrong_shape_is_reported(
    any_store_url: str, payload: str, opens_writable: bool
) -> None:
    """A payload with a matching hash (a forgery by someone who knows the format) that is
    not an Octopoda payload: verify names it (or, when it parses and claims nothing, the
    chain is intact as far as the store can tell); nothing raises a raw exception."""
    written(any_store_url)
    seq = rechain_last(any_store_url, payload)
    agent = AgentRuntime(AGENT, store=any_store_url, policy=LoopPolicy(spend_cap_usd=5.0))
    report = agent.audit.verify()
    if '"writes"' in payload or not opens_writable:
        assert (report.ok, report.first_bad_seq) == (False, seq), report
    if not opens_writable:
        with pytest.raises(AuditChainBroken, match=f"seq {seq}"):
            agent.remember("k", 3)
    else:
        agent.timeline()
        agent.loop_status()


def test_cli_audit_verify_reports_a_cut_payload(tmp_path: Any) -> None:
    path = str(tmp_path / "o.db")
    written(path)
    raw(path, "UPDATE events SET payload = substr(payload, 2) WHERE seq = 2")
    result = CliRunner().invoke(build_cli(), ["audit", "verify", "--store", path])
    assert result.exit_code == 1, result.output
    assert "bot: BROKEN at seq 2" in result.output


# -- item 2: a memory cell of the wrong type or encoding -------------------------------------

K2, B1, D1 = 2, 3, 4  # the seqs of memory 'k' v2, 'b' v1 and 'd' v1 below
MEMORY_DAMAGE = {  # name: (key, seq, SQLite statement, PostgreSQL statement or None)
    "json-value-as-blob": (
        "k",
        K2,
        "UPDATE memories SET value = CAST(value AS BLOB) WHERE key = 'k' AND version = 2",
        "UPDATE memories SET value_bytea = convert_to(value_text, 'UTF8'), value_text = NULL"
        " WHERE key = 'k' AND version = 2",
    ),
    "bytes-as-text": (
        "b",
        B1,
        "UPDATE memories SET value = 'abc' WHERE key = 'b'",
        "UPDATE memories SET value_text = 'abc', value_bytea = NULL WHERE key = 'b'",
    ),
    "truncated-json": (
        "d",
        D1,
        "UPDATE memories SET value = substr(value, 1, 3) WHERE key = 'd'",
        "UPDATE memories SET value_text = substr(value_text, 1, 3) WHERE key = 'd'",
    ),
    "tags-not-a-list": (
        "k",
        K2,
        "UPDATE memories SET tags = '5' WHERE key = 'k' AND version = 2",
        "UPDATE memories SET tags = '5'::jsonb WHERE key = 'k' AND version = 2",
    ),
    "tags-not-json": (
        "k",
        K2,
        "UPDATE memories SET tags = '[' WHERE key = 'k' AND version = 2",
        None,
    ),
    "unknown-encoding": (
        "k",
        K2,
        "UPDATE memories SET encoding = 'zip' WHERE key = 'k' AND version = 2",
        "UPDATE memories SET encoding = 'zip' WHERE key = 'k' AND version = 2",
    ),
    "created_at-text": (
        "k",
        K2,
        "UPDATE memories SET created_at = 'noon' WHERE key = 'k' AND version = 2",
        None,
    ),
    "value-not-utf8": (
        "k",
        K2,
        "UPDATE memories SET value = CAST(X'22FF22' AS TEXT) WHERE key = 'k' AND version = 2",
        None,
    ),
}


def memories(url: str) -> AgentRuntime:
    agent = AgentRuntime(AGENT, store=url)
    agent.remember("k", 1)
    agent.remember("k", {"a": [1]}, tags=["t"])
    agent.remember("b", b"\x00\x01")
    agent.remember("d", {"x": 1})
    return agent


@pytest.mark.parametrize("case", MEMORY_DAMAGE)
def test_a_damaged_memory_cell_is_reported_and_named(any_store_url: str, case: str) -> None:
    key, seq, sqlite_sql, postgres_sql = MEMORY_DAMAGE[case]
    postgres = is_postgres_url(any_store_url)
    if postgres and postgres_sql is None:
        pytest.skip("PostgreSQL's column types refuse this damage")
    memories(any_store_url)
    raw(any_store_url, postgres_sql if postgres else sqlite_sql)
    agent = AgentRuntime(AGENT, store=any_store_url)
    report = agent.audit.verify()
    assert (report.ok, report.first_bad_seq) == (False, seq), report
    assert report.reason and f"{key!r} v" in report.reason, report
    for read in (
        lambda: agent.recall(key),
        lambda: agent.recall_history(key),
        agent.search,
        agent.export_memories,
        lambda: agent.as_of(seq).to_dict(),
    ):
        with pytest.raises(StorageError) as raised:
            read()
        if case != "value-not-utf8":  # (SQLite cannot say which row: verify does)
            assert f"memory {key!r} v" in str(raised.value)
    other = "d" if key != "d" else "k"
    assert agent.recall(other).found  # the other keys still read


@pytest.mark.parametrize("column", ["payload", "kind"])
def test_event_text_that_is_not_utf8_is_reported(tmp_path: Any, column: str) -> None:
    path = str(tmp_path / "o.db")
    written(path)
    raw(path, f"UPDATE events SET {column} = CAST(X'7BFF7D' AS TEXT) WHERE seq = 2")
    agent = AgentRuntime(AGENT, store=path)  # opening works
    report = agent.audit.verify()
    assert (report.ok, report.first_bad_seq) == (False, 2), report
    with pytest.raises(AuditChainBroken, match="not valid UTF-8"):
        agent.remember("k", 3)
    with pytest.raises(StorageError, match="not valid UTF-8"):
        agent.timeline()


# -- item 8: a read-only store, an empty file ------------------------------------------------

READER = """
import os, sys
from octopoda import AgentRuntime, SqliteStore, StorageError
import octopoda._store.sqlite.store, octopoda._loops.guard, octopoda._audit.trail  # (everything
import logging, unicodedata, urllib.parse  # is imported before dropping root: nobody cannot
# read root's Python; the lazy ones, which the first runtime loads, too)
if os.geteuid() == 0:  # root may write anywhere: read as nobody
    os.setgid(65534)
    os.setuid(65534)
store = SqliteStore(sys.argv[1])
agent = AgentRuntime("bot", store=store)
print(store.read_only, agent.audit.verify().ok, agent.recall("k").value)
try:
    agent.remember("k", 3)
except StorageError as exc:
    print("refused:", exc)
store.close()
"""


def test_a_store_in_a_read_only_directory_opens_read_only(tmp_path: Any) -> None:
    """As another user (when the tests run as root, who may write anywhere, the reader
    drops to nobody): the directory and file are read-only to it."""
    directory = tempfile.mkdtemp(prefix="octopoda-ro-")
    try:
        path = os.path.join(directory, "archive.db")
        written(path)
        AgentRuntime(AGENT, store=path).store.close()  # (the process's shared store)
        assert sorted(os.listdir(directory)) == ["archive.db"]
        os.chmod(path, 0o444)
        os.chmod(directory, 0o555)
        done = subprocess.run(
            [sys.executable, "-c", READER, path],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        lines = done.stdout.splitlines()
        assert lines[0] == "True True 2", done.stdout
        assert lines[1].startswith("refused:") and "read-only" in lines[1]
        assert "opened read-only" in done.stderr
    finally:
        os.chmod(directory, 0o755)
        shutil.rmtree(directory)


def test_read_only_opens_without_writing(tmp_path: Any) -> None:
    path = str(tmp_path / "o.db")
    written(path)
    AgentRuntime(AGENT, store=path).store.close()
    before = Path(path).read_bytes()
    with SqliteStore(path, read_only=True) as store:
        agent = AgentRuntime(AGENT, store=store)
        assert store.read_only and agent.audit.verify().ok
        with pytest.raises(StorageError, match="read-only"):
            agent.remember("k", 3)
        assert store.info()["read_only"] is True
    assert Path(path).read_bytes() == before


def test_an_empty_file_is_set_up_as_a_new_store_and_says_so(
    tmp_path: Any, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "empty.db"
    path.write_bytes(b"")
    os.utime(path, (1.0, 1.0))  # an old leftover, not one another process is creating
    with pytest.raises(StorageError, match="empty file"):
        SqliteStore(path, read_only=True)
    with caplog.at_level("WARNING", logger="octopoda"), SqliteStore(path) as store:
        AgentRuntime(AGENT, store=store).remember("k", 1)
    assert any("was an empty file (0 bytes)" in r.getMessage() for r in caplog.records)
