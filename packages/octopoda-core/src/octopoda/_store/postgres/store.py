"""PostgresStore: one PostgreSQL database shared by many processes and hosts.

Needs the ``postgres`` extra (psycopg 3 and psycopg-pool; :mod:`.driver` imports them).
Schema and statements are in :mod:`.schema`, the locks in :mod:`.locks`, the reads in
:mod:`octopoda._store.reads`; this class executes them.

A commit is one transaction in two round trips (:mod:`.commit`): locks and the reads the
planner needs, then the rows and ``COMMIT``. Every commit takes its locks in one global
order, so commits never deadlock each other, and seq and versions are gapless per agent and
per key however many connections, processes or hosts write. A deadlock or serialization
failure, or a connection that breaks before the pipeline has run, is retried transparently
on a fresh connection. If the connection breaks after, the store asks the server whether the
event was stored. Driver errors never leave the class raw: they become
:class:`~octopoda.StorageError`, or :class:`~octopoda.InvalidInput` for text PostgreSQL
cannot hold (a NUL character).
"""

from __future__ import annotations

import contextlib
import os
import random
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from typing import Any, Final, TypeVar, cast

from ..._audit.chain import GENESIS_HASH
from ..._audit.signing import SignedHead
from ..._errors import ConfigError, OctopodaError, SchemaTooNew, StorageError
from ..._records import Event
from ..audited_reads import AuditedReads, AuditedSql
from ..ops import MemoryWrite, Op
from ..reads import SqlReads
from ..rows import StoredRow
from ..run_reads import RunReads
from ..search_reads import SearchReads
from ..vector_reads import PendingVectors, VectorModel, VectorReads
from . import schema as q
from . import search_index as si
from . import vector_index as vi
from .commit import Attempt, RoundTrips, check_storable, reads_on
from .driver import (
    POOL_NAME,
    Connection,
    ConnectionPool,
    TransactionStatus,
    check_pool_settings,
    driver_error,
    is_disconnect,
    is_nul,
    is_transient,
    pooled,
    psycopg,
    redact_url,
    retried,
)
from .locks import LOCK, lock_id

__all__ = ["PostgresStore", "redact_url"]

_RETRIES: Final = 6
_T = TypeVar("_T")
_SEARCH_PATH_HINT: Final = "give Octopoda its own database or schema (?options=-csearch_path%3D...)"

# Pools inherited through fork(): kept referenced and never closed in the child, whose copies
# of the parent's sockets must not say anything to the server.
_inherited: list[Any] = []


