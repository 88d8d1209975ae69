"""SqliteStore: the embedded default store.

One connection per store object and process, in WAL mode with a busy timeout; every write
is one ``BEGIN IMMEDIATE`` transaction holding the memory rows, the event and the agent's
new chain head. Several processes share one file; opening a brand-new file from several
processes at once is safe (migrations are serialised by the write lock and re-checked
inside it). SQL lives in module constants; the class only executes.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Final

from ._errors import (
    AccessDenied,
    ConfigError,
    InvalidInput,
    NotFound,
    SchemaTooNew,
    StorageError,
    VersionConflict,
)
from ._events import GENESIS_HASH
from ._records import Event
from ._signing import SignedHead
from ._sqlite_schema import APPLICATION_ID, MIGRATIONS
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
    prefix_upper_bound,
    write_entry,
)

__all__ = ["SqliteStore"]

_COLS: Final = "key, version, encoding, value, tags, created_at, expires_at, seq, author, erased"
_SQL_HEAD: Final = "SELECT head_seq, head_hash FROM agents WHERE id = ?"
_SQL_HEAD_AND_VERSION: Final = (
    "SELECT head_seq, head_hash,"
    " (SELECT MAX(version) FROM memories WHERE namespace = ? AND key = ?)"
    " FROM agents WHERE id = ?"
)
_SQL_NEW_AGENT: Final = (
    "INSERT INTO agents (id, created_at, status, head_seq, head_hash) VALUES (?, ?, 'active', 0, ?)"
)
_SQL_MAX_VERSION: Final = "SELECT MAX(version) FROM memories WHERE namespace = ? AND key = ?"
_SQL_INSERT_MEMORY: Final = (
    "INSERT INTO memories (namespace, key, version, encoding, value, tags, author, created_at,"
    " expires_at, seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_SQL_INSERT_EVENT: Final = (
    "INSERT INTO events (agent, seq, time, kind, payload, prev_hash, hash)"
    " VALUES (?, ?, ?, ?, ?, ?, ?)"
)
_SQL_MOVE_HEAD: Final = (
    "UPDATE agents SET head_seq = ?, head_hash = ?, last_active = ? WHERE id = ?"
)
_SQL_INSERT_SNAPSHOT: Final = (
    "INSERT INTO snapshots (agent, name, seq, created_at) VALUES (?, ?, ?, ?)"
)
_SQL_REPLACE_SNAPSHOT: Final = (
    _SQL_INSERT_SNAPSHOT + " ON CONFLICT (agent, name) DO UPDATE"
    " SET seq = excluded.seq, created_at = excluded.created_at"
)
_SQL_LATEST: Final = (
    f"SELECT {_COLS} FROM memories WHERE namespace = ? AND key = ? ORDER BY version DESC LIMIT 1"
)
_SQL_LATEST_AS_OF: Final = (
    f"SELECT {_COLS} FROM memories WHERE namespace = ? AND key = ? AND seq <= ?"
    " ORDER BY version DESC LIMIT 1"
)
_SQL_VERSION: Final = (
    f"SELECT {_COLS} FROM memories WHERE namespace = ? AND key = ? AND version = ?"
)
_SQL_HISTORY: Final = (
    f"SELECT {_COLS} FROM memories WHERE namespace = ? AND key = ? ORDER BY version DESC"
)
_SQL_ALL_VERSIONS: Final = (
    f"SELECT {_COLS} FROM memories WHERE namespace = ? AND (key, version) > (?, ?)"
    " ORDER BY key, version LIMIT ?"
)
_SQL_EVENTS_CHUNK: Final = (
    "SELECT seq, time, kind, payload, prev_hash, hash FROM events"
    " WHERE agent = ? AND seq > ? ORDER BY seq LIMIT ?"
)
_AGENT_COLS: Final = "id, created_at, status, head_seq, head_hash, last_active, status_reason"
_SQL_AGENT: Final = f"SELECT {_AGENT_COLS} FROM agents WHERE id = ?"
_SQL_AGENTS: Final = f"SELECT {_AGENT_COLS} FROM agents ORDER BY id"
_SQL_SET_STATUS: Final = "UPDATE agents SET status = ?, status_reason = ? WHERE id = ?"
_SQL_SNAPSHOT: Final = (
    "SELECT agent, name, seq, created_at FROM snapshots WHERE agent = ? AND name = ?"
)
_SQL_SNAPSHOTS: Final = (
    "SELECT agent, name, seq, created_at FROM snapshots WHERE agent = ? ORDER BY seq"
)
_SQL_PUT_SIGNED_HEAD: Final = (
    "INSERT OR REPLACE INTO signed_heads (agent, seq, public_key, hash, signature, created_at)"
    " VALUES (?, ?, ?, ?, ?, ?)"
)
_SQL_SIGNED_HEADS: Final = (
    "SELECT agent, seq, public_key, hash, signature, created_at FROM signed_heads"
    " WHERE agent = ? ORDER BY seq, public_key"
)
_SQL_HEAD_AUTHOR: Final = (
    "SELECT version, author FROM memories WHERE namespace = ? AND key = ?"
    " ORDER BY version DESC LIMIT 1"
)
_SQL_INSERT_CONFLICT: Final = (
    "INSERT INTO conflicts (namespace, key, version, author, head_version, head_author,"
    " seen_version, created_at, seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_CONFLICT_COLS: Final = (
    "id, namespace, key, version, author, head_version, head_author, seen_version,"
    " created_at, seq, status, resolution, resolved_by, resolved_at"
)
_SQL_RESOLVE_CONFLICT: Final = (
    "UPDATE conflicts SET status = 'resolved', resolution = ?, resolved_by = ?, resolved_at = ?"
    " WHERE id = ? AND status = 'open'"
)
_SQL_INSERT_SPACE: Final = (
    "INSERT INTO spaces (name, created_at, created_by, members) VALUES (?, ?, ?, ?)"
)
_MESSAGE_COLS: Final = (
    "id, sender, recipient, space, message_type, body, created_at, read_at, seq, body_sha256"
)
_SQL_INSERT_MESSAGE: Final = (
    "INSERT INTO messages (sender, recipient, space, message_type, body, body_sha256,"
    " created_at, seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)
_SQL_PARTY_MESSAGES: Final = (
    f"SELECT * FROM (SELECT {_MESSAGE_COLS} FROM messages WHERE recipient = ?"
    f" UNION ALL SELECT {_MESSAGE_COLS} FROM messages WHERE sender = ? AND recipient IS NOT NULL"
    " AND recipient != ?) ORDER BY id DESC LIMIT ?"
)
_SQL_MARK_READ: Final = (
    "UPDATE messages SET read_at = ? WHERE id = ? AND recipient = ? AND read_at IS NULL"
)
_SQL_ERASABLE: Final = (
    "SELECT version FROM memories WHERE namespace = ? AND key = ? AND erased = 0"
    " AND encoding != 'tombstone' ORDER BY version"
)
_SQL_ERASE: Final = (
    "UPDATE memories SET value = NULL, erased = 1 WHERE namespace = ? AND key = ?"
    " AND erased = 0 AND encoding != 'tombstone'"
)
_SECURE_DELETE: Final = ("OFF", "ON", "FAST")  # by the value PRAGMA secure_delete reports
_CHUNK: Final = 5000
_CHECKPOINT_WAIT_MS: Final = 100


def current_query(
    *,
    prefix: str,
    tags: Sequence[str],
    as_of_seq: int | None,
    now: float | None,
    limit: int | None,
    offset: int,
    include_dead: bool,
    namespace: str,
) -> tuple[str, list[Any]]:
    """Build the SQL for the latest version per key (pure: no I/O).

    Without a limit, the newest version of every key in range is grouped first, then joined
    (one pass over the range). With one, the range is walked in key order, each row kept if
    it is its key's newest version (an index probe), so SQLite stops after ``offset + limit``
    kept rows instead of grouping and sorting the whole range."""
    inner = ["namespace = ?"]
    params: list[Any] = [namespace]
    if prefix:
        inner.append("key >= ?")
        params.append(prefix)
        upper = prefix_upper_bound(prefix)
        if upper is not None:
            inner.append("key < ?")
            params.append(upper)
    if as_of_seq is not None:
        inner.append("seq <= ?")
        params.append(as_of_seq)
    outer: list[str] = []
    outer_params: list[Any] = []
    if not include_dead:
        outer.append("m.encoding != 'tombstone' AND m.erased = 0")
        if now is not None:
            outer.append("(m.expires_at IS NULL OR m.expires_at > ?)")
            outer_params.append(now)
    for tag in tags:
        # instr() on the stored JSON text first (the tag as it is encoded in it, quotes
        # included): a cheap test that rules out most rows before json_each() parses them
        outer.append(
            "instr(m.tags, ?) > 0"
            " AND EXISTS (SELECT 1 FROM json_each(m.tags) WHERE json_each.value = ?)"
        )
        outer_params.extend((_tag_json(tag), tag))
    cols = f"m.{_COLS.replace(', ', ', m.')}"
    if limit is None:
        sql = (
            f"SELECT {cols} FROM"
            f" (SELECT key AS k, MAX(version) AS v FROM memories WHERE {' AND '.join(inner)}"
            " GROUP BY key) h JOIN memories m ON m.namespace = ? AND m.key = h.k"
            " AND m.version = h.v"
        )
        params.append(namespace)
        order = " ORDER BY h.k"
    else:
        newest = "SELECT MAX(x.version) FROM memories x WHERE x.namespace = m.namespace"
        newest += " AND x.key = m.key" + (" AND x.seq <= ?" if as_of_seq is not None else "")
        outer.insert(0, f"m.version = ({newest})")
        if as_of_seq is not None:
            outer_params.insert(0, as_of_seq)
        sql = f"SELECT {cols} FROM memories m WHERE " + " AND ".join(f"m.{c}" for c in inner)
        order = " ORDER BY m.key"
    if outer:
        sql += (" AND " if limit is not None else " WHERE ") + " AND ".join(outer)
    params.extend(outer_params)
    sql += order
    if limit is not None or offset:
        sql += " LIMIT ? OFFSET ?"
        params.extend((-1 if limit is None else limit, offset))
    return sql, params


def _tag_json(tag: str) -> str:
    """How ``tag`` appears in a row's ``tags`` column (as ``_memory_row`` writes it)."""
    return json.dumps(tag, ensure_ascii=False)


