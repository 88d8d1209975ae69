"""The commit planner: the rules of a write, once for every backend, as pure functions.

This is where a write becomes rows. Every backend commits the same way:

1. Inside its transaction, read what the commit depends on: :func:`reads_needed` lists it
   (the agent's head; each key's head version, and its author where a stale check needs
   it; the spaces touched; whether the snapshot name is taken; the operations'
   preconditions, a run's status among them), and a :class:`HeadRead` holds what was read.
2. :func:`plan_commit` applies the rules (next version, compare-and-set, stale write ->
   conflict row, space membership, the operations' preconditions, a taken snapshot name)
   and returns a :class:`CommitPlan`, or raises the error the user sees
   (``VersionConflict``, ``AccessDenied``, ``InvalidInput``, ``NotFound``). No I/O, and
   the event is left alone.
3. The ids the database assigns go into the plan with :meth:`CommitPlan.stamp`, which
   also sets the event's ``seq``, ``prev_hash`` and payload entries (``writes`` with their
   ``conflict_id``, ``message_id``, ``erased``): all before the pipeline hashes the event.
   PostgreSQL reserves the ids from its sequences; SQLite inserts those rows first, under
   its write lock, and takes their rowids.
4. The pipeline runs; the backend writes the plan's rows, the event and the new head.

Each rule is one ``check_*`` function (or :func:`is_stale`); the general loop and the
plain commit's planner (:func:`plan_plain_commit`: every ``remember``, tool call and
decision) call the same ones.
"""

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any, Final, NamedTuple

from .._errors import AccessDenied, InvalidInput, NotFound, VersionConflict
from .._records import Event
from .ops import (
    SPACE_PREFIX,
    CreateSpace,
    EraseKey,
    MarkRead,
    MemoryWrite,
    Op,
    ResolveConflict,
    SendMessage,
    SetRunStatus,
    agent_namespace,
)

__all__ = [
    "NO_VERSION",
    "CommitPlan",
    "CommitReads",
    "ConflictState",
    "HeadRead",
    "KeyHead",
    "PlannedConflict",
    "SpaceRule",
    "check_erase",
    "check_expected_seq",
    "check_expected_version",
    "check_member",
    "check_resolvable",
    "check_run_status",
    "check_snapshot_free",
    "check_space_free",
    "check_unread",
    "erase_entry",
    "is_plain_commit",
    "is_stale",
    "plan_commit",
    "plan_plain_commit",
    "reads_needed",
    "write_entry",
]

Slot = tuple[str, str]  # (namespace, key)


class KeyHead(NamedTuple):
    """A key's newest version (0: none yet) and who wrote it (None: nobody yet, or not
    read because no stale check needs it)."""

    version: int = 0
    author: str | None = None


NO_VERSION: Final = KeyHead()


class SpaceRule(NamedTuple):
    """Who may write to a space: ``members`` (None: every agent) and its creator."""

    members: tuple[str, ...] | None
    created_by: str


class ConflictState(NamedTuple):
    status: str  # open or resolved
    resolution: str | None


_EMPTY: Final[Mapping[Any, Any]] = MappingProxyType({})


class HeadRead(NamedTuple):
    """What a backend read inside the commit's transaction, before planning.

    ``keys`` must hold every slot :func:`reads_needed` lists; the other mappings hold
    what exists (a space, conflict or erasable key left out does not exist or holds
    nothing).
    """

    seq: int  # the agent's head seq (0: no event yet)
    hash: str  # its head hash (GENESIS_HASH before the first event)
    keys: Mapping[Slot, KeyHead] = _EMPTY
    spaces: Mapping[str, SpaceRule] = _EMPTY  # the existing rows of the spaces touched
    snapshot_taken: bool = False
    unread: frozenset[int] = frozenset()  # of the messages marked read: unread, to the agent
    conflicts: Mapping[int, ConflictState] = _EMPTY  # of the conflicts resolved
    erasable: Mapping[Slot, tuple[int, ...]] = _EMPTY  # versions that still hold a value
    runs: Mapping[str, str] = _EMPTY  # of the runs whose status is set: their status now