class PostgresStore(SqlReads, RunReads, SearchReads, VectorReads, AuditedReads):
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

    _reads = q.READS
    _run_sql = q.RUN_READS
    _audited_sql = AuditedSql(q.READS.dialect)
    _search_sql = q.SEARCH

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
        check_pool_settings(min_size, max_size, timeout, lock_timeout)
        self._url = url
        self._display = redact_url(url)
        self._min_size = min_size
        self._max_size = max_size
        self._timeout = float(timeout)
        self._lock_timeout = float(lock_timeout)
        self._tracer = tracer
        self._kwargs = self._connect_kwargs(url)
        self._lock = threading.Lock()
        self._snapshot = threading.local()  # per thread: read_snapshot's or a commit's conn
        self._pid = os.getpid()
        self._pool_obj: ConnectionPool[Connection] | None = None
        self._vector_schema: str | None = None  # (pgvector's, once known)
        self._iterative_scans: bool | None = None  # (pgvector 0.8+: hnsw.iterative_scan)
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
            name=POOL_NAME,
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
        return driver_error(
            exc,
            where=self._display,
            timeout=self._timeout,
            max_size=self._max_size,
            lock_timeout=self._lock_timeout,
        )

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
        check_storable(event, writes, ops, snapshot, status)
        retries = 0
        while True:
            attempt = Attempt()
            work = RoundTrips(
                self._tracer, event, writes, ops, snapshot, replace_snapshot, status, expected_seq
            )
            try:
                with pooled(self._pool()) as conn:
                    try:
                        with conn.pipeline():
                            work.begin(conn)
                            work.prepare(conn)
                            attempt.chained = attempt.in_pipeline = True
                            with reads_on(self._snapshot, conn):  # (the guard's catch-up)
                                event = pipeline(work.event)
                            attempt.in_pipeline = False
                            work.finish(conn, event)
                            attempt.sent = True
                        return event, work.versions
                    except BaseException:
                        self._rollback(conn)
                        raise
            except (psycopg.Error, UnicodeEncodeError) as exc:
                if attempt.in_pipeline:
                    raise  # a processor's own error (it may use a database too)
                if attempt.chained:
                    if is_disconnect(exc):
                        return self._settle(event, work.versions, exc)
                    raise self._error(exc) from None
                if retries < _RETRIES and is_transient(exc):
                    retries += 1
                    self._recover(exc, retries)
                    continue
                raise self._error(exc) from None
            except Exception as exc:  # (psycopg's own failure at the last Sync, e.g. an
                if not attempt.sent:  # IndexError when the server refused the commit)
                    raise
                return self._settle(event, work.versions, exc)

    def _rollback(self, conn: Connection) -> None:
        if conn.closed or conn.broken:
            return
        with contextlib.suppress(psycopg.Error):  # the pool discards what it cannot reset
            if conn.info.transaction_status != TransactionStatus.IDLE:
                self._exec(conn, "ROLLBACK")

    def _recover(self, exc: BaseException, attempt: int) -> None:
        """Before a retry: drop broken pooled connections, and back off with jitter."""
        if is_disconnect(exc):
            with contextlib.suppress(psycopg.Error), retried():
                self._pool().check()
        time.sleep(random.uniform(0.0, 0.005 * 2**attempt))

    def _settle(
        self, event: Event, versions: list[int], exc: BaseException
    ) -> tuple[Event, list[int]]:
        """The connection broke (or the driver failed) after the event was chained: was
        the commit stored?"""
        cause = " ".join(f"{type(exc).__name__}: {exc}".split())
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
        lock = ([lock_id(b"agent", event.agent)], [False])
        for attempt in range(3):
            try:
                with pooled(self._pool()) as conn, conn.transaction():
                    self._exec(conn, LOCK, lock)
                    return self._exec(conn, q.EVENT_HASH, (event.agent, event.seq)).fetchone()
            except psycopg.Error as exc:
                if attempt == 2 or not is_disconnect(exc):
                    raise
                self._recover(exc, attempt)
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    # -- reads (the queries are SqlReads') ---------------------------------------------------

    @contextlib.contextmanager
    def read_snapshot(self) -> Iterator[None]:
        """This thread's reads in the block see one snapshot: a pooled connection in a
        ``REPEATABLE READ, READ ONLY`` transaction (``audit.verify``'s); nested ones join."""
        if getattr(self._snapshot, "conn", None) is not None:
            yield
            return
        try:
            with pooled(self._pool()) as conn, conn.transaction():
                self._exec(conn, "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                self._snapshot.conn = conn
                try:
                    yield
                finally:
                    self._snapshot.conn = None
        except psycopg.Error as exc:
            raise self._error(exc) from None

    def _fetch(self, sql: str, params: Sequence[Any], one: bool, *, write: bool = False) -> Any:
        snap = None if write else getattr(self._snapshot, "conn", None)  # (read_snapshot's)
        for attempt in range(3 if snap is None else 1):  # (a snapshot is not retried)
            try:
                with pooled(self._pool()) if snap is None else contextlib.nullcontext(snap) as conn:
                    cursor = self._exec(conn, sql, params)
                    return cursor.fetchone() if one else cursor.fetchall()
            except (psycopg.Error, UnicodeEncodeError) as exc:
                if attempt < 2 and snap is None and is_disconnect(exc):
                    self._recover(exc, attempt)
                    continue
                if not write and is_nul(exc):  # no stored name holds a NUL: nothing matches
                    return None if one else []
                raise self._error(exc) from None
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    def _fetchone(self, sql: str, params: Sequence[Any]) -> Any:
        return self._fetch(sql, params, True)

    def _fetchall(self, sql: str, params: Sequence[Any]) -> list[Any]:
        rows: list[Any] = self._fetch(sql, params, False)
        return rows

    def _catch_up(self) -> None:
        for attempt in range(3):
            try:
                with pooled(self._pool()) as conn:
                    if not self._exec(conn, si.BEHIND).fetchall():
                        return
                    with conn.transaction():
                        self._exec(conn, si.SEARCH_LOCK_SQL, (si.SEARCH_LOCK,))
                        for agent, mark, head in self._exec(conn, si.BEHIND).fetchall():
                            params = si.written_params(agent, mark, head)
                            puts, drops = si.written_rows(
                                self._exec(conn, si.WRITTEN, params).fetchall()
                            )
                            conn.cursor().executemany(q.DROP_SEARCH, drops)
                            conn.cursor().executemany(q.PUT_SEARCH, puts)
                            self._exec(conn, si.SET_MARK, (agent, head))
                return
            except psycopg.errors.ReadOnlySqlTransaction:
                return  # (a standby or read-only session: searched as last indexed)
            except psycopg.Error as exc:
                if attempt < 2 and is_disconnect(exc):
                    self._recover(exc, attempt)
                    continue
                raise self._error(exc) from None

    # -- vectors (the algorithm is VectorReads'; the SQL is vector_index's) -----------------

    def vector_model(self) -> VectorModel | None:
        row = self._fetchone(vi.MODEL, ())
        return None if row is None else VectorModel(row[0], row[1])

    def reset_vectors(self) -> None:
        self._in_transaction(lambda conn: [self._exec(conn, sql) for sql in vi.RESET])

    def _vector_pending(self) -> list[PendingVectors]:
        return self._in_transaction(lambda conn: vi.pending(partial(self._exec, conn)), False)

    def _vector_apply(
        self, model: VectorModel, pending: PendingVectors | None, puts: list[Any]
    ) -> None:
        def body(conn: Connection) -> None:
            run = partial(self._exec, conn)
            vi.apply(run, conn.cursor().executemany, self._pgvector(conn), model, pending, puts)

        self._in_transaction(body)

    def _pgvector(self, conn: Connection) -> str:
        """The schema of the pgvector extension, created if it is not (a clear error where
        the server has no pgvector)."""
        schema = vi.extension_schema(partial(self._exec, conn))
        if schema is None:
            try:
                with conn.transaction():  # (a savepoint: a failure leaves a clean transaction)
                    self._exec(conn, "CREATE EXTENSION IF NOT EXISTS vector")
            except psycopg.Error as exc:
                raise vi.no_pgvector(self._display, str(exc).strip().splitlines()[0]) from None
            schema = vi.extension_schema(partial(self._exec, conn))
        self._vector_schema = schema
        return str(schema)

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
        schema = self._vector_schema or self._in_transaction(
            lambda conn: vi.extension_schema(partial(self._exec, conn)), False
        )
        if schema is None:
            return []
        self._vector_schema = schema

        def nearest(conn: Connection) -> list[tuple[StoredRow, float]]:
            run = partial(self._exec, conn)
            if self._iterative_scans is None:
                self._iterative_scans = vi.iterative_scans(run)
            if self._iterative_scans:
                run(vi.ITERATIVE_SCAN)  # (for this transaction only)
            k = limit * 4 + 16
            while True:
                sql, params = vi.search_sql(
                    q.SEARCH, schema, namespace, query, prefix, tags, now, k, kinds
                )
                rows = run(sql, params).fetchall()
                if len(rows) >= limit or k >= 1 << 20:
                    break
                total = run(vi.COUNT, (namespace,)).fetchone()[0]
                if k >= total:
                    break
                k *= 4
            return [(q.READS.row(r[:-1]), float(r[-1])) for r in rows[:limit]]

        return self._in_transaction(nearest)

    def _in_transaction(self, body: Callable[[Connection], _T], transaction: bool = True) -> _T:
        """``body(connection)`` in one transaction (or none), repeated on a broken
        connection; on a read-only server (a standby) it stores nothing."""
        for attempt in range(3):
            try:
                with self._pool().connection() as conn:
                    if not transaction:
                        return body(conn)
                    with conn.transaction():
                        return body(conn)
            except psycopg.errors.ReadOnlySqlTransaction:
                return cast(_T, None)
            except psycopg.Error as exc:
                if attempt < 2 and is_disconnect(exc):
                    self._recover(exc, attempt)
                    continue
                raise self._error(exc) from None
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    def put_signed_head(self, head: SignedHead) -> None:
        params = (head.agent, head.seq, head.public_key, head.hash, head.signature)
        self._fetch(q.PUT_SIGNED_HEAD, (*params, head.created_at), True, write=True)

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
        store._snapshot = threading.local()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)
