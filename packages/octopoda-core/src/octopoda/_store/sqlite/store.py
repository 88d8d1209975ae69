"""SqliteStore: the embedded default store.

One connection per store object and process, in WAL mode with a busy timeout
(:mod:`.connection` opens and migrates it). Every write is one ``BEGIN IMMEDIATE``
transaction: read what the commit depends on, let the planner decide
(:func:`~octopoda._store.planner.plan_commit`), insert the rows whose ids the event records
(conflicts, messages) and apply the operations, run the pipeline, then insert the memory
rows and the event and move the agent's head. Several processes share one file. SQL lives in
:mod:`.schema` and :mod:`~octopoda._store.reads`; this class only executes it.
"""

from __future__ import annotations

import _thread
import contextlib
import json
import os
import sqlite3
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Final, TypeVar

from ..._audit.chain import GENESIS_HASH
from ..._audit.signing import SignedHead
from ..._errors import ConfigError, DamagedRow, StorageError, UndecodableText
from ..._log import warn as _warn
from ..._records import Event
from ..audited_reads import AuditedReads, AuditedSql
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
    CommitPlan,
    HeadRead,
    is_plain_commit,
    plan_commit,
    plan_plain_commit,
    reads_needed,
)
from ..reads import CHUNK, SqlReads, collect_preconditions, queue_preconditions
from ..rows import StoredRow
from ..run_reads import RunReads
from ..search_reads import SearchReads
from ..vector_reads import PendingVectors, VectorModel, VectorReads
from . import schema as q
from . import search_index, vector_index
from .connection import DRIVER_ERRORS, connect, file_path, storage_error
from .heads import key_head, max_versions

__all__ = ["SqliteStore"]


_T = TypeVar("_T")
_SECURE_DELETE: Final = ("OFF", "ON", "FAST")  # by the value PRAGMA secure_delete reports
_CHECKPOINT_WAIT_MS: Final = 100


