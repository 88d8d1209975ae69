"""``audit.verify`` covers the rows outside memory (issue 15, item 7).

Three agents use every table their events determine: snapshots, messages (sent, broadcast,
handed off, read), a space, conflicts (recorded and resolved), the agent's and a run's
status. Each test then changes one row outside Octopoda (raw sqlite3 or psycopg, as an
attacker or a careless script would) and checks that the verify of the agent whose events
say otherwise fails, naming the seq of that event. Both stores (``any_store_url``).
"""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest

from octopoda import AgentRuntime
from octopoda._store.config import is_postgres_url


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


def seq_of(url: str, agent: str, kind: str) -> int:
    """The seq of ``agent``'s last event of ``kind``."""
    rows = raw(url, "SELECT MAX(seq) FROM events WHERE agent = ? AND kind = ?", (agent, kind))
    return int(rows[0][0])


@pytest.fixture
def world(any_store_url: str) -> str:
    """Alice, Bob and Carol, each having used every side table; every chain verifies."""
    url = any_store_url
    alice = AgentRuntime("alice", store=url)
    bob = AgentRuntime("bob", store=url)
    carol = AgentRuntime("carol", store=url)
    alice.remember("plan", "a")
    alice.snapshot("before")
    alice.remember("plan", "b")
    alice.snapshot("after")
    alice.create_space("team", members=["bob", "carol"])
    first = alice.send_message("bob", {"text": "hello"})
    alice.broadcast({"news": 1}, space="team")
    alice.record_handoff("bob", {"ticket": 7}, run_id="r1")
    bob.mark_read(first.id)
    # a conflict: bob writes without having seen carol's version
    bob.share("doc", "v1", space="team")
    carol.read_shared("doc", space="team")
    carol.share("doc", "v2", space="team")
    bob.share("doc", "v3", space="team")
    (conflict,) = carol.shared_conflicts(space="team")
    carol.resolve_conflict(conflict.id, "theirs")
    alice.pause("manual stop")
    alice.resume()
    alice.pause("stop the run", run_id="r1")
    alice.pause("stop all")
    for who in (alice, bob, carol):
        report = who.audit.verify()
        assert report.ok, report
    assert alice.audit.verify().side_rows_checked >= 8
    return url


def failure(url: str, agent: str) -> tuple[int | None, str]:
    report = AgentRuntime(agent, store=url).audit.verify()
    assert not report.ok and report.reason is not None, report
    return report.first_bad_seq, report.reason


def test_every_side_row_is_counted(world: str) -> None:
    report = AgentRuntime("alice", store=world).audit.verify()
    # agent row, run, 2 snapshots, space, 3 messages sent
    assert report.side_rows_checked == 8
    assert AgentRuntime("carol", store=world).audit.verify().side_rows_checked == 2


def test_an_edited_message_body_is_detected(world: str) -> None:
    raw(world, "UPDATE messages SET body = ? WHERE message_type = 'info' AND space IS NULL",
        ('{"text":"wire the money"}',))  # fmt: skip
    assert failure(world, "alice") == (
        seq_of(world, "alice", "message_sent"),
        f"message 1 differs from its send event (seq {seq_of(world, 'alice', 'message_sent')})",
    )


def test_an_edited_body_with_its_digest_is_detected(world: str) -> None:
    import hashlib

    body = '{"text":"wire the money"}'
    sha = hashlib.sha256(body.encode()).hexdigest()
    raw(world, "UPDATE messages SET body = ?, body_sha256 = ? WHERE id = 1", (body, sha))
    seq, reason = failure(world, "alice")
    assert seq == seq_of(world, "alice", "message_sent") and "message 1 differs" in reason


@pytest.mark.parametrize(
    ("column", "value"),
    [
        ("recipient", "carol"),
        ("message_type", "urgent"),
        ("created_at", 1.5),
        ("seq", 99),
        ("sender", "carol"),
    ],
)
def test_any_changed_message_column_is_detected(world: str, column: str, value: Any) -> None:
    raw(world, f"UPDATE messages SET {column} = ? WHERE id = 1", (value,))
    seq, reason = failure(world, "alice")
    assert seq == seq_of(world, "alice", "message_sent")
    assert reason.startswith("message 1 ")


