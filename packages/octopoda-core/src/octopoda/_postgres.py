"""PostgresStore: one PostgreSQL database shared by many processes and hosts.

Needs the ``postgres`` extra (psycopg 3 and psycopg-pool). Schema, statements and pure SQL
builders are in ``_postgres_schema``; this class only executes them.

A commit is one transaction in two round trips (psycopg's pipeline mode):

1. ``BEGIN``; transaction-level advisory locks (``lock_plan``): the agent (its audit-chain
   head), each namespace written (shared), each key written, and what the operations touch;
   the agent row is created if missing; its head, each written key's head version and author,
   and the operations' preconditions are read. Every commit takes its locks in one global
   order, so commits never deadlock each other; each statement after the locks sees every
   commit that released them.
2. The event passes through the pipeline (which hashes it); then the memory rows, the
   operations, the event, the new head and the snapshot are sent with ``COMMIT``.

So seq and versions are gapless per agent and per key however many connections, processes
or hosts write. A deadlock or serialization failure, or a connection that breaks before the
pipeline has run, is retried transparently on a fresh connection. If the connection breaks
after, the store asks the server whether the event was stored. Driver errors never leave the
class raw: they become :class:`~octopoda.StorageError`, or :class:`~octopoda.InvalidInput`
for text PostgreSQL cannot hold (a NUL character).
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Final
from urllib.parse import urlsplit, urlunsplit

from . import _postgres_schema as q
from ._errors import (
    AccessDenied,
    ConfigError,
    InvalidInput,
    NotFound,
    OctopodaError,
    SchemaTooNew,
    StorageError,
    VersionConflict,
)
from ._events import GENESIS_HASH
from ._records import Event
from ._signing import SignedHead
from ._store import (
    AgentRow,
    ConflictRow,
    CreateSpace,
    EraseKey,
    MarkRead,
    MemoryWrite,
    MessageRow,
    Op,
    ResolveConflict,
    SendMessage,
    SnapshotRow,
    SpaceRow,
    StoredRow,
    agent_namespace,
    check_erase,
    check_shared_write,
    erase_entry,
    write_entry,
)

try:
    import psycopg
    from psycopg.pq import TransactionStatus
    from psycopg.rows import TupleRow
    from psycopg_pool import ConnectionPool, PoolClosed, PoolTimeout
except ImportError as exc:  # pragma: no cover - tested in a process without psycopg
    raise ConfigError(
        f"PostgreSQL stores need the 'postgres' extra ({exc}):"
        " pip install 'octopoda-core[postgres]'"
    ) from None

__all__ = ["PostgresStore", "redact_url"]

Connection = psycopg.Connection[TupleRow]
Stale = list[tuple[MemoryWrite, int, int, str | None]]

_RETRIES: Final = 6
_CHUNK: Final = 5000
_SEARCH_PATH_HINT: Final = "give Octopoda its own database or schema (?options=-csearch_path%3D...)"


def redact_url(url: str) -> str:
    """The URL with its password replaced by ``***`` (for messages, ``url`` and ``repr``)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "postgresql://..."
    netloc = parts.netloc
    userinfo, at, hosts = netloc.rpartition("@")
    if at and ":" in userinfo:
        netloc = f"{userinfo.split(':', 1)[0]}:***@{hosts}"
    items = [item.partition("=") for item in parts.query.split("&") if item]
    query = "&".join(
        f"{k}=***" if k.lower() == "password" else f"{k}{sep}{v}" for k, sep, v in items
    )
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def _check_storable(text: str | None, what: str) -> None:
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


def _check_commit(
    event: Event,
    writes: Sequence[MemoryWrite],
    ops: Sequence[Op],
    snapshot: str | None,
    status: tuple[str, str | None] | None,
) -> None:
    """Refuse, before any I/O, what PostgreSQL would reject halfway through a commit."""
    _check_storable(event.agent, "agent id")
    _check_storable(event.kind, "event kind")
    _check_storable(snapshot, "snapshot name")
    for text in status or ():
        _check_storable(text, "agent status")
    for w in writes:
        _check_storable(w.namespace, "namespace")
        _check_storable(w.key, "key")
        for tag in w.tags:
            _check_storable(tag, "tag")
        if w.encoding == "json" and isinstance(w.data, str) and "\x00" in w.data:
            raise InvalidInput(
                f"the JSON text of {w.key!r} holds a raw NUL character, which PostgreSQL cannot"
                " store; encode values with Octopoda, which writes it as \\u0000"
            )
    for op in ops:
        if isinstance(op, SendMessage):
            for text, what in ((op.recipient, "recipient"), (op.space, "space")):
                _check_storable(text, what)
            _check_storable(op.message_type, "message type")
            _check_storable(op.body, "message body")
            _check_storable(op.body_sha256, "message digest")
        elif isinstance(op, CreateSpace):
            _check_storable(op.name, "space name")
            for member in op.members or ():
                _check_storable(member, "space member")
        elif isinstance(op, ResolveConflict):
            _check_storable(op.resolution, "resolution")
        elif isinstance(op, EraseKey):
            _check_storable(op.key, "key")
            check_erase(op, event.agent)


