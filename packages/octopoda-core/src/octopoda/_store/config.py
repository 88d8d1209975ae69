"""Where the store lives: store URLs, paths, and the zero-configuration default.

Resolution order for ``AgentRuntime(..., store=None)``:

1. ``OCTOPODA_DATABASE_URL`` if set (a ``sqlite:///`` URL, a path, a ``postgresql://`` URL,
   which opens a :class:`~octopoda.PostgresStore` with the ``postgres`` extra, or the
   ``http://`` URL of an Octopoda server, a remote store with the ``remote`` extra and
   ``OCTOPODA_SERVER_TOKEN``);
2. ``$OCTOPODA_HOME/octopoda.db`` if ``OCTOPODA_HOME`` is set;
3. ``~/.octopoda/octopoda.db``.

A store that cannot be opened raises; Octopoda never falls back to another file.
"""

from __future__ import annotations

import _thread
import os
import weakref
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

    from .postgres.store import PostgresStore
    from .remote.store import RemoteStore
    from .sqlite.store import SqliteStore
from typing import Any, cast

from .._errors import ConfigError
from .protocol import Store

__all__ = [
    "default_store_path",
    "is_postgres_url",
    "is_server_url",
    "open_store",
    "parse_store_url",
]

_shared: weakref.WeakValueDictionary[tuple[str, str, int], SqliteStore] = (
    weakref.WeakValueDictionary()
)
_shared_postgres: weakref.WeakValueDictionary[tuple[str, int], PostgresStore] = (
    weakref.WeakValueDictionary()
)
_shared_remote: weakref.WeakValueDictionary[tuple[str, str, int], RemoteStore] = (
    weakref.WeakValueDictionary()
)
_shared_lock = _thread.allocate_lock()  # (threading.Lock, without importing threading)


def default_store_path() -> Path:
    """``$OCTOPODA_HOME/octopoda.db``, else ``~/.octopoda/octopoda.db``."""
    from pathlib import Path

    home = os.environ.get("OCTOPODA_HOME")
    base = Path(home).expanduser() if home else Path.home() / ".octopoda"
    return base / "octopoda.db"


def parse_store_url(url: str) -> str:
    """Return the SQLite path (or ``":memory:"``) a store URL or path names."""
    if url == ":memory:":
        return url
    if "://" not in url:
        return url
    scheme, _, rest = url.partition("://")
    scheme = scheme.lower()
    if scheme in ("sqlite", "sqlite3"):
        if not rest.startswith("/"):
            raise ConfigError(
                f"{url!r} is not a valid SQLite URL; write sqlite:///relative/path.db,"
                " sqlite:////absolute/path.db or sqlite:///:memory:"
            )
        path = rest[1:]
        if not path:
            raise ConfigError(f"{url!r} names no file; write sqlite:///path/to/file.db")
        return path
    if scheme in ("postgresql", "postgres"):
        raise ConfigError(
            f"PostgreSQL stores are not available where a SQLite file is expected ({url!r});"
            " AgentRuntime(store=URL) and OCTOPODA_DATABASE_URL open them"
        )
    raise ConfigError(
        f"unknown store URL scheme {scheme!r} in {url!r}; use a path or sqlite:///..."
    )


def is_postgres_url(url: str) -> bool:
    """Whether ``url`` names a PostgreSQL database (``postgresql://`` or ``postgres://``)."""
    scheme, sep, _ = url.partition("://")
    return bool(sep) and scheme.lower() in ("postgresql", "postgres")


def is_server_url(url: str) -> bool:
    """Whether ``url`` names an Octopoda server (``http://`` or ``https://``)."""
    scheme, sep, _ = url.partition("://")
    return bool(sep) and scheme.lower() in ("http", "https")


def _open_remote(url: str, durability: str | None) -> Store:
    """The process's shared :class:`RemoteStore` for the server at ``url`` (one session,
    with its connection pool, per URL, token and pid)."""
    if durability not in (None, "normal", "full"):
        raise ConfigError(f"durability must be 'normal' or 'full', not {durability!r}")
    from .remote.store import RemoteStore  # raises ConfigError naming the extra when missing

    cache_key = (url, os.environ.get("OCTOPODA_SERVER_TOKEN", ""), os.getpid())
    with _shared_lock:
        existing = _shared_remote.get(cache_key)
        if existing is not None and not existing.closed:
            return cast(Store, existing)
        opened = RemoteStore(url)
        _shared_remote[cache_key] = opened
        return cast(Store, opened)


def _open_postgres(url: str, durability: str | None) -> Store:
    """The process's shared :class:`PostgresStore` for ``url`` (one pool per URL and pid).

    ``durability`` is accepted so that switching stores needs no code change; PostgreSQL's
    own ``synchronous_commit`` (``on`` by default) already makes a returned write durable.
    """
    if durability not in (None, "normal", "full"):
        raise ConfigError(f"durability must be 'normal' or 'full', not {durability!r}")
    from .postgres.store import (
        PostgresStore,
    )  # raises ConfigError naming the extra when missing

    cache_key = (url, os.getpid())
    with _shared_lock:
        existing = _shared_postgres.get(cache_key)
        if existing is not None and not existing.closed:
            return existing
        opened = PostgresStore(url)
        _shared_postgres[cache_key] = opened
        return opened


def open_store(store: Any = None, *, durability: str | None = None) -> Store:
    """Return a store for ``store``: a Store object, a URL, a path, ``":memory:"`` or None.

    File stores are shared per process (one connection per file), so many runtimes on one
    file do not compete for its write lock from the same process.
    """
    if store is not None and not isinstance(store, (str, os.PathLike)):
        # duck-typed (a Store protocol check would miss stores that delegate by __getattr__)
        if all(callable(getattr(store, name, None)) for name in ("commit", "latest", "events")):
            if durability is not None:
                raise ConfigError("durability applies when Octopoda opens the store; set it there")
            return cast(Store, store)
        raise ConfigError(f"store must be a path, a URL or a Store, not {type(store).__name__}")
    create_dirs = False
    if store is None:
        url = os.environ.get("OCTOPODA_DATABASE_URL")
        if url and is_postgres_url(url):
            return _open_postgres(url, durability)
        if url and is_server_url(url):
            return _open_remote(url, durability)
        if url:
            path = parse_store_url(url)
        else:
            path = str(default_store_path())
            create_dirs = True
    elif isinstance(store, str) and is_postgres_url(store):
        return _open_postgres(store, durability)
    elif isinstance(store, str) and is_server_url(store):
        return _open_remote(store, durability)
    else:
        path = parse_store_url(os.fspath(store))
    from .sqlite.store import SqliteStore  # (loaded by the first runtime, not by the import)

    mode = durability or "normal"
    if path == ":memory:":
        return SqliteStore(path, durability=mode)
    resolved = os.path.realpath(os.path.expanduser(path))
    cache_key = (resolved, mode, os.getpid())
    with _shared_lock:
        existing = _shared.get(cache_key)
        if existing is not None and existing._conn is not None:
            return existing
        opened = SqliteStore(resolved, durability=mode, create_dirs=create_dirs)
        _shared[cache_key] = opened
        return opened