def test_an_edited_handoff_and_broadcast_are_detected(world: str) -> None:
    raw(world, "UPDATE messages SET body = '{\"ticket\":8}' WHERE message_type = 'handoff'")
    assert failure(world, "alice")[0] == seq_of(world, "alice", "handoff")
    raw(world, "UPDATE messages SET body = '{\"ticket\":7}' WHERE message_type = 'handoff'")
    assert AgentRuntime("alice", store=world).audit.verify().ok
    raw(world, "UPDATE messages SET space = 'global' WHERE space = 'team'")
    assert failure(world, "alice")[0] == seq_of(world, "alice", "broadcast")


def test_a_deleted_or_forged_message_is_detected(world: str) -> None:
    sent = seq_of(world, "alice", "broadcast")
    raw(world, "DELETE FROM messages WHERE space = 'team'")
    assert failure(world, "alice") == (sent, f"message 2 was sent (seq {sent}) but its row is gone")
    raw(world, "INSERT INTO messages (sender, recipient, message_type, body, body_sha256,"
        " created_at, seq) VALUES ('carol', 'bob', 'info', '1', 'x', 1.0, 1)")  # fmt: skip
    assert failure(world, "carol")[1].endswith("has no matching send event")


def test_read_at_is_checked_against_the_recipients_events(world: str) -> None:
    read = seq_of(world, "bob", "message_read")
    (read_at,) = raw(world, "SELECT read_at FROM messages WHERE id = 1")[0]
    raw(world, "UPDATE messages SET read_at = NULL WHERE id = 1")
    assert failure(world, "bob") == (read, f"message 1 differs from its message_read event"
                                     f" (seq {read})")  # fmt: skip
    assert AgentRuntime("alice", store=world).audit.verify().ok  # not alice's to say
    raw(world, "UPDATE messages SET read_at = ? WHERE id = 1", (read_at,))
    assert AgentRuntime("bob", store=world).audit.verify().ok
    raw(world, "UPDATE messages SET read_at = 5.0 WHERE message_type = 'handoff'")
    assert failure(world, "bob")[1].endswith("is marked read without a message_read event")


def test_a_moved_snapshot_is_detected(world: str) -> None:
    taken = seq_of(world, "alice", "snapshot")
    raw(world, "UPDATE snapshots SET seq = seq - 2 WHERE name = 'after'")
    seq, reason = failure(world, "alice")
    assert seq == taken and "restore() would bring back another state" in reason


def test_a_deleted_or_added_snapshot_is_detected(world: str) -> None:
    raw(world, "DELETE FROM snapshots WHERE name = 'before'")
    assert failure(world, "alice")[1].endswith("was taken (seq 2) but its row is gone")
    raw(world, "INSERT INTO snapshots (agent, name, seq, created_at) VALUES ('alice', 'x', 1, 1)")
    assert "has no matching snapshot event" in failure(world, "alice")[1]


@pytest.mark.parametrize(
    "change",
    [
        "status = 'open', resolution = NULL, resolved_by = NULL, resolved_at = NULL",
        "resolution = 'mine'",
        "resolved_at = 1.0",
        "resolved_by = 'bob'",
    ],
)
def test_a_changed_resolution_is_detected(world: str, change: str) -> None:
    resolved = seq_of(world, "carol", "conflict_resolved")
    raw(world, f"UPDATE conflicts SET {change}")
    seq, reason = failure(world, "carol")
    assert seq == resolved and f"(seq {resolved})" in reason


