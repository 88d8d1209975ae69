"""One PostgreSQL commit in two round trips (psycopg's pipeline mode).

1. :meth:`RoundTrips.begin` queues ``BEGIN``; the advisory locks of
   :func:`~.locks.lock_plan`; the agent's head (none before its first commit, which
   inserts the agent row with its event) with each written key's head version and
   author; the preconditions of :func:`~octopoda._store.reads.queue_preconditions`; and
   one reserved id per message sent.
2. :meth:`RoundTrips.prepare` collects them into a
   :class:`~octopoda._store.planner.HeadRead`, lets the planner decide, reserves the
   conflicts' ids when a write is stale (one more round trip, only then) and stamps the
   event. The pipeline runs (it hashes the event).
3. :meth:`RoundTrips.finish` queues the memory rows, the operations, the event with the
   new head, the status and the snapshot, and ``COMMIT``. A commit of one memory row and no
   operations (every ``remember``) writes the row, the event and the head in one statement
   (:data:`~.schema.INSERT_MEMORY_AND_EVENT`).

A plain commit (:func:`~octopoda._store.planner.is_plain_commit`: every ``remember``, tool
call, LLM call and decision) without a status change sends no ``BEGIN`` or ``COMMIT``: its
statements run in the implicit transaction that the pipeline's ``Sync`` ends (psycopg
fetches round trip 1 with a flush request, which does not end it), so the locks are held
from the head read to the commit as in an explicit one. Round trip 1 writes nothing and
round trip 2 is one statement, so a failure at any point leaves nothing half written; the
``Sync``'s reply, which the pipeline's exit waits for, is sent after the commit is durable.

Before any of it, :func:`check_storable` refuses what PostgreSQL would reject halfway
through (a NUL character, a lone surrogate).
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ..._audit.chain import GENESIS_HASH
from ..._errors import InvalidInput
from ..._records import Event
from ..ops import (
    CreateSpace,
    EraseKey,
    MarkRead,
    MemoryWrite,
    Op,
    ResolveConflict,
    SendMessage,
    SetRunStatus,
)
from ..planner import (
    NO_VERSION,
    CommitPlan,
    HeadRead,
    KeyHead,
    is_plain_commit,
    plan_commit,
    plan_plain_commit,
    reads_needed,
)
from ..reads import Preconditions, collect_preconditions, queue_preconditions
from ..run_reads import run_of
from . import schema as q
from .driver import Connection
from .locks import lock_plan, lock_statement
from .search_index import SEARCH_LOCK, SEARCH_LOCK_SQL

__all__ = ["Attempt", "RoundTrips", "check_storable", "reads_on"]


def _check_text(text: str | None, what: str) -> None:
    """Refuse text PostgreSQL cannot hold (NUL) or that is not valid Unicode."""
    if text is None:
        return
    if "\x00" in text:
        raise InvalidInput(
            f"{what} {text[:40]!r} contains a NUL character, which PostgreSQL cannot store;"
            " remove it"
        )
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidInput(
                f"{what} {text[:40]!r} is not valid Unicode (a lone surrogate)"
            ) from None


def _check_op_text(op: Op) -> None:
    if isinstance(op, SendMessage):
        for text, what in ((op.recipient, "recipient"), (op.space, "space")):
            _check_text(text, what)
        _check_text(op.message_type, "message type")
        _check_text(op.body, "message body")
        _check_text(op.body_sha256, "message digest")
        _check_text(op.run_id, "run id")
    elif isinstance(op, CreateSpace):
        _check_text(op.name, "space name")
        for member in op.members or ():
            _check_text(member, "space member")
    elif isinstance(op, ResolveConflict):
        _check_text(op.resolution, "resolution")
    elif isinstance(op, EraseKey):
        _check_text(op.key, "key")
    elif isinstance(op, SetRunStatus):
        _check_text(op.run_id, "run id")
        _check_text(op.status, "run status")
        _check_text(op.reason, "run status reason")


def check_storable(
    event: Event,
    writes: Sequence[MemoryWrite],
    ops: Sequence[Op],
    snapshot: str | None,
    status: tuple[str, str | None] | None,
) -> None:
    """Refuse, before any I/O, what PostgreSQL would reject halfway through a commit."""
    _check_text(event.agent, "agent id")
    _check_text(event.kind, "event kind")
    _check_text(run_of(event), "run id")
    _check_text(snapshot, "snapshot name")
    for text in status or ():
        _check_text(text, "agent status")
    for w in writes:
        _check_text(w.namespace, "namespace")
        _check_text(w.key, "key")
        for tag in w.tags:
            _check_text(tag, "tag")
        _check_text(w.kind, "kind")
        if w.encoding == "json" and isinstance(w.data, str) and "\x00" in w.data:
            raise InvalidInput(
                f"the JSON text of {w.key!r} holds a raw NUL character, which PostgreSQL cannot"
                " store; encode values with Octopoda, which writes it as \\u0000"
            )
    for op in ops:
        _check_op_text(op)


@contextlib.contextmanager
def reads_on(local: threading.local, conn: Connection) -> Iterator[None]:
    """The store's reads on this thread inside the block (those of the events pipeline's
    processors: the loop guard catching up on other writers' events) run on ``conn``, in
    the commit's own transaction, rather than wait for a second pooled connection while
    the commit holds this one (more threads than the pool has connections would wait on
    each other until the pool's timeout)."""
    previous = getattr(local, "conn", None)
    local.conn = conn
    try:
        yield
    finally:
        local.conn = previous


class Attempt:
    """How far one commit attempt got: once ``chained``, it is never repeated blindly."""

    __slots__ = ("chained", "in_pipeline", "sent")

    def __init__(self) -> None:
        self.chained = False
        self.in_pipeline = False
        self.sent = False  # every statement queued: only the pipeline's end is left


class RoundTrips:
    """One commit attempt's statements and state across its round trips (module doc)."""

    def __init__(
        self,
        tracer: Callable[[str], None] | None,
        event: Event,
        writes: Sequence[MemoryWrite],
        ops: Sequence[Op],
        snapshot: str | None,
        replace_snapshot: bool,
        status: tuple[str, str | None] | None,
        expected_seq: int | None,
    ) -> None:
        self.tracer = tracer
        self.event = event
        self.writes = writes
        self.ops = ops
        self.snapshot = snapshot
        self.replace_snapshot = replace_snapshot
        self.status = status
        self.expected_seq = expected_seq
        self.needs = reads_needed(writes, ops, snapshot, replace_snapshot)
        self.lock_sql, self.lock_params = lock_statement(
            *lock_plan(event.agent, self.needs.slots, ops)
        )
        self.cursors: dict[str, Any] = {}
        self.queued: Preconditions | None = None
        self.message_cursors: list[Any] = []
        self.plan: CommitPlan | None = None
        self.conflict_ids: list[int] = []
        self.first = False
        # A plain commit without a status writes one statement in round trip 2: it needs no
        # BEGIN and COMMIT (module doc).
        self.implicit = status is None and is_plain_commit(writes, ops, snapshot)
        self.message_ids: list[int] = []

    @property
    def versions(self) -> list[int]:
        return [] if self.plan is None else self.plan.versions

    def run(self, conn: Connection, sql: str, params: Sequence[Any] | None = None) -> Any:
        if self.tracer is not None:
            self.tracer(sql)
        return conn.execute(sql, params)

    def begin(self, conn: Connection) -> None:
        """Queue round trip 1: lock, create the agent row, read what the commit depends on."""
        agent = self.event.agent
        run = self.run
        if not self.implicit:
            run(conn, "BEGIN")
        run(conn, self.lock_sql, self.lock_params)
        slots = self.needs.slots
        if len(slots) == 1:
            self.cursors["head"] = run(conn, q.HEAD_AND_KEY, (agent, *slots[0]))
        else:
            self.cursors["head"] = run(conn, q.HEAD, (agent,))
        if len(slots) > 1:
            names = [s[0] for s in slots], [s[1] for s in slots]
            self.cursors["keys"] = run(conn, q.KEY_HEADS, names)
        self.queued = queue_preconditions(
            q.READS, lambda sql, params: run(conn, sql, params), agent, self.needs
        )
        self.message_cursors = [run(conn, q.NEXT_MESSAGE_ID) for _ in range(self.needs.messages)]

    def prepare(self, conn: Connection) -> None:
        """Plan the commit on what round trip 1 read, reserve the conflicts' ids, and stamp
        the event. Raises (before the pipeline runs) what the planner raises."""
        event, writes = self.event, self.writes
        head = self.cursors["head"].fetchone()
        self.first = head[0] is None  # (the agent's first commit: finish inserts its row)
        if self.first:
            head = (0, GENESIS_HASH, *head[2:])
        if is_plain_commit(writes, self.ops, self.snapshot):  # every remember
            version = (head[2] or 0) if writes else 0
            plan = plan_plain_commit(event, writes, head[0], head[1], version, self.expected_seq)
        else:
            plan = plan_commit(
                event,
                writes,
                self._head_read(head),
                ops=self.ops,
                snapshot=self.snapshot,
                replace_snapshot=self.replace_snapshot,
                expected_seq=self.expected_seq,
            )
        self.plan = plan
        self.message_ids = [cursor.fetchone()[0] for cursor in self.message_cursors]
        if plan.conflicts:  # their ids go into the payload: one more round trip, only here
            reserved = self.run(conn, q.NEXT_CONFLICT_IDS, (len(plan.conflicts),))
            self.conflict_ids = [r[0] for r in reserved]
        plan.stamp(event, self.conflict_ids, self.message_ids)

    def _head_read(self, head: tuple[Any, ...]) -> HeadRead:
        slots = self.needs.slots
        keys: dict[tuple[str, str], KeyHead] = {}
        if len(slots) == 1:
            keys[slots[0]] = KeyHead(head[2] or 0, head[3])
        elif slots:
            for slot, found in zip(slots, self.cursors["keys"].fetchall(), strict=True):
                keys[slot] = NO_VERSION if found[0] is None else KeyHead(*found)
        assert self.queued is not None, "begin() queues the reads prepare() collects"
        return HeadRead(head[0], head[1], keys, **collect_preconditions(q.READS, self.queued))

    def finish(self, conn: Connection, event: Event) -> None:
        """Queue round trip 2: rows, operations, the event, the head, then COMMIT."""
        plan = self.plan
        assert plan is not None, "prepare() plans what finish() writes"
        run = self.run
        agent, seq, time = event.agent, plan.seq, self.event.time
        rows = [
            q.memory_row(w, v, agent, seq, time)
            for w, v in zip(plan.writes, plan.versions, strict=True)
        ]
        chained = (event.payload_text, event.prev_hash, event.hash, run_of(event))
        new_head = (seq, event.hash, event.time, agent)
        created = (time,) if self.first else ()  # (the agent row's created_at)
        event_row: tuple[Any, ...] = (agent, seq, event.time, event.kind, *chained, *new_head)
        event_row += created
        if len(rows) == 1 and not plan.conflicts and not plan.ops:  # (every remember)
            sql = q.INSERT_MEMORY_AND_FIRST_EVENT if self.first else q.INSERT_MEMORY_AND_EVENT
            run(conn, sql, (*rows[0], *event_row))
            self._finish_after_event(conn, agent, seq, event.time)
            return
        if len(rows) == 1:
            run(conn, q.INSERT_MEMORY, rows[0])
        elif rows:
            if self.tracer is not None:
                self.tracer(q.INSERT_MEMORY)
            conn.cursor().executemany(q.INSERT_MEMORY, rows)
        for conflict_id, conflict in zip(self.conflict_ids, plan.conflicts, strict=True):
            run(conn, q.INSERT_CONFLICT, (conflict_id, *conflict[:9]))
        self._apply_ops(conn, plan, agent, seq, time)
        run(conn, q.INSERT_FIRST_EVENT if self.first else q.INSERT_EVENT, event_row)
        self._finish_after_event(conn, agent, seq, event.time)

    def _finish_after_event(self, conn: Connection, agent: str, seq: int, time: float) -> None:
        """Queue what follows the event: the status, the snapshot, then COMMIT."""
        run = self.run
        if self.status is not None:
            run(conn, q.SET_STATUS, (*self.status, agent))
        if self.snapshot is not None:
            sql = q.REPLACE_SNAPSHOT if self.replace_snapshot else q.INSERT_SNAPSHOT
            run(conn, sql, (agent, self.snapshot, seq, time))
        if not self.implicit:
            run(conn, "COMMIT")

    def _apply_ops(
        self, conn: Connection, plan: CommitPlan, agent: str, seq: int, time: float
    ) -> None:
        run = self.run
        message_ids = iter(self.message_ids)
        erasures = iter(plan.erasures)
        for op in plan.ops:
            if isinstance(op, SendMessage):
                sender = (next(message_ids), agent, op.recipient, op.space, op.message_type)
                sent = (op.body, op.body_sha256, op.run_id, time, seq)
                run(conn, q.INSERT_MESSAGE, (*sender, *sent))
            elif isinstance(op, MarkRead):
                run(conn, q.MARK_READ, (time, op.message_id, agent))
            elif isinstance(op, CreateSpace):
                members = None if op.members is None else json.dumps(list(op.members))
                run(conn, q.INSERT_SPACE, (op.name, time, agent, members))
            elif isinstance(op, ResolveConflict):
                run(conn, q.RESOLVE_CONFLICT, (op.resolution, agent, time, op.conflict_id))
            elif isinstance(op, EraseKey):
                _, versions = next(erasures)
                run(conn, q.ERASE, (op.namespace, op.key, list(versions)))
                run(conn, SEARCH_LOCK_SQL, (SEARCH_LOCK,))  # (no catch-up writes it back)
                run(conn, q.DROP_SEARCH, (op.namespace, op.key))
                run(conn, q.DROP_VECTOR, (op.namespace, op.key))
            elif isinstance(op, SetRunStatus):
                status = (op.run_id, op.status, op.reason, time, seq)
                run(conn, q.SET_RUN_STATUS, (agent, *status))
