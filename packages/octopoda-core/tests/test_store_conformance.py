"""Every store backend passes the same conformance suite (octopoda.testing)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from octopoda import SqliteStore
from octopoda.testing import StoreConformance


class TestSqliteStore(StoreConformance):
    @pytest.fixture(params=["file", "memory"])
    def store(self, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SqliteStore]:
        path = str(tmp_path / "store.db") if request.param == "file" else ":memory:"
        store = SqliteStore(path)
        yield store
        store.close()