class CommitReads(NamedTuple):
    """What a commit's :class:`HeadRead` must cover, besides the agent's head."""

    slots: list[Slot]  # every (namespace, key) written, in order of first write
    authored: frozenset[Slot]  # of those, where the head's author matters (stale checks)
    spaces: list[str]  # spaces written to, broadcast in or created, sorted
    unread: list[int]  # messages marked read
    conflicts: list[int]  # conflicts resolved
    erasable: list[Slot]  # keys erased
    snapshot: str | None  # a snapshot name that must not be taken yet
    messages: int  # messages sent: ids the database assigns
    runs: tuple[str, ...] = ()  # runs whose status is set (their rows in ``runs``)


class PlannedConflict(NamedTuple):
    """A conflict row to insert (the database assigns its id), for ``writes[write]``."""

    namespace: str
    key: str
    version: int
    author: str
    head_version: int
    head_author: str | None
    seen_version: int | None
    created_at: float
    seq: int
    write: int


class CommitPlan:
    """What a commit writes, as :func:`plan_commit` decided it.

    ``versions[i]`` is the version of ``writes[i]``; ``entries`` are the payload's
    ``writes`` list; ``erasures`` pairs each :class:`EraseKey` of ``ops`` (in order) with
    the versions it erases; ``messages`` is how many :class:`SendMessage` need an id.
    """

    __slots__ = (
        "conflicts",
        "entries",
        "erased",
        "erasures",
        "messages",
        "ops",
        "prev_hash",
        "seq",
        "versions",
        "writes",
    )

    def __init__(
        self,
        seq: int,
        prev_hash: str,
        writes: Sequence[MemoryWrite],
        versions: list[int],
        entries: list[dict[str, Any]],
        conflicts: Sequence[PlannedConflict] = (),
    ) -> None:
        self.seq = seq
        self.prev_hash = prev_hash
        self.writes = writes
        self.versions = versions
        self.entries = entries
        self.conflicts = conflicts
        self.ops: Sequence[Op] = ()
        self.erasures: Sequence[tuple[EraseKey, tuple[int, ...]]] = ()
        self.erased: Sequence[dict[str, Any]] = ()
        self.messages = 0

    def stamp(
        self, event: Event, conflict_ids: Sequence[int] = (), message_ids: Sequence[int] = ()
    ) -> None:
        """Give ``event`` its seq, prev_hash and payload entries, with the ids the database
        assigned to the plan's conflicts and messages (in their order)."""
        event.seq = self.seq
        event.prev_hash = self.prev_hash
        if self.entries:
            event.payload["writes"] = self.entries
        if self.conflicts or conflict_ids or self.messages or message_ids or self.erased:
            self._stamp_ids(event, conflict_ids, message_ids)

    def _stamp_ids(
        self, event: Event, conflict_ids: Sequence[int], message_ids: Sequence[int]
    ) -> None:
        if len(conflict_ids) != len(self.conflicts) or len(message_ids) != self.messages:
            raise ValueError(
                f"the plan has {len(self.conflicts)} conflicts and {self.messages} messages,"
                f" not {len(conflict_ids)} and {len(message_ids)}"
            )
        for conflict, conflict_id in zip(self.conflicts, conflict_ids, strict=True):
            self.entries[conflict.write]["conflict_id"] = conflict_id
        if message_ids:
            event.payload["message_id"] = message_ids[-1]
            if len(message_ids) > 1:  # (an import's messages: each one's id, in op order)
                event.payload["message_ids"] = list(message_ids)
        if self.erased:
            event.payload.setdefault("erased", []).extend(self.erased)


# -- what to read ---------------------------------------------------------------------------


def is_plain_commit(writes: Sequence[MemoryWrite], ops: Sequence[Op], snapshot: str | None) -> bool:
    """Whether a commit depends on nothing but the agent's head and, with one write, that
    key's version: at most one write, outside any space and not stale-checked; no
    operations; no snapshot (every ``remember``, tool call, LLM call, decision). Plan it
    with :func:`plan_plain_commit`."""
    if ops or snapshot is not None or len(writes) > 1:
        return False
    return not writes or not (writes[0].check_stale or writes[0].namespace.startswith(SPACE_PREFIX))


