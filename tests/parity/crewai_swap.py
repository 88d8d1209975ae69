"""pytest plugin: CrewAI's own memory tests, run against OctopodaStorage.

Loaded with ``-p crewai_swap`` (this folder on ``PYTHONPATH``) from the root of the unpacked
``crewai`` source distribution; ``nox -s parity_crewai`` does all of it. No test file is
edited:

* CrewAI's built-in storage class, ``crewai.memory.storage.lancedb_storage.LanceDBStorage``
  (what ``Memory()`` and ``Memory(storage=path)`` build, and what the tests construct), is
  replaced in its module by :class:`OctopodaLanceDBStorage`: :class:`OctopodaStorage` behind
  LanceDB's constructor, one Octopoda SQLite file in the directory LanceDB would use.
* ``tests/memory/test_qdrant_edge_storage.py`` builds its ``storage`` fixture with the module
  function ``_make_storage(path, vector_dim)``; that function becomes ours, and the module's
  ``skipif(qdrant_edge not installed)`` mark is dropped, so its protocol tests run on
  OctopodaStorage.

The tests in the ``[crewai]`` table of ``allowlist.toml`` are marked ``xfail(strict=True)``
with their reason; any other failure fails the run. ``--parity-shipped`` runs them as shipped.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import tomllib
from octopoda_crewai import OctopodaStorage

ALLOWLIST = Path(__file__).with_name("allowlist.toml")
SECTION = "crewai"
QDRANT_TESTS = "tests/memory/test_qdrant_edge_storage.py"
_OPENED: list[OctopodaStorage] = []


def _in_dir(path: str | Path | None, name: str) -> OctopodaStorage:
    import os

    if path is None:
        base = os.environ.get("CREWAI_STORAGE_DIR")
        directory = Path(base) / "memory" if base else Path.cwd() / ".crewai-memory"
    else:
        directory = Path(path)
    directory.mkdir(parents=True, exist_ok=True)
    storage = OctopodaStorage(str(directory / f"{name}.octopoda.db"))
    _OPENED.append(storage)
    return storage


class OctopodaLanceDBStorage(OctopodaStorage):
    """:class:`OctopodaStorage` with ``LanceDBStorage``'s constructor. ``vector_dim`` is not
    needed (the first saved vector sets it, as in LanceDB), ``compact_every`` has no
    counterpart."""

    def __init__(
        self,
        path: str | Path | None = None,
        table_name: str = "memories",
        vector_dim: int | None = None,
        compact_every: int = 100,
    ) -> None:
        import os

        if path is None:
            base = os.environ.get("CREWAI_STORAGE_DIR")
            path = Path(base) / "memory" if base else Path.cwd() / ".crewai-memory"
        directory = Path(path)
        directory.mkdir(parents=True, exist_ok=True)
        super().__init__(str(directory / "octopoda.db"), agent_id=f"crewai-{table_name}")
        _OPENED.append(self)


def _make_storage(path: str, vector_dim: int = 4) -> OctopodaStorage:
    return _in_dir(path, "edge")


def load_allowlist() -> dict[str, str]:
    with ALLOWLIST.open("rb") as f:
        table: dict[str, str] = tomllib.load(f).get(SECTION, {})
    return table


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("octopoda parity")
    group.addoption(
        "--parity-shipped",
        action="store_true",
        help="run CrewAI's tests as shipped: no swap, no allowlist",
    )


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("parity_shipped"):
        return
    from crewai.memory.storage import lancedb_storage

    lancedb_storage.LanceDBStorage = OctopodaLanceDBStorage  # type: ignore[misc]


def pytest_unconfigure(config: pytest.Config) -> None:
    while _OPENED:
        _OPENED.pop().close()


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("parity_shipped"):
        return
    allowlist = load_allowlist()
    for item in items:
        if item.nodeid.startswith(QDRANT_TESTS):
            module: Any = item.getparent(pytest.Module)
            if module is not None:
                module.obj._make_storage = _make_storage
                module.own_markers[:] = [m for m in module.own_markers if m.name != "skipif"]
        reason = allowlist.get(item.nodeid)
        if reason is not None:
            item.add_marker(pytest.mark.xfail(strict=True, reason=f"allowlisted: {reason}"))


@pytest.fixture(autouse=True)
def _close_storages() -> Any:
    """Close what a test opened (CrewAI's tests do not close their storages)."""
    yield
    while _OPENED:
        _OPENED.pop().close()


def pytest_report_header(config: pytest.Config) -> str:
    if config.getoption("parity_shipped"):
        return "octopoda parity: as shipped (LanceDB/Qdrant Edge, no allowlist)"
    return f"octopoda parity: LanceDBStorage and _make_storage -> OctopodaStorage ({ALLOWLIST})"