def _row(r: tuple[Any, ...]) -> StoredRow:
    return StoredRow(
        key=r[0],
        version=r[1],
        encoding=r[2],
        data=r[3],
        tags=tuple(json.loads(r[4])) if r[4] else (),
        created_at=r[5],
        expires_at=r[6],
        seq=r[7],
        author=r[8],
        erased=bool(r[9]),
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


class SqliteStore:
    """The embedded store: one SQLite file (or ``":memory:"``).

    ``durability="normal"`` (default) makes a returned write survive a process crash
    (WAL, ``synchronous=NORMAL``); ``"full"`` also fsyncs every commit, for power loss.
    ``tracer`` is called with every SQL statement executed (for tests and debugging).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        durability: str = "normal",
        busy_timeout: float = 30.0,
        tracer: Callable[[str], None] | None = None,
        create_dirs: bool = False,
    ) -> None:
        if durability not in ("normal", "full"):
            raise ConfigError(f"durability must be 'normal' or 'full', not {durability!r}")
        raw = os.fspath(path)
        if raw == ":memory:":
            self._path = raw
        else:
            if not raw:
                raise ConfigError("the store path is empty; pass a file path or ':memory:'")
            p = os.path.realpath(os.path.expanduser(raw))
            if os.path.isdir(p):
                raise ConfigError(
                    f"{p} is a directory; pass a file path such as {os.path.join(p, 'octopoda.db')}"
                )
            parent = os.path.dirname(p)
            if not os.path.isdir(parent):
                if not create_dirs:
                    raise ConfigError(
                        f"the directory {parent} does not exist; create it or pass another path"
                    )
                os.makedirs(parent, exist_ok=True)
            self._path = p
        self._durability = durability
        self._busy_timeout = busy_timeout
        self._tracer = tracer
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
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

    def _open(self) -> sqlite3.Connection:
        conn = self._connect()
        # Close the connection when the store is garbage collected (or at exit), in the
        # process that opened it only: a forked child never closes its parent's connection.
        weakref.finalize(self, _close_in_owner, conn, os.getpid())
        return conn

    def _connect(self) -> sqlite3.Connection:
        deadline = time.monotonic() + self._busy_timeout
        while True:
            conn: sqlite3.Connection | None = None
            try:
                conn = sqlite3.connect(
                    self._path,
                    timeout=self._busy_timeout,
                    isolation_level=None,
                    check_same_thread=False,
                    cached_statements=256,
                )
                if self._tracer is not None:
                    conn.set_trace_callback(self._tracer)
                conn.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout * 1000)}")
                self._check_foreign(conn)
                if self._path != ":memory:":
                    conn.execute("PRAGMA journal_mode = WAL")
                sync = "FULL" if self._durability == "full" else "NORMAL"
                conn.execute(f"PRAGMA synchronous = {sync}")
                # freed space is zeroed, whatever this SQLite build's default: an erased
                # value leaves no copy behind in pages that split or moved cells before
                conn.execute("PRAGMA secure_delete = ON")
                self._migrate(conn)
                return conn
            except sqlite3.OperationalError as exc:
                if conn is not None:
                    conn.close()
                if _is_busy(exc) and time.monotonic() < deadline:
                    time.sleep(
                        0.005 + (time.perf_counter_ns() + os.getpid()) % 45_000 / 1e6
                    )  # jitter
                    continue
                raise self._storage_error(exc) from None
            except sqlite3.DatabaseError as exc:
                if conn is not None:
                    conn.close()
                raise self._storage_error(exc) from None
            except BaseException:
                if conn is not None:
                    conn.close()
                raise

    def _check_foreign(self, conn: sqlite3.Connection) -> None:
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        if app_id == APPLICATION_ID:
            return
        if app_id != 0:
            raise StorageError(
                f"{self._path} is an SQLite database of another application"
                f" (application_id {app_id:#x}); point Octopoda at its own file"
            )
        tables = conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        ).fetchall()
        if tables and not any(t[0] == "schema_migrations" for t in tables):
            raise StorageError(
                f"{self._path} already holds tables of another application"
                f" ({', '.join(t[0] for t in tables[:5])}); point Octopoda at its own file"
            )

    def _migrate(self, conn: sqlite3.Connection) -> None:
        target = len(MIGRATIONS)
        current = conn.execute("PRAGMA user_version").fetchone()[0]
        if current > target:
            raise SchemaTooNew(
                f"{self._path} has schema version {current}, newer than this Octopoda"
                f" understands ({target}); upgrade octopoda-core"
            )
        for number, (name, statements) in enumerate(MIGRATIONS, start=1):
            if number <= current:
                continue
            conn.execute("BEGIN IMMEDIATE")
            try:
                if conn.execute("PRAGMA user_version").fetchone()[0] >= number:
                    conn.execute("COMMIT")  # another process applied it meanwhile
                    continue
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS schema_migrations"
                    " (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)"
                )
                for statement in statements:
                    conn.execute(statement)
                conn.execute(
                    "INSERT INTO schema_migrations (name, applied_at) VALUES (?, ?)",
                    (name, time.time()),
                )
                conn.execute(f"PRAGMA user_version = {number}")
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StorageError(f"the store {self._path} is closed; open a new one")
        if self._forks != _forks[0]:  # forked: never share a connection with the parent
            self._forks = _forks[0]  # (counted at fork: no getpid() system call per write)
            self._pid = os.getpid()
            self._conn = self._open()
        return self._conn

    def _storage_error(self, exc: sqlite3.Error) -> StorageError:
        text = str(exc)
        if _is_busy(exc):
            return StorageError(
                f"the store {self._path} stayed locked by another connection for more than"
                f" {self._busy_timeout:g}s ({text}); raise busy_timeout or find the process"
                " holding a long transaction"
            )
        if "not a database" in text or "malformed" in text:
            return StorageError(
                f"{self._path} is not a usable SQLite database ({text}); move it aside or"
                " point Octopoda at another file"
            )
        if "readonly" in text:
            return StorageError(f"the store {self._path} is read-only ({text}); check permissions")
        return StorageError(f"the store {self._path} failed: {text}")

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
                    result = self._commit(
                        conn, event, writes, pipeline, snapshot, replace_snapshot, ops, expected_seq
                    )
                    if status is not None:
                        conn.execute(_SQL_SET_STATUS, (*status, event.agent))
                    conn.execute("COMMIT")
                except BaseException:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    raise
            except sqlite3.Error as exc:
                raise self._storage_error(exc) from None
            if ops and any(isinstance(op, EraseKey) for op in ops):
                self._truncate_wal(conn)
            return result

    def _commit(
        self,
        conn: sqlite3.Connection,
        event: Event,
        writes: Sequence[MemoryWrite],
        pipeline: Callable[[Event], Event],
        snapshot: str | None,
        replace_snapshot: bool,
        ops: Sequence[Op] = (),
        expected_seq: int | None = None,
    ) -> tuple[Event, list[int]]:
        agent = event.agent
        first = writes[0] if writes else None
        if first is not None:  # the head and the first key's version in one round trip
            head = conn.execute(
                _SQL_HEAD_AND_VERSION, (first.namespace, first.key, agent)
            ).fetchone()
        else:
            head = conn.execute(_SQL_HEAD, (agent,)).fetchone()
        if head is None:
            conn.execute(_SQL_NEW_AGENT, (agent, event.time, GENESIS_HASH))
            head = (0, GENESIS_HASH, None)
            if first is not None:
                head = (
                    0,
                    GENESIS_HASH,
                    conn.execute(_SQL_MAX_VERSION, (first.namespace, first.key)).fetchone()[0],
                )
        if expected_seq is not None and head[0] != expected_seq:
            raise VersionConflict(
                f"agent {agent!r} moved from seq {expected_seq} to {head[0]} meanwhile",
                "",
                expected_seq,
                head[0],
            )
        seq = head[0] + 1
        versions: list[int] = []
        rows: list[tuple[Any, ...]] = []
        w = first
        if (
            w is not None
            and len(writes) == 1
            and w.expected_version is None
            and not w.check_stale
            and not w.namespace.startswith("space:")
        ):  # one plain write (every remember): the loop below, without its bookkeeping
            version = (head[2] or 0) + 1
            versions.append(version)
            event.payload["writes"] = [write_entry(w, version, agent_namespace(agent))]
            rows.append(_memory_row(w, version, agent, event.time, seq))
        elif writes:
            own = agent_namespace(agent)
            next_version: dict[tuple[str, str], int] = {
                (writes[0].namespace, writes[0].key): (head[2] or 0) + 1
            }
            entries: list[dict[str, Any]] = []
            stale: list[tuple[MemoryWrite, int, int, str | None]] = []
            written: set[tuple[str, str]] = set()
            for w in writes:
                slot = (w.namespace, w.key)
                if w.namespace.startswith("space:"):
                    _check_member(conn, agent, w.namespace[6:])
                if w.expected_version is not None or w.check_stale:
                    current: tuple[int, str | None]
                    if slot in written:  # written earlier in this commit
                        current = (next_version[slot] - 1, agent)
                    else:
                        current = conn.execute(_SQL_HEAD_AUTHOR, slot).fetchone() or (0, None)
                    check_shared_write(w, agent, current, stale, len(versions))
                    next_version[slot] = current[0] + 1
                version = next_version.get(slot)
                if version is None:
                    version = (conn.execute(_SQL_MAX_VERSION, slot).fetchone()[0] or 0) + 1
                next_version[slot] = version + 1
                written.add(slot)
                versions.append(version)
                entry = write_entry(w, version, own)
                entries.append(entry)
                rows.append(_memory_row(w, version, agent, event.time, seq))
            for w, at, head_version, head_author in stale:
                cur = conn.execute(
                    _SQL_INSERT_CONFLICT,
                    (
                        w.namespace,
                        w.key,
                        versions[at],
                        agent,
                        head_version,
                        head_author,
                        w.seen_version,
                        event.time,
                        seq,
                    ),
                )
                entries[at]["conflict_id"] = cur.lastrowid
            event.payload["writes"] = entries
        if ops:
            self._apply_ops(conn, agent, seq, event, ops)
        event.seq = seq
        event.prev_hash = head[1]
        event = pipeline(event)
        if len(rows) == 1:
            conn.execute(_SQL_INSERT_MEMORY, rows[0])
        elif rows:
            conn.executemany(_SQL_INSERT_MEMORY, rows)
        conn.execute(
            _SQL_INSERT_EVENT,
            (agent, seq, event.time, event.kind, event.payload_text, event.prev_hash, event.hash),
        )
        conn.execute(_SQL_MOVE_HEAD, (seq, event.hash, event.time, agent))
        if snapshot is not None:
            sql = _SQL_REPLACE_SNAPSHOT if replace_snapshot else _SQL_INSERT_SNAPSHOT
            try:
                conn.execute(sql, (agent, snapshot, seq, event.time))
            except sqlite3.IntegrityError:
                raise InvalidInput(
                    f"agent {agent!r} already has a snapshot named {snapshot!r};"
                    " choose another name or pass replace=True"
                ) from None
        return event, versions

    def _apply_ops(
        self, conn: sqlite3.Connection, agent: str, seq: int, event: Event, ops: Sequence[Op]
    ) -> None:
        """Apply ``ops`` inside the commit; record what they created in the payload."""
        for op in ops:
            if isinstance(op, SendMessage):
                if op.space is not None:
                    _check_member(conn, agent, op.space)
                cur = conn.execute(
                    _SQL_INSERT_MESSAGE,
                    (
                        agent,
                        op.recipient,
                        op.space,
                        op.message_type,
                        op.body,
                        op.body_sha256,
                        event.time,
                        seq,
                    ),
                )
                event.payload["message_id"] = cur.lastrowid
            elif isinstance(op, MarkRead):
                cur = conn.execute(_SQL_MARK_READ, (event.time, op.message_id, agent))
                if cur.rowcount != 1:
                    raise NotFound(
                        f"agent {agent!r} has no unread message {op.message_id}"
                        " (read it with read_messages())"
                    )
            elif isinstance(op, CreateSpace):
                members = None if op.members is None else json.dumps(list(op.members))
                try:
                    conn.execute(_SQL_INSERT_SPACE, (op.name, event.time, agent, members))
                except sqlite3.IntegrityError:
                    raise InvalidInput(f"a space named {op.name!r} already exists") from None
            elif isinstance(op, ResolveConflict):
                cur = conn.execute(
                    _SQL_RESOLVE_CONFLICT, (op.resolution, agent, event.time, op.conflict_id)
                )
                if cur.rowcount != 1:
                    done = conn.execute(
                        "SELECT resolution FROM conflicts WHERE id = ?", (op.conflict_id,)
                    ).fetchone()
                    if done is not None:
                        raise InvalidInput(
                            f"conflict {op.conflict_id} is already resolved ({done[0]})"
                        )
                    raise NotFound(f"no open conflict with id {op.conflict_id}")
            elif isinstance(op, EraseKey):
                check_erase(op, agent)
                erasable = conn.execute(_SQL_ERASABLE, (op.namespace, op.key)).fetchall()
                entry = erase_entry(op, agent, [r[0] for r in erasable])
                _erase_securely(conn, op)
                event.payload.setdefault("erased", []).append(entry)
            else:  # pragma: no cover - exhaustive
                raise TypeError(f"unknown store operation {op!r}")

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

    # -- reads ----------------------------------------------------------------------------

    def _fetchone(self, sql: str, params: Sequence[Any]) -> Any:
        with self._lock:
            try:
                return self._connection().execute(sql, params).fetchone()
            except sqlite3.Error as exc:
                raise self._storage_error(exc) from None

    def _fetchall(self, sql: str, params: Sequence[Any]) -> list[Any]:
        with self._lock:
            try:
                return self._connection().execute(sql, params).fetchall()
            except sqlite3.Error as exc:
                raise self._storage_error(exc) from None

    def latest(self, namespace: str, key: str, as_of_seq: int | None = None) -> StoredRow | None:
        if as_of_seq is None:
            r = self._fetchone(_SQL_LATEST, (namespace, key))
        else:
            r = self._fetchone(_SQL_LATEST_AS_OF, (namespace, key, as_of_seq))
        return None if r is None else _row(r)

    def version(self, namespace: str, key: str, version: int) -> StoredRow | None:
        r = self._fetchone(_SQL_VERSION, (namespace, key, version))
        return None if r is None else _row(r)

    def history(self, namespace: str, key: str, limit: int | None = None) -> list[StoredRow]:
        sql = _SQL_HISTORY
        params: list[Any] = [namespace, key]
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        return [_row(r) for r in self._fetchall(sql, params)]

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
        sql, params = current_query(
            namespace=namespace,
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
            chunk = self._fetchall(_SQL_ALL_VERSIONS, (namespace, *after, _CHUNK))
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
        clauses = ["agent = ?", "seq > ?"]
        base: list[Any] = [agent]
        extra: list[Any] = []
        if until_seq is not None:
            clauses.append("seq <= ?")
            extra.append(until_seq)
        if since is not None:
            clauses.append("time >= ?")
            extra.append(since)
        if until is not None:
            clauses.append("time < ?")
            extra.append(until)
        if kinds:
            clauses.append(f"kind IN ({', '.join('?' * len(kinds))})")
            extra.extend(kinds)
        sql = (
            "SELECT agent, seq, time, kind, payload, prev_hash, hash FROM events WHERE "
            + " AND ".join(clauses)
            + " ORDER BY seq LIMIT ?"
        )
        remaining = limit
        cursor = after_seq
        while remaining is None or remaining > 0:
            size = _CHUNK if remaining is None else min(_CHUNK, remaining)
            chunk = self._fetchall(sql, [*base, cursor, *extra, size])
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
            chunk = self._fetchall(_SQL_EVENTS_CHUNK, (agent, cursor, _CHUNK))
            yield from chunk
            if len(chunk) < _CHUNK:
                return
            cursor = chunk[-1][0]

    def agent(self, agent: str) -> AgentRow | None:
        r = self._fetchone(_SQL_AGENT, (agent,))
        return None if r is None else AgentRow(*r)

    def agents(self) -> list[AgentRow]:
        return [AgentRow(*r) for r in self._fetchall(_SQL_AGENTS, ())]

    def snapshot(self, agent: str, name: str) -> SnapshotRow | None:
        r = self._fetchone(_SQL_SNAPSHOT, (agent, name))
        return None if r is None else SnapshotRow(*r)

    def snapshots(self, agent: str) -> list[SnapshotRow]:
        return [SnapshotRow(*r) for r in self._fetchall(_SQL_SNAPSHOTS, (agent,))]

    def space(self, name: str) -> SpaceRow | None:
        r = self._fetchone(
            "SELECT name, created_at, created_by, members FROM spaces WHERE name = ?", (name,)
        )
        return None if r is None else _space(r)

    def spaces(self) -> list[SpaceRow]:
        rows = self._fetchall(
            "SELECT name, created_at, created_by, members FROM spaces ORDER BY name", ()
        )
        return [_space(r) for r in rows]

    def conflicts(
        self, namespace: str, *, key: str | None = None, status: str | None = "open"
    ) -> list[ConflictRow]:
        sql = f"SELECT {_CONFLICT_COLS} FROM conflicts WHERE namespace = ?"
        params: list[Any] = [namespace]
        if key is not None:
            sql += " AND key = ?"
            params.append(key)
        if status is not None:
            sql += " AND status = ?"
            params.append(status)
        return [ConflictRow(*r) for r in self._fetchall(sql + " ORDER BY id", params)]

    def conflict(self, conflict_id: int) -> ConflictRow | None:
        r = self._fetchone(f"SELECT {_CONFLICT_COLS} FROM conflicts WHERE id = ?", (conflict_id,))
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
            rows = self._fetchall(_SQL_PARTY_MESSAGES, (party, party, party, limit or 64))
            return [MessageRow(*r) for r in reversed(rows)]
        if (recipient is None) == (space is None):
            raise InvalidInput("messages() takes a recipient, a space or a party")
        sql = f"SELECT {_MESSAGE_COLS} FROM messages WHERE id > ?"
        params: list[Any] = [after_id]
        if recipient is not None:
            sql += " AND recipient = ?"
            params.append(recipient)
        else:
            sql += " AND space = ? AND recipient IS NULL"
            params.append(space)
        if unread_only:
            sql += " AND read_at IS NULL"
        if since is not None:
            sql += " AND created_at >= ?"
            params.append(since)
        sql += " ORDER BY id LIMIT ?"
        params.append(-1 if limit is None else limit)
        return [MessageRow(*r) for r in self._fetchall(sql, params)]

    def message(self, message_id: int) -> MessageRow | None:
        r = self._fetchone(f"SELECT {_MESSAGE_COLS} FROM messages WHERE id = ?", (message_id,))
        return None if r is None else MessageRow(*r)

    def put_signed_head(self, head: SignedHead) -> None:
        with self._lock:
            try:
                self._connection().execute(
                    _SQL_PUT_SIGNED_HEAD,
                    (
                        head.agent,
                        head.seq,
                        head.public_key,
                        head.hash,
                        head.signature,
                        head.created_at,
                    ),
                )
            except sqlite3.Error as exc:
                raise self._storage_error(exc) from None

    def signed_heads(self, agent: str) -> list[SignedHead]:
        return [
            SignedHead(r[0], r[1], r[3], r[2], r[4], r[5])
            for r in self._fetchall(_SQL_SIGNED_HEADS, (agent,))
        ]

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
            "size_bytes": pragma["page_count"] * pragma["page_size"],
            "sqlite_version": sqlite3.sqlite_version,
        }

    def integrity_check(self) -> list[str]:
        """``PRAGMA integrity_check``: ``["ok"]`` when the file is sound."""
        return [r[0] for r in self._fetchall("PRAGMA integrity_check", ())]

    def value_bytes(self, namespace: str) -> int:
        """Total stored value size of a namespace, all versions."""
        r = self._fetchone(
            "SELECT COALESCE(SUM(LENGTH(CAST(value AS BLOB))), 0) FROM memories"
            " WHERE namespace = ?",
            (namespace,),
        )
        return int(r[0])


def _space(r: tuple[Any, ...]) -> SpaceRow:
    return SpaceRow(r[0], r[1], r[2], None if r[3] is None else tuple(json.loads(r[3])))


def _memory_row(w: MemoryWrite, version: int, agent: str, time: float, seq: int) -> tuple[Any, ...]:
    """The memories row of one write (columns of ``_SQL_INSERT_MEMORY``)."""
    return (
        w.namespace,
        w.key,
        version,
        w.encoding,
        w.data,
        json.dumps(list(w.tags), ensure_ascii=False) if w.tags else None,
        agent,
        time if w.created_at is None else w.created_at,
        w.expires_at,
        seq,
    )


def _erase_securely(conn: sqlite3.Connection, op: EraseKey) -> None:
    """Inside the write transaction: drop the values of ``op.key`` with ``secure_delete`` on,
    so SQLite overwrites the freed bytes with zeros instead of leaving them in free space;
    the connection's previous setting is restored afterwards."""
    previous = conn.execute("PRAGMA secure_delete").fetchone()[0]
    conn.execute("PRAGMA secure_delete = ON")
    try:
        conn.execute(_SQL_ERASE, (op.namespace, op.key))
    finally:
        conn.execute(f"PRAGMA secure_delete = {_SECURE_DELETE[previous]}")


def _check_member(conn: sqlite3.Connection, agent: str, space: str) -> None:
    """Inside the write transaction: refuse a non-member's write to a members-only space."""
    row = conn.execute("SELECT members, created_by FROM spaces WHERE name = ?", (space,)).fetchone()
    if row is not None and row[0] is not None and agent not in json.loads(row[0]):
        raise AccessDenied(
            f"agent {agent!r} is not a member of space {space!r}; ask its creator {row[1]!r}"
        )


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
        store._lock = threading.RLock()
    _held.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(
        before=_before_fork,
        after_in_parent=_after_fork_in_parent,
        after_in_child=_after_fork_in_child,
    )


def _is_busy(exc: sqlite3.Error) -> bool:
    text = str(exc)
    return "locked" in text or "busy" in text
