"""Working together in one process: shared spaces (authorship, stale writes, compare-and-set,
conflicts and their resolution, membership), messages and broadcasts, goals, the loop
signals that see shared writes and messages, the audit of all of it, and the ``Octopoda``
client with its agent registry.

Every test runs on a real SQLite file with a frozen clock (``octopoda.testing.FrozenClock``);
nothing sleeps. The multi-process acceptance tests are in ``test_collab_processes.py``.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from octopoda import (
    AccessDenied,
    AgentInfo,
    AgentRuntime,
    Conflict,
    Event,
    Goal,
    InvalidAgentId,
    InvalidInput,
    InvalidKey,
    InvalidValue,
    LoopDetected,
    LoopPolicy,
    Message,
    NotFound,
    Octopoda,
    OctopodaError,
    SharedValue,
    SharedVersion,
    SqliteStore,
    Store,
    VersionConflict,
)
from octopoda._runtime.client import IDLE_AFTER_SECONDS
from octopoda.store import SpaceRow
from octopoda.testing import FrozenClock

T0 = 1_750_000_000.0


# -- fixtures and helpers -----------------------------------------------------------------------


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock(T0)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "team.db"


@pytest.fixture
def client(db: Path, clock: FrozenClock) -> Iterator[Octopoda]:
    with Octopoda(store=str(db), clock=clock) as opened:
        yield opened


@pytest.fixture
def researcher(client: Octopoda) -> AgentRuntime:
    return client.agent("researcher")


@pytest.fixture
def coder(client: Octopoda) -> AgentRuntime:
    return client.agent("coder")


@pytest.fixture
def reviewer(client: Octopoda) -> AgentRuntime:
    return client.agent("reviewer")


def kinds(agent: AgentRuntime) -> list[str]:
    return [e.kind for e in agent.timeline()]


def head_seq(agent: AgentRuntime) -> int:
    return agent.audit.head().seq


def authors(agent: AgentRuntime, key: str, space: str = "team") -> list[tuple[int, str | None]]:
    """(version, author) of every version of a shared key, oldest first."""
    return [(v.version, v.author) for v in reversed(agent.shared_history(key, space=space))]


def assert_verified(*agents: AgentRuntime) -> None:
    for agent in agents:
        report = agent.audit.verify()
        assert report.ok, f"{agent.agent_id}: {report.reason} at #{report.first_bad_seq}"


def raw_sql(db: Path, sql: str, params: tuple[Any, ...] = ()) -> None:
    """Edit the file behind the library's back, as an attacker with file access would."""
    with closing(sqlite3.connect(db)) as conn:
        conn.execute(sql, params)
        conn.commit()


def stale_conflict(writer: AgentRuntime, other: AgentRuntime, key: str = "k") -> Conflict:
    """``writer`` writes "mine" over ``other``'s unseen "theirs": one open conflict."""
    writer.share(key, "base", space="team")
    other.read_shared(key, space="team")
    other.share(key, "theirs", space="team")
    written = writer.share(key, "mine", space="team")
    assert written.conflict_id is not None
    (conflict,) = [c for c in writer.shared_conflicts(space="team") if c.key == key]
    return conflict


# -- authorship and values ----------------------------------------------------------------------


def test_share_returns_the_version_with_its_author_time_and_seq(
    researcher: AgentRuntime, clock: FrozenClock
) -> None:
    written = researcher.share("market_size", "$2.1B by 2027", space="team")
    assert written == SharedVersion("market_size", "team", 1, "researcher", T0, 1, None)
    clock.advance(5)
    again = researcher.share("market_size", "$2.2B by 2027", space="team")
    assert again == SharedVersion("market_size", "team", 2, "researcher", T0 + 5, 2, None)


VALUES: list[Any] = [
    "$2.1B by 2027",
    "",
    0,
    -7,
    2.5,
    True,
    False,
    None,
    [],
    {},
    [1, "two", [3.0, None]],
    {"value": "not me", "author": "mallory", "version": 99, "found": False},
    {"nested": {"list": [1, {"deep": "ünïcode ✓"}]}, "n": 1.0e-300},
    b"\x00\xffraw bytes",
]


@pytest.mark.parametrize("value", VALUES, ids=[repr(v)[:30] for v in VALUES])
def test_read_shared_returns_the_value_itself_and_its_author(
    researcher: AgentRuntime, coder: AgentRuntime, value: Any
) -> None:
    original = copy.deepcopy(value)
    researcher.share("finding", value, space="team")
    assert value == original and type(value) is type(original)  # not mutated or decorated

    seen = coder.read_shared("finding", space="team")
    assert seen == SharedValue("finding", "team", True, value, 1, "researcher", T0, ())
    assert type(seen.value) is type(value)
    assert seen  # found, even for a stored None, 0, "" or {}
    if isinstance(seen.value, (list, dict)):  # a fresh object: changing it changes nothing
        seen.value.clear()
        assert coder.read_shared("finding", space="team").value == original
    (version,) = coder.shared_history("finding", space="team")
    assert (version.value, version.author, version.created_at) == (original, "researcher", T0)
    (item,) = coder.shared_items(space="team")
    assert (item.value, item.author) == (original, "researcher")


def test_reading_a_missing_shared_key_is_not_found(coder: AgentRuntime) -> None:
    missing = coder.read_shared("nothing", space="team")
    assert missing == SharedValue("nothing", "team", False)
    assert not missing
    assert (missing.value, missing.version, missing.author) == (None, None, None)
    assert coder.shared_history("nothing", space="team") == []


def test_shared_history_keeps_every_version_with_author_and_time(
    researcher: AgentRuntime, coder: AgentRuntime, clock: FrozenClock
) -> None:
    researcher.share("market_size", "$2.1B", space="team", tags=["estimate"])
    clock.advance(5)
    coder.read_shared("market_size", space="team")
    coder.share("market_size", "$2.4B", space="team")
    clock.advance(5)
    researcher.read_shared("market_size", space="team")
    researcher.share("market_size", {"low": 2.1, "high": 2.4}, space="team")

    history = coder.shared_history("market_size", space="team")
    assert [(v.version, v.value, v.author, v.created_at) for v in history] == [
        (3, {"low": 2.1, "high": 2.4}, "researcher", T0 + 10),
        (2, "$2.4B", "coder", T0 + 5),
        (1, "$2.1B", "researcher", T0),
    ]
    assert history[-1].tags == ("estimate",)
    assert [v.version for v in coder.shared_history("market_size", space="team", limit=2)] == [3, 2]
    # every version is the write recorded by its author's event (seq and digest)
    for version in history:
        agent = researcher if version.author == "researcher" else coder
        (event,) = agent.timeline(after_seq=version.seq - 1, limit=1)
        (entry,) = event.payload["writes"]
        assert (event.kind, event.payload["space"]) == ("shared_write", "team")
        assert (entry["namespace"], entry["key"], entry["version"]) == (
            "space:team",
            "market_size",
            version.version,
        )
        text = json.dumps(version.value, ensure_ascii=False, separators=(",", ":"))
        assert entry["sha256"] == hashlib.sha256(text.encode()).hexdigest()


