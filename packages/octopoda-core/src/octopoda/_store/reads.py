"""The reads of every SQL backend, written once: statements, pure builders and the
:class:`SqlReads` mixin that implements the :class:`~octopoda._store.protocol.Store` reads.

SQL is written once with ``?`` placeholders; a :class:`Dialect` says how one engine spells
the few things that differ (placeholders, the value columns, tag and list filters, the
latest-version-per-key query) and parses its rows. :class:`ReadSql` holds one dialect's
statements, built once at import. A backend then provides two primitives
(``_fetchone``/``_fetchall``, which run a statement and map driver errors) and inherits
the reads.

The commit's own reads (what :func:`~octopoda._store.planner.reads_needed` lists besides
the agent's head and key versions) are here too: :func:`queue_preconditions` sends them
through the backend's ``run`` and :func:`collect_preconditions` turns the results into the
planner's types, so SQLite (statement by statement) and PostgreSQL (pipelined in one round
trip) read them alike.
"""

from collections.abc import Callable, Iterator, Sequence
from typing import Any, ClassVar, Final, NamedTuple

from .._audit.signing import SignedHead
from .._errors import InvalidInput
from .._records import Event
from .filters import key_range, live_conditions, prefix_upper_bound
from .planner import CommitReads, ConflictState, SpaceRule
from .rows import (
    AgentRow,
    ConflictRow,
    MessageRow,
    SnapshotRow,
    SpaceRow,
    StoredRow,
    agent_row,
    event_of,
    members_of,
    snapshot_row,
)

__all__ = [
    "CHUNK",
    "Dialect",
    "Preconditions",
    "ReadSql",
    "SqlReads",
    "collect_preconditions",
    "prefix_upper_bound",
    "queue_preconditions",
]

CHUNK: Final = 5000  # rows per statement when a read iterates a whole table
VALUE_BUDGET: Final = 8 * 2**20  # bytes of values one statement of such a read returns

AGENT_COLS: Final = "id, created_at, status, head_seq, head_hash, last_active, status_reason"
CONFLICT_COLS: Final = (
    "id, namespace, key, version, author, head_version, head_author, seen_version,"
    " created_at, seq, status, resolution, resolved_by, resolved_at"
)
MESSAGE_COLS: Final = (
    "id, sender, recipient, space, message_type, body, created_at, read_at, seq, body_sha256,"
    " run_id"
)
EVENT_COLS: Final = "agent, seq, time, kind, payload, prev_hash, hash"