def reads_needed(
    writes: Sequence[MemoryWrite],
    ops: Sequence[Op] = (),
    snapshot: str | None = None,
    replace_snapshot: bool = False,
) -> CommitReads:
    """What a backend must read, inside the commit's transaction, to plan it."""
    slots = list(dict.fromkeys((w.namespace, w.key) for w in writes))
    authored = frozenset((w.namespace, w.key) for w in writes if w.check_stale)
    spaces = {ns[len(SPACE_PREFIX) :] for ns, _ in slots if ns.startswith(SPACE_PREFIX)}
    unread: dict[int, None] = {}
    conflicts: dict[int, None] = {}
    erasable: dict[Slot, None] = {}
    runs: dict[str, None] = {}
    messages = 0
    for op in ops:
        if isinstance(op, SendMessage):
            messages += 1
            if op.space is not None:
                spaces.add(op.space)
        elif isinstance(op, CreateSpace):
            spaces.add(op.name)
        elif isinstance(op, MarkRead):
            unread[op.message_id] = None
        elif isinstance(op, ResolveConflict):
            conflicts[op.conflict_id] = None
        elif isinstance(op, EraseKey):
            erasable[(op.namespace, op.key)] = None
        elif isinstance(op, SetRunStatus):
            runs[op.run_id] = None
    taken = None if replace_snapshot else snapshot
    return CommitReads(
        slots,
        authored,
        sorted(spaces),
        [*unread],
        [*conflicts],
        [*erasable],
        taken,
        messages,
        tuple(runs),
    )


# -- the rules --------------------------------------------------------------------------------


def check_expected_seq(agent: str, head_seq: int, expected_seq: int | None) -> None:
    """Optimistic concurrency of read-then-write operations (restore): the head stayed."""
    if expected_seq is not None and head_seq != expected_seq:
        raise VersionConflict(
            f"agent {agent!r} moved from seq {expected_seq} to {head_seq} meanwhile",
            "",
            expected_seq,
            head_seq,
        )


def check_member(agent: str, space: str, rule: SpaceRule | None) -> None:
    """Refuse a non-member's write to (or broadcast in) a members-only space."""
    if rule is not None and rule.members is not None and agent not in rule.members:
        raise AccessDenied(
            f"agent {agent!r} is not a member of space {space!r}; ask its creator"
            f" {rule.created_by!r}"
        )


def check_expected_version(w: MemoryWrite, version: int) -> None:
    """Compare-and-set: the key is still at the version the write expects."""
    if w.expected_version is not None and version != w.expected_version:
        raise VersionConflict(
            f"{w.key!r} in {w.namespace!r} is at version {version}, not the expected"
            f" {w.expected_version}; read it again and retry",
            w.key,
            w.expected_version,
            version,
        )


def is_stale(w: MemoryWrite, agent: str, head: KeyHead) -> bool:
    """A stale-checked write made without having seen the head another agent wrote (it
    still succeeds, and a conflict row records it)."""
    return (
        w.check_stale
        and head.version != 0
        and head.author != agent
        and w.seen_version != head.version
    )


def check_unread(agent: str, message_id: int, unread: bool) -> None:
    if not unread:
        raise NotFound(
            f"agent {agent!r} has no unread message {message_id} (read it with read_messages())"
        )


def check_space_free(name: str, spaces: Mapping[str, SpaceRule]) -> None:
    if name in spaces:
        raise InvalidInput(f"a space named {name!r} already exists")


def check_resolvable(
    conflict_id: int, state: ConflictState | None, resolved_now: str | None
) -> None:
    """A conflict is resolved once: it exists, is open, and was not resolved earlier in
    this commit (``resolved_now``: how)."""
    if resolved_now is not None:
        raise InvalidInput(f"conflict {conflict_id} is already resolved ({resolved_now})")
    if state is None:
        raise NotFound(f"no open conflict with id {conflict_id}")
    if state.status != "open":
        raise InvalidInput(f"conflict {conflict_id} is already resolved ({state.resolution})")