def test_shared_items_lists_current_values_by_key_with_authors(
    researcher: AgentRuntime, coder: AgentRuntime, clock: FrozenClock
) -> None:
    researcher.share("finding:b", "beta", space="team")
    coder.share("finding:a", "alpha", space="team")
    coder.share("other", "x", space="team")
    researcher.share("finding:c", "gamma", space="elsewhere")
    listed = coder.shared_items(space="team", prefix="finding:")
    assert [(i.key, i.value, i.author, i.version, i.space) for i in listed] == [
        ("finding:a", "alpha", "coder", 1, "team"),
        ("finding:b", "beta", "researcher", 1, "team"),
    ]
    assert [i.key for i in coder.shared_items(space="team", limit=1)] == ["finding:a"]


def test_an_expired_shared_value_reads_as_not_found(
    researcher: AgentRuntime, coder: AgentRuntime, clock: FrozenClock
) -> None:
    researcher.share("lease", "held by researcher", space="team", ttl=30)
    assert coder.read_shared("lease", space="team").value == "held by researcher"
    clock.advance(31)
    assert not coder.read_shared("lease", space="team")
    assert coder.shared_items(space="team") == []
    assert [v.author for v in coder.shared_history("lease", space="team")] == ["researcher"]


# -- stale writes -------------------------------------------------------------------------------


def test_a_first_write_and_a_write_over_a_seen_head_are_no_conflict(
    researcher: AgentRuntime, coder: AgentRuntime
) -> None:
    assert researcher.share("k", 1, space="team").conflict_id is None  # nothing to have seen
    assert coder.read_shared("k", space="team").version == 1
    assert coder.share("k", 2, space="team").conflict_id is None  # read the head
    assert coder.share("k", 3, space="team").conflict_id is None  # the head is its own
    assert researcher.read_shared("k", space="team").version == 3
    assert researcher.share("k", 4, space="team").conflict_id is None
    assert coder.shared_conflicts(space="team", include_resolved=True) == []


def test_the_head_being_its_own_write_is_no_conflict_even_without_a_read(
    researcher: AgentRuntime, db: Path, clock: FrozenClock
) -> None:
    researcher.share("k", 1, space="team")
    restarted = AgentRuntime("researcher", store=SqliteStore(db), clock=clock)  # knows nothing
    try:
        assert restarted.share("k", 2, space="team").conflict_id is None
        assert restarted.shared_conflicts(space="team") == []
    finally:
        restarted.store.close()


def test_a_blind_write_over_another_agents_head_records_a_conflict(
    researcher: AgentRuntime, coder: AgentRuntime, clock: FrozenClock
) -> None:
    researcher.share("market_size", "$2.1B", space="team")
    clock.advance(3)
    written = coder.share("market_size", "$2.4B", space="team")  # never read it
    assert written.version == 2 and written.conflict_id is not None
    assert coder.read_shared("market_size", space="team").value == "$2.4B"  # it succeeded
    (conflict,) = researcher.shared_conflicts(space="team")
    assert conflict == Conflict(
        id=written.conflict_id,
        space="team",
        key="market_size",
        mine_version=2,
        mine_author="coder",
        mine_value="$2.4B",
        theirs_version=1,
        theirs_author="researcher",
        theirs_value="$2.1B",
        seen_version=None,
        created_at=T0 + 3,
        status="open",
        resolution=None,
        resolved_by=None,
        resolved_at=None,
    )
    assert authors(coder, "market_size") == [(1, "researcher"), (2, "coder")]  # nothing lost


def test_a_write_after_another_agent_moved_the_head_records_what_was_seen(
    researcher: AgentRuntime, coder: AgentRuntime, reviewer: AgentRuntime
) -> None:
    researcher.share("plan", "v1 by researcher", space="team")
    assert coder.read_shared("plan", space="team").version == 1
    reviewer.read_shared("plan", space="team")
    reviewer.share("plan", "v2 by reviewer", space="team")
    researcher.read_shared("plan", space="team")
    researcher.share("plan", "v3 by researcher", space="team")
    written = coder.share("plan", "v4 by coder", space="team")  # saw v1 only
    (conflict,) = coder.shared_conflicts(space="team")
    assert conflict.id == written.conflict_id
    assert (conflict.seen_version, conflict.mine_version, conflict.mine_author) == (1, 4, "coder")
    assert (conflict.theirs_version, conflict.theirs_author, conflict.theirs_value) == (
        3,
        "researcher",
        "v3 by researcher",
    )
    # the stale writer's next write sits on its own head: no second conflict
    assert coder.share("plan", "v5 by coder", space="team").conflict_id is None
    assert len(coder.shared_conflicts(space="team")) == 1


def test_reading_the_head_again_clears_the_stale_state(
    researcher: AgentRuntime, coder: AgentRuntime
) -> None:
    researcher.share("k", 1, space="team")
    coder.read_shared("k", space="team")
    researcher.share("k", 2, space="team")
    coder.read_shared("k", space="team")  # now coder has seen v2
    assert coder.share("k", 3, space="team").conflict_id is None


def test_the_stale_writers_event_names_the_conflict(
    researcher: AgentRuntime, coder: AgentRuntime
) -> None:
    conflict = stale_conflict(researcher, coder)
    event = researcher.timeline()[-1]
    (entry,) = event.payload["writes"]
    assert event.kind == "shared_write"
    assert (entry["conflict_id"], entry["version"]) == (conflict.id, conflict.mine_version)
    assert all("conflict_id" not in e.payload["writes"][0] for e in coder.timeline())


def test_shared_items_counts_as_having_seen_the_values(
    researcher: AgentRuntime, coder: AgentRuntime
) -> None:
    """The issue: a write is stale when "another agent wrote the key since this agent last
    read or wrote it". Listing a space with ``shared_items`` reads every current value (with
    its version), so updating one of them right after is not a stale write."""
    researcher.share("finding:a", "alpha", space="team")
    (item,) = coder.shared_items(space="team", prefix="finding:")
    assert (item.value, item.version) == ("alpha", 1)
    written = coder.share("finding:a", "alpha, confirmed", space="team")
    assert written.conflict_id is None, "a value just listed by shared_items counted as unseen"
    assert coder.shared_conflicts(space="team") == []


# -- compare-and-set ----------------------------------------------------------------------------