def _row(r: tuple[Any, ...]) -> StoredRow:
    return StoredRow(
        key=r[0],
        version=r[1],
        encoding=r[2],
        data=r[3] if r[3] is not None else r[4],
        tags=tuple(r[5]) if r[5] else (),
        created_at=r[6],
        expires_at=r[7],
        seq=r[8],
        author=r[9],
        erased=r[10],
    )


def _event(r: tuple[Any, ...]) -> Event:
    return Event(
        agent=r[0],
        seq=r[1],
        time=r[2],
        kind=r[3],
        payload=json.loads(r[4]),
        prev_hash=r[5],
        hash=r[6],
        payload_text=r[4],
    )


def _space(r: tuple[Any, ...]) -> SpaceRow:
    return SpaceRow(r[0], r[1], r[2], None if r[3] is None else tuple(r[3]))


def _is_disconnect(exc: BaseException) -> bool:
    """A broken or refused connection (worth retrying on a fresh one)."""
    if isinstance(exc, (PoolTimeout, PoolClosed)) or not isinstance(exc, psycopg.OperationalError):
        return False
    state = exc.sqlstate
    return state is None or state.startswith("08") or state in ("57P01", "57P02", "57P03")


def _is_nul(exc: BaseException) -> bool:
    """psycopg refused a parameter holding a NUL character (before sending anything)."""
    return isinstance(exc, psycopg.DataError) and exc.sqlstate is None and "NUL" in str(exc)


def _is_transient(exc: BaseException) -> bool:
    """A failure a new attempt may not hit: deadlock, serialization failure, lost connection."""
    if isinstance(exc, psycopg.Error) and exc.sqlstate in ("40001", "40P01"):
        return True
    return _is_disconnect(exc)


_HINTS: Final = {
    "42501": "grant the role the privileges it needs (CREATE on the schema, or SELECT, INSERT"
    " and UPDATE on Octopoda's tables)",
    "25006": "the server is read-only (a standby?); point the URL at the primary",
    "53300": "the server has too many connections; lower max_size or raise max_connections",
    "53100": "the server's disk is full; free space",
    "57014": "a statement was cancelled (statement_timeout?); raise the timeout",
    "42P01": "Octopoda's tables are missing; open the store again to create them",
    "3D000": "create the database (createdb NAME) or fix the URL",
}


def _connect_hint(text: str) -> str:
    if "does not exist" in text:
        return "create the database (createdb NAME) or fix the URL"
    if "authentication" in text or "password" in text:
        return "check the user name and password in the URL"
    return "check that the server runs and accepts connections, and the URL"


# Pools inherited through fork(): kept referenced and never closed in the child, whose copies
# of the parent's sockets must not say anything to the server.
_inherited: list[Any] = []


class _Attempt:
    """How far one commit attempt got: once ``chained``, it is never repeated blindly."""

    __slots__ = ("chained", "in_pipeline")

    def __init__(self) -> None:
        self.chained = False
        self.in_pipeline = False


