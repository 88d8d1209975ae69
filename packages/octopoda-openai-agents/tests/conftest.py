"""Fixtures of the octopoda-openai-agents tests.

These tests need the OpenAI Agents SDK, which the workspace's dev environment does not
install: run them through nox (`nox -s openai_agents`), which installs each supported
release in its own venv. Without openai-agents this directory is skipped as a whole.

Every run is offline: scripted models, no API key, tracing off unless a test turns it on
(and then only into our processor).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
PROCS = HERE / "procs"
sys.path.insert(0, str(PROCS))  # the scripted scenarios, shared with the subprocesses
os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")

try:
    SDK_VERSION = version("openai-agents")
except PackageNotFoundError:
    SDK_VERSION = ""
    collect_ignore_glob = ["test_*.py"]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "processes: runs child processes (restarts, crashes, a second reader)"
    )


def pytest_report_header() -> list[str]:
    if not SDK_VERSION:
        return ["openai-agents: not installed, tests skipped (run `nox -s openai_agents`)"]
    try:
        import agents.testing  # noqa: F401

        testing = "yes"
    except ImportError:
        testing = "no (stand-in)"
    return [f"openai-agents {SDK_VERSION}, openai {version('openai')}, agents.testing: {testing}"]


@pytest.fixture(autouse=True)
def _tracing_off() -> Iterator[None]:
    import agents

    agents.set_tracing_disabled(True)
    yield
    agents.set_tracing_disabled(True)


@pytest.fixture
def store() -> Iterator[Any]:
    from octopoda.testing import memory_store

    s = memory_store()
    yield s
    s.close()


@pytest.fixture
def proc_env() -> dict[str, str]:
    """Environment for helper subprocesses: this interpreter's packages, tracing off."""
    env = dict(os.environ)
    env["OPENAI_AGENTS_DISABLE_TRACING"] = "1"
    env["PYTHONPATH"] = os.pathsep.join([str(PROCS), env.get("PYTHONPATH", "")])
    return env
