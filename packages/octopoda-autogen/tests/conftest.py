"""Fixtures of the octopoda-autogen tests.

These tests need AutoGen (autogen-agentchat, autogen-core, and autogen-ext for the scripted
``ReplayChatCompletionClient``), which the workspace's dev environment does not install: run
them through nox (`nox -s autogen`), which installs each supported line in its own venv.
Without autogen-agentchat this directory is skipped as a whole.

``store`` runs a test over a SQLite file and over a fresh PostgreSQL database
(``OCTOPODA_TEST_POSTGRES_URL``, default ``postgresql://postgres@127.0.0.1:5432/postgres``,
an administrative URL: a run creates one database, each test gets its own schema in it, and
the database is dropped at the end). With
no server those cases skip, or fail when ``CI`` is set.
"""

from __future__ import annotations

import importlib.util
import os
import secrets
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
PROCS = HERE / "procs"
EXAMPLES = ROOT / "examples" / "autogen"
sys.path.insert(0, str(PROCS))  # the scripted scenarios, shared with the subprocesses

if importlib.util.find_spec("autogen_agentchat") is None:
    collect_ignore_glob = ["test_*.py"]

HAS_REPLAY = importlib.util.find_spec("autogen_ext") is not None


def pytest_report_header() -> list[str]:
    from importlib.metadata import PackageNotFoundError, version

    if importlib.util.find_spec("autogen_agentchat") is None:
        return ["octopoda-autogen: autogen-agentchat is not installed; run `nox -s autogen`"]
    found = []
    for name in ("autogen-agentchat", "autogen-core", "autogen-ext", "pyautogen"):
        try:
            found.append(f"{name} {version(name)}")
        except PackageNotFoundError:
            found.append(f"{name} -")
    return ["octopoda-autogen against: " + ", ".join(found)]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "replay: needs autogen-ext's ReplayChatCompletionClient (scripted model)"
    )
    config.addinivalue_line("markers", "examples: runs examples/autogen in child processes")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    skip = pytest.mark.skip(reason="autogen-ext is not installed: no ReplayChatCompletionClient")
    for item in items:
        if "replay" in item.keywords and not HAS_REPLAY:
            item.add_marker(skip)


# -- PostgreSQL ------------------------------------------------------------------------------

ADMIN_URL_ENV = "OCTOPODA_TEST_POSTGRES_URL"
DEFAULT_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"


def _unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"PostgreSQL is required when CI is set: {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def postgres_databases() -> Iterator[Callable[[], str]]:
    """A factory of fresh, empty stores (URLs): each a new schema of one database that this
    run creates and drops at the end (one database: dropping many is slow)."""
    url = os.environ.get(ADMIN_URL_ENV) or DEFAULT_ADMIN_URL
    try:
        import psycopg
    except ImportError:
        _unavailable("psycopg is not installed: pip install 'octopoda-core[postgres]'")
    try:
        with psycopg.connect(url, autocommit=True, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        _unavailable(f"no PostgreSQL server at {urlsplit(url).hostname}: {first}")
    name = f"octopoda_ag_{secrets.token_hex(6)}"
    with psycopg.connect(url, autocommit=True, connect_timeout=5) as conn:
        conn.execute(f"CREATE DATABASE {name} ENCODING 'UTF8' TEMPLATE template0")
    parts = urlsplit(url)
    database = urlunsplit((parts.scheme, parts.netloc, "/" + name, "", ""))
    count = 0

    def make() -> str:
        nonlocal count
        count += 1
        schema = f"t{count}"
        with psycopg.connect(database, autocommit=True, connect_timeout=5) as conn:
            conn.execute(f"CREATE SCHEMA {schema}")
        return f"{database}?options=-csearch_path%3D{schema}"

    yield make
    with psycopg.connect(url, autocommit=True, connect_timeout=5) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture
def db_path(tmp_path: Path) -> str:
    return str(tmp_path / "octopoda.db")


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, db_path: str) -> str:
    """A store URL: a SQLite file, or a fresh PostgreSQL database."""
    if request.param == "sqlite":
        return f"sqlite:///{db_path}"
    return request.getfixturevalue("postgres_databases")()


@pytest.fixture
def store(store_url: str) -> Iterator[Any]:
    """An open store over ``store_url``, closed after the test."""
    from octopoda import AgentRuntime

    opened = AgentRuntime("probe", store=store_url).store
    yield opened
    opened.close()


@pytest.fixture
def python_env() -> dict[str, str]:
    """Environment for child processes: this interpreter's packages, unbuffered output."""
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"
    env.pop("PYTEST_ADDOPTS", None)
    env["PYTHONPATH"] = os.pathsep.join([str(PROCS), env.get("PYTHONPATH", "")])
    return env
