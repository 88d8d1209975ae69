"""The commit planner on its own: the rules of a write, with no database.

Every store (SQLite, PostgreSQL, any third-party backend) reads a ``HeadRead`` and lets
``plan_commit`` decide; these tests pin the decisions, and the conformance suite checks
that each store executes them.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from octopoda import AccessDenied, Event, InvalidInput, NotFound, VersionConflict
from octopoda._audit.chain import GENESIS_HASH
from octopoda.store import (
    CommitPlan,
    ConflictState,
    CreateSpace,
    EraseKey,
    HeadRead,
    KeyHead,
    MarkRead,
    MemoryWrite,
    Op,
    PlannedConflict,
    ResolveConflict,
    SendMessage,
    SetRunStatus,
    SpaceRule,
    agent_namespace,
    is_plain_commit,
    plan_commit,
    reads_needed,
    space_namespace,
)
from octopoda.store import plan_plain_commit as plan_plain

OWN = agent_namespace("a")
TEAM = space_namespace("team")
HASH = "ab" * 32


def write(key: str, namespace: str = OWN, **kw: Any) -> MemoryWrite:
    return MemoryWrite(namespace, key, "json", '"v"', "cd" * 32, **kw)


def head(seq: int = 4, **kw: Any) -> HeadRead:
    return HeadRead(seq, HASH, **kw)


def plan(
    writes: list[MemoryWrite],
    read: HeadRead,
    *,
    agent: str = "a",
    time: float = 100.0,
    **kw: Any,
) -> tuple[CommitPlan, Event]:
    event = Event(agent, "t", {"given": 1}, time)
    return plan_commit(event, writes, read, **kw), event


# -- versions and the payload -------------------------------------------------------------


def test_next_versions_seq_and_payload() -> None:
    writes = [write("old", tags=("x",), expires_at=500.0), write("new", created_at=5.0)]
    read = head(keys={(OWN, "old"): KeyHead(3, "a"), (OWN, "new"): KeyHead()})
    p, event = plan(writes, read)
    assert (p.seq, p.prev_hash, p.versions) == (5, HASH, [4, 1])
    assert list(p.writes) == writes and list(p.conflicts) == [] and p.messages == 0
    p.stamp(event)
    assert (event.seq, event.prev_hash) == (5, HASH)
    assert event.payload == {
        "given": 1,
        "writes": [
            {
                "encoding": "json",
                "key": "old",
                "sha256": "cd" * 32,
                "version": 4,
                "tags": ["x"],
                "expires_at": 500.0,
            },
            {
                "encoding": "json",
                "key": "new",
                "sha256": "cd" * 32,
                "version": 1,
                "created_at": 5.0,
            },
        ],
    }


def test_planning_leaves_the_event_alone() -> None:
    read = head(keys={(OWN, "k"): KeyHead(1)}, erasable={(OWN, "e"): (1,)})
    event = Event("a", "t", {"given": 1}, 1.0)
    before = (copy.deepcopy(event.payload), event.seq, event.prev_hash)
    plan_commit(event, [write("k")], read, ops=[EraseKey(OWN, "e")])
    assert (event.payload, event.seq, event.prev_hash) == before


def test_a_first_commit_starts_at_seq_one_from_genesis() -> None:
    p, event = plan([], HeadRead(0, GENESIS_HASH))
    p.stamp(event)
    assert (event.seq, event.prev_hash, p.versions) == (1, GENESIS_HASH, [])
    assert "writes" not in event.payload  # no writes: no entry


def test_other_namespaces_are_named_in_the_entry() -> None:
    p, event = plan([write("k", TEAM)], head(keys={(TEAM, "k"): KeyHead()}))
    p.stamp(event)
    assert event.payload["writes"][0]["namespace"] == TEAM


def test_one_key_twice_in_one_commit_gets_two_versions() -> None:
    writes = [write("k"), write("k", expected_version=8), write("k")]
    p, _ = plan(writes, head(keys={(OWN, "k"): KeyHead(7, "b")}))
    assert p.versions == [8, 9, 10]  # the second saw the first as its head
    with pytest.raises(VersionConflict):
        plan([write("k"), write("k", expected_version=7)], head(keys={(OWN, "k"): KeyHead(7)}))


def test_a_head_read_without_a_written_key_is_refused() -> None:
    with pytest.raises(ValueError, match="no version for"):
        plan([write("k")], head(keys={(OWN, "other"): KeyHead()}))


# -- compare-and-set and the agent's head ---------------------------------------------------


def test_compare_and_set_succeeds_at_the_expected_version() -> None:
    p, _ = plan([write("k", expected_version=3)], head(keys={(OWN, "k"): KeyHead(3)}))
    assert p.versions == [4]
    p, _ = plan([write("k", expected_version=0)], head(keys={(OWN, "k"): KeyHead()}))
    assert p.versions == [1]


@pytest.mark.parametrize(("expected", "actual"), [(2, 3), (0, 3), (4, 3), (1, 0)])
def test_compare_and_set_fails_elsewhere(expected: int, actual: int) -> None:
    read = head(keys={(OWN, "k"): KeyHead(actual)})
    with pytest.raises(VersionConflict, match="read it again and retry") as caught:
        plan([write("k", expected_version=expected)], read)
    assert (caught.value.key, caught.value.expected, caught.value.actual) == (
        "k",
        expected,
        actual,
    )


def test_expected_seq() -> None:
    p, _ = plan([], head(seq=9), expected_seq=9)
    assert p.seq == 10
    with pytest.raises(VersionConflict, match="moved from seq 8 to 9") as caught:
        plan([], head(seq=9), expected_seq=8)
    assert (caught.value.expected, caught.value.actual) == (8, 9)


# -- stale writes -------------------------------------------------------------------------


def test_a_stale_write_succeeds_and_plans_a_conflict_row() -> None:
    writes = [write("other", TEAM), write("k", TEAM, seen_version=2, check_stale=True)]
    read = head(keys={(TEAM, "other"): KeyHead(), (TEAM, "k"): KeyHead(3, "b")})
    p, event = plan(writes, read, time=42.5)
    assert p.versions == [1, 4]
    assert list(p.conflicts) == [PlannedConflict(TEAM, "k", 4, "a", 3, "b", 2, 42.5, 5, 1)]
    p.stamp(event, conflict_ids=[77])
    assert [e.get("conflict_id") for e in event.payload["writes"]] == [None, 77]


@pytest.mark.parametrize(
    ("seen", "current", "check_stale"),
    [
        pytest.param(3, KeyHead(3, "b"), True, id="saw-the-head"),
        pytest.param(2, KeyHead(3, "a"), True, id="own-head"),
        pytest.param(None, KeyHead(), True, id="new-key"),
        pytest.param(2, KeyHead(3, "b"), False, id="not-checked"),
    ],
)
def test_writes_that_are_not_stale(seen: int | None, current: KeyHead, check_stale: bool) -> None:
    w = write("k", TEAM, seen_version=seen, check_stale=check_stale)
    p, _ = plan([w], head(keys={(TEAM, "k"): current}))
    assert list(p.conflicts) == []


def test_a_key_written_earlier_in_the_commit_is_not_stale() -> None:
    writes = [write("k", TEAM), write("k", TEAM, seen_version=None, check_stale=True)]
    p, _ = plan(writes, head(keys={(TEAM, "k"): KeyHead(3, "b")}))
    assert p.versions == [4, 5]
    assert list(p.conflicts) == []  # its head is this agent's own version 4


def test_stamping_needs_one_id_per_conflict_and_message() -> None:
    w = write("k", TEAM, check_stale=True)
    p, event = plan([w], head(keys={(TEAM, "k"): KeyHead(1, "b")}))
    with pytest.raises(ValueError, match="1 conflicts"):
        p.stamp(event)
    ops: list[Op] = [SendMessage("b", None, "info", "1", "x")]
    p, event = plan([], head(), ops=ops)
    with pytest.raises(ValueError, match="1 messages"):
        p.stamp(event, message_ids=[1, 2])


# -- spaces ---------------------------------------------------------------------------------

CLUB = {"team": SpaceRule(("a", "c"), "c")}


def test_members_only_spaces_refuse_other_agents() -> None:
    read = head(keys={(TEAM, "k"): KeyHead()}, spaces=CLUB)
    p, _ = plan([write("k", TEAM)], read, agent="a")
    assert p.versions == [1]
    with pytest.raises(
        AccessDenied, match="'b' is not a member of space 'team'; ask its creator 'c'"
    ):
        plan([write("k", TEAM)], read, agent="b")


def test_open_and_unknown_spaces_take_every_writer() -> None:
    keys = {(TEAM, "k"): KeyHead()}
    for spaces in ({"team": SpaceRule(None, "c")}, {}):
        p, _ = plan([write("k", TEAM)], head(keys=keys, spaces=spaces), agent="b")
        assert p.versions == [1]


def test_membership_is_checked_before_compare_and_set() -> None:
    read = head(keys={(TEAM, "k"): KeyHead(5)}, spaces=CLUB)
    with pytest.raises(AccessDenied):
        plan([write("k", TEAM, expected_version=1)], read, agent="b")


def test_broadcasts_need_membership_too() -> None:
    send: list[Op] = [SendMessage(None, "team", "info", "1", "x")]
    with pytest.raises(AccessDenied):
        plan([], head(spaces=CLUB), agent="b", ops=send)
    p, event = plan([], head(spaces=CLUB), agent="a", ops=send)
    p.stamp(event, message_ids=[12])
    assert (p.messages, event.payload["message_id"]) == (1, 12)


def test_a_space_created_in_the_commit_applies_to_the_operations_after() -> None:
    create: list[Op] = [CreateSpace("new", ("a",))]
    send: list[Op] = [SendMessage(None, "new", "info", "1", "x")]
    p, _ = plan([], head(), agent="b", ops=send + create)  # the send came first
    assert p.messages == 1
    with pytest.raises(AccessDenied, match="ask its creator 'b'"):
        plan([], head(), agent="b", ops=create + send)
    with pytest.raises(InvalidInput, match="a space named 'new' already exists"):
        plan([], head(), ops=create + create)
    with pytest.raises(InvalidInput, match="already exists"):
        plan([], head(spaces={"new": SpaceRule(None, "c")}), ops=create)


def test_the_last_message_id_is_recorded() -> None:
    ops: list[Op] = [
        SendMessage("b", None, "info", "1", "x"),
        SendMessage("c", None, "i", "2", "y"),
    ]
    p, event = plan([], head(), ops=ops)
    p.stamp(event, message_ids=[3, 4])
    assert (p.messages, event.payload["message_id"]) == (2, 4)


# -- snapshots ------------------------------------------------------------------------------


def test_a_taken_snapshot_name_is_refused_unless_replaced() -> None:
    with pytest.raises(InvalidInput, match="already has a snapshot named 's'"):
        plan([], head(snapshot_taken=True), snapshot="s")
    plan([], head(snapshot_taken=True), snapshot="s", replace_snapshot=True)
    plan([], head(snapshot_taken=False), snapshot="s")


# -- operations -------------------------------------------------------------------------------


def test_erase_records_the_versions_it_erases() -> None:
    read = head(erasable={(OWN, "k"): (1, 2, 4)})
    p, event = plan([], read, ops=[EraseKey(OWN, "k")])
    assert list(p.erasures) == [(EraseKey(OWN, "k"), (1, 2, 4))]
    p.stamp(event)
    assert event.payload["erased"] == [{"key": "k", "versions": [1, 2, 4]}]


def test_erase_of_nothing_is_not_found() -> None:
    with pytest.raises(NotFound, match="no value to erase under key 'k'"):
        plan([], head(erasable={(OWN, "k"): ()}), ops=[EraseKey(OWN, "k")])
    with pytest.raises(NotFound):
        plan([], head(), ops=[EraseKey(OWN, "k")])  # not read: nothing holds a value
    twice: list[Op] = [EraseKey(OWN, "k"), EraseKey(OWN, "k")]
    with pytest.raises(NotFound):
        plan([], head(erasable={(OWN, "k"): (1,)}), ops=twice)


def test_erase_outside_the_agents_own_memory_is_refused_first() -> None:
    other = agent_namespace("b")
    with pytest.raises(InvalidInput, match="only erase keys of its own memory"):
        plan([], head(erasable={(other, "k"): (1,)}), ops=[EraseKey(other, "k")])
    with pytest.raises(InvalidInput):  # refused for the namespace, not for having nothing
        plan([], head(), ops=[EraseKey(other, "k")])


def test_mark_read_needs_an_unread_message() -> None:
    p, _ = plan([], head(unread=frozenset({5})), ops=[MarkRead(5)])
    assert list(p.ops) == [MarkRead(5)]
    with pytest.raises(NotFound, match="no unread message 6"):
        plan([], head(unread=frozenset({5})), ops=[MarkRead(6)])  # already read, or not ours
    with pytest.raises(NotFound, match="no unread message 5"):
        plan([], head(unread=frozenset({5})), ops=[MarkRead(5), MarkRead(5)])


def test_a_conflict_is_resolved_once() -> None:
    open_ = {7: ConflictState("open", None)}
    plan([], head(conflicts=open_), ops=[ResolveConflict(7, "mine")])
    with pytest.raises(InvalidInput, match=r"conflict 7 is already resolved \(theirs\)"):
        plan(
            [],
            head(conflicts={7: ConflictState("resolved", "theirs")}),
            ops=[ResolveConflict(7, "x")],
        )
    with pytest.raises(InvalidInput, match=r"already resolved \(mine\)"):
        twice: list[Op] = [ResolveConflict(7, "mine"), ResolveConflict(7, "theirs")]
        plan([], head(conflicts=open_), ops=twice)
    with pytest.raises(NotFound, match="no open conflict with id 8"):
        plan([], head(conflicts=open_), ops=[ResolveConflict(8, "mine")])


def test_an_unknown_operation_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="unknown store operation"):
        plan([], head(), ops=["drop table"])  # type: ignore[list-item]


def test_the_operations_are_checked_after_the_writes() -> None:
    read = head(keys={(OWN, "k"): KeyHead(2)}, erasable={})
    with pytest.raises(VersionConflict):  # the write's check comes first
        plan([write("k", expected_version=1)], read, ops=[EraseKey(OWN, "gone")])


# -- what to read ---------------------------------------------------------------------------


def test_reads_needed_lists_each_thing_once() -> None:
    writes = [
        write("k"),
        write("s", TEAM, check_stale=True),
        write("k"),
        write("t", space_namespace("other")),
    ]
    ops: list[Op] = [
        SendMessage(None, "zoo", "info", "1", "x"),
        SendMessage("b", None, "info", "1", "x"),
        CreateSpace("alpha", None),
        MarkRead(3),
        MarkRead(3),
        ResolveConflict(9, "mine"),
        EraseKey(OWN, "e"),
        EraseKey(OWN, "e"),
    ]
    needs = reads_needed(writes, ops, snapshot="snap")
    assert needs.slots == [(OWN, "k"), (TEAM, "s"), (space_namespace("other"), "t")]
    assert needs.authored == frozenset({(TEAM, "s")})
    assert needs.spaces == ["alpha", "other", "team", "zoo"]
    assert (needs.unread, needs.conflicts, needs.erasable) == ([3], [9], [(OWN, "e")])
    assert (needs.snapshot, needs.messages) == ("snap", 2)
    assert reads_needed([], snapshot="snap", replace_snapshot=True).snapshot is None


@pytest.mark.parametrize(
    ("writes", "ops", "snapshot", "plain"),
    [
        pytest.param([write("k")], [], None, True, id="remember"),
        pytest.param([write("k", expected_version=2)], [], None, True, id="compare-and-set"),
        pytest.param([], [], None, True, id="no-write"),
        pytest.param([write("k"), write("j")], [], None, False, id="two-writes"),
        pytest.param([write("k", TEAM)], [], None, False, id="in-a-space"),
        pytest.param([write("k", check_stale=True)], [], None, False, id="stale-checked"),
        pytest.param([write("k")], [MarkRead(1)], None, False, id="with-an-operation"),
        pytest.param([], [MarkRead(1)], None, False, id="an-operation-only"),
        pytest.param([write("k")], [], "s", False, id="with-a-snapshot"),
    ],
)
def test_is_plain_commit(
    writes: list[MemoryWrite], ops: list[Op], snapshot: str | None, plain: bool
) -> None:
    assert is_plain_commit(writes, ops, snapshot) is plain


@pytest.mark.parametrize("expected_version", [None, 3])
def test_the_plain_plan_is_plan_commits(expected_version: int | None) -> None:
    writes = [write("k", tags=("t",), expected_version=expected_version)]
    full, e1 = plan(writes, head(keys={(OWN, "k"): KeyHead(3)}))
    fast = plan_plain(Event("a", "t", {"given": 1}, 100.0), writes, 4, HASH, 3)
    full.stamp(e1)
    e2 = Event("a", "t", {"given": 1}, 100.0)
    fast.stamp(e2)
    assert (fast.seq, fast.prev_hash, fast.versions, fast.entries) == (
        full.seq,
        full.prev_hash,
        full.versions,
        full.entries,
    )
    assert (e2.seq, e2.prev_hash, e2.payload) == (e1.seq, e1.prev_hash, e1.payload)


def test_the_plain_plan_raises_what_plan_commit_raises() -> None:
    writes = [write("k", expected_version=1)]
    event = Event("a", "t", {}, 1.0)
    with pytest.raises(VersionConflict) as fast:
        plan_plain(event, writes, 4, HASH, 3)
    with pytest.raises(VersionConflict) as full:
        plan_commit(event, writes, head(keys={(OWN, "k"): KeyHead(3)}))
    assert str(fast.value) == str(full.value)
    with pytest.raises(VersionConflict, match="moved from seq 3 to 4"):
        plan_plain(event, [write("k")], 4, HASH, 3, expected_seq=3)


def test_the_plain_plan_of_an_event_without_writes() -> None:
    event = Event("a", "tool_call", {"name": "search"}, 1.0)
    fast = plan_plain(event, [], 7, HASH)
    full = plan_commit(event, [], head(seq=7))
    assert (fast.seq, fast.prev_hash, fast.versions, fast.entries) == (8, HASH, [], [])
    assert (full.seq, full.prev_hash, full.versions, full.entries) == (8, HASH, [], [])
    fast.stamp(event)
    assert (event.seq, event.payload) == (8, {"name": "search"})
    with pytest.raises(VersionConflict):
        plan_plain(event, [], 7, HASH, expected_seq=6)


# -- runs ---------------------------------------------------------------------------------


def test_a_run_status_is_read_and_changes_with_an_event_of_that_run() -> None:
    pause, resume = SetRunStatus("r1", "paused", "why"), SetRunStatus("r1", "active")
    assert reads_needed([], [pause, resume, SetRunStatus("r2", "paused")]).runs == ("r1", "r2")
    assert reads_needed([write("k")]).runs == ()
    event = Event("a", "paused", {"run_id": "r1"}, 1.0)
    done = plan_commit(event, [], head(), ops=[pause, resume])  # each op sees the one before
    assert done.ops == [pause, resume]
    with pytest.raises(NotFound, match="run 'r1' of agent 'a' is not paused"):
        plan_commit(event, [], head(), ops=[resume])
    plan_commit(event, [], head(runs={"r1": "paused"}), ops=[resume])
    for payload in ({}, {"run_id": "r2"}):
        with pytest.raises(InvalidInput, match="only with an event of that run"):
            plan_commit(Event("a", "paused", payload, 1.0), [], head(), ops=[pause])
    with pytest.raises(InvalidInput, match="'active' or 'paused'"):
        plan_commit(event, [], head(), ops=[SetRunStatus("r1", "stopped")])