class Dialect:
    """How one SQL engine spells what differs. A backend's schema module subclasses it."""

    param: ClassVar[str] = "?"  # the driver's placeholder
    memory_columns: ClassVar[str]  # the memories columns :meth:`row` parses, in its order
    value_size: ClassVar[str]  # SQL: the stored bytes of one memories row's value

    def sql(self, template: str) -> str:
        """A statement written with ``?`` placeholders, in this dialect."""
        return template if self.param == "?" else template.replace("?", self.param)

    def row(self, r: tuple[Any, ...]) -> StoredRow:
        raise NotImplementedError

    def members(self, value: Any) -> tuple[str, ...] | None:
        """A space's ``members`` column as the store returns it."""
        raise NotImplementedError

    def any_of(self, column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        """``column`` is one of ``values`` (a non-empty list)."""
        raise NotImplementedError

    def has_tags(self, tags: Sequence[str]) -> tuple[list[str], list[Any]]:
        """Conditions on ``m.tags``: the row carries every one of ``tags``."""
        raise NotImplementedError

    def latest_per_key(self, where: str, namespace: str) -> tuple[str, list[Any], str]:
        """``SELECT`` of the newest version (alias ``m``) of each key matching ``where``
        (a condition on ``memories``), the extra parameters that follow ``where``'s, and
        the column to order by."""
        raise NotImplementedError

    walks_key_index: ClassVar[bool] = False
    """Whether a limited :meth:`Reads.current` should walk the key index instead
    (:meth:`latest_walk`): SQLite then stops after ``offset + limit`` rows instead of grouping
    and sorting the whole range (a 10-row page of 100,000 keys: 115 ms to 0.2 ms)."""

    def latest_walk(self, where: str, as_of_seq: int | None) -> tuple[str, list[Any], str]:
        """Like :meth:`latest_per_key`, with ``where`` a condition on ``m``: the rows in key
        order that are their key's newest version (as of ``as_of_seq``), probed one by one."""
        raise NotImplementedError

    def limit_offset(self, limit: int | None, offset: int) -> tuple[str, list[Any]]:
        sql, params = "", []
        if limit is not None:
            sql, params = f" LIMIT {self.param}", [limit]
        if offset:
            sql += f" OFFSET {self.param}"
            params.append(offset)
        return sql, params

    def space(self, r: tuple[Any, ...]) -> SpaceRow:
        return SpaceRow(r[0], r[1], r[2], members_of(r[3], r[0]))


class ReadSql:
    """One dialect's read statements, built once."""

    def __init__(self, dialect: Dialect) -> None:
        self.dialect = dialect
        self.row = dialect.row
        q = dialect.sql
        cols = dialect.memory_columns
        by_key = "FROM memories WHERE namespace = ? AND key = ?"
        self.latest = q(f"SELECT {cols} {by_key} ORDER BY version DESC LIMIT 1")
        self.latest_as_of = q(f"SELECT {cols} {by_key} AND seq <= ? ORDER BY version DESC LIMIT 1")
        self.version = q(f"SELECT {cols} {by_key} AND version = ?")
        self.history = q(f"SELECT {cols} {by_key} ORDER BY version DESC")
        self.history_limit = q(f"SELECT {cols} {by_key} ORDER BY version DESC LIMIT ?")
        self.all_versions = q(
            f"SELECT {cols} FROM memories WHERE namespace = ? AND (key, version) > (?, ?)"
            " ORDER BY key, version LIMIT ?"
        )
        self.version_sizes = q(
            f"SELECT key, version, {dialect.value_size} FROM memories WHERE namespace = ?"
            " AND (key, version) > (?, ?) ORDER BY key, version LIMIT ?"
        )
        self.value_bytes = q(
            f"SELECT COALESCE(SUM({dialect.value_size}), 0) FROM memories WHERE namespace = ?"
        )
        # A commit's preconditions (see queue_preconditions).
        self.key_head = q(f"SELECT version, author {by_key} ORDER BY version DESC LIMIT 1")
        self.erasable = q(
            f"SELECT version {by_key} AND NOT erased AND encoding <> 'tombstone' ORDER BY version"
        )
        self.snapshot_taken = q("SELECT 1 FROM snapshots WHERE agent = ? AND name = ?")
        self.unread_message = q(
            "SELECT 1 FROM messages WHERE id = ? AND recipient = ? AND read_at IS NULL"
        )
        self.conflict_state = q("SELECT status, resolution FROM conflicts WHERE id = ?")
        self.run_status = q("SELECT status FROM runs WHERE agent = ? AND run_id = ?")
        self._other_reads(q)

    def _other_reads(self, q: Callable[[str], str]) -> None:
        """The statements of the tables besides memories."""
        self.chain_chunk = q(
            "SELECT seq, time, kind, payload, prev_hash, hash FROM events"
            " WHERE agent = ? AND seq > ? ORDER BY seq LIMIT ?"
        )
        self.agent = q(f"SELECT {AGENT_COLS} FROM agents WHERE id = ?")
        self.agents = f"SELECT {AGENT_COLS} FROM agents ORDER BY id"
        snapshot_cols = "SELECT agent, name, seq, created_at FROM snapshots WHERE agent = ?"
        self.snapshot = q(snapshot_cols + " AND name = ?")
        self.snapshots = q(snapshot_cols + " ORDER BY seq, name")
        space_cols = "SELECT name, created_at, created_by, members FROM spaces"
        self.space = q(space_cols + " WHERE name = ?")
        self.spaces = space_cols + " ORDER BY name"
        self.conflict = q(f"SELECT {CONFLICT_COLS} FROM conflicts WHERE id = ?")
        self.message = q(f"SELECT {MESSAGE_COLS} FROM messages WHERE id = ?")
        # The newest direct messages an agent sent or received (party x3, limit), newest first.
        self.party_messages = q(
            f"SELECT * FROM (SELECT {MESSAGE_COLS} FROM messages WHERE recipient = ?"
            f" UNION ALL SELECT {MESSAGE_COLS} FROM messages WHERE sender = ?"
            " AND recipient IS NOT NULL AND recipient <> ?) m ORDER BY id DESC LIMIT ?"
        )
        self.signed_heads = q(
            "SELECT agent, seq, public_key, hash, signature, created_at FROM signed_heads"
            " WHERE agent = ? ORDER BY seq, public_key"
        )

    def spaces_named(self, names: Sequence[str]) -> tuple[str, list[Any]]:
        """The rows (name, members, created_by) of the spaces ``names`` that exist."""
        where, params = self.dialect.any_of("name", names)
        return f"SELECT name, members, created_by FROM spaces WHERE {where} ORDER BY name", params

    def current(
        self,
        namespace: str,
        *,
        prefix: str,
        tags: Sequence[str],
        as_of_seq: int | None,
        now: float | None,
        limit: int | None,
        offset: int,
        include_dead: bool,
        kinds: Sequence[str] = (),
    ) -> tuple[str, list[Any]]:
        """The latest version per key (see ``Store.current``)."""
        d = self.dialect
        p = d.param
        walk = limit is not None and d.walks_key_index
        m = "m." if walk else ""
        range_conditions, params = key_range(f"{m}key", prefix, p)
        inner = [f"{m}namespace = {p}", *range_conditions]
        params.insert(0, namespace)
        if as_of_seq is not None:
            inner.append(f"{m}seq <= {p}")
            params.append(as_of_seq)
        if walk:
            sql, extra, order = d.latest_walk(" AND ".join(inner), as_of_seq)
        else:
            sql, extra, order = d.latest_per_key(" AND ".join(inner), namespace)
        params += extra
        outer, outer_params = live_conditions(
            d, now=now, tags=tags, include_dead=include_dead, kinds=kinds
        )
        params += outer_params
        if outer:
            sql += (" AND " if walk else " WHERE ") + " AND ".join(outer)
        page, page_params = d.limit_offset(limit, offset)
        return f"{sql} ORDER BY {order}{page}", params + page_params

    def events(
        self,
        *,
        until_seq: int | None,
        since: float | None,
        until: float | None,
        kinds: Sequence[str],
        run_id: str | None = None,
    ) -> tuple[str, list[Any]]:
        """One chunk of an agent's events (of one run: ``run_id``). Its parameters are
        ``agent, after_seq, *extra, size``; the list returned is ``extra``."""
        p = self.dialect.param
        clauses = [f"agent = {p}", f"seq > {p}"]
        extra: list[Any] = []
        conditions = (("run_id =", run_id), ("seq <=", until_seq), ("time >=", since))
        for condition, value in (*conditions, ("time <", until)):
            if value is not None:
                clauses.append(f"{condition} {p}")
                extra.append(value)
        if kinds:
            where, values = self.dialect.any_of("kind", kinds)
            clauses.append(where)
            extra += values
        sql = (
            f"SELECT {EVENT_COLS} FROM events WHERE {' AND '.join(clauses)} ORDER BY seq LIMIT {p}"
        )
        return sql, extra

    def conflicts(
        self, namespace: str, key: str | None, status: str | None
    ) -> tuple[str, list[Any]]:
        p = self.dialect.param
        sql = f"SELECT {CONFLICT_COLS} FROM conflicts WHERE namespace = {p}"
        params: list[Any] = [namespace]
        if key is not None:
            sql += f" AND key = {p}"
            params.append(key)
        if status is not None:
            sql += f" AND status = {p}"
            params.append(status)
        return sql + " ORDER BY id", params

    def messages(
        self,
        *,
        recipient: str | None,
        space: str | None,
        unread_only: bool,
        since: float | None,
        after_id: int,
        limit: int | None,
    ) -> tuple[str, list[Any]]:
        """Direct messages to ``recipient`` or broadcasts to ``space`` (exactly one given)."""
        p = self.dialect.param
        sql = f"SELECT {MESSAGE_COLS} FROM messages WHERE id > {p}"
        params: list[Any] = [after_id]
        if recipient is not None:
            sql += f" AND recipient = {p}"
            params.append(recipient)
        else:
            sql += f" AND space = {p} AND recipient IS NULL"
            params.append(space)
        if unread_only:
            sql += " AND read_at IS NULL"
        if since is not None:
            sql += f" AND created_at >= {p}"
            params.append(since)
        page, page_params = self.dialect.limit_offset(limit, 0)
        return f"{sql} ORDER BY id{page}", params + page_params


def value_batches(sizes: Sequence[Any], budget: int = VALUE_BUDGET) -> Iterator[int]:
    """How many of the next rows (of value ``sizes``, in order) to read per statement: as
    many as fit in ``budget`` bytes, at least one."""
    count = total = 0
    for size in sizes:
        size = size if type(size) is int else 0
        if count and total + size > budget:
            yield count
            count = total = 0
        count += 1
        total += size
    if count:
        yield count


# -- a commit's preconditions ----------------------------------------------------------------

Run = Callable[[str, Sequence[Any]], Any]  # executes a statement, returns its cursor


class Preconditions(NamedTuple):
    """The cursors of a commit's precondition reads, in flight until collected."""

    spaces: Any
    snapshot: Any
    unread: list[tuple[int, Any]]
    conflicts: list[tuple[int, Any]]
    erasable: list[tuple[tuple[str, str], Any]]
    runs: list[tuple[str, Any]]


def queue_preconditions(sql: ReadSql, run: Run, agent: str, needs: CommitReads) -> Preconditions:
    """Send the reads of what the commit's operations, spaces and snapshot depend on
    (everything :class:`~octopoda._store.planner.HeadRead` holds besides the head and the
    key versions)."""
    spaces = run(*sql.spaces_named(needs.spaces)) if needs.spaces else None
    snapshot = None
    if needs.snapshot is not None:
        snapshot = run(sql.snapshot_taken, (agent, needs.snapshot))
    return Preconditions(
        spaces,
        snapshot,
        [(i, run(sql.unread_message, (i, agent))) for i in needs.unread],
        [(i, run(sql.conflict_state, (i,))) for i in needs.conflicts],
        [(slot, run(sql.erasable, slot)) for slot in needs.erasable],
        [(run_id, run(sql.run_status, (agent, run_id))) for run_id in needs.runs],
    )


def collect_preconditions(sql: ReadSql, queued: Preconditions) -> dict[str, Any]:
    """The results of :func:`queue_preconditions`, as ``HeadRead`` fields."""
    spaces: dict[str, SpaceRule] = {}
    if queued.spaces is not None:
        spaces = {r[0]: SpaceRule(members_of(r[1], r[0]), r[2]) for r in queued.spaces.fetchall()}
    conflicts: dict[int, ConflictState] = {}
    for conflict_id, cursor in queued.conflicts:
        state = cursor.fetchone()
        if state is not None:
            conflicts[conflict_id] = ConflictState(*state)
    runs: dict[str, str] = {}
    for run_id, cursor in queued.runs:
        found = cursor.fetchone()
        if found is not None:
            runs[run_id] = found[0]
    return {
        "spaces": spaces,
        "snapshot_taken": queued.snapshot is not None and queued.snapshot.fetchone() is not None,
        "unread": frozenset(i for i, cursor in queued.unread if cursor.fetchone() is not None),
        "conflicts": conflicts,
        "erasable": {slot: tuple(r[0] for r in c.fetchall()) for slot, c in queued.erasable},
        "runs": runs,
    }


# -- the Store reads ---------------------------------------------------------------------------


class SqlReads:
    """The reads of the ``Store`` protocol, for any SQL backend. A backend sets ``_reads``
    (its dialect's :class:`ReadSql`) and provides ``_fetchone`` and ``_fetchall``."""

    _reads: ClassVar[ReadSql]

    def _fetchone(self, sql: str, params: Sequence[Any]) -> Any:
        raise NotImplementedError

    def _fetchall(self, sql: str, params: Sequence[Any]) -> list[Any]:
        raise NotImplementedError

    def latest(self, namespace: str, key: str, as_of_seq: int | None = None) -> StoredRow | None:
        reads = self._reads
        if as_of_seq is None:
            r = self._fetchone(reads.latest, (namespace, key))
        else:
            r = self._fetchone(reads.latest_as_of, (namespace, key, as_of_seq))
        return None if r is None else reads.row(r)

    def version(self, namespace: str, key: str, version: int) -> StoredRow | None:
        r = self._fetchone(self._reads.version, (namespace, key, version))
        return None if r is None else self._reads.row(r)

    def history(self, namespace: str, key: str, limit: int | None = None) -> list[StoredRow]:
        reads = self._reads
        if limit is None:
            rows = self._fetchall(reads.history, (namespace, key))
        else:
            rows = self._fetchall(reads.history_limit, (namespace, key, limit))
        return [reads.row(r) for r in rows]

    def current(
        self,
        namespace: str,
        *,
        prefix: str = "",
        tags: Sequence[str] = (),
        as_of_seq: int | None = None,
        now: float | None = None,
        limit: int | None = None,
        offset: int = 0,
        include_dead: bool = False,
        kinds: Sequence[str] = (),
    ) -> list[StoredRow]:
        sql, params = self._reads.current(
            namespace,
            prefix=prefix,
            tags=tags,
            as_of_seq=as_of_seq,
            now=now,
            limit=limit,
            offset=offset,
            include_dead=include_dead,
            kinds=kinds,
        )
        return [self._reads.row(r) for r in self._fetchall(sql, params)]

    def all_versions(self, namespace: str) -> Iterator[StoredRow]:
        """Every version, by key then version, in statements of at most ``VALUE_BUDGET``
        bytes of values (one row when a value is larger): the sizes of the next ``CHUNK``
        rows are read first, so memory stays bounded however large the values are."""
        reads = self._reads
        after: tuple[str, int] = ("", 0)
        while True:
            sizes = self._fetchall(reads.version_sizes, (namespace, *after, CHUNK))
            more = len(sizes) == CHUNK
            for count in value_batches([s for _, _, s in sizes]):
                chunk = self._fetchall(reads.all_versions, (namespace, *after, count))
                if not chunk:
                    return
                after = (chunk[-1][0], chunk[-1][1])
                for r in chunk:
                    yield reads.row(r)
                del chunk  # (before the next statement: one batch in memory at a time)
            if not more:
                return

    def events(
        self,
        agent: str,
        *,
        after_seq: int = 0,
        until_seq: int | None = None,
        since: float | None = None,
        until: float | None = None,
        kinds: Sequence[str] = (),
        limit: int | None = None,
        run_id: str | None = None,
    ) -> Iterator[Event]:
        sql, extra = self._reads.events(
            until_seq=until_seq, since=since, until=until, kinds=kinds, run_id=run_id
        )
        remaining = limit
        cursor = after_seq
        while remaining is None or remaining > 0:
            size = CHUNK if remaining is None else min(CHUNK, remaining)
            chunk = self._fetchall(sql, [agent, cursor, *extra, size])
            for r in chunk:
                yield event_of(r)
            if len(chunk) < size:
                return
            cursor = chunk[-1][1]
            if remaining is not None:
                remaining -= len(chunk)

    def chain_rows(self, agent: str, after_seq: int = 0) -> Iterator[tuple[Any, ...]]:
        """Raw event rows ``(seq, time, kind, payload_text, prev_hash, hash)``, for
        verification without parsing payloads (no agent column: it costs a string a row)."""
        cursor = after_seq
        while True:
            chunk = self._fetchall(self._reads.chain_chunk, (agent, cursor, CHUNK))
            yield from chunk
            if len(chunk) < CHUNK:
                return
            cursor = chunk[-1][0]

    def agent(self, agent: str) -> AgentRow | None:
        r = self._fetchone(self._reads.agent, (agent,))
        return None if r is None else agent_row(r)

    def agents(self) -> list[AgentRow]:
        return [agent_row(r) for r in self._fetchall(self._reads.agents, ())]

    def snapshot(self, agent: str, name: str) -> SnapshotRow | None:
        r = self._fetchone(self._reads.snapshot, (agent, name))
        return None if r is None else snapshot_row(r)

    def snapshots(self, agent: str) -> list[SnapshotRow]:
        return [snapshot_row(r) for r in self._fetchall(self._reads.snapshots, (agent,))]

    def space(self, name: str) -> SpaceRow | None:
        r = self._fetchone(self._reads.space, (name,))
        return None if r is None else self._reads.dialect.space(r)

    def spaces(self) -> list[SpaceRow]:
        return [self._reads.dialect.space(r) for r in self._fetchall(self._reads.spaces, ())]

    def conflicts(
        self, namespace: str, *, key: str | None = None, status: str | None = "open"
    ) -> list[ConflictRow]:
        sql, params = self._reads.conflicts(namespace, key, status)
        return [ConflictRow(*r) for r in self._fetchall(sql, params)]

    def conflict(self, conflict_id: int) -> ConflictRow | None:
        r = self._fetchone(self._reads.conflict, (conflict_id,))
        return None if r is None else ConflictRow(*r)

    def messages(
        self,
        *,
        recipient: str | None = None,
        space: str | None = None,
        party: str | None = None,
        unread_only: bool = False,
        since: float | None = None,
        after_id: int = 0,
        limit: int | None = None,
    ) -> list[MessageRow]:
        if party is not None:
            params = (party, party, party, limit or 64)
            rows = self._fetchall(self._reads.party_messages, params)
            return [MessageRow(*r) for r in reversed(rows)]
        if (recipient is None) == (space is None):
            raise InvalidInput("messages() takes a recipient, a space or a party")
        sql, params_ = self._reads.messages(
            recipient=recipient,
            space=space,
            unread_only=unread_only,
            since=since,
            after_id=after_id,
            limit=limit,
        )
        return [MessageRow(*r) for r in self._fetchall(sql, params_)]

    def message(self, message_id: int) -> MessageRow | None:
        r = self._fetchone(self._reads.message, (message_id,))
        return None if r is None else MessageRow(*r)

    def signed_heads(self, agent: str) -> list[SignedHead]:
        """The agent's signed heads, by seq."""
        return [
            SignedHead(r[0], r[1], r[3], r[2], r[4], r[5])
            for r in self._fetchall(self._reads.signed_heads, (agent,))
        ]

    def value_bytes(self, namespace: str) -> int:
        """Total stored value size of a namespace, all versions (bytes)."""
        return int(self._fetchone(self._reads.value_bytes, (namespace,))[0])
