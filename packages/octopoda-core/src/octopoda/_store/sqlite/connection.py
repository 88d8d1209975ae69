"""Opening an SQLite file for Octopoda: the connection's settings, the foreign-file check,
the migrations (each in one ``BEGIN IMMEDIATE`` transaction with its record, re-checked
under the write lock, so several processes opening a brand-new file at once are safe), and
the mapping of sqlite3 errors to :class:`~octopoda.StorageError`.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable
from typing import Final

from ..._errors import ConfigError, SchemaTooNew, StorageError, UndecodableText
from .schema import APPLICATION_ID, MIGRATIONS

__all__ = ["connect", "file_path", "is_busy", "storage_error"]

_CONNECT_RETRY_JITTER_US: Final = 45_000


def is_busy(exc: sqlite3.Error) -> bool:
    text = str(exc)
    return "locked" in text or "busy" in text


DRIVER_ERRORS: Final = (sqlite3.Error, UnicodeDecodeError)
"""What a sqlite3 call raises when it fails: also UnicodeDecodeError, when SQLite's own
message about a damaged file is not UTF-8."""


def storage_error(path: str, busy_timeout: float, exc: Exception) -> StorageError:
    """What a failed sqlite3 call of the store at ``path`` means, and what to do."""
    if isinstance(exc, UnicodeDecodeError):
        return StorageError(
            f"{path} is damaged: SQLite failed with a message that is not even text ({exc});"
            " restore it from a backup, or move it aside and start a new store"
        )
    text = str(exc)
    if isinstance(exc, sqlite3.Error) and is_busy(exc):
        return StorageError(
            f"the store {path} stayed locked by another connection for more than"
            f" {busy_timeout:g}s ({text}); raise busy_timeout or find the process"
            " holding a long transaction"
        )
    if "not a database" in text or "malformed" in text:
        return StorageError(
            f"{path} is not a usable SQLite database ({text}); move it aside or"
            " point Octopoda at another file"
        )
    if "decode to UTF-8" in text:
        return UndecodableText(
            f"the store {path} holds text that is not valid UTF-8 ({text}): it was changed"
            " outside Octopoda. `octopoda audit verify` names the damaged row; restore the"
            " file from a backup"
        )
    if "readonly" in text:
        return StorageError(f"the store {path} is read-only ({text}); check permissions")
    if "disk is full" in text:  # (SQLITE_FULL: the transaction rolled back, nothing written)
        return StorageError(
            f"the store {path} could not write: the disk is full ({text}); nothing of this"
            " write was stored. Free space on that disk (or move the store) and try again"
        )
    if "unable to open" in text:
        return StorageError(
            f"the store {path} cannot be opened ({text}); check that its directory is"
            " writable by this user and on a file system that supports SQLite's locks"
        )
    return StorageError(f"the store {path} failed: {text}")


def connect(
    path: str,
    *,
    durability: str,
    busy_timeout: float,
    tracer: Callable[[str], None] | None,
    read_only: bool = False,
) -> sqlite3.Connection:
    """A configured, migrated connection to ``path``; retried (with jitter) while another
    process holds the file locked, up to ``busy_timeout``. ``read_only``: opened with
    ``mode=ro`` (``immutable=1`` when even the WAL index cannot be opened), not migrated."""
    deadline = time.monotonic() + busy_timeout
    modes = ["ro", "immutable"] if read_only else [None]
    while True:
        conn: sqlite3.Connection | None = None
        try:
            mode = modes[0]
            conn = sqlite3.connect(
                path if mode is None else _read_only_uri(path, mode),
                timeout=busy_timeout,
                isolation_level=None,
                check_same_thread=False,
                cached_statements=256,
                uri=mode is not None,
            )
            if tracer is not None:
                conn.set_trace_callback(tracer)
            _configure(conn, path, durability, busy_timeout, read_only)
            return conn
        except sqlite3.OperationalError as exc:
            if conn is not None:
                conn.close()
            if is_busy(exc) and time.monotonic() < deadline:
                jitter = (time.perf_counter_ns() + os.getpid()) % _CONNECT_RETRY_JITTER_US
                time.sleep(0.005 + jitter / 1e6)
                continue
            if len(modes) > 1 and ("unable to open" in str(exc) or "readonly" in str(exc)):
                modes.pop(0)  # a WAL file in a read-only directory: no -shm to open
                continue
            raise storage_error(path, busy_timeout, exc) from None
        except DRIVER_ERRORS as exc:
            if conn is not None:
                conn.close()
            raise storage_error(path, busy_timeout, exc) from None
        except BaseException:
            if conn is not None:
                conn.close()
            raise


def _read_only_uri(path: str, mode: str) -> str:
    import urllib.parse  # (only for a read-only store: not at import)

    query = "mode=ro" if mode == "ro" else "immutable=1"
    return f"file:{urllib.parse.quote(path)}?{query}"


def _configure(
    conn: sqlite3.Connection, path: str, durability: str, busy_timeout: float, read_only: bool
) -> None:
    conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
    _check_foreign(conn, path)
    if read_only:
        _check_schema(conn, path)
        return
    if path != ":memory:":
        conn.execute("PRAGMA journal_mode = WAL")
    sync = "FULL" if durability == "full" else "NORMAL"
    conn.execute(f"PRAGMA synchronous = {sync}")
    # freed space is zeroed, whatever this SQLite build's default: an erased value leaves
    # no copy behind in pages that split or moved cells before
    conn.execute("PRAGMA secure_delete = ON")
    _migrate(conn, path)


def _check_foreign(conn: sqlite3.Connection, path: str) -> None:
    app_id = conn.execute("PRAGMA application_id").fetchone()[0]
    if app_id == APPLICATION_ID:
        return
    if app_id != 0:
        raise StorageError(
            f"{path} is an SQLite database of another application"
            f" (application_id {app_id:#x}); point Octopoda at its own file"
        )
    tables = conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
    ).fetchall()
    if tables and not any(t[0] == "schema_migrations" for t in tables):
        raise StorageError(
            f"{path} already holds tables of another application"
            f" ({', '.join(t[0] for t in tables[:5])}); point Octopoda at its own file"
        )


def _check_schema(conn: sqlite3.Connection, path: str) -> None:
    """A read-only store must be at this Octopoda's schema: it cannot be migrated."""
    current = conn.execute("PRAGMA user_version").fetchone()[0]
    if current == 0:
        raise StorageError(f"{path} is read-only and holds no Octopoda store; check the path")
    if current > len(MIGRATIONS):
        raise SchemaTooNew(
            f"{path} has schema version {current}, newer than this Octopoda"
            f" understands ({len(MIGRATIONS)}); upgrade octopoda-core"
        )
    if current < len(MIGRATIONS):
        raise StorageError(
            f"{path} is read-only at schema version {current}; this Octopoda needs"
            f" {len(MIGRATIONS)} and cannot migrate it. Open a writable copy (it is migrated"
            " on open), or use the Octopoda version that wrote it"
        )


def _migrate(conn: sqlite3.Connection, path: str) -> None:
    target = len(MIGRATIONS)
    current = conn.execute("PRAGMA user_version").fetchone()[0]
    if current > target:
        raise SchemaTooNew(
            f"{path} has schema version {current}, newer than this Octopoda"
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


def file_path(raw: str, create_dirs: bool) -> str:
    """The absolute path of a store file; its directory created when asked."""
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
    return p