def check_erase(op: EraseKey, agent: str) -> None:
    """Refuse an erasure outside the acting agent's own memory."""
    own = agent_namespace(agent)
    if op.namespace != own:
        raise InvalidInput(
            f"agent {agent!r} can only erase keys of its own memory ({own!r}),"
            f" not of {op.namespace!r}"
        )


RUN_STATUSES: Final = ("active", "paused")


def check_run_status(agent: str, op: SetRunStatus, event_run: Any, current: str | None) -> None:
    """A run's status changes with an event of that run (``event_run``: the event's
    ``payload["run_id"]``), to ``active`` or ``paused``; a resume (``active``) needs the run
    paused (``current``: its status in the store, None without a row)."""
    if op.status not in RUN_STATUSES:
        raise InvalidInput(f"a run's status is 'active' or 'paused', not {op.status!r}")
    if not isinstance(op.run_id, str) or not op.run_id or event_run != op.run_id:
        raise InvalidInput(
            f"the status of run {op.run_id!r} changes only with an event of that run"
            f" (payload run_id {op.run_id!r}), not of run {event_run!r}"
        )
    if op.status == "active" and current != "paused":
        raise NotFound(f"run {op.run_id!r} of agent {agent!r} is not paused")


def check_snapshot_free(agent: str, snapshot: str, taken: bool) -> None:
    if taken:
        raise InvalidInput(
            f"agent {agent!r} already has a snapshot named {snapshot!r};"
            " choose another name or pass replace=True"
        )


def erase_entry(op: EraseKey, agent: str, versions: Sequence[int]) -> dict[str, Any]:
    """What the event payload records about one erasure (``payload["erased"]`` items);
    ``NotFound`` when there is nothing to erase."""
    if not versions:
        raise NotFound(
            f"agent {agent!r} has no value to erase under key {op.key!r}"
            " (no version of it holds one)"
        )
    return {"key": op.key, "versions": list(versions)}


def write_entry(w: MemoryWrite, version: int, own: str) -> dict[str, Any]:
    """What the event payload records about one write (``payload["writes"]`` items)."""
    entry: dict[str, Any] = {
        "encoding": w.encoding,
        "key": w.key,
        "sha256": w.sha256,
        "version": version,
    }
    if w.namespace != own:
        entry["namespace"] = w.namespace
    if w.tags:
        entry["tags"] = list(w.tags)
    if w.kind is not None:
        entry["kind"] = w.kind
    if w.expires_at is not None:
        entry["expires_at"] = w.expires_at
    if w.created_at is not None:
        entry["created_at"] = w.created_at
    return entry


# -- the planner ------------------------------------------------------------------------------


def plan_commit(
    event: Event,
    writes: Sequence[MemoryWrite],
    head: HeadRead,
    *,
    ops: Sequence[Op] = (),
    snapshot: str | None = None,
    replace_snapshot: bool = False,
    expected_seq: int | None = None,
) -> CommitPlan:
    """Apply the rules of a commit to what the backend read (``head``): the plan of the
    rows to write, or the error the commit raises. Pure: no I/O, ``event`` untouched.

    The checks run in this order: the expected seq; per write, membership, then
    compare-and-set; the operations in order; the snapshot name.
    """
    agent = event.agent
    check_expected_seq(agent, head.seq, expected_seq)
    seq = head.seq + 1
    versions, entries, conflicts = _plan_writes(agent, seq, event.time, writes, head)
    plan = CommitPlan(seq, head.hash, writes, versions, entries, conflicts)
    if ops:
        plan.ops = ops
        run = event.payload.get("run_id")
        plan.erasures, plan.erased, plan.messages = _plan_ops(agent, ops, head, run)
    if snapshot is not None and not replace_snapshot:
        check_snapshot_free(agent, snapshot, head.snapshot_taken)
    return plan