def test_expected_version_is_a_strict_compare_and_set(
    researcher: AgentRuntime, coder: AgentRuntime
) -> None:
    assert researcher.share("k", "a", space="team", expected_version=0).version == 1
    with pytest.raises(VersionConflict, match=r"version 1, not the expected 0") as info:
        coder.share("k", "b", space="team", expected_version=0)  # 0: must not exist yet
    assert (info.value.key, info.value.expected, info.value.actual) == ("k", 0, 1)

    # matching the head succeeds without a read, and a strict write records no conflict
    written = coder.share("k", "b", space="team", expected_version=1)
    assert (written.version, written.conflict_id) == (2, None)
    with pytest.raises(VersionConflict) as info:
        researcher.share("k", "c", space="team", expected_version=1)
    assert (info.value.expected, info.value.actual) == (1, 2)
    with pytest.raises(VersionConflict) as info:
        researcher.share("k", "c", space="team", expected_version=7)
    assert (info.value.expected, info.value.actual) == (7, 2)
    with pytest.raises(VersionConflict) as info:
        researcher.share("missing", "c", space="team", expected_version=1)
    assert info.value.actual == 0

    assert authors(coder, "k") == [(1, "researcher"), (2, "coder")]  # the losers wrote nothing
    assert kinds(researcher) == ["shared_write"]  # and left no event
    assert coder.shared_conflicts(space="team", include_resolved=True) == []


@pytest.mark.parametrize("expected", ["1", 1.0, True, False, -1, [1], b"1"])
def test_expected_version_of_the_wrong_type_is_invalid_input(
    researcher: AgentRuntime, expected: Any
) -> None:
    researcher.share("k", "a", space="team")
    with pytest.raises(InvalidInput, match="expected_version"):
        researcher.share("k", "b", space="team", expected_version=expected)
    assert authors(researcher, "k") == [(1, "researcher")]
    assert head_seq(researcher) == 1


# -- conflicts and their resolution ---------------------------------------------------------------


def test_keep_mine_keeps_the_stale_write_current(
    researcher: AgentRuntime, coder: AgentRuntime, clock: FrozenClock
) -> None:
    conflict = stale_conflict(researcher, coder)
    clock.advance(10)
    assert coder.resolve_conflict(conflict.id, keep="mine") is None  # already current
    assert coder.read_shared("k", space="team").value == "mine"
    assert coder.shared_conflicts(space="team") == []
    (done,) = coder.shared_conflicts(space="team", include_resolved=True)
    assert (done.status, done.resolution, done.resolved_by, done.resolved_at) == (
        "resolved",
        "mine",
        "coder",
        T0 + 10,
    )
    event = coder.timeline()[-1]
    assert (event.kind, event.time) == ("conflict_resolved", T0 + 10)
    assert event.payload == {
        "conflict_id": conflict.id,
        "space": "team",
        "key": "k",
        "keep": "mine",
    }
    assert_verified(researcher, coder)


def test_keep_theirs_writes_the_replaced_value_back_as_a_new_version(
    researcher: AgentRuntime, coder: AgentRuntime
) -> None:
    conflict = stale_conflict(researcher, coder)
    written = coder.resolve_conflict(conflict.id, keep="theirs")
    assert written is not None
    assert (written.version, written.author, written.conflict_id) == (4, "coder", None)
    current = researcher.read_shared("k", space="team")
    assert (current.value, current.version, current.author) == ("theirs", 4, "coder")
    assert [
        (v.version, v.value, v.author) for v in researcher.shared_history("k", space="team")
    ] == [
        (4, "theirs", "coder"),
        (3, "mine", "researcher"),
        (2, "theirs", "coder"),
        (1, "base", "researcher"),
    ]
    event = coder.timeline()[-1]
    assert event.kind == "conflict_resolved"
    assert event.payload["keep"] == "theirs"
    assert [w["version"] for w in event.payload["writes"]] == [4]
    assert_verified(researcher, coder)


def test_keep_an_explicit_value_makes_it_current(
    researcher: AgentRuntime, coder: AgentRuntime, reviewer: AgentRuntime
) -> None:
    conflict = stale_conflict(researcher, coder)
    merged = {"low": "$2.1B", "high": "$2.4B", "sources": ["a", "b"]}
    written = reviewer.resolve_conflict(conflict.id, keep=merged)  # a third agent decides
    assert written is not None and written.author == "reviewer"
    assert merged == {"low": "$2.1B", "high": "$2.4B", "sources": ["a", "b"]}
    current = coder.read_shared("k", space="team")
    assert (current.value, current.author, current.version) == (merged, "reviewer", 4)
    (done,) = coder.shared_conflicts(space="team", include_resolved=True)
    assert (done.resolution, done.resolved_by) == ("value", "reviewer")
    assert reviewer.timeline()[-1].payload["keep"] == "value"
    # the resolver saw what it wrote: its next write is no conflict
    assert reviewer.share("k", "final", space="team").conflict_id is None
    assert_verified(researcher, coder, reviewer)


def test_resolving_twice_or_an_unknown_conflict_fails(
    researcher: AgentRuntime, coder: AgentRuntime
) -> None:
    conflict = stale_conflict(researcher, coder)
    coder.resolve_conflict(conflict.id, keep="theirs")
    seq = head_seq(researcher)
    with pytest.raises(InvalidInput, match="already resolved"):
        researcher.resolve_conflict(conflict.id, keep="mine")
    assert head_seq(researcher) == seq
    assert coder.read_shared("k", space="team").value == "theirs"
    for unknown in (conflict.id + 1, 0, -1, "1", None):
        with pytest.raises(NotFound):
            researcher.resolve_conflict(unknown)  # type: ignore[arg-type]


def test_resolve_conflict_rejects_a_bool_id(researcher: AgentRuntime, coder: AgentRuntime) -> None:
    """``True == 1`` but is no conflict id: mark_read and expected_version refuse bools, and
    resolve_conflict(True) must not resolve conflict 1."""
    conflict = stale_conflict(researcher, coder)
    assert conflict.id == 1
    with pytest.raises((InvalidInput, NotFound)):
        coder.resolve_conflict(True, keep="theirs")
    assert [c.id for c in coder.shared_conflicts(space="team")] == [1]
    assert coder.read_shared("k", space="team").value == "mine"


def test_a_resolution_does_not_silently_replace_a_newer_write(
    researcher: AgentRuntime, coder: AgentRuntime, reviewer: AgentRuntime
) -> None:
    """After the conflict, a third agent writes a new value (having seen the head). Resolving
    the old conflict later must not overwrite that newer value without a trace: the resolver
    never saw it, which is exactly a stale write (issue: "a write whose author had not seen
    the current head ... records a conflict")."""
    conflict = stale_conflict(researcher, coder)  # v3 "mine" by researcher
    reviewer.read_shared("k", space="team")
    reviewer.share("k", "newer, by reviewer", space="team")  # v4, no conflict
    assert researcher.shared_conflicts(space="team") == [conflict]
    try:
        coder.resolve_conflict(conflict.id, keep="theirs")
    except VersionConflict:
        assert researcher.read_shared("k", space="team").value == "newer, by reviewer"
        assert [c.id for c in researcher.shared_conflicts(space="team")] == [conflict.id]
        return
    current = researcher.read_shared("k", space="team")
    assert current.value == "theirs"
    surfaced = [
        (c.mine_author, c.theirs_author, c.theirs_value)
        for c in researcher.shared_conflicts(space="team")
    ]
    assert surfaced == [("coder", "reviewer", "newer, by reviewer")], (
        "resolve_conflict overwrote reviewer's newer v4 (never seen by coder) without"
        " recording a conflict"
    )


