"""Fixtures for the tests that need a real PostgreSQL server.

The server is reached through ``OCTOPODA_TEST_POSTGRES_URL`` (default
``postgresql://postgres@127.0.0.1:5432/postgres``), an administrative URL: each test run
creates its own database ``octopoda_test_<random>`` there and drops it at the end.

Without a reachable server (or without psycopg) the PostgreSQL tests are skipped with a
one-line reason; when the environment variable ``CI`` is set they fail instead, so that CI
can never pass by skipping them. Nothing here runs unless a test asks for these fixtures,
or unless ``--store-backend=postgresql`` is given: then every store that a test opens by
path, URL or ``":memory:"`` through ``AgentRuntime``/``Octopoda`` is a fresh schema of the
run's PostgreSQL database instead (tests that open ``SqliteStore`` themselves, run raw
SQLite SQL or start other processes on a file still use SQLite and may fail), so that the
runtime suites can be run against PostgreSQL:
``pytest packages/octopoda-core/tests --store-backend=postgresql``.
"""

from __future__ import annotations

import itertools
import os
import secrets
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

ADMIN_URL_ENV = "OCTOPODA_TEST_POSTGRES_URL"
DEFAULT_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"


def _unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"PostgreSQL is required when CI is set: {reason}", pytrace=False)
    pytest.skip(reason)


def database_url(admin_url: str, name: str) -> str:
    """``admin_url`` pointing at database ``name`` instead."""
    parts = urlsplit(admin_url)
    return urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, parts.fragment))


def _admin(admin_url: str) -> Any:
    import psycopg

    return psycopg.connect(admin_url, autocommit=True, connect_timeout=5)


def create_database(admin_url: str, name: str) -> str:
    """Create an empty UTF-8 database; its URL."""
    with _admin(admin_url) as conn:
        conn.execute(f"CREATE DATABASE {name} ENCODING 'UTF8' TEMPLATE template0")
    return database_url(admin_url, name)


