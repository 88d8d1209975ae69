"""Fixtures of the octopoda-crewai tests.

These tests need crewai, which the workspace's dev environment does not install: run them
through nox (`nox -s crewai`), which installs each supported line in its own venv. Without
crewai this directory is skipped as a whole.

Every run is offline: scripted models, a hashed-words embedder, CrewAI's telemetry and
tracing off (the environment below, set before crewai is imported), sockets blocked.

PostgreSQL: ``OCTOPODA_TEST_POSTGRES_URL`` (default ``postgresql://postgres@127.0.0.1:5432/
postgres``) is an administrative URL; a run creates its own databases (``octopoda_cw_*``)
and drops them at the end. Unreachable: those tests skip (fail when CI is set).
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import warnings
from collections.abc import Callable, Iterator
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

TELEMETRY_OFF = {
    "CREWAI_DISABLE_TELEMETRY": "true",
    "OTEL_SDK_DISABLED": "true",
    "CREWAI_TRACING_ENABLED": "false",
    "CREWAI_DISABLE_TRACKING": "true",
}
os.environ.update(TELEMETRY_OFF)

HERE = Path(__file__).resolve().parent
PROCS = HERE / "procs"
sys.path.insert(0, str(PROCS))  # scripted models and scenarios, shared with subprocesses

try:
    CREWAI_VERSION = version("crewai")
except PackageNotFoundError:
    CREWAI_VERSION = ""
    collect_ignore_glob = ["test_*.py"]
else:
    # crewai's own import warns (an ImportWarning from its lazy rag package, deprecations of
    # its dependencies); the tests run with warnings as errors, so import it once, quietly.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import crewai
        import crewai.memory.storage.backend  # noqa: F401


def pytest_report_header() -> list[str]:
    if not CREWAI_VERSION:
        return ["crewai: not installed, tests skipped (run `nox -s crewai`)"]
    return [f"crewai {CREWAI_VERSION}"]


@pytest.fixture
def proc_env() -> dict[str, str]:
    """Environment for helper subprocesses: this interpreter's packages, telemetry off."""
    env = dict(os.environ)
    env.update(TELEMETRY_OFF)
    env["PYTHONPATH"] = os.pathsep.join([str(PROCS), env.get("PYTHONPATH", "")])
    return env


@pytest.fixture
def run_python(proc_env: dict[str, str]) -> Callable[..., subprocess.CompletedProcess[str]]:
    def run(*args: str, timeout: float = 180.0) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, *args],
            env=proc_env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    return run


# -- PostgreSQL ------------------------------------------------------------------------------

ADMIN_URL_ENV = "OCTOPODA_TEST_POSTGRES_URL"
DEFAULT_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"


def _unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"PostgreSQL is required when CI is set: {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def postgres_admin_url() -> str:
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
        name = f"octopoda_cw_{secrets.token_hex(6)}"
        with psycopg.connect(postgres_admin_url, autocommit=True, connect_timeout=5) as conn:
            conn.execute(f"CREATE DATABASE {name} ENCODING 'UTF8' TEMPLATE template0")
        names.append(name)
        parts = urlsplit(postgres_admin_url)
        return urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, ""))

    yield make
    with psycopg.connect(postgres_admin_url, autocommit=True, connect_timeout=5) as conn:
        for name in names:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh store: a SQLite file, or a PostgreSQL database of its own."""
    if request.param == "sqlite":
        return str(tmp_path / "crew.db")
    make: Callable[[], str] = request.getfixturevalue("postgres_databases")
    return make()


@pytest.fixture
def storage(store_url: str) -> Iterator[Any]:
    from octopoda_crewai import OctopodaStorage

    s = OctopodaStorage(store_url)
    yield s
    s.close()


def pytest_configure(config: pytest.Config) -> None:
    # CrewAI warns about its own deprecated fields when it reads them (its code, not ours);
    # every other warning stays an error.
    config.addinivalue_line("filterwarnings", r"ignore::DeprecationWarning:crewai(\..*)?")
    # Python 3.12+: CrewAI's MemoryRecord defaults and recency scoring call utcnow() (through
    # pydantic's default factories, so the warning's module is not crewai's)
    config.addinivalue_line(
        "filterwarnings", r"ignore:datetime\.datetime\.utcnow:DeprecationWarning"
    )
    config.addinivalue_line(
        "markers",
        "processes: the kill-and-restart test and the extra init scripts (each process"
        " imports crewai: slow); nox runs them in the newest cell on 3.11 only (every cell"
        " runs the looping crew's scripts)",
    )