def test_a_conflict_marked_resolved_is_detected(world: str) -> None:
    bob = AgentRuntime("bob", store=world)
    carol = AgentRuntime("carol", store=world)
    carol.share("doc", "v4", space="team")
    bob.share("doc", "v5", space="team")  # a second conflict, open
    assert bob.audit.verify().ok and carol.audit.verify().ok
    raw(
        world, "UPDATE conflicts SET status = 'resolved', resolution = 'mine' WHERE status = 'open'"
    )
    seq, reason = failure(world, "bob")
    assert seq == seq_of(world, "bob", "shared_write")  # the write that recorded it
    assert reason.endswith("is marked resolved without a conflict_resolved event")
    raw(world, "UPDATE conflicts SET resolved_by = 'mallory', resolved_at = 1.0"
        " WHERE resolution = 'mine'")  # fmt: skip
    assert "an agent that does not exist" in failure(world, "bob")[1]
    raw(world, "UPDATE conflicts SET resolved_by = 'alice' WHERE resolution = 'mine'")
    assert (
        AgentRuntime("alice", store=world)
        .audit.verify()
        .reason.endswith("is marked resolved without a conflict_resolved event")
    )


def test_a_changed_conflict_record_is_detected(world: str) -> None:
    wrote = seq_of(world, "bob", "shared_write")
    raw(world, "UPDATE conflicts SET version = version + 1")
    assert failure(world, "bob") == (
        wrote,
        f"conflict 1 differs from the write that recorded it (seq {wrote})",
    )
    raw(world, "DELETE FROM conflicts")
    assert failure(world, "bob")[1] == f"conflict 1 was recorded (seq {wrote}) but its row is gone"


@pytest.mark.parametrize(
    ("sql", "kind"),
    [
        ("UPDATE agents SET status = 'active', status_reason = NULL WHERE id = 'alice'", "paused"),
        (
            "UPDATE agents SET status_reason = '{\"reason\": \"other\"}' WHERE id = 'alice'",
            "paused",
        ),
        ("UPDATE runs SET status = 'active', status_reason = NULL", "paused"),
        ("UPDATE runs SET changed_seq = 1", "paused"),
        ("DELETE FROM runs", "paused"),
    ],
)
def test_a_changed_status_is_detected(world: str, sql: str, kind: str) -> None:
    raw(world, sql)
    seq, _ = failure(world, "alice")
    run_pause = raw(
        world,
        "SELECT seq FROM events WHERE agent = 'alice' AND kind = 'paused' AND run_id = 'r1'",
    )[0][0]
    assert seq in (seq_of(world, "alice", kind), run_pause)


def test_a_status_without_any_event_is_detected(world: str) -> None:
    raw(world, "UPDATE agents SET status = 'paused', status_reason = '{}' WHERE id = 'bob'")
    assert failure(world, "bob") == (0, "agent 'bob' is 'paused' without a pause event")
    raw(world, "INSERT INTO runs (agent, run_id, status, status_reason, changed_at, changed_seq)"
        " VALUES ('carol', 'rx', 'paused', NULL, 1.0, 1)")  # fmt: skip
    assert "has no matching pause or resume event" in failure(world, "carol")[1]


def test_a_changed_space_is_detected(world: str) -> None:
    created = seq_of(world, "alice", "space_created")
    raw(world, "UPDATE spaces SET members = NULL")  # opened to every agent
    assert failure(world, "alice") == (
        created,
        f"space 'team' differs from its space_created event (seq {created})",
    )
    raw(world, "UPDATE spaces SET created_by = 'bob'")
    assert failure(world, "alice")[1].endswith("but its row is gone or names another creator")
    assert "names 'bob' as its creator without an event" in failure(world, "bob")[1]


def test_damaged_side_columns_are_reported_not_raised(world: str) -> None:
    if is_postgres_url(world):
        pytest.skip("PostgreSQL's column types refuse this damage")
    raw(world, "UPDATE messages SET body = CAST(X'80FF' AS TEXT) WHERE id = 1")
    _, reason = failure(world, "alice")
    assert "cannot be read" in reason or "message 1" in reason
    raw(world, "UPDATE messages SET body = '\"x\"'")
    raw(world, "UPDATE snapshots SET seq = 'soon'")
    assert failure(world, "alice")[1]