class _Commit:
    """One commit's statements and state across its two round trips (see the module doc)."""

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
        self.expected_seq = expected_seq
        self.event = event
        self.writes = writes
        self.ops = ops
        self.snapshot = snapshot
        self.replace_snapshot = replace_snapshot
        self.status = status
        self.slots = list(dict.fromkeys((w.namespace, w.key) for w in writes))
        self.locks = q.lock_plan(event.agent, self.slots, ops)
        self.cursors: dict[str, Any] = {}
        self.op_cursors: list[Any] = []
        self.versions: list[int] = []
        self.memory_rows: list[tuple[Any, ...]] = []
        self.conflict_rows: list[tuple[Any, ...]] = []
        self.message_ids: list[int] = []
        self.erased_versions: list[list[int]] = []

    def run(self, conn: Connection, sql: str, params: Sequence[Any] | None = None) -> Any:
        if self.tracer is not None:
            self.tracer(sql)
        return conn.execute(sql, params)

    def begin(self, conn: Connection) -> None:
        """Queue round trip 1: lock, create the agent row, read what the commit depends on."""
        agent = self.event.agent
        run = self.run
        run(conn, "BEGIN")
        run(conn, q.LOCK, self.locks)
        head = (agent, self.event.time, GENESIS_HASH, agent)
        if len(self.slots) == 1:
            self.cursors["head"] = run(conn, q.HEAD_AND_KEY, (*head, *self.slots[0]))
        else:
            self.cursors["head"] = run(conn, q.HEAD, head)
        if len(self.slots) > 1:
            names = [s[0] for s in self.slots], [s[1] for s in self.slots]
            self.cursors["keys"] = run(conn, q.KEY_HEADS, names)
        if self.snapshot is not None and not self.replace_snapshot:
            self.cursors["snapshot"] = run(conn, q.SNAPSHOT_TAKEN, (agent, self.snapshot))
        spaces = q.spaces_touched(self.slots, self.ops)
        if spaces:
            self.cursors["spaces"] = run(conn, q.SPACES_NAMED, (spaces,))
        for op in self.ops:
            if isinstance(op, SendMessage):
                self.op_cursors.append(run(conn, q.NEXT_MESSAGE_ID))
            elif isinstance(op, MarkRead):
                self.op_cursors.append(run(conn, q.UNREAD_MESSAGE, (op.message_id, agent)))
            elif isinstance(op, ResolveConflict):
                self.op_cursors.append(run(conn, q.CONFLICT_STATE, (op.conflict_id,)))
            elif isinstance(op, CreateSpace):
                self.op_cursors.append(None)  # read with the spaces above
            elif isinstance(op, EraseKey):
                self.op_cursors.append(run(conn, q.ERASABLE, (op.namespace, op.key)))
            else:  # pragma: no cover - exhaustive
                raise TypeError(f"unknown store operation {op!r}")

    def prepare(self, conn: Connection) -> None:
        """Assign seq and versions, check compare-and-set, the operations and the snapshot
        name, and fill the payload as SqliteStore does. Raises before the pipeline runs."""
        event = self.event
        agent = event.agent
        head = self.cursors["head"].fetchone()
        head_seq, head_hash = head[0], head[1]
        if self.expected_seq is not None and head_seq != self.expected_seq:
            raise VersionConflict(
                f"agent {agent!r} moved from seq {self.expected_seq} to {head_seq} meanwhile",
                "",
                self.expected_seq,
                head_seq,
            )
        heads: dict[tuple[str, str], tuple[int, str | None]] = {}
        if len(self.slots) == 1:
            heads[self.slots[0]] = (head[2] or 0, head[3])
        elif self.slots:
            for slot, (version, author) in zip(
                self.slots, self.cursors["keys"].fetchall(), strict=True
            ):
                heads[slot] = (version or 0, author)
        spaces: dict[str, tuple[Any, ...]] = {}
        if "spaces" in self.cursors:
            spaces = {r[0]: (r[1], r[2]) for r in self.cursors["spaces"].fetchall()}
        seq = head_seq + 1
        stale: Stale = []
        entries: list[dict[str, Any]] = []
        own = agent_namespace(agent)
        for w in self.writes:
            slot = (w.namespace, w.key)
            if w.namespace.startswith(q.SPACE_PREFIX):
                space = w.namespace[len(q.SPACE_PREFIX) :]
                refused = q.member_error(agent, space, spaces.get(space))
                if refused is not None:
                    raise AccessDenied(refused)
            if w.expected_version is not None or w.check_stale:
                check_shared_write(w, agent, heads[slot], stale, len(self.versions))
            version = heads[slot][0] + 1
            heads[slot] = (version, agent)
            self.versions.append(version)
            entries.append(write_entry(w, version, own))
            self.memory_rows.append(q.memory_row(w, version, agent, seq, event.time))
        if stale:  # conflict ids go into the payload: one more round trip, only here
            ids = [r[0] for r in self.run(conn, q.NEXT_CONFLICT_IDS, (len(stale),))]
            for conflict_id, (w, at, head_version, head_author) in zip(ids, stale, strict=True):
                entries[at]["conflict_id"] = conflict_id
                row = (conflict_id, w.namespace, w.key, self.versions[at], agent, head_version)
                self.conflict_rows.append((*row, head_author, w.seen_version, event.time, seq))
        if self.writes:
            event.payload["writes"] = entries
        self._check_ops(spaces)
        taken = self.cursors.get("snapshot")
        if taken is not None and taken.fetchone() is not None:
            raise InvalidInput(
                f"agent {agent!r} already has a snapshot named {self.snapshot!r};"
                " choose another name or pass replace=True"
            )
        event.seq = seq
        event.prev_hash = head_hash

    def _check_ops(self, spaces: dict[str, tuple[Any, ...]]) -> None:
        """The operations' preconditions, in order, as SqliteStore applies them."""
        event = self.event
        agent = event.agent
        marked: set[int] = set()
        resolved: dict[int, str] = {}
        erased: set[str] = set()
        for op, cursor in zip(self.ops, self.op_cursors, strict=True):
            found: Any = None if cursor is None else cursor.fetchone()
            if isinstance(op, SendMessage):
                if op.space is not None:
                    refused = q.member_error(agent, op.space, spaces.get(op.space))
                    if refused is not None:
                        raise AccessDenied(refused)
                event.payload["message_id"] = found[0]
                self.message_ids.append(found[0])
            elif isinstance(op, MarkRead):
                if found is None or op.message_id in marked:
                    raise NotFound(
                        f"agent {agent!r} has no unread message {op.message_id}"
                        " (read it with read_messages())"
                    )
                marked.add(op.message_id)
            elif isinstance(op, CreateSpace):
                if op.name in spaces:
                    raise InvalidInput(f"a space named {op.name!r} already exists")
                spaces[op.name] = (op.members, agent)
            elif isinstance(op, ResolveConflict):
                done = resolved.get(op.conflict_id)
                if done is None and found is not None and found[0] != "open":
                    done = found[1]
                if done is not None:
                    raise InvalidInput(f"conflict {op.conflict_id} is already resolved ({done})")
                if found is None:
                    raise NotFound(f"no open conflict with id {op.conflict_id}")
                resolved[op.conflict_id] = op.resolution
            elif isinstance(op, EraseKey):  # a key erased earlier in this commit has no value
                versions = [] if op.key in erased else list(found[0] or ())
                event.payload.setdefault("erased", []).append(erase_entry(op, agent, versions))
                self.erased_versions.append(versions)
                erased.add(op.key)

    def finish(self, conn: Connection, event: Event) -> None:
        """Queue round trip 2: rows, operations, the event, the head, then COMMIT."""
        run = self.run
        agent = event.agent
        if len(self.memory_rows) == 1:
            run(conn, q.INSERT_MEMORY, self.memory_rows[0])
        elif self.memory_rows:
            if self.tracer is not None:
                self.tracer(q.INSERT_MEMORY)
            conn.cursor().executemany(q.INSERT_MEMORY, self.memory_rows)
        for row in self.conflict_rows:
            run(conn, q.INSERT_CONFLICT, row)
        message_ids = iter(self.message_ids)
        erased_versions = iter(self.erased_versions)
        for op in self.ops:
            if isinstance(op, SendMessage):
                sender = (next(message_ids), agent, op.recipient, op.space, op.message_type)
                body = (op.body, op.body_sha256, event.time, event.seq)
                run(conn, q.INSERT_MESSAGE, (*sender, *body))
            elif isinstance(op, MarkRead):
                run(conn, q.MARK_READ, (event.time, op.message_id, agent))
            elif isinstance(op, CreateSpace):
                members = None if op.members is None else json.dumps(list(op.members))
                run(conn, q.INSERT_SPACE, (op.name, event.time, agent, members))
            elif isinstance(op, ResolveConflict):
                run(conn, q.RESOLVE_CONFLICT, (op.resolution, agent, event.time, op.conflict_id))
            elif isinstance(op, EraseKey):
                run(conn, q.ERASE, (op.namespace, op.key, next(erased_versions)))
        chained = (event.payload_text, event.prev_hash, event.hash)
        head = (event.seq, event.hash, event.time, agent)
        run(conn, q.INSERT_EVENT, (agent, event.seq, event.time, event.kind, *chained, *head))
        if self.status is not None:
            run(conn, q.SET_STATUS, (*self.status, agent))
        if self.snapshot is not None:
            sql = q.REPLACE_SNAPSHOT if self.replace_snapshot else q.INSERT_SNAPSHOT
            run(conn, sql, (agent, self.snapshot, event.seq, event.time))
        run(conn, "COMMIT")


