"""Fixtures of the octopoda-langchain tests.

These tests need LangChain/LangGraph, which the workspace's dev environment does not
install: run them through nox (`nox -s langchain`), which installs each supported line.
Without langgraph-checkpoint this directory is skipped as a whole.

PostgreSQL: ``OCTOPODA_TEST_POSTGRES_URL`` (default ``postgresql://postgres@127.0.0.1:5432/
postgres``) is an administrative URL; a run creates its own database and drops it at the
end. When octopoda-core has no PostgreSQL store yet, those tests skip (one line). When it
has one but the server or psycopg is missing, they skip, or fail when ``CI`` is set.
"""

from __future__ import annotations

import importlib.util
import os
import secrets
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
PROCS = HERE / "procs"
EXAMPLES = ROOT / "examples" / "langchain"

HAS_LANGGRAPH = importlib.util.find_spec("langgraph") is not None and (
    importlib.util.find_spec("langgraph.checkpoint.base") is not None
)
if not HAS_LANGGRAPH:
    collect_ignore_glob = ["test_*.py"]
else:
    # langchain_core puts its own "default" filters for its deprecation warnings first when
    # it is imported; import it before adding ours, so that ours comes first.
    import langchain_core  # noqa: F401

    with warnings.catch_warnings():
        # langgraph-checkpoint 3.0.x warns once, at import, that the default of its
        # serializer's `allowed_objects` will change (LangChainPendingDeprecationWarning). It
        # is about LangGraph's own default serializer, which these tests do not configure;
        # importing it here once under this filter keeps the noise out of the run.
        warnings.filterwarnings(
            "ignore", message=r"The default value of `allowed_objects` will change"
        )
        import langgraph.checkpoint.base  # noqa: F401


def _has_agents() -> bool:
    try:
        return importlib.util.find_spec("langchain.agents.middleware") is not None
    except ModuleNotFoundError:
        return False


HAS_AGENTS = _has_agents()
HAS_GRAPH = importlib.util.find_spec("langgraph.graph") is not None


def pytest_report_header(config: pytest.Config) -> list[str]:
    if not HAS_LANGGRAPH:
        return ["octopoda-langchain: langgraph-checkpoint is not installed; run `nox -s langchain`"]
    from importlib.metadata import PackageNotFoundError, version

    found = []
    for name in ("langchain-core", "langchain", "langgraph", "langgraph-checkpoint"):
        try:
            found.append(f"{name} {version(name)}")
        except PackageNotFoundError:
            found.append(f"{name} -")
    return ["octopoda-langchain against: " + ", ".join(found)]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "agents: needs LangChain 1.x agents (create_agent, AgentMiddleware)"
    )
    config.addinivalue_line("markers", "graph: needs the langgraph package (StateGraph)")
    config.addinivalue_line(
        "markers", "examples: runs examples/langchain (nox runs them in the newest cells)"
    )
    config.addinivalue_line("markers", "processes: kills and restarts agent processes")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    no_agents = pytest.mark.skip(
        reason="LangChain 1.x agents are not installed (langchain-core 0.3 line): no middleware"
    )
    no_graph = pytest.mark.skip(reason="the langgraph package is not installed")
    for item in items:
        if "agents" in item.keywords and not HAS_AGENTS:
            item.add_marker(no_agents)
        if "graph" in item.keywords and not HAS_GRAPH:
            item.add_marker(no_graph)


@pytest.fixture
def db_path(tmp_path: Path) -> str:
    return str(tmp_path / "octopoda.db")


@pytest.fixture
def python_env() -> dict[str, str]:
    """Environment for child processes: this interpreter's, without coverage or pytest
    plugins getting in the way, with output unbuffered."""
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"
    env.pop("PYTEST_ADDOPTS", None)
    return env


@pytest.fixture
def run_python(python_env: dict[str, str]) -> Callable[..., Any]:
    import subprocess

    def run(*args: str, timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, *args],
            env=python_env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    return run


def _hashed_words(texts: list[str]) -> list[list[float]]:
    """A deterministic, offline embedding: hashed bag of words, normalised (texts sharing
    words point the same way)."""
    import hashlib
    import math
    import re

    out = []
    for text in texts:
        vec = [0.0] * 256
        for word in re.findall(r"\w+", text.lower()):
            vec[int(hashlib.sha256(word.encode()).hexdigest(), 16) % 256] += 1.0
        norm = math.sqrt(sum(v * v for v in vec)) or 1.0
        out.append([v / norm for v in vec])
    return out


@pytest.fixture
def hashed_words() -> Callable[[list[str]], list[list[float]]]:
    """An embedding function for stores with an index (256 dimensions)."""
    return _hashed_words


# -- PostgreSQL ------------------------------------------------------------------------------

ADMIN_URL_ENV = "OCTOPODA_TEST_POSTGRES_URL"
DEFAULT_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"


def core_has_postgres() -> bool:
    """Whether the installed octopoda-core has a PostgreSQL store (declares the extra, or
    ships the module while the extra is being added)."""
    from importlib.metadata import metadata

    extras = metadata("octopoda-core").get_all("Provides-Extra") or []
    return "postgres" in extras or importlib.util.find_spec("octopoda._postgres") is not None


def _unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"PostgreSQL is required when CI is set: {reason}", pytrace=False)
    pytest.skip(reason)


def _database_url(admin_url: str, name: str) -> str:
    parts = urlsplit(admin_url)
    return urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, parts.fragment))


@pytest.fixture(scope="session")
def postgres_admin_url() -> str:
    if not core_has_postgres():
        pytest.skip("octopoda-core has no PostgreSQL store yet")
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
        _unavailable(f"no PostgreSQL server at {urlsplit(url).hostname} ({ADMIN_URL_ENV}): {first}")
    return url


@pytest.fixture(scope="session")
def postgres_databases(postgres_admin_url: str) -> Iterator[Callable[[], str]]:
    """A factory of new empty databases (URLs); all are dropped at the end of the run."""
    import psycopg

    names: list[str] = []

    def make() -> str:
        name = f"octopoda_lc_{secrets.token_hex(6)}"
        with psycopg.connect(postgres_admin_url, autocommit=True, connect_timeout=5) as conn:
            conn.execute(f"CREATE DATABASE {name} ENCODING 'UTF8' TEMPLATE template0")
        names.append(name)
        return _database_url(postgres_admin_url, name)

    yield make
    with psycopg.connect(postgres_admin_url, autocommit=True, connect_timeout=5) as conn:
        for name in names:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture
def postgres_url(postgres_databases: Callable[[], str]) -> Iterator[str]:
    """A fresh PostgreSQL database for one test; the process's store on it is closed after."""
    from octopoda import AgentRuntime, ConfigError

    url = postgres_databases()
    try:
        probe = AgentRuntime("probe", store=url)
    except ConfigError as exc:
        _unavailable(f"octopoda-core cannot open {urlsplit(url).scheme}:// URLs here: {exc}")
    yield url
    probe.store.close()