def drop_database(admin_url: str, name: str) -> None:
    """Terminate the database's connections, then drop it."""
    with _admin(admin_url) as conn:
        conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = %s AND pid <> pg_backend_pid()",
            (name,),
        )
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture(scope="session")
def postgres_admin_url() -> str:
    """The administrative URL of a reachable server (else skip, or fail under CI)."""
    url = os.environ.get(ADMIN_URL_ENV) or DEFAULT_ADMIN_URL
    try:
        import psycopg
    except ImportError:
        _unavailable("psycopg is not installed: pip install 'octopoda-core[postgres]'")
    where = urlsplit(url).hostname or "the default host"
    try:
        with psycopg.connect(url, autocommit=True, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        _unavailable(f"no PostgreSQL server at {where} ({ADMIN_URL_ENV}): {first}")
    return url


@pytest.fixture(scope="session")
def postgres_databases(postgres_admin_url: str) -> Iterator[Callable[[], str]]:
    """A factory of new empty databases (URLs), all dropped at the end of the run."""
    names: list[str] = []

    def make() -> str:
        name = f"octopoda_test_{secrets.token_hex(6)}"
        names.append(name)
        return create_database(postgres_admin_url, name)

    yield make
    for name in names:
        drop_database(postgres_admin_url, name)


@pytest.fixture(scope="session")
def postgres_url(postgres_databases: Callable[[], str]) -> str:
    """This test run's database (tables are emptied before each test that asks for
    ``postgres_clean_url``)."""
    return postgres_databases()


@pytest.fixture
def postgres_clean_url(postgres_url: str) -> Iterator[str]:
    """The run's database with Octopoda's tables emptied; the process's shared store on it
    (``AgentRuntime(store=url)``) is closed afterwards."""
    from octopoda._store.config import open_store
    from octopoda._store.postgres.schema import TABLES

    with _admin(postgres_url) as conn:
        present = [
            t
            for t in TABLES
            if conn.execute("SELECT to_regclass(%s)", (t,)).fetchone()[0] is not None
        ]
        if present:
            conn.execute(f"TRUNCATE {', '.join(present)} RESTART IDENTITY")
    yield postgres_url
    open_store(postgres_url).close()


@pytest.fixture(params=["sqlite", "postgresql"])
def any_store_url(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[str]:
    """A store URL of each backend: an SQLite file, then the PostgreSQL test database
    (emptied first). Runtime tests that take it run against both stores."""
    from octopoda._store.config import open_store

    if request.param == "sqlite":
        path = str(tmp_path / "octopoda.db")
        yield path
        open_store(path).close()
    else:
        yield request.getfixturevalue("postgres_clean_url")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--store-backend",
        choices=("sqlite", "postgresql", "remote", "remote-postgresql"),
        default="sqlite",
        help="postgresql: stores opened by path or URL become PostgreSQL schemas; remote:"
        " remote stores of one server process (over SQLite files, or remote-postgresql:"
        " PostgreSQL schemas; conftest.py)",
    )


_schemas = itertools.count()


def start_hub(root: Any, postgres_url: str | None = None) -> tuple[Any, str]:
    """A ``remote_hub.py`` process (over SQLite files in ``root``, or PostgreSQL schemas
    of ``postgres_url``) and its URL."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    args = [sys.executable, str(Path(__file__).with_name("remote_hub.py")), str(root)]
    args += [postgres_url] if postgres_url else []
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    return proc, json.loads(proc.stdout.readline())["url"]


def stop_hub(proc: Any) -> None:
    proc.terminate()
    proc.wait(10)
    proc.stdout.close()


@pytest.fixture(scope="session")
def remote_hub(request: pytest.FixtureRequest, tmp_path_factory: Any) -> Iterator[str]:
    """The URL of a test server process (``remote_hub.py``) that serves a fresh store
    under ``/t/<name>`` for each name (over SQLite files, or PostgreSQL schemas with
    ``--store-backend=remote-postgresql``)."""
    postgres = None
    if request.config.getoption("--store-backend") == "remote-postgresql":
        postgres = request.getfixturevalue("postgres_url")
    proc, url = start_hub(tmp_path_factory.mktemp("hub"), postgres)
    yield url
    stop_hub(proc)


@pytest.fixture(scope="session")
def remote_hub_postgres(postgres_url: str, tmp_path_factory: Any) -> Iterator[str]:
    """A ``remote_hub.py`` process over PostgreSQL schemas."""
    proc, url = start_hub(tmp_path_factory.mktemp("pghub"), postgres_url)
    yield url
    stop_hub(proc)


def _remote_backend(request: pytest.FixtureRequest) -> Iterator[None]:
    import octopoda._runtime.base
    import octopoda._runtime.client
    import octopoda._store.config as config
    from octopoda._store.remote.store import RemoteStore

    hub = request.getfixturevalue("remote_hub")
    original = config.open_store
    opened: dict[Any, Any] = {}

    def open_store(store: Any = None, *, durability: str | None = None) -> Any:
        target = store
        if target is None and not os.environ.get("OCTOPODA_DATABASE_URL"):
            target = str(config.default_store_path())
        if not isinstance(target, (str, os.PathLike)) or "://" in str(target).replace(
            "sqlite://", ""
        ):
            return original(store, durability=durability)
        path = os.fspath(target)
        key: Any = (
            object()
            if path == ":memory:"
            else os.path.realpath(os.path.expanduser(config.parse_store_url(path)))
        )
        if key not in opened:
            opened[key] = RemoteStore(f"{hub}/t/t{os.getpid()}_{next(_schemas)}")
        return opened[key]

    with pytest.MonkeyPatch.context() as mp:
        for module in (config, octopoda._runtime.base, octopoda._runtime.client):
            mp.setattr(module, "open_store", open_store)
        yield
    for store in opened.values():
        store.close()


@pytest.fixture(autouse=True)
def _store_backend(request: pytest.FixtureRequest) -> Iterator[None]:
    backend = request.config.getoption("--store-backend")
    if backend.startswith("remote"):
        yield from _remote_backend(request)
        return
    if backend != "postgresql":
        yield
        return
    import octopoda._runtime.base
    import octopoda._runtime.client
    import octopoda._store.config as config

    base = request.getfixturevalue("postgres_url")
    original = config.open_store
    opened: dict[Any, Any] = {}

    def open_store(store: Any = None, *, durability: str | None = None) -> Any:
        target = store
        if target is None and not os.environ.get("OCTOPODA_DATABASE_URL"):
            target = str(config.default_store_path())
        if not isinstance(target, (str, os.PathLike)) or config.is_postgres_url(str(target)):
            return original(store, durability=durability)
        path = os.fspath(target)
        key: Any = (
            object()
            if path == ":memory:"
            else os.path.realpath(os.path.expanduser(config.parse_store_url(path)))
        )
        if key not in opened:
            schema = f"t{os.getpid()}_{next(_schemas)}"
            with _admin(base) as conn:
                conn.execute(f"CREATE SCHEMA {schema}")
            url = f"{base}?options=-csearch_path%3D{schema}"
            opened[key] = original(url, durability=durability)
        return opened[key]

    patched = [(config, "open_store"), (octopoda._runtime.base, "open_store")]
    patched.append((octopoda._runtime.client, "open_store"))
    with pytest.MonkeyPatch.context() as mp:
        for module, name in patched:
            mp.setattr(module, name, open_store)
        yield
    for store in opened.values():
        store.close()