class _RacingStore:
    """A store that runs ``hook`` once, right after the read ``method`` returned: another
    agent acting between a caller's check and its commit."""

    def __init__(self, store: Store, method: str, hook: Callable[[], object]) -> None:
        self._store = store
        self._method = method
        self._hook: Callable[[], object] | None = hook

    def __getattr__(self, name: str) -> Any:
        real = getattr(self._store, name)
        if name != self._method:
            return real

        def read(*args: Any, **kwargs: Any) -> Any:
            result = real(*args, **kwargs)
            hook, self._hook = self._hook, None
            if hook is not None:
                hook()
            return result

        return read


def test_losing_a_resolution_race_raises_the_already_resolved_error(
    researcher: AgentRuntime, coder: AgentRuntime, client: Octopoda, clock: FrozenClock
) -> None:
    """Two agents resolve one conflict at once: the loser must get the same error as a late
    resolver (InvalidInput "already resolved"), not a NotFound for a conflict that exists."""
    conflict = stale_conflict(researcher, coder)
    racing = _RacingStore(
        client.store, "conflict", lambda: researcher.resolve_conflict(conflict.id, keep="mine")
    )
    loser = AgentRuntime("coder", store=racing, clock=clock)  # type: ignore[arg-type]
    seq = head_seq(coder)
    with pytest.raises(OctopodaError) as info:
        loser.resolve_conflict(conflict.id, keep="theirs")
    assert head_seq(coder) == seq  # the loser wrote nothing
    assert researcher.read_shared("k", space="team").value == "mine"
    assert isinstance(info.value, InvalidInput), (
        f"the losing resolver got {type(info.value).__name__}: {info.value}"
    )


# -- membership ---------------------------------------------------------------------------------


def test_spaces_are_open_by_default(
    client: Octopoda, researcher: AgentRuntime, coder: AgentRuntime
) -> None:
    researcher.share("k", 1, space="anything")
    researcher.share("k", 2)  # the default space is "global"
    assert coder.read_shared("k", space="anything").value == 1
    assert coder.read_shared("k").space == "global"
    assert coder.read_shared("k").value == 2
    coder.broadcast("hello", space="anything")
    assert client.spaces() == []  # open spaces need no creation


def test_a_members_space_refuses_every_access_by_a_non_member(
    client: Octopoda, researcher: AgentRuntime, coder: AgentRuntime, clock: FrozenClock
) -> None:
    researcher.create_space("secret", members=["coder"])
    assert client.spaces() == [SpaceRow("secret", T0, "researcher", ("researcher", "coder"))]
    researcher.share("plan", "launch on monday", space="secret")
    coder.share("plan", "launch on tuesday", space="secret")  # blind: a conflict
    (conflict,) = coder.shared_conflicts(space="secret")
    coder.broadcast("members only", space="secret")
    outsider = client.agent("outsider")

    refused: dict[str, Callable[[], object]] = {
        "share": lambda: outsider.share("plan", "sabotage", space="secret"),
        "share_cas": lambda: outsider.share("plan", "x", space="secret", expected_version=2),
        "read_shared": lambda: outsider.read_shared("plan", space="secret"),
        "shared_history": lambda: outsider.shared_history("plan", space="secret"),
        "shared_items": lambda: outsider.shared_items(space="secret"),
        "shared_conflicts": lambda: outsider.shared_conflicts(space="secret"),
        "resolve_conflict": lambda: outsider.resolve_conflict(conflict.id, keep="mine"),
        "broadcast": lambda: outsider.broadcast("psst", space="secret"),
        "read_broadcasts": lambda: outsider.read_broadcasts(space="secret"),
    }
    for name, call in refused.items():
        with pytest.raises(AccessDenied) as info:
            call()
        text = str(info.value)
        assert "'outsider'" in text and "'secret'" in text, (name, text)
        assert "researcher, coder" in text and "creator 'researcher'" in text, (name, text)
        assert isinstance(info.value, PermissionError)

    assert head_seq(outsider) == 0  # nothing was recorded for the refused agent
    assert authors(researcher, "plan", "secret") == [(1, "researcher"), (2, "coder")]
    assert [c.id for c in researcher.shared_conflicts(space="secret")] == [conflict.id]
    assert [m.body for m in researcher.read_broadcasts(space="secret")] == ["members only"]
    # members (the creator included) keep full access; the outsider's open spaces still work
    assert coder.read_shared("plan", space="secret").value == "launch on tuesday"
    assert outsider.share("plan", "elsewhere", space="team").version == 1


def test_a_members_space_of_only_its_creator(client: Octopoda, researcher: AgentRuntime) -> None:
    researcher.create_space("private", members=[])
    researcher.share("notes", "mine alone", space="private")
    with pytest.raises(AccessDenied):
        client.agent("coder").read_shared("notes", space="private")


def test_a_space_closed_while_a_non_member_writes_refuses_the_write(
    client: Octopoda, researcher: AgentRuntime, clock: FrozenClock
) -> None:
    """The membership check runs before, not inside, the write's transaction: a space made
    members-only between the check and the commit still takes the non-member's write."""
    racing = _RacingStore(
        client.store, "space", lambda: researcher.create_space("secret", members=["coder"])
    )
    outsider = AgentRuntime("outsider", store=racing, clock=clock)  # type: ignore[arg-type]
    refused: AccessDenied | None = None
    try:
        outsider.share("plan", "written by a non-member", space="secret")
    except AccessDenied as exc:
        refused = exc
    assert researcher.shared_history("plan", space="secret") == [], (
        "a non-member's write landed in a members-only space"
    )
    assert refused is not None and "'outsider'" in str(refused)


def test_completing_a_milestone_again_keeps_its_completion_time(
    researcher: AgentRuntime, clock: FrozenClock
) -> None:
    researcher.set_goal("ship", milestones=["draft", "publish"])
    researcher.update_progress(milestone_index=0)
    clock.advance(3600)
    again = researcher.update_progress(milestone_index=0, note="draft re-checked")
    assert again.milestones[0]["done_at"] == T0, "the milestone's completion time moved"