class PostgresStore:
    """A store in a PostgreSQL database, shared by any number of processes and hosts.

    ``url`` is a libpq URL (``postgresql://user:password@host:5432/dbname?sslmode=...``);
    settings it does not give default to ``application_name=octopoda`` and
    ``connect_timeout=10``. ``min_size``/``max_size`` bound the connection pool; ``timeout``
    is how long an operation waits for a free connection, ``lock_timeout`` how long a write
    waits for another writer of the same agent or key (0: forever) before it raises
    :class:`~octopoda.StorageError`. ``tracer``, if given, is called with every SQL
    statement before it is sent (``executemany`` once per batch).

    Opening creates or upgrades the schema in the first schema of the connection's
    ``search_path``. Use it from many threads at once; after ``fork()`` the child opens its
    own connections. A pipeline processor that reads the store during a commit uses a
    second connection, so give such a store ``max_size >= 2``.
    """

    def __init__(
        self,
        url: str,
        *,
        min_size: int = 1,
        max_size: int = 10,
        timeout: float = 30.0,
        lock_timeout: float = 30.0,
        tracer: Callable[[str], None] | None = None,
    ) -> None:
        if isinstance(min_size, bool) or not isinstance(min_size, int) or min_size < 0:
            raise ConfigError(f"min_size must be an int >= 0, not {min_size!r}")
        if isinstance(max_size, bool) or not isinstance(max_size, int) or max_size < 1:
            raise ConfigError(f"max_size must be an int >= 1, not {max_size!r}")
        if max_size < min_size:
            raise ConfigError(f"max_size ({max_size}) must be >= min_size ({min_size})")
        if not isinstance(timeout, (int, float)) or not timeout > 0:
            raise ConfigError(f"timeout must be a number of seconds > 0, not {timeout!r}")
        if not isinstance(lock_timeout, (int, float)) or not lock_timeout >= 0:
            raise ConfigError(
                f"lock_timeout must be a number of seconds >= 0, not {lock_timeout!r}"
            )
        self._url = url
        self._display = redact_url(url)
        self._min_size = min_size
        self._max_size = max_size
        self._timeout = float(timeout)
        self._lock_timeout = float(lock_timeout)
        self._tracer = tracer
        self._kwargs = self._connect_kwargs(url)
        self._lock = threading.Lock()
        self._pid = os.getpid()
        self._pool_obj: ConnectionPool[Connection] | None = None
        with self._connect() as conn:
            self._check_database(conn)
            self._migrate(conn)
        self._pool_obj = self._new_pool()
        _open_stores.add(self)

    # -- connections ----------------------------------------------------------------------

    @property
    def url(self) -> str:
        """The store's URL, with any password replaced by ``***``."""
        return self._display

    @property
    def closed(self) -> bool:
        return self._pool_obj is None

    def _connect_kwargs(self, url: str) -> dict[str, Any]:
        try:
            given = psycopg.conninfo.conninfo_to_dict(url)
        except psycopg.Error as exc:
            raise ConfigError(f"{self._display!r} is not a valid PostgreSQL URL ({exc})") from None
        kwargs: dict[str, Any] = {"autocommit": True, "client_encoding": "UTF8"}
        if "application_name" not in given:
            kwargs["application_name"] = "octopoda"
        if "connect_timeout" not in given:
            kwargs["connect_timeout"] = 10
        # Our lock_timeout first, so that a -c lock_timeout in the URL's options still wins.
        ms = round(self._lock_timeout * 1000)
        kwargs["options"] = f"-c lock_timeout={ms} {given.get('options', '')}".strip()
        return kwargs

    def _connect(self) -> Connection:
        try:
            return psycopg.connect(self._url, **self._kwargs)
        except psycopg.Error as exc:
            raise self._error(exc) from None

    def _new_pool(self) -> ConnectionPool[Connection]:
        pool: ConnectionPool[Connection] = ConnectionPool(
            self._url,
            kwargs=self._kwargs,
            min_size=self._min_size,
            max_size=self._max_size,
            timeout=self._timeout,
            open=False,
            name="octopoda",
        )
        pool.open(wait=False)
        # Close it when the store is garbage collected (or at exit), in this process only.
        weakref.finalize(self, _close_in_owner, pool, os.getpid())
        return pool

    def _pool(self) -> ConnectionPool[Connection]:
        if self._pid != os.getpid():  # forked: never use the parent's connections
            with self._lock:
                if self._pid != os.getpid() and self._pool_obj is not None:
                    _inherited.append(self._pool_obj)
                    self._pool_obj = self._new_pool()
                self._pid = os.getpid()
        pool = self._pool_obj
        if pool is None:
            raise StorageError(f"the store {self._display} is closed; open a new one")
        return pool

    def _exec(self, conn: Connection, sql: str, params: Sequence[Any] | None = None) -> Any:
        if self._tracer is not None:
            self._tracer(sql)
        return conn.execute(sql, params)

    def _check_database(self, conn: Connection) -> None:
        encoding = conn.info.parameter_status("server_encoding")
        if encoding not in ("UTF8", None):
            raise StorageError(
                f"the database of {self._display} uses the encoding {encoding!r}; Octopoda"
                " needs UTF8: CREATE DATABASE ... ENCODING 'UTF8' TEMPLATE template0"
            )

    def _migrate(self, conn: Connection) -> None:
        """Apply missing migrations, each in one transaction with its record, under a lock."""
        try:
            self._exec(conn, "SET lock_timeout = 0")  # another host may migrate for a while
            applied = self._applied(conn)
            unknown = sorted(applied - {name for name, _ in q.MIGRATIONS})
            if unknown:
                raise SchemaTooNew(
                    f"the database of {self._display} has migrations this Octopoda does not"
                    f" know ({', '.join(unknown)}); upgrade octopoda-core"
                )
            for name, statements in q.MIGRATIONS:
                if name in applied:
                    continue
                with conn.transaction():
                    self._exec(conn, q.LOCK_MIGRATIONS)
                    self._exec(conn, q.CREATE_MIGRATIONS_TABLE)
                    if self._exec(conn, q.MIGRATION_APPLIED, (name,)).fetchone() is not None:
                        continue  # another process applied it meanwhile
                    for statement in statements:
                        self._exec(conn, statement)
                    self._exec(conn, q.RECORD_MIGRATION, (name, time.time()))
        except psycopg.errors.DuplicateTable as exc:
            raise StorageError(
                f"the database of {self._display} already has a table Octopoda needs, made by"
                f" another application ({exc.diag.message_primary}); {_SEARCH_PATH_HINT}"
            ) from None
        except psycopg.Error as exc:
            raise self._error(exc) from None

    def _applied(self, conn: Connection) -> set[str]:
        if not self._exec(conn, q.HAS_MIGRATIONS).fetchone()[0]:
            return set()
        try:
            return {r[0] for r in self._exec(conn, q.APPLIED_MIGRATIONS)}
        except psycopg.errors.UndefinedColumn:
            raise StorageError(
                f"the database of {self._display} has a schema_migrations table of another"
                f" application; {_SEARCH_PATH_HINT}"
            ) from None

    def _error(self, exc: BaseException) -> OctopodaError:
        """Map a driver error to an Octopoda error that says what to do."""
        where = self._display
        if isinstance(exc, UnicodeEncodeError):
            return InvalidInput(f"text that is not valid Unicode cannot be stored ({exc})")
        if isinstance(exc, PoolTimeout):
            return StorageError(
                f"no connection to {where} became free within {self._timeout:g}s (pool of"
                f" {self._max_size}); raise max_size or timeout, or check the server"
            )
        if isinstance(exc, PoolClosed):
            return StorageError(f"the store {where} is closed; open a new one")
        text = " ".join(str(exc).split())
        if _is_nul(exc):
            return InvalidInput(f"PostgreSQL cannot store text with a NUL character ({text})")
        state = getattr(exc, "sqlstate", None)
        if isinstance(exc, psycopg.OperationalError) and state is None:
            return StorageError(f"cannot use PostgreSQL at {where} ({text}); {_connect_hint(text)}")
        if state == "55P03":
            return StorageError(
                f"waited more than {self._lock_timeout:g}s at {where} for a lock held by another"
                " writer of the same agent or key; raise lock_timeout, or find the process"
                " holding a long transaction (pg_stat_activity)"
            )
        hint = _HINTS.get(state or "", "see the PostgreSQL server log")
        return StorageError(f"PostgreSQL at {where} failed ({state}: {text}); {hint}")

    def close(self) -> None:
        """Close the pool's connections (those a forked child inherited are left alone)."""
        with self._lock:
            pool, self._pool_obj = self._pool_obj, None
        if pool is not None and self._pid == os.getpid():
            pool.close()

    def __enter__(self) -> PostgresStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"PostgresStore({self._display!r})"

    # -- writes ---------------------------------------------------------------------------

    def commit(
        self,
        event: Event,
        writes: Sequence[MemoryWrite],
        pipeline: Callable[[Event], Event],
        *,
        snapshot: str | None = None,
        replace_snapshot: bool = False,
        status: tuple[str, str | None] | None = None,
        ops: Sequence[Op] = (),
        expected_seq: int | None = None,
    ) -> tuple[Event, list[int]]:
        _check_commit(event, writes, ops, snapshot, status)
        retries = 0
        while True:
            attempt = _Attempt()
            work = _Commit(
                self._tracer, event, writes, ops, snapshot, replace_snapshot, status, expected_seq
            )
            try:
                with self._pool().connection() as conn:
                    try:
                        with conn.pipeline():
                            work.begin(conn)
                            work.prepare(conn)
                            attempt.chained = attempt.in_pipeline = True
                            event = pipeline(work.event)
                            attempt.in_pipeline = False
                            work.finish(conn, event)
                        return event, work.versions
                    except BaseException:
                        self._rollback(conn)
                        raise
            except (psycopg.Error, UnicodeEncodeError) as exc:
                if attempt.in_pipeline:
                    raise  # a processor's own error (it may use a database too)
                if attempt.chained:
                    if _is_disconnect(exc):
                        return self._settle(event, work.versions, exc)
                    raise self._error(exc) from None
                if retries < _RETRIES and _is_transient(exc):
                    retries += 1
                    self._recover(exc, retries)
                    continue
                raise self._error(exc) from None

    def _rollback(self, conn: Connection) -> None:
        if conn.closed or conn.broken:
            return
        with contextlib.suppress(psycopg.Error):  # the pool discards what it cannot reset
            if conn.info.transaction_status != TransactionStatus.IDLE:
                self._exec(conn, "ROLLBACK")

    def _recover(self, exc: BaseException, attempt: int) -> None:
        """Before a retry: drop broken pooled connections, and back off with jitter."""
        if _is_disconnect(exc):
            with contextlib.suppress(psycopg.Error):
                self._pool().check()
        time.sleep(random.uniform(0.0, 0.005 * 2**attempt))

    def _settle(
        self, event: Event, versions: list[int], exc: BaseException
    ) -> tuple[Event, list[int]]:
        """The connection broke after the event was chained: was the commit stored?"""
        cause = " ".join(str(exc).split())
        what = f"event #{event.seq} of agent {event.agent!r}"
        try:
            row = self._stored_hash(event)
        except (psycopg.Error, StorageError):
            raise StorageError(
                f"the connection to {self._display} broke while committing {what} ({cause}),"
                " and the server cannot tell whether it was stored; check the agent's"
                " timeline before repeating the operation"
            ) from None
        if row is not None and row[0] == event.hash:
            return event, versions
        raise StorageError(
            f"the connection to {self._display} broke while committing {what} ({cause});"
            " nothing was stored, so it is safe to repeat the operation"
        )

    def _stored_hash(self, event: Event) -> Any:
        """The stored hash of ``event``'s seq, read under the agent's lock: a transaction that
        lost its connection has by then committed or rolled back."""
        lock = ([q.lock_id(b"agent", event.agent)], [False])
        for attempt in range(3):
            try:
                with self._pool().connection() as conn, conn.transaction():
                    self._exec(conn, q.LOCK, lock)
                    return self._exec(conn, q.EVENT_HASH, (event.agent, event.seq)).fetchone()
            except psycopg.Error as exc:
                if attempt == 2 or not _is_disconnect(exc):
                    raise
                self._recover(exc, attempt)
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    # -- reads ----------------------------------------------------------------------------

    def _fetch(self, sql: str, params: Sequence[Any], one: bool, *, write: bool = False) -> Any:
        for attempt in range(3):
            try:
                with self._pool().connection() as conn:
                    cursor = self._exec(conn, sql, params)
                    return cursor.fetchone() if one else cursor.fetchall()
            except (psycopg.Error, UnicodeEncodeError) as exc:
                if attempt < 2 and _is_disconnect(exc):
                    self._recover(exc, attempt)
                    continue
                if not write and _is_nul(exc):  # no stored name holds a NUL: nothing matches
                    return None if one else []
                raise self._error(exc) from None
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    def _fetchone(self, sql: str, params: Sequence[Any]) -> Any:
        return self._fetch(sql, params, True)

    def _fetchall(self, sql: str, params: Sequence[Any]) -> list[Any]:
        rows: list[Any] = self._fetch(sql, params, False)
        return rows

    def latest(self, namespace: str, key: str, as_of_seq: int | None = None) -> StoredRow | None:
        if as_of_seq is None:
            r = self._fetchone(q.LATEST, (namespace, key))
        else:
            r = self._fetchone(q.LATEST_AS_OF, (namespace, key, as_of_seq))
        return None if r is None else _row(r)

    def version(self, namespace: str, key: str, version: int) -> StoredRow | None:
        r = self._fetchone(q.VERSION, (namespace, key, version))
        return None if r is None else _row(r)

    def history(self, namespace: str, key: str, limit: int | None = None) -> list[StoredRow]:
        if limit is None:
            return [_row(r) for r in self._fetchall(q.HISTORY, (namespace, key))]
        return [_row(r) for r in self._fetchall(q.HISTORY + " LIMIT %s", (namespace, key, limit))]

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
    ) -> list[StoredRow]:
        sql, params = q.current_query(
            namespace,
            prefix=prefix,
            tags=tags,
            as_of_seq=as_of_seq,
            now=now,
            limit=limit,
            offset=offset,
            include_dead=include_dead,
        )
        return [_row(r) for r in self._fetchall(sql, params)]

    def all_versions(self, namespace: str) -> Iterator[StoredRow]:
        after: tuple[str, int] = ("", 0)
        while True:
            chunk = self._fetchall(q.ALL_VERSIONS, (namespace, *after, _CHUNK))
            for r in chunk:
                yield _row(r)
            if len(chunk) < _CHUNK:
                return
            after = (chunk[-1][0], chunk[-1][1])

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
    ) -> Iterator[Event]:
        sql, extra = q.events_query(until_seq=until_seq, since=since, until=until, kinds=kinds)
        remaining = limit
        cursor = after_seq
        while remaining is None or remaining > 0:
            size = _CHUNK if remaining is None else min(_CHUNK, remaining)
            chunk = self._fetchall(sql, [agent, cursor, *extra, size])
            for r in chunk:
                yield _event(r)
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
            chunk = self._fetchall(q.CHAIN_CHUNK, (agent, cursor, _CHUNK))
            yield from chunk
            if len(chunk) < _CHUNK:
                return
            cursor = chunk[-1][0]

    def agent(self, agent: str) -> AgentRow | None:
        r = self._fetchone(q.AGENT, (agent,))
        return None if r is None else AgentRow(*r)

    def agents(self) -> list[AgentRow]:
        return [AgentRow(*r) for r in self._fetchall(q.AGENTS, ())]

    def snapshot(self, agent: str, name: str) -> SnapshotRow | None:
        r = self._fetchone(q.SNAPSHOT, (agent, name))
        return None if r is None else SnapshotRow(*r)

    def snapshots(self, agent: str) -> list[SnapshotRow]:
        return [SnapshotRow(*r) for r in self._fetchall(q.SNAPSHOTS, (agent,))]

    def space(self, name: str) -> SpaceRow | None:
        r = self._fetchone(q.SPACE, (name,))
        return None if r is None else _space(r)

    def spaces(self) -> list[SpaceRow]:
        return [_space(r) for r in self._fetchall(q.SPACES, ())]

    def conflicts(
        self, namespace: str, *, key: str | None = None, status: str | None = "open"
    ) -> list[ConflictRow]:
        sql, params = q.conflicts_query(namespace, key, status)
        return [ConflictRow(*r) for r in self._fetchall(sql, params)]

    def conflict(self, conflict_id: int) -> ConflictRow | None:
        r = self._fetchone(q.CONFLICT, (conflict_id,))
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
            rows = self._fetchall(q.PARTY_MESSAGES, (party, party, party, limit or 64))
            return [MessageRow(*r) for r in reversed(rows)]
        if (recipient is None) == (space is None):
            raise InvalidInput("messages() takes a recipient, a space or a party")
        sql, params = q.messages_query(
            recipient=recipient,
            space=space,
            unread_only=unread_only,
            since=since,
            after_id=after_id,
            limit=limit,
        )
        return [MessageRow(*r) for r in self._fetchall(sql, params)]

    def message(self, message_id: int) -> MessageRow | None:
        r = self._fetchone(q.MESSAGE, (message_id,))
        return None if r is None else MessageRow(*r)

    def put_signed_head(self, head: SignedHead) -> None:
        params = (head.agent, head.seq, head.public_key, head.hash, head.signature)
        self._fetch(q.PUT_SIGNED_HEAD, (*params, head.created_at), True, write=True)

    def signed_heads(self, agent: str) -> list[SignedHead]:
        return [
            SignedHead(r[0], r[1], r[3], r[2], r[4], r[5])
            for r in self._fetchall(q.SIGNED_HEADS, (agent,))
        ]

    def value_bytes(self, namespace: str) -> int:
        """Total stored value size of a namespace, all versions (UTF-8 bytes of JSON)."""
        return int(self._fetchone(q.VALUE_BYTES, (namespace,))[0])

    # -- maintenance ----------------------------------------------------------------------

    def info(self) -> dict[str, Any]:
        """URL, server, schema, migrations, size and pool, for ``octopoda doctor``."""
        database, schema, server, size = self._fetchone(q.INFO, (list(q.TABLES),))
        names = [r[0] for r in self._fetchall(q.APPLIED_MIGRATIONS, ())]
        stats = self._pool().get_stats()
        return {
            "backend": "postgresql",
            "url": self._display,
            "database": database,
            "schema": schema,
            "schema_version": len(names),
            "migrations": names,
            "size_bytes": int(size),
            "server_version": server,
            "pool": {
                "min_size": self._min_size,
                "max_size": self._max_size,
                "size": stats.get("pool_size", 0),
                "available": stats.get("pool_available", 0),
            },
        }

    def integrity_check(self) -> list[str]:
        """``["ok"]``, or what is wrong: missing tables or migrations, and agents whose chain
        head is not their last event (index lookups only, cheap at any size). The server
        checksums pages itself (with data checksums on); ``amcheck`` goes deeper."""
        missing = self._fetchall(q.MISSING_TABLES, (list(q.TABLES),))
        if missing:
            return [f"table {r[0]} is missing" for r in missing]
        names = {r[0] for r in self._fetchall(q.APPLIED_MIGRATIONS, ())}
        problems = [f"migration {n} is not recorded" for n, _ in q.MIGRATIONS if n not in names]
        for agent, head, head_hash, last, last_hash in self._fetchall(q.BAD_HEADS, (GENESIS_HASH,)):
            if head != (last or 0):
                problems.append(f"agent {agent!r}: head is #{head}, its last event #{last or 0}")
            else:
                problems.append(
                    f"agent {agent!r}: head hash {head_hash[:16]}... is not the hash of its"
                    f" last event ({(last_hash or GENESIS_HASH)[:16]}...)"
                )
        return problems or ["ok"]


_open_stores: weakref.WeakSet[PostgresStore] = weakref.WeakSet()


def _close_in_owner(pool: ConnectionPool[Connection], pid: int) -> None:
    if os.getpid() == pid:
        pool.close()


def _reset_after_fork() -> None:
    """A lock held by another parent thread at fork() would never be released in the child."""
    for store in list(_open_stores):
        store._lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)