class SqliteStore(SqlReads, RunReads, SearchReads, VectorReads, AuditedReads):
    """The embedded store: one SQLite file (or ``":memory:"``).

    ``durability="normal"`` (default) makes a returned write survive a process crash
    (WAL, ``synchronous=NORMAL``); ``"full"`` also fsyncs every commit, for power loss.
    ``tracer`` is called with every SQL statement executed (for tests and debugging).
    ``read_only``: open without writing anything (reads and ``verify`` work, writes raise
    :class:`StorageError`); by default a file (or directory) this process cannot write is
    opened so, with a warning on the ``octopoda`` logger.
    """

    _reads = q.READS
    _run_sql = q.RUN_READS
    _audited_sql = AuditedSql(q.READS.dialect)
    _search_sql = q.SEARCH

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        durability: str = "normal",
        busy_timeout: float = 30.0,
        tracer: Callable[[str], None] | None = None,
        create_dirs: bool = False,
        read_only: bool | None = None,
    ) -> None:
        if durability not in ("normal", "full"):
            raise ConfigError(f"durability must be 'normal' or 'full', not {durability!r}")
        raw = os.fspath(path)
        self._path = raw if raw == ":memory:" else file_path(raw, create_dirs)
        self._read_only = bool(read_only)
        if raw != ":memory:":
            self._read_only = _check_file(self._path, read_only)
        self._durability = durability
        self._busy_timeout = busy_timeout
        self._tracer = tracer
        self._lock = _thread.RLock()
        self._conn: sqlite3.Connection | None = None
        self._matrices = vector_index.Matrices()
        self._pid = os.getpid()
        self._forks = _forks[0]
        self._conn = self._open()
        _open_stores.add(self)

    # -- connection -----------------------------------------------------------------------

    @property
    def url(self) -> str:
        return "sqlite:///:memory:" if self._path == ":memory:" else f"sqlite:///{self._path}"

    @property
    def path(self) -> str:
        return self._path

    @property
    def durability(self) -> str:
        return self._durability

    @property
    def read_only(self) -> bool:
        """Whether the store was opened read-only (writes raise :class:`StorageError`)."""
        return self._read_only

    def _open(self) -> sqlite3.Connection:
        conn = connect(
            self._path,
            durability=self._durability,
            busy_timeout=self._busy_timeout,
            tracer=self._tracer,
            read_only=self._read_only,
        )
        # Close the connection when the store is garbage collected (or at exit), in the
        # process that opened it only: a forked child never closes its parent's connection.
        weakref.finalize(self, _close_in_owner, conn, os.getpid())
        return conn

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StorageError(f"the store {self._path} is closed; open a new one")
        if self._forks != _forks[0]:  # forked: never share a connection with the parent
            self._forks = _forks[0]  # (counted at fork: no getpid() system call per write)
            self._pid = os.getpid()
            self._conn = self._open()
        return self._conn

    def _storage_error(self, exc: Exception) -> StorageError:
        return storage_error(self._path, self._busy_timeout, exc)

    def close(self) -> None:
        with self._lock:
            if self._conn is not None and os.getpid() == self._pid:
                self._conn.close()
            self._conn = None

    def __enter__(self) -> SqliteStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SqliteStore({self._path!r})"

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
        with self._lock:
            conn = self._connection()
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    plan = self._plan(
                        conn, event, writes, ops, snapshot, replace_snapshot, expected_seq
                    )
                    time = event.time
                    if plan.conflicts or plan.ops:
                        self._apply_before_pipeline(conn, event, plan)
                    else:
                        plan.stamp(event)
                    event = pipeline(event)
                    self._write(conn, event, plan, time)
                    if snapshot is not None:
                        sql = q.REPLACE_SNAPSHOT if replace_snapshot else q.INSERT_SNAPSHOT
                        conn.execute(sql, (event.agent, snapshot, plan.seq, event.time))
                    if status is not None:
                        conn.execute(q.SET_STATUS, (*status, event.agent))
                    conn.execute("COMMIT")
                except BaseException:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    raise
            except sqlite3.Error as exc:
                raise self._storage_error(exc) from None
            if plan.erasures:
                self._truncate_wal(conn)
            return event, plan.versions

    def _plan(
        self,
        conn: sqlite3.Connection,
        event: Event,
        writes: Sequence[MemoryWrite],
        ops: Sequence[Op],
        snapshot: str | None,
        replace_snapshot: bool,
        expected_seq: int | None,
    ) -> CommitPlan:
        """Inside the transaction: read the agent's head (creating the agent on its first
        commit) and what else the planner needs, and plan the commit. A plain commit (every
        ``remember``) reads the head and its key's version in one statement, and no more."""
        agent = event.agent
        first = writes[0] if writes else None
        if first is not None:
            row = conn.execute(q.HEAD_AND_VERSION, (first.namespace, first.key, agent)).fetchone()
        else:
            row = conn.execute(q.HEAD, (agent,)).fetchone()
        if row is None:
            conn.execute(q.NEW_AGENT, (agent, event.time, GENESIS_HASH))
            version = None
            if first is not None:
                version = conn.execute(q.MAX_VERSION, (first.namespace, first.key)).fetchone()[0]
            row = (0, GENESIS_HASH, version)
        if is_plain_commit(writes, ops, snapshot):  # every remember, tool call, decision
            version = 0 if first is None else (row[2] or 0)
            return plan_plain_commit(event, writes, row[0], row[1], version, expected_seq)
        needs = reads_needed(writes, ops, snapshot, replace_snapshot)
        queued = queue_preconditions(q.READS, conn.execute, agent, needs)
        first_slot = None if first is None else (first.namespace, first.key)
        slots = [s for s in needs.slots if s not in needs.authored and s != first_slot]
        versions = max_versions(conn, slots)
        keys = {
            slot: key_head(conn, slot, needs, first_slot, row, versions) for slot in needs.slots
        }
        head = HeadRead(row[0], row[1], keys, **collect_preconditions(q.READS, queued))
        return plan_commit(
            event,
            writes,
            head,
            ops=ops,
            snapshot=snapshot,
            replace_snapshot=replace_snapshot,
            expected_seq=expected_seq,
        )

    def _apply_before_pipeline(
        self, conn: sqlite3.Connection, event: Event, plan: CommitPlan
    ) -> None:
        """The conflict rows and the operations (in order), whose ids the payload records;
        then the event gets its seq, prev_hash and payload entries (``plan.stamp``)."""
        agent, time, seq = event.agent, event.time, plan.seq
        conflict_ids = [_rowid(conn.execute(q.INSERT_CONFLICT, c[:9])) for c in plan.conflicts]
        message_ids: list[int] = []
        for op in plan.ops:
            if isinstance(op, SendMessage):
                sent = (op.recipient, op.space, op.message_type, op.body, op.body_sha256, op.run_id)
                message_ids.append(
                    _rowid(conn.execute(q.INSERT_MESSAGE, (agent, *sent, time, seq)))
                )
            elif isinstance(op, MarkRead):
                conn.execute(q.MARK_READ, (time, op.message_id, agent))
            elif isinstance(op, CreateSpace):
                members = None if op.members is None else json.dumps(list(op.members))
                conn.execute(q.INSERT_SPACE, (op.name, time, agent, members))
            elif isinstance(op, ResolveConflict):
                conn.execute(q.RESOLVE_CONFLICT, (op.resolution, agent, time, op.conflict_id))
            elif isinstance(op, EraseKey):
                _erase_securely(conn, op)
                self._matrices.forget(op.namespace)  # (no erased vector stays in memory)
            elif isinstance(op, SetRunStatus):
                status = (op.run_id, op.status, op.reason, time, seq)
                conn.execute(q.SET_RUN_STATUS, (agent, *status))
        plan.stamp(event, conflict_ids, message_ids)

    @staticmethod
    def _write(conn: sqlite3.Connection, event: Event, plan: CommitPlan, time: float) -> None:
        """After the pipeline: the memory rows, the event, the agent's new head."""
        agent, seq, versions = event.agent, plan.seq, plan.versions
        if len(versions) == 1:
            row = q.memory_row(plan.writes[0], versions[0], agent, time, seq)
            conn.execute(q.INSERT_MEMORY, row)
        elif versions:
            written = zip(plan.writes, versions, strict=True)
            rows = [q.memory_row(w, v, agent, time, seq) for w, v in written]
            conn.executemany(q.INSERT_MEMORY, rows)
        run = event.payload.get("run_id")  # (run_of, inlined: every commit)
        chained = (
            event.payload_text,
            event.prev_hash,
            event.hash,
            run if type(run) is str else None,
        )
        conn.execute(q.INSERT_EVENT, (agent, seq, event.time, event.kind, *chained))
        conn.execute(q.MOVE_HEAD, (seq, event.hash, event.time, agent))

    def _truncate_wal(self, conn: sqlite3.Connection) -> None:
        """After an erasure: copy the WAL into the database file and truncate it, so the
        erased values' old page images are left in neither. Best effort: a reader on another
        connection still using an older snapshot prevents it, which is not an error (the
        erasure is committed either way; later checkpoints copy the zeroed pages over)."""
        if self._path == ":memory:":
            return
        with contextlib.suppress(sqlite3.Error):
            conn.execute(f"PRAGMA busy_timeout = {_CHECKPOINT_WAIT_MS}")  # never hang on readers
            try:
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
            finally:
                conn.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout * 1000)}")

    def put_signed_head(self, head: SignedHead) -> None:
        """Keep a signed head of an agent's chain."""
        row = (head.agent, head.seq, head.public_key, head.hash, head.signature, head.created_at)
        with self._lock:
            try:
                self._connection().execute(q.PUT_SIGNED_HEAD, row)
            except sqlite3.Error as exc:
                raise self._storage_error(exc) from None

    # -- reads (the queries are SqlReads') -------------------------------------------------

    def all_versions(self, namespace: str) -> Iterator[StoredRow]:
        try:
            yield from SqlReads.all_versions(self, namespace)
        except UndecodableText:
            raise self._undecodable_row(namespace) from None

    def chain_rows(self, agent: str, after_seq: int = 0) -> Iterator[tuple[Any, ...]]:
        cursor = after_seq
        while True:
            try:
                chunk = self._fetchall(self._reads.chain_chunk, (agent, cursor, CHUNK))
            except UndecodableText:  # as bytes where not UTF-8: verify names the row
                rows = self._fetchall(q.CHAIN_CHUNK_AS_BYTES, (agent, cursor, CHUNK))
                chunk = [(r[0], r[1], *map(_text_or_bytes, r[2::2], r[3::2])) for r in rows]
            yield from chunk
            if len(chunk) < CHUNK:
                return
            cursor = chunk[-1][0]

    def _undecodable_row(self, namespace: str) -> StorageError:
        """The first memory row of ``namespace`` with a text column that is not UTF-8
        (which the driver cannot even return), as a :class:`DamagedRow`."""
        rows = self._fetchall(q.UNDECODABLE_SCAN, (namespace,))
        for version, seq, kind, *columns in rows:
            for name, raw in zip(
                ("key", "encoding", "tags", "author", "value", "kind"), columns, strict=True
            ):
                if raw is None or (name == "value" and kind != "text"):
                    continue
                try:
                    raw.decode("utf-8")
                except UnicodeDecodeError:
                    key = columns[0].decode("utf-8", "replace")
                    return DamagedRow(key, version, seq, f"its {name} is not valid UTF-8")
        return StorageError(f"the store {self._path} holds text that is not valid UTF-8")

    @contextlib.contextmanager
    def read_snapshot(self) -> Iterator[None]:
        """The reads of this thread inside the block see the store as of its first read:
        one read transaction (WAL: other processes keep writing, unseen), under the store's
        lock (this process's other threads wait). What ``audit.verify`` reads in. Not for
        writes; nested blocks join the outer one."""
        with self._lock:
            conn = self._connection()
            if conn.in_transaction:  # nested
                yield
                return
            try:
                conn.execute("BEGIN")
            except DRIVER_ERRORS as exc:
                raise self._storage_error(exc) from None
            try:
                yield
            finally:
                with contextlib.suppress(*DRIVER_ERRORS):
                    conn.execute("ROLLBACK")

    def open_reader(self) -> SqliteStore | None:
        """Another store on this file, read-only, with its own connection (the caller
        closes it): a long read on it, such as a server's snapshot session, leaves this
        store's lock to its writers. None for an in-memory database (no other connection
        sees it)."""
        return None if self._path == ":memory:" else SqliteStore(self._path, read_only=True)

    def _fetchone(self, sql: str, params: Sequence[Any]) -> Any:
        return self._on_connection(lambda conn: conn.execute(sql, params).fetchone())

    def _fetchall(self, sql: str, params: Sequence[Any]) -> list[Any]:
        return self._on_connection(lambda conn: conn.execute(sql, params).fetchall())

    def _on_connection(self, fn: Callable[..., _T], *args: Any) -> _T:
        """``fn(connection, *args)`` under the store's lock, driver errors mapped."""
        with self._lock:
            try:
                return fn(self._connection(), *args)
            except DRIVER_ERRORS as exc:
                raise self._storage_error(exc) from None

    def _catch_up(self) -> None:
        self._on_connection(search_index.catch_up)

    # -- vectors (the algorithm is VectorReads'; the SQL is vector_index's) -----------------

    def vector_model(self) -> VectorModel | None:
        return vector_index.model_of(self._fetchone(vector_index.MODEL, ()))

    def reset_vectors(self) -> None:
        self._on_connection(vector_index.reset)
        self._matrices.clear()

    def _vector_pending(self) -> list[PendingVectors]:
        return self._on_connection(vector_index.pending)

    def _vector_apply(
        self, model: VectorModel, pending: PendingVectors | None, puts: list[Any]
    ) -> None:
        if not self._on_connection(vector_index.apply, model, pending, puts) and pending is None:
            raise StorageError(f"the store {self._path} is read-only: no vector was stored")

    def _vector_search(
        self,
        namespace: str,
        query: list[float],
        model: VectorModel,
        prefix: str,
        tags: Sequence[str],
        now: float | None,
        limit: int,
        kinds: Sequence[str] = (),
    ) -> list[tuple[StoredRow, float]]:
        filtered = q.SEARCH.filtered(prefix, tags, now, kinds)
        return self._matrices.search(self._fetchall, namespace, query, model, filtered, limit)

    # -- maintenance ----------------------------------------------------------------------

    def info(self) -> dict[str, Any]:
        """Path, schema version, migrations, journal mode and size, for ``octopoda doctor``."""
        names = [
            r[0] for r in self._fetchall("SELECT name FROM schema_migrations ORDER BY name", ())
        ]
        pragma = {
            name: self._fetchone(f"PRAGMA {name}", ())[0]
            for name in ("page_count", "page_size", "user_version", "journal_mode")
        }
        return {
            "backend": "sqlite",
            "url": self.url,
            "path": self._path,
            "schema_version": pragma["user_version"],
            "migrations": names,
            "journal_mode": pragma["journal_mode"],
            "durability": self._durability,
            "read_only": self._read_only,
            "size_bytes": pragma["page_count"] * pragma["page_size"],
            "sqlite_version": sqlite3.sqlite_version,
        }

    def integrity_check(self) -> list[str]:
        """``PRAGMA integrity_check``: ``["ok"]`` when the file is sound."""
        return [r[0] for r in self._fetchall("PRAGMA integrity_check", ())]