def test_creating_an_existing_space_fails(
    client: Octopoda, researcher: AgentRuntime, coder: AgentRuntime
) -> None:
    researcher.create_space("team")
    researcher.create_space("secret", members=["coder"])
    for creator, name, members in [
        (researcher, "team", None),
        (coder, "team", ["coder"]),
        (coder, "secret", None),
    ]:
        seq = head_seq(creator)
        with pytest.raises(InvalidInput, match=f"space named '{name}' already exists"):
            creator.create_space(name, members=members)
        assert head_seq(creator) == seq
    assert client.spaces() == [
        SpaceRow("secret", T0, "researcher", ("researcher", "coder")),
        SpaceRow("team", T0, "researcher", None),
    ]
    (created, _) = researcher.timeline()
    assert (created.kind, created.payload) == ("space_created", {"space": "team", "members": None})


@pytest.mark.parametrize(
    ("members", "error"),
    [
        ("coder", InvalidInput),
        ([""], InvalidAgentId),
        ([5], InvalidAgentId),
        (["ok", None], InvalidAgentId),
    ],
)
def test_invalid_members_are_refused(
    client: Octopoda, researcher: AgentRuntime, members: Any, error: type[Exception]
) -> None:
    with pytest.raises(error):
        researcher.create_space("s", members=members)
    assert client.spaces() == []
    with pytest.raises(InvalidKey):
        researcher.create_space("")


# -- messages -----------------------------------------------------------------------------------


def sent_event(sender: AgentRuntime, message_id: int) -> Event:
    """The sender's ``message_sent`` event of a message."""
    (event,) = [e for e in sender.timeline() if e.payload.get("message_id") == message_id]
    return event


def sends_sha(sender: AgentRuntime, message_id: int) -> str:
    """The content digest the sender's ``message_sent`` event recorded for a message."""
    return str(sent_event(sender, message_id).payload["content_sha256"])


def sends_gist(sender: AgentRuntime, message_id: int) -> str:
    """The content gist (words only) the sender's event recorded for a message."""
    return str(sent_event(sender, message_id).payload["content_gist"])


def test_messages_are_ordered_read_and_marked_read_with_an_audit(
    researcher: AgentRuntime, coder: AgentRuntime, clock: FrozenClock
) -> None:
    bodies: list[Any] = ["first", {"finding": "$2.1B", "sources": [1, 2]}, ["third", None]]
    sent = []
    for i, body in enumerate(bodies):
        clock.advance(1)
        sent.append(coder.send_message("researcher", body, message_type=f"t{i}"))
    assert bodies == ["first", {"finding": "$2.1B", "sources": [1, 2]}, ["third", None]]
    assert [m.id for m in sent] == sorted(m.id for m in sent)
    assert sent[0] == Message(sent[0].id, "coder", "researcher", None, "t0", "first", T0 + 1, None)

    inbox = researcher.read_messages()
    assert inbox == sent  # oldest first, body the value itself, unread
    assert [m.read for m in inbox] == [False, False, False]
    assert researcher.read_messages() == sent  # reading does not mark read
    assert researcher.read_messages(limit=2) == sent[:2]
    assert researcher.read_messages(after_id=sent[0].id) == sent[1:]
    assert coder.read_messages() == []  # a message is its recipient's only

    clock.advance(10)
    researcher.mark_read(sent[1].id)
    assert researcher.read_messages() == [sent[0], sent[2]]
    everything = researcher.read_messages(unread_only=False)
    assert [(m.id, m.read_at) for m in everything] == [
        (sent[0].id, None),
        (sent[1].id, T0 + 13),
        (sent[2].id, None),
    ]
    assert everything[1].read

    event = researcher.timeline()[-1]
    assert (event.kind, event.payload, event.time) == (
        "message_read",
        {
            "message_id": sent[1].id,
            "content_sha256": sends_sha(coder, sent[1].id),
            "content_gist": sends_gist(coder, sent[1].id),
        },
        T0 + 13,
    )
    sends = coder.timeline()
    assert [e.kind for e in sends] == ["message_sent"] * 3
    assert [e.payload["message_id"] for e in sends] == [m.id for m in sent]
    assert sends[1].payload["to"] == "researcher" and sends[1].payload["type"] == "t1"
    assert '"$2.1B"' in sends[1].payload["preview"]
    assert_verified(researcher, coder)


def test_marking_a_message_that_is_not_yours_or_not_unread_fails(
    researcher: AgentRuntime, coder: AgentRuntime
) -> None:
    message = coder.send_message("researcher", "for the researcher only")
    for wrong in (coder, AgentRuntime("reviewer", store=coder.store)):
        seq = head_seq(wrong)
        with pytest.raises(NotFound):
            wrong.mark_read(message.id)
        assert head_seq(wrong) == seq
    assert [m.read for m in researcher.read_messages(unread_only=False)] == [False]
    researcher.mark_read(message.id)
    with pytest.raises(NotFound):
        researcher.mark_read(message.id)  # already read
    with pytest.raises(NotFound):
        researcher.mark_read(message.id + 100)
    for bad in ("1", 1.0, True, None):
        with pytest.raises(InvalidInput):
            researcher.mark_read(bad)  # type: ignore[arg-type]
    assert kinds(researcher) == ["message_read"]


@pytest.mark.parametrize("body", [b"raw", bytearray(b"raw"), {1, 2}, float("nan"), object()])
def test_a_message_body_that_is_not_json_is_refused(
    researcher: AgentRuntime, coder: AgentRuntime, body: Any
) -> None:
    with pytest.raises(InvalidValue):
        coder.send_message("researcher", body)
    with pytest.raises(InvalidValue):
        coder.broadcast(body, space="team")
    assert researcher.read_messages() == [] and researcher.read_broadcasts(space="team") == []
    assert head_seq(coder) == 0


def test_invalid_recipients_and_types_are_refused(coder: AgentRuntime) -> None:
    with pytest.raises(InvalidAgentId):
        coder.send_message("", "x")
    with pytest.raises(InvalidAgentId):
        coder.send_message(None, "x")  # type: ignore[arg-type]
    with pytest.raises(InvalidKey):
        coder.send_message("researcher", "x", message_type="")
    assert head_seq(coder) == 0


def test_messages_survive_a_restart(
    researcher: AgentRuntime, coder: AgentRuntime, db: Path, clock: FrozenClock
) -> None:
    first = coder.send_message("researcher", "before the restart")
    second = coder.send_message("researcher", {"n": 2})
    researcher.mark_read(first.id)
    reopened = SqliteStore(db)
    try:
        later = Octopoda(store=reopened, clock=clock).agent("researcher")
        assert later.read_messages() == [second]
        assert [(m.body, m.read) for m in later.read_messages(unread_only=False)] == [
            ("before the restart", True),
            ({"n": 2}, False),
        ]
        later.mark_read(second.id)
        assert later.read_messages() == []
        assert later.audit.verify().ok
    finally:
        reopened.close()


