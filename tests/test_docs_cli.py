"""docs/cli.md's `octopoda doctor` example shows the schema every new store has."""

from __future__ import annotations

import re
from pathlib import Path

from octopoda._store.sqlite.schema import MIGRATIONS

DOC = (Path(__file__).resolve().parent.parent / "docs" / "cli.md").read_text(encoding="utf-8")


def test_doctor_example_shows_the_current_schema() -> None:
    (version, names) = re.findall(r"  schema +version (\d+) \(migrations: (.*)\)\n", DOC)[0]
    assert int(version) == len(MIGRATIONS)
    assert names.split(", ") == [name for name, _ in MIGRATIONS]