def plan_plain_commit(
    event: Event,
    writes: Sequence[MemoryWrite],
    head_seq: int,
    head_hash: str,
    key_version: int = 0,
    expected_seq: int | None = None,
) -> CommitPlan:
    """:func:`plan_commit` of a commit for which :func:`is_plain_commit` holds (the caller
    checked it), from the agent's head and the written key's version alone: the same
    rules (such a commit has no membership, stale, operation or snapshot rule to apply),
    without building a :class:`HeadRead`."""
    agent = event.agent
    if expected_seq is not None:
        check_expected_seq(agent, head_seq, expected_seq)
    if not writes:
        return CommitPlan(head_seq + 1, head_hash, writes, [], [])
    w = writes[0]
    if w.expected_version is not None:
        check_expected_version(w, key_version)
    version = key_version + 1
    entry = write_entry(w, version, agent_namespace(agent))
    return CommitPlan(head_seq + 1, head_hash, writes, [version], [entry])


def _key_head(head: HeadRead, slot: Slot) -> KeyHead:
    found = head.keys.get(slot)
    if found is None:
        raise ValueError(f"the head read has no version for {slot!r}; read every slot")
    return found


def _plan_writes(
    agent: str, seq: int, time: float, writes: Sequence[MemoryWrite], head: HeadRead
) -> tuple[list[int], list[dict[str, Any]], list[PlannedConflict]]:
    """Versions, payload entries and conflict rows of the writes, in order. A key written
    twice in one commit gets two versions; the second sees the first as its head."""
    own = agent_namespace(agent)
    versions: list[int] = []
    entries: list[dict[str, Any]] = []
    conflicts: list[PlannedConflict] = []
    written: dict[Slot, KeyHead] = {}
    for index, w in enumerate(writes):
        slot = (w.namespace, w.key)
        if w.namespace.startswith(SPACE_PREFIX):
            space = w.namespace[len(SPACE_PREFIX) :]
            check_member(agent, space, head.spaces.get(space))
        current = written.get(slot) or _key_head(head, slot)
        check_expected_version(w, current.version)
        version = current.version + 1
        if is_stale(w, agent, current):
            seen = w.seen_version
            conflict = (w.namespace, w.key, version, agent, current.version, current.author, seen)
            conflicts.append(PlannedConflict(*conflict, time, seq, index))
        written[slot] = KeyHead(version, agent)
        versions.append(version)
        entries.append(write_entry(w, version, own))
    return versions, entries, conflicts


def _plan_ops(
    agent: str, ops: Sequence[Op], head: HeadRead, run: Any = None
) -> tuple[list[tuple[EraseKey, tuple[int, ...]]], list[dict[str, Any]], int]:
    """Check the operations in order (each sees the ones before it); return the erasures
    (with their versions), their payload entries and the number of messages sent. ``run``
    is the event's ``payload["run_id"]``."""
    spaces = dict(head.spaces)
    runs = dict(head.runs)
    marked: set[int] = set()
    resolved: dict[int, str] = {}
    erased: set[Slot] = set()
    erasures: list[tuple[EraseKey, tuple[int, ...]]] = []
    entries: list[dict[str, Any]] = []
    messages = 0
    for op in ops:
        if isinstance(op, SendMessage):
            if op.space is not None:
                check_member(agent, op.space, spaces.get(op.space))
            messages += 1
        elif isinstance(op, MarkRead):
            fresh = op.message_id in head.unread and op.message_id not in marked
            check_unread(agent, op.message_id, fresh)
            marked.add(op.message_id)
        elif isinstance(op, CreateSpace):
            check_space_free(op.name, spaces)
            spaces[op.name] = SpaceRule(op.members, agent)
        elif isinstance(op, ResolveConflict):
            state = head.conflicts.get(op.conflict_id)
            check_resolvable(op.conflict_id, state, resolved.get(op.conflict_id))
            resolved[op.conflict_id] = op.resolution
        elif isinstance(op, EraseKey):
            check_erase(op, agent)
            slot = (op.namespace, op.key)  # erased earlier in this commit: nothing left
            versions = () if slot in erased else head.erasable.get(slot, ())
            entries.append(erase_entry(op, agent, versions))
            erasures.append((op, versions))
            erased.add(slot)
        elif isinstance(op, SetRunStatus):
            check_run_status(agent, op, run, runs.get(op.run_id))
            runs[op.run_id] = op.status
        else:
            raise TypeError(f"unknown store operation {op!r}")
    return erasures, entries, messages