def _rowid(cursor: sqlite3.Cursor) -> int:
    rowid = cursor.lastrowid
    if rowid is None:  # pragma: no cover - an INSERT always sets it
        raise StorageError("SQLite assigned no row id to an insert")
    return rowid


def _erase_securely(conn: sqlite3.Connection, op: EraseKey) -> None:
    """Inside the write transaction: drop the values of ``op.key`` with ``secure_delete`` on,
    so SQLite overwrites the freed bytes with zeros instead of leaving them in free space;
    the connection's previous setting is restored afterwards. The key leaves the search
    index, whose segments are then merged (``optimize``) so that no word of the erased
    value stays in them."""
    previous = conn.execute("PRAGMA secure_delete").fetchone()[0]
    conn.execute("PRAGMA secure_delete = ON")
    try:
        conn.execute(q.ERASE, (op.namespace, op.key))
        conn.execute(search_index.DROP_TEXT, (op.namespace, op.key))
        conn.execute(search_index.DROP_DOC, (op.namespace, op.key))
        conn.execute(vector_index.DROP, (op.namespace, op.key))
        conn.execute(q.OPTIMIZE_SEARCH)
    finally:
        conn.execute(f"PRAGMA secure_delete = {_SECURE_DELETE[previous]}")


_open_stores: weakref.WeakSet[SqliteStore] = weakref.WeakSet()
_held: list[SqliteStore] = []