def test_broadcasts_are_read_per_space_and_since_a_time(
    client: Octopoda, researcher: AgentRuntime, coder: AgentRuntime, clock: FrozenClock
) -> None:
    first = researcher.broadcast("kickoff", space="team")
    clock.advance(10)
    second = coder.broadcast({"status": "sources collected"}, space="team", message_type="status")
    coder.broadcast("other team", space="elsewhere")
    coder.send_message("researcher", "direct")
    assert (first.sender, first.space, first.recipient, first.created_at) == (
        "researcher",
        "team",
        None,
        T0,
    )

    reader = client.agent("reviewer")
    assert reader.read_broadcasts(space="team") == [first, second]
    assert reader.read_broadcasts(space="team", since=T0 + 10) == [second]  # inclusive
    assert reader.read_broadcasts(space="team", since=T0 + 10.5) == []
    assert reader.read_broadcasts(space="team", limit=1) == [first]
    assert [m.body for m in reader.read_broadcasts(space="elsewhere")] == ["other team"]
    assert reader.read_broadcasts() == []  # the global space
    assert [m.body for m in researcher.read_messages()] == ["direct"]  # not broadcasts
    assert second.message_type == "status"
    event = coder.timeline()[0]
    assert (event.kind, event.payload["space"], event.payload["message_id"]) == (
        "broadcast",
        "team",
        second.id,
    )
    with pytest.raises(NotFound):
        reader.mark_read(first.id)  # a broadcast is nobody's to mark
    assert_verified(researcher, coder)


BAD_READS: list[tuple[str, Callable[[AgentRuntime], object]]] = [
    ("shared_history limit '2'", lambda a: a.shared_history("k", space="team", limit="2")),
    ("shared_history limit -1", lambda a: a.shared_history("k", space="team", limit=-1)),
    ("shared_items prefix 5", lambda a: a.shared_items(space="team", prefix=5)),
    ("shared_items limit '2'", lambda a: a.shared_items(space="team", limit="2")),
    ("read_messages limit '2'", lambda a: a.read_messages(limit="2")),
    ("read_messages limit -1", lambda a: a.read_messages(limit=-1)),
    ("read_messages after_id '3'", lambda a: a.read_messages(after_id="3")),
    ("read_broadcasts since 'yesterday'", lambda a: a.read_broadcasts(space="team", since="x")),
    ("read_broadcasts limit '2'", lambda a: a.read_broadcasts(space="team", limit="2")),
]


@pytest.mark.parametrize(("what", "call"), BAD_READS, ids=[what for what, _ in BAD_READS])
def test_collab_reads_refuse_invalid_arguments(
    researcher: AgentRuntime, what: str, call: Callable[[AgentRuntime], object]
) -> None:
    """Like recall_history and search, the collaboration reads refuse what they cannot use
    with InvalidInput, instead of a StorageError, a raw TypeError, or a silent empty list."""
    researcher.share("k", 1, space="team")
    researcher.broadcast("b", space="team")
    researcher.send_message("researcher", "note to self")
    try:
        result = call(researcher)
    except InvalidInput:
        return
    except Exception as exc:  # the test reports what escaped instead
        pytest.fail(f"{what}: raised {type(exc).__name__}: {exc} instead of InvalidInput")
    pytest.fail(f"{what}: returned {result!r} instead of raising InvalidInput")


# -- goals --------------------------------------------------------------------------------------


def test_goals_keep_milestones_and_a_progress_history(
    researcher: AgentRuntime, clock: FrozenClock
) -> None:
    assert researcher.get_goal() is None and researcher.goal_history() == []
    steps = ["collect sources", "estimate", "review"]
    first = researcher.set_goal("Size the market", milestones=steps)
    assert steps == ["collect sources", "estimate", "review"]
    assert first == Goal(
        "Size the market",
        tuple({"description": s, "done": False, "done_at": None} for s in steps),
        0.0,
        "active",
        None,
        T0,
        T0,
        1,
    )
    clock.advance(60)
    second = researcher.update_progress(milestone_index=0, note="3 sources found")
    assert second.milestones[0] == {
        "description": "collect sources",
        "done": True,
        "done_at": T0 + 60,
    }
    assert second.milestones[1]["done"] is False
    assert (second.progress, second.note, second.status) == (1 / 3, "3 sources found", "active")
    assert (second.set_at, second.updated_at, second.version) == (T0, T0 + 60, 2)
    clock.advance(60)
    third = researcher.update_progress(progress=0.5)
    assert (third.progress, third.milestones[0]["done"], third.version) == (0.5, True, 3)
    fourth = researcher.update_progress(milestone_index=1)
    assert math.isclose(fourth.progress, 2 / 3)
    clock.advance(60)
    fifth = researcher.update_progress(milestone_index=2, note="reviewed")
    assert (fifth.progress, fifth.status, fifth.note) == (1.0, "completed", "reviewed")
    assert all(m["done"] for m in fifth.milestones)

    assert researcher.get_goal() == fifth
    assert researcher.goal_history() == [fifth, fourth, third, second, first]
    assert [g.progress for g in reversed(researcher.goal_history())][:3] == [0.0, 1 / 3, 0.5]
    assert kinds(researcher) == ["goal_set"] + ["goal_progress"] * 4
    assert_verified(researcher)


def test_a_new_goal_replaces_the_old_one_which_stays_in_history(
    researcher: AgentRuntime, coder: AgentRuntime
) -> None:
    researcher.set_goal("first goal")
    researcher.update_progress(progress=0.3)
    new = researcher.set_goal("second goal", milestones=("a", "b"))
    assert researcher.get_goal() == new
    assert (new.progress, new.version, len(new.milestones)) == (0.0, 3, 2)
    assert [g.goal for g in researcher.goal_history()] == [
        "second goal",
        "first goal",
        "first goal",
    ]
    assert coder.get_goal() is None  # goals are per agent
    with pytest.raises(NotFound, match="set_goal"):
        coder.update_progress(progress=0.5)


@pytest.mark.parametrize(
    ("goal", "milestones"),
    [
        ("", None),
        ("   ", None),
        (5, None),
        (None, None),
        ("g", "one string"),
        ("g", [""]),
        ("g", [5]),
        ("g", ["ok", None]),
    ],
)
def test_set_goal_refuses_invalid_input(
    researcher: AgentRuntime, goal: Any, milestones: Any
) -> None:
    with pytest.raises(InvalidInput):
        researcher.set_goal(goal, milestones=milestones)
    assert researcher.get_goal() is None and head_seq(researcher) == 0


