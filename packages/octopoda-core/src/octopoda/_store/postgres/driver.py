"""psycopg, imported once (a missing ``postgres`` extra raises ``ConfigError`` with its
install line, whichever module of this package is imported first), and its errors:
classified for retries, and mapped to Octopoda's (``StorageError``, or ``InvalidInput`` for
text PostgreSQL cannot hold), each saying what to do.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator
from typing import Any, Final
from urllib.parse import urlsplit, urlunsplit

from ..._errors import ConfigError, InvalidInput, OctopodaError, StorageError

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

__all__ = [
    "Connection",
    "ConnectionPool",
    "TransactionStatus",
    "check_pool_settings",
    "driver_error",
    "is_disconnect",
    "is_nul",
    "is_transient",
    "pooled",
    "psycopg",
    "redact_url",
    "retried",
    "store_access",
]

Connection = psycopg.Connection[TupleRow]
POOL_NAME: Final = "octopoda"  # (its worker threads are named "octopoda-worker-N")


# -- the pool's warnings ----------------------------------------------------------------------
#
# psycopg_pool logs a WARNING for every connection it discards ("discarding closed
# connection", "error connecting in 'octopoda'"), e.g. after a server restart, even when the
# store's retry then succeeds. While a store call runs (``pooled``), and in the pool's own
# threads, they are logged at DEBUG instead: the store retries, and raises a StorageError
# saying what to do when it cannot recover.

_in_store_call = threading.local()


class _RetriedWarnings(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno != logging.WARNING:
            return True
        thread = record.threadName or ""
        ours = getattr(_in_store_call, "depth", 0) or thread.startswith(POOL_NAME)
        if not ours:
            return True
        record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)


logging.getLogger("psycopg.pool").addFilter(_RetriedWarnings())


@contextlib.contextmanager
def retried() -> Iterator[None]:
    """The pool's warnings about connections it discards meanwhile, in this thread, are
    logged at DEBUG (the caller retries)."""
    _in_store_call.depth = getattr(_in_store_call, "depth", 0) + 1
    try:
        yield
    finally:
        _in_store_call.depth -= 1


@contextlib.contextmanager
def pooled(pool: ConnectionPool[Connection]) -> Iterator[Connection]:
    """``pool.connection()``, :func:`retried`."""
    with retried(), pool.connection() as conn:
        yield conn


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


def check_pool_settings(
    min_size: object, max_size: object, timeout: object, lock_timeout: object
) -> None:
    """``PostgresStore``'s pool and timeout arguments, or :class:`ConfigError`."""
    if isinstance(min_size, bool) or not isinstance(min_size, int) or min_size < 0:
        raise ConfigError(f"min_size must be an int >= 0, not {min_size!r}")
    if isinstance(max_size, bool) or not isinstance(max_size, int) or max_size < 1:
        raise ConfigError(f"max_size must be an int >= 1, not {max_size!r}")
    if max_size < min_size:
        raise ConfigError(f"max_size ({max_size}) must be >= min_size ({min_size})")
    if not isinstance(timeout, (int, float)) or not timeout > 0:
        raise ConfigError(f"timeout must be a number of seconds > 0, not {timeout!r}")
    if not isinstance(lock_timeout, (int, float)) or not lock_timeout >= 0:
        raise ConfigError(f"lock_timeout must be a number of seconds >= 0, not {lock_timeout!r}")


def is_disconnect(exc: BaseException) -> bool:
    """A broken or refused connection (worth retrying on a fresh one)."""
    if isinstance(exc, (PoolTimeout, PoolClosed)) or not isinstance(exc, psycopg.OperationalError):
        return False
    state = exc.sqlstate
    return state is None or state.startswith("08") or state in ("57P01", "57P02", "57P03")


def is_nul(exc: BaseException) -> bool:
    """psycopg refused a parameter holding a NUL character (before sending anything)."""
    return isinstance(exc, psycopg.DataError) and exc.sqlstate is None and "NUL" in str(exc)


def is_transient(exc: BaseException) -> bool:
    """A failure a new attempt may not hit: deadlock, serialization failure, lost connection."""
    if isinstance(exc, psycopg.Error) and exc.sqlstate in ("40001", "40P01"):
        return True
    return is_disconnect(exc)


def _connect_hint(text: str) -> str:
    if "does not exist" in text:
        return "create the database (createdb NAME) or fix the URL"
    if "authentication" in text or "password" in text:
        return "check the user name and password in the URL"
    return "check that the server runs and accepts connections, and the URL"


def driver_error(
    exc: BaseException, *, where: str, timeout: float, max_size: int, lock_timeout: float
) -> OctopodaError:
    """Map a driver error of the store at ``where`` to an Octopoda error that says what to
    do (``timeout``, ``max_size``, ``lock_timeout``: the store's settings, for the hints)."""
    if isinstance(exc, UnicodeEncodeError):
        return InvalidInput(f"text that is not valid Unicode cannot be stored ({exc})")
    if isinstance(exc, PoolTimeout):
        return StorageError(
            f"no connection to {where} became free within {timeout:g}s (pool of"
            f" {max_size}); raise max_size or timeout, or check the server"
        )
    if isinstance(exc, PoolClosed):
        return StorageError(f"the store {where} is closed; open a new one")
    text = " ".join(str(exc).split())
    if is_nul(exc):
        return InvalidInput(f"PostgreSQL cannot store text with a NUL character ({text})")
    state: Any = getattr(exc, "sqlstate", None)
    if isinstance(exc, psycopg.OperationalError) and state is None:
        return StorageError(f"cannot use PostgreSQL at {where} ({text}); {_connect_hint(text)}")
    if state == "55P03":
        return StorageError(
            f"waited more than {lock_timeout:g}s at {where} for a lock held by another"
            " writer of the same agent or key; raise lock_timeout, or find the process"
            " holding a long transaction (pg_stat_activity)"
        )
    hint = _HINTS.get(state or "", "see the PostgreSQL server log")
    return StorageError(f"PostgreSQL at {where} failed ({state}: {text}); {hint}")


def store_access(url: str) -> tuple[bool, str | None]:
    """Whether the database behind ``url`` (the schema its search_path names first) holds
    an Octopoda store yet, found without creating one, and None when its user may write
    the store (or create it), else why not: one connection (``octopoda doctor``)."""
    try:
        with psycopg.connect(url, autocommit=True, connect_timeout=10) as conn:
            row = conn.execute("SELECT to_regclass('schema_migrations') IS NOT NULL").fetchone()
            exists = bool(row and row[0])
            return exists, _write_denied(conn, exists)
    except psycopg.Error as exc:
        where = redact_url(url)
        raise driver_error(exc, where=where, timeout=10, max_size=1, lock_timeout=0) from None


def _write_denied(conn: Connection, exists: bool) -> str | None:
    query = (
        "SELECT has_table_privilege('events', 'INSERT')"
        if exists
        else "SELECT has_schema_privilege(current_schema(), 'CREATE')"
    )
    try:
        row = conn.execute(query).fetchone()
        who = conn.execute("SELECT current_user, current_schema()").fetchone()
    except psycopg.Error as exc:
        return f"cannot check the privileges: {str(exc).strip()}"
    if row and row[0]:
        return None
    user, schema = who if who else ("?", "?")
    what = "insert into its tables" if exists else f"create tables in schema {schema}"
    return f"PostgreSQL user {user} may not {what}; GRANT it, or use another user"
