"""pytest plugin: LangGraph's own test suites, with LangGraph's backends swapped for ours.

Loaded with ``-p langgraph_swap`` (this folder on ``PYTHONPATH``) inside an unpacked LangGraph
source distribution; ``tests/parity/langgraph_run.py`` does all of that. No test file is
edited: at configuration time the framework's classes are rebound, in the framework's own
modules and (once collection has imported them) in every test module's globals, to thin
subclasses of ``OctopodaSaver`` / ``OctopodaStore`` that take the framework class's
constructor arguments. Environment:

``OCTOPODA_PARITY_SUITE``
    ``checkpoint`` (langgraph-checkpoint: InMemorySaver, InMemoryStore), ``sqlite``
    (langgraph-checkpoint-sqlite: SqliteSaver, AsyncSqliteSaver, SqliteStore,
    AsyncSqliteStore), ``postgres`` (langgraph-checkpoint-postgres: PostgresSaver,
    AsyncPostgresSaver, PostgresStore, AsyncPostgresStore) or ``graph`` (langgraph: the
    ``sqlite``/``sqlite_aes``/``sqlite_aio`` checkpointer and ``in_memory`` store fixtures).
``OCTOPODA_PARITY_MODE``
    ``ours`` (the default) or ``shipped`` (nothing swapped: the baseline).
``OCTOPODA_PARITY_ALLOWLIST``
    In ``ours`` mode, the allowlist file: each listed test is marked ``xfail(strict=True)``
    with its reason, so it must fail, and a listed test that is not collected is an error.
``OCTOPODA_TEST_POSTGRES_URL``
    The PostgreSQL server (``postgres`` suite), an administrative URL; default
    ``postgresql://postgres@127.0.0.1:5432/postgres``. The suite's own URL constants are
    pointed at a database this plugin creates for the session (both modes). In ``ours``
    mode each database a test opens maps to a schema of one more session database, so a
    test's ``DROP DATABASE`` never meets our connections; the schema of the shared
    ``postgres`` database is emptied before each test, as the suite's own autouse fixture
    empties its tables.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sqlite3
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

import pytest

SUITE = os.environ.get("OCTOPODA_PARITY_SUITE", "")
MODE = os.environ.get("OCTOPODA_PARITY_MODE", "ours")
ALLOWLIST = os.environ.get("OCTOPODA_PARITY_ALLOWLIST", "")
ADMIN_URL = os.environ.get(
    "OCTOPODA_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
)
SUITES = ("checkpoint", "sqlite", "postgres", "graph")

# Our stores opened during the running test, closed after it.
_opened: list[Any] = []


# -- where our data lives for a framework connection --------------------------------------


def _sqlite_target(conn: Any) -> str:
    """The file of a sqlite3 (or aiosqlite) connection, or ":memory:"."""
    if isinstance(conn, (str, os.PathLike)):
        return os.fspath(conn)
    raw = getattr(conn, "_connection", conn)  # aiosqlite wraps a sqlite3 connection
    if isinstance(raw, sqlite3.Connection):
        for _, name, path in raw.execute("PRAGMA database_list").fetchall():
            if name == "main":
                return path or ":memory:"
    return ":memory:"


class _PostgresMap:
    """Each PostgreSQL database a test names -> a schema in one session database of ours."""

    def __init__(self) -> None:
        self.suffix = uuid.uuid4().hex[:10]
        self.tests_db = f"lgparity_tests_{self.suffix}"  # the suite's own tables
        self.ours_db = f"lgparity_ours_{self.suffix}"  # our schemas
        parts = urlsplit(ADMIN_URL.replace("postgresql://", "postgres://", 1))
        self.server = urlunsplit((parts.scheme, parts.netloc, "/", "", ""))
        self.created: set[str] = set()

    def admin(self, sql: str) -> None:
        import psycopg

        with psycopg.connect(ADMIN_URL, autocommit=True) as conn:
            conn.execute(sql)

    def start(self) -> None:
        for db in (self.tests_db, self.ours_db):
            self.admin(f'CREATE DATABASE "{db}"')

    def finish(self) -> None:
        for db in (self.tests_db, self.ours_db):
            self.admin(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')

    def ours_url(self, database: str) -> str:
        schema = f"db_{database}"
        if schema not in self.created:
            import psycopg

            with psycopg.connect(self.server + self.ours_db, autocommit=True) as conn:
                conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
            self.created.add(schema)
        options = quote(f"-csearch_path={schema}", safe="")
        return f"postgresql://{self._netloc()}/{self.ours_db}?options={options}"

    def reset(self, database: str) -> None:
        schema = f"db_{database}"
        if schema in self.created:
            import psycopg

            with psycopg.connect(self.server + self.ours_db, autocommit=True) as conn:
                conn.execute(f'DROP SCHEMA "{schema}" CASCADE')
            self.created.discard(schema)

    def _netloc(self) -> str:
        return urlsplit(self.server).netloc


PG = _PostgresMap() if SUITE == "postgres" else None


def _database_of(conn: Any) -> str:
    """The database name a psycopg connection, pool or URL names."""
    if isinstance(conn, str):
        import psycopg

        return str(psycopg.conninfo.conninfo_to_dict(conn).get("dbname") or "postgres")
    info = getattr(conn, "info", None)
    if info is not None:
        return str(info.dbname)
    conninfo = getattr(conn, "conninfo", None)  # a psycopg_pool pool
    if isinstance(conninfo, str):
        return _database_of(conninfo)
    raise TypeError(f"cannot tell which database {conn!r} opens")


@contextlib.contextmanager
def _test_database_cursor(database: str) -> Iterator[Any]:
    import psycopg

    assert PG is not None
    with psycopg.connect(PG.server + database, autocommit=True) as conn, conn.cursor() as cur:
        yield cur


@contextlib.asynccontextmanager
async def _test_database_acursor(database: str) -> AsyncIterator[Any]:
    import psycopg

    assert PG is not None
    connecting = psycopg.AsyncConnection.connect(PG.server + database, autocommit=True)
    async with await connecting as conn, conn.cursor() as cur:
        yield cur


def _postgres_target(conn: Any) -> Any:
    from octopoda import PostgresStore

    assert PG is not None
    store = PostgresStore(PG.ours_url(_database_of(conn)), min_size=0, max_size=4)
    _opened.append(store)
    return store


# -- the swapped classes (langgraph_shims.py) ----------------------------------------------


def _shims() -> dict[str, type]:
    import langgraph_shims

    return langgraph_shims.SHIMS


# (framework module, class name) swapped per suite; the graph suite swaps only inside its
# fixture modules, so its own InMemorySaver-based test helpers stay LangGraph's.
_FRAMEWORK: dict[str, list[tuple[str, str]]] = {
    "checkpoint": [
        ("langgraph.checkpoint.memory", "InMemorySaver"),
        ("langgraph.checkpoint.memory", "MemorySaver"),
        ("langgraph.store.memory", "InMemoryStore"),
    ],
    "sqlite": [
        ("langgraph.checkpoint.sqlite", "SqliteSaver"),
        ("langgraph.checkpoint.sqlite.aio", "AsyncSqliteSaver"),
        ("langgraph.store.sqlite", "SqliteStore"),
        ("langgraph.store.sqlite.base", "SqliteStore"),
        ("langgraph.store.sqlite", "AsyncSqliteStore"),
        ("langgraph.store.sqlite.aio", "AsyncSqliteStore"),
    ],
    "postgres": [
        ("langgraph.checkpoint.postgres", "PostgresSaver"),
        ("langgraph.checkpoint.postgres.aio", "AsyncPostgresSaver"),
        ("langgraph.store.postgres", "PostgresStore"),
        ("langgraph.store.postgres.base", "PostgresStore"),
        ("langgraph.store.postgres", "AsyncPostgresStore"),
        ("langgraph.store.postgres.aio", "AsyncPostgresStore"),
    ],
    "graph": [],
}
_GRAPH_FIXTURE_MODULES = {
    "tests.conftest_checkpointer": ("SqliteSaver", "AsyncSqliteSaver"),
    "tests.conftest_store": ("InMemoryStore",),
}

_swapped: dict[int, type] = {}  # id(framework class) -> our shim


def _swap_framework() -> None:
    shims = _shims()
    for module_name, name in _FRAMEWORK[SUITE]:
        module = importlib.import_module(module_name)
        original = getattr(module, name)
        shim = _swapped.setdefault(id(original), shims[original.__name__])
        setattr(module, name, shim)


def _swap_test_modules(rootdir: str) -> None:
    """Rebind the framework classes a test module imported (its globals) to our shims."""
    if SUITE == "graph":
        shims = _shims()
        for module_name, names in _GRAPH_FIXTURE_MODULES.items():
            module = sys.modules.get(module_name)
            if module is None:
                raise RuntimeError(f"{module_name} was not imported; is this langgraph's sdist?")
            for name in names:
                setattr(module, name, shims[name])
        return
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None) or ""
        if not path.startswith(rootdir + os.sep):
            continue
        for name, value in list(vars(module).items()):
            if isinstance(value, type) and id(value) in _swapped:
                setattr(module, name, _swapped[id(value)])


def _point_postgres_constants(rootdir: str) -> None:
    """The suite's URL constants (port 5441) -> this server, the session's tests database."""
    assert PG is not None
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None) or ""
        if not path.startswith(rootdir + os.sep):
            continue
        if "DEFAULT_POSTGRES_URI" in vars(module):
            module.DEFAULT_POSTGRES_URI = PG.server
        if "DEFAULT_URI" in vars(module):
            module.DEFAULT_URI = f"{PG.server}{PG.tests_db}?sslmode=disable"


# -- the allowlist ------------------------------------------------------------------------


def _allowlist() -> dict[str, str]:
    if not ALLOWLIST:
        return {}
    import tomllib

    with open(ALLOWLIST, "rb") as f:
        table = tomllib.load(f).get("langgraph", {}).get(SUITE, {})
    return {str(k): str(v) for k, v in table.items()}


# -- hooks --------------------------------------------------------------------------------


def pytest_configure(config: pytest.Config) -> None:
    if SUITE not in SUITES:
        raise pytest.UsageError(f"OCTOPODA_PARITY_SUITE must be one of {SUITES}, not {SUITE!r}")
    if MODE not in ("ours", "shipped"):
        raise pytest.UsageError(f"OCTOPODA_PARITY_MODE must be ours or shipped, not {MODE!r}")
    if PG is not None:
        PG.start()
    if MODE == "ours":
        _swap_framework()


def pytest_unconfigure(config: pytest.Config) -> None:
    _close_opened()
    if PG is not None:
        PG.finish()


def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    rootdir = str(config.rootpath)
    if PG is not None:
        _point_postgres_constants(rootdir)
    if MODE != "ours":
        return
    _swap_test_modules(rootdir)
    allowed = _allowlist()
    seen = set()
    for item in items:
        reason = allowed.get(item.nodeid)
        if reason is not None:
            seen.add(item.nodeid)
            item.add_marker(pytest.mark.xfail(reason=reason, strict=True))
    files = {item.nodeid.split("::", 1)[0] for item in items}  # a shard runs some files
    missing = sorted(k for k in set(allowed) - seen if k.split("::", 1)[0] in files)
    if missing and not config.getoption("keyword") and not config.getoption("markexpr"):
        raise pytest.UsageError(
            "allowlisted tests that were not collected (remove them from the allowlist): "
            + ", ".join(missing)
        )


def _close_opened() -> None:
    while _opened:
        with contextlib.suppress(Exception):  # a test may have closed it already
            _opened.pop().close()


@pytest.fixture(autouse=True)
def _octopoda_parity_isolation() -> Iterator[None]:
    """Empty our schema of the shared ``postgres`` database before each test (the suite's
    own autouse fixture empties its tables there) and close what the test opened."""
    if PG is not None and MODE == "ours":
        PG.reset(PG.tests_db)
    yield
    _close_opened()
