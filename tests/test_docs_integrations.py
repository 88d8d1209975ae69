"""docs/integrations.md runs as written and names every name of the adapter kit."""

from __future__ import annotations

import re
from pathlib import Path

import octopoda.integrations

DOC = (Path(__file__).resolve().parent.parent / "docs" / "integrations.md").read_text("utf-8")


def test_the_example_runs() -> None:
    (block,) = re.findall(r"```python\n(.*?)```", DOC, flags=re.DOTALL)
    exec(compile(block, "docs/integrations.md", "exec"), {})


def test_the_table_names_every_public_name() -> None:
    named = set(re.findall(r"`([A-Za-z_]+)", DOC.split("```python", 1)[0]))
    assert set(octopoda.integrations.__all__) <= named