@pytest.mark.parametrize(
    "kwargs",
    [
        {"milestone_index": 2},
        {"milestone_index": -1},
        {"milestone_index": True},
        {"milestone_index": "0"},
        {"milestone_index": 0.0},
        {"progress": -0.1},
        {"progress": 1.01},
        {"progress": float("nan")},
        {"progress": "0.5"},
        {"progress": True},
        {"note": 5},
        {"milestone_index": 0, "progress": 2},
        {"milestone_index": 0, "note": ["x"]},
    ],
)
def test_update_progress_refuses_invalid_input(
    researcher: AgentRuntime, kwargs: dict[str, Any]
) -> None:
    researcher.set_goal("g", milestones=["one", "two"])
    with pytest.raises(InvalidInput):
        researcher.update_progress(**kwargs)
    (goal,) = researcher.goal_history()
    assert (goal.progress, goal.milestones[0]["done"]) == (0.0, False)
    assert head_seq(researcher) == 1


def test_goals_survive_a_restart(researcher: AgentRuntime, db: Path, clock: FrozenClock) -> None:
    researcher.set_goal("ship the report", milestones=["draft", "publish"])
    done = researcher.update_progress(milestone_index=0, note="drafted")
    reopened = SqliteStore(db)
    try:
        later = AgentRuntime("researcher", store=reopened, clock=clock)
        assert later.get_goal() == done
        assert [g.version for g in later.goal_history()] == [2, 1]
        assert later.update_progress(milestone_index=1).status == "completed"
        assert later.audit.verify().ok
    finally:
        reopened.close()


# -- audit --------------------------------------------------------------------------------------


def test_every_collaboration_step_is_an_event_and_every_chain_verifies(
    client: Octopoda, researcher: AgentRuntime, coder: AgentRuntime, clock: FrozenClock
) -> None:
    researcher.create_space("team", members=["coder"])
    researcher.share("market_size", "$2.1B", space="team")
    coder.share("market_size", "$2.4B", space="team")  # blind: a conflict
    (conflict,) = researcher.shared_conflicts(space="team")
    researcher.resolve_conflict(conflict.id, keep={"range": ["$2.1B", "$2.4B"]})
    message = coder.send_message("researcher", "resolved?")
    researcher.mark_read(message.id)
    researcher.broadcast("range agreed", space="team")
    coder.set_goal("estimate", milestones=["range"])
    coder.update_progress(milestone_index=0)
    researcher.read_shared("market_size", space="team")  # reads are not events
    researcher.shared_history("market_size", space="team")
    coder.read_messages(unread_only=False)

    assert kinds(researcher) == [
        "space_created",
        "shared_write",
        "conflict_resolved",
        "message_read",
        "broadcast",
    ]
    assert kinds(coder) == ["shared_write", "message_sent", "goal_set", "goal_progress"]
    assert coder.timeline()[0].payload["writes"][0]["conflict_id"] == conflict.id
    assert researcher.timeline()[0].payload == {"space": "team", "members": ["researcher", "coder"]}
    assert_verified(researcher, coder)
    assert {a.id: a.events for a in client.agents()} == {"coder": 4, "researcher": 5}


@pytest.mark.parametrize(
    ("what", "sql"),
    [
        ("a forged shared value", "UPDATE memories SET value = '\"$9.9B\"' WHERE namespace = ?"),
        ("a forged shared author", "UPDATE memories SET author = 'mallory' WHERE namespace = ?"),
        ("a deleted shared version", "DELETE FROM memories WHERE namespace = ?"),
    ],
    ids=["forged value", "forged author", "deleted version"],
)
def test_verify_detects_a_tampered_shared_version(
    researcher: AgentRuntime, db: Path, what: str, sql: str
) -> None:
    """A shared write is an audited event carrying the digest of the value; the author's
    chain must not verify once the stored version no longer matches it (as for private
    memory). Otherwise authorship and values of shared knowledge can be forged silently."""
    researcher.share("market_size", "$2.1B", space="team")
    researcher.remember("private", "kept")
    assert researcher.audit.verify().ok
    raw_sql(db, sql, ("space:team",))
    report = researcher.audit.verify()
    assert not report.ok, f"{what} went unnoticed: {report}"
    assert report.first_bad_seq == 1


def test_verify_detects_a_deleted_goal_version(researcher: AgentRuntime, db: Path) -> None:
    researcher.set_goal("ship", milestones=["draft"])
    researcher.update_progress(milestone_index=0)
    raw_sql(db, "DELETE FROM memories WHERE namespace = ? AND version = 2", ("goal:researcher",))
    assert researcher.get_goal() is not None and researcher.get_goal().progress == 0.0  # type: ignore[union-attr]
    assert not researcher.audit.verify().ok, "a goal update vanished without verify noticing"


# -- loop signals -------------------------------------------------------------------------------


def loop_kinds(agent: AgentRuntime) -> set[str]:
    return {s.kind for s in agent.loop_status().signals}


def test_two_agents_bouncing_one_shared_key_is_a_ping_pong(
    researcher: AgentRuntime, coder: AgentRuntime
) -> None:
    for _ in range(3):
        researcher.share("approach", "use library X", space="team")
        coder.share("approach", "use library Y", space="team")
    assert "ping_pong" in loop_kinds(coder)
    assert "ping_pong" in loop_kinds(researcher)
    (signal,) = [s for s in coder.loop_status().signals if s.kind == "ping_pong"]
    assert "approach" in signal.subject and "space:team" in signal.subject
    assert "researcher and coder" in signal.explanation
    assert {e.agent for e in signal.events} >= {"researcher", "coder"}
    assert len(signal.events) >= 4
    assert "ping_pong" in {s.kind for s in coder.loop_history()}  # recorded as an event
    assert_verified(researcher, coder)


def test_one_agent_flipping_a_shared_key_is_an_oscillation(researcher: AgentRuntime) -> None:
    for _ in range(2):
        researcher.share("decision", "go", space="team")
        researcher.share("decision", "no-go", space="team")
    assert "oscillation" in loop_kinds(researcher)
    assert "oscillation" in {s.kind for s in researcher.loop_history()}


def test_a_productive_shared_exchange_is_no_loop(
    researcher: AgentRuntime, coder: AgentRuntime
) -> None:
    for i in range(6):
        researcher.read_shared("draft", space="team")
        researcher.share("draft", f"draft {2 * i}", space="team")
        coder.read_shared("draft", space="team")
        coder.share("draft", f"draft {2 * i + 1}", space="team")
    assert loop_kinds(researcher) == loop_kinds(coder) == set()
    assert researcher.loop_history() == coder.loop_history() == []