def _close_in_owner(conn: sqlite3.Connection, pid: int) -> None:
    if os.getpid() == pid:
        conn.close()


_forks = [0]  # how many times this process is a forked child of a process using stores


def _before_fork() -> None:
    """Let no fork happen in the middle of a store call of another thread: the child would
    inherit SQLite's lock state of that transaction and could never write."""
    _held[:] = list(_open_stores)
    for store in _held:
        store._lock.acquire()


def _after_fork_in_parent() -> None:
    for store in _held:
        store._lock.release()
    _held.clear()


def _after_fork_in_child() -> None:
    """The child gets fresh locks; its connections are reopened on first use (see
    ``_connection``), never shared with the parent."""
    _forks[0] += 1
    for store in _held:
        store._lock = _thread.RLock()
    _held.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(
        before=_before_fork,
        after_in_parent=_after_fork_in_parent,
        after_in_child=_after_fork_in_child,
    )


def _text_or_bytes(kind: str, raw: Any) -> Any:
    """A column read as bytes (``CAST(c AS BLOB)``) back as it was stored: text as str when
    it is UTF-8; other text, and blobs, as bytes."""
    if kind != "text":
        return raw
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw


EMPTY_FILE_AGE: Final = 2.0
"""A 0-byte store file older than this (seconds) is a leftover, not one another process is
creating right now: opening it says so."""


def _check_file(path: str, read_only: bool | None) -> bool:
    """Whether to open ``path`` read-only (``read_only``; None: when this process cannot
    write the file or, for its WAL files, its directory), saying so on the logger; and say
    that a 0-byte file is set up as a new store."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return bool(read_only)
    if read_only is None:
        directory = os.path.dirname(path)
        read_only = not (os.access(path, os.W_OK) and os.access(directory, os.W_OK))
        if read_only:
            _warn(
                "octopoda: %s (or its directory) is not writable: opened read-only; reads"
                " and audit verification work, writes raise StorageError",
                path,
            )
    if info.st_size == 0:
        if read_only:
            raise StorageError(f"{path} is an empty file (0 bytes) opened read-only: no store")
        if time.time() - info.st_mtime > EMPTY_FILE_AGE:
            _warn(
                "octopoda: %s was an empty file (0 bytes): set up as a new, empty store; if it"
                " held a store before, restore it from a backup",
                path,
            )
    return read_only