def test_the_same_message_back_and_forth_is_a_ping_pong(
    researcher: AgentRuntime, coder: AgentRuntime, clock: FrozenClock
) -> None:
    for _ in range(3):
        clock.advance(1)
        researcher.send_message("coder", {"task": "fix the parser"})
        clock.advance(1)
        coder.send_message("researcher", {"task": "fix the parser"})
    (signal,) = [s for s in coder.loop_status().signals if s.kind == "ping_pong"]
    assert {e.kind for e in signal.events} == {"message_sent"}
    assert {e.agent for e in signal.events} >= {"researcher"}
    assert "researcher and coder" in signal.explanation or "coder and researcher" in (
        signal.explanation
    )
    assert "ping_pong" in {s.kind for s in coder.loop_history()}
    assert "ping_pong" in loop_kinds(researcher)


def test_a_message_ping_pong_is_judged_in_send_order_when_times_tie(
    researcher: AgentRuntime, coder: AgentRuntime
) -> None:
    """Messages sent within one clock tick (a frozen test clock, a coarse OS clock, or a
    fast exchange) still happened in order: the message ids say which. The exchange is
    sorted by (time, the sender's own seq), so with equal times the replying agent sees
    its own messages first, judges a scrambled order, and misses the loop entirely."""
    for _ in range(3):
        researcher.send_message("coder", {"task": "fix the parser"})
        coder.send_message("researcher", {"task": "fix the parser"})
    assert "ping_pong" in loop_kinds(researcher)
    assert "ping_pong" in loop_kinds(coder), (
        "coder sent the same message back 3 times but saw no ping-pong"
    )


def test_two_messages_alternating_is_a_ping_pong(
    researcher: AgentRuntime, coder: AgentRuntime
) -> None:
    for _ in range(3):
        researcher.send_message("coder", "please fix it")
        coder.send_message("researcher", "it is not broken")
    assert "ping_pong" in loop_kinds(coder) | loop_kinds(researcher)


def test_a_productive_conversation_is_no_loop(
    researcher: AgentRuntime, coder: AgentRuntime
) -> None:
    for i in range(6):
        researcher.send_message("coder", f"question {i}")
        coder.send_message("researcher", f"answer {i}")
    assert loop_kinds(researcher) == loop_kinds(coder) == set()
    assert researcher.loop_history() == coder.loop_history() == []


def test_a_raise_policy_stops_the_bouncing_write(client: Octopoda) -> None:
    a = client.agent("a")
    b = client.agent("b", policy=LoopPolicy(on_loop="raise", min_confidence=0.8))
    a.share("k", "x", space="team")
    b.share("k", "y", space="team")
    a.share("k", "x", space="team")
    with pytest.raises(LoopDetected) as info:
        b.share("k", "y", space="team")
    assert info.value.signal.kind == "ping_pong"
    assert a.read_shared("k", space="team").version == 4  # the write itself was recorded


def test_new_messages_between_restated_decisions_are_new_information(
    researcher: AgentRuntime, coder: AgentRuntime
) -> None:
    """The reflection signal fires on the same decision restated "with no new tool result,
    memory value or message in between". Here each decision follows a new message that was
    read (and marked read, an audited event): that is new information, not a loop. The
    detector only counts ``message_received`` events, which nothing ever records."""
    for i in range(3):
        coder.send_message("researcher", f"new source {i}: the market grew {i + 3}%")
        for message in researcher.read_messages():
            researcher.mark_read(message.id)
        researcher.log_decision("wait for more data before publishing")
    assert "reflection" not in loop_kinds(researcher), researcher.loop_status()


# -- the Octopoda client ------------------------------------------------------------------------


def test_agent_returns_the_same_runtime_for_the_same_id(client: Octopoda) -> None:
    first = client.agent("researcher")
    assert client.agent("researcher") is first
    assert client.agent("coder") is not first
    assert first.store is client.store
    with pytest.raises(InvalidAgentId):
        client.agent("")
    # the one runtime remembers what it has seen, whoever holds it
    client.agent("coder").share("k", 1, space="team")
    first.read_shared("k", space="team")
    assert client.agent("researcher").share("k", 2, space="team").conflict_id is None


def test_agents_lists_status_last_activity_and_counts(client: Octopoda, clock: FrozenClock) -> None:
    assert client.agents() == []
    a, b, c = client.agent("a"), client.agent("b"), client.agent("c")
    a.share("k", 1, space="team")
    a.send_message("b", "hi")
    clock.advance(600)
    b.share("j", 1, space="team")
    c.pause("manual review")
    assert client.agents() == [
        AgentInfo("a", "active", T0, T0, 2),
        AgentInfo("b", "active", T0 + 600, T0 + 600, 1),
        AgentInfo("c", "paused", T0 + 600, T0 + 600, 1, "manual review"),
    ]
    clock.advance(IDLE_AFTER_SECONDS - 600)  # a's last activity is exactly 15 minutes old
    assert [x.status for x in client.agents()] == ["active", "active", "paused"]
    clock.advance(1)
    assert [x.status for x in client.agents()] == ["idle", "active", "paused"]
    assert [x.status for x in client.agents(idle_after_seconds=3600)] == [
        "active",
        "active",
        "paused",
    ]
    a.read_shared("k", space="team")  # a read is no activity
    assert client.agents()[0].status == "idle"
    a.share("k", 2, space="team")
    assert client.agents()[0] == AgentInfo("a", "active", T0, clock.now, 3)
    assert c.resume()
    assert client.agents()[2].status == "active"


@pytest.mark.parametrize("threshold", ["15m", None, -5, float("nan")])
def test_agents_refuses_an_invalid_idle_threshold(client: Octopoda, threshold: Any) -> None:
    """Like every other duration of the API: a positive number of seconds, else InvalidInput
    (not a raw TypeError, nor every agent listed idle)."""
    client.agent("a").share("k", 1, space="team")
    with pytest.raises(InvalidInput):
        client.agents(idle_after_seconds=threshold)


def test_a_plain_agent_runtime_works_alongside_the_client(
    client: Octopoda, db: Path, clock: FrozenClock
) -> None:
    researcher = client.agent("researcher")
    solo = AgentRuntime("solo", store=str(db), clock=clock)  # the same file, opened by path
    assert solo.store is client.store  # one connection per file and process
    solo.share("finding", "from solo", space="team")
    seen = researcher.read_shared("finding", space="team")
    assert (seen.value, seen.author) == ("from solo", "solo")
    researcher.share("finding", "from researcher", space="team")
    solo.read_shared("finding", space="team")
    assert solo.share("finding", "solo again", space="team").conflict_id is None
    solo.send_message("researcher", "done")
    assert [m.sender for m in researcher.read_messages()] == ["solo"]
    # a second runtime for an id the client already serves shares its chain
    twin = AgentRuntime("researcher", store=str(db), clock=clock)
    twin.remember("note", 1)
    researcher.share("other", 1, space="team")
    assert [x.id for x in client.agents()] == ["researcher", "solo"]
    assert {x.id: x.events for x in client.agents()} == {"researcher": 3, "solo": 3}
    assert_verified(researcher, solo)
