"""The public names, and the rule that the adapter uses only the core's public API."""

from __future__ import annotations

import ast
from pathlib import Path

import octopoda_autogen
from octopoda_autogen import RunPaused

import octopoda
import octopoda.integrations
from octopoda import AgentPaused, OctopodaError

SRC = Path(octopoda_autogen.__file__).resolve().parent


def test_all_is_importable_and_typed() -> None:
    names = octopoda_autogen.__all__
    assert len(set(names)) == len(names)
    for name in names:
        assert getattr(octopoda_autogen, name) is not None
    assert (SRC / "py.typed").is_file()


def test_run_paused_is_an_octopoda_error() -> None:
    assert issubclass(RunPaused, AgentPaused) and issubclass(RunPaused, OctopodaError)


def test_the_adapter_imports_only_public_core_names() -> None:
    public = {"octopoda": octopoda.__all__, "octopoda.integrations": octopoda.integrations.__all__}
    for path in sorted(SRC.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.ImportFrom)
                and node.module
                and node.module.startswith("octopoda")
            ):
                assert node.module in public, f"{path.name} imports {node.module}"
                for alias in node.names:
                    assert alias.name in public[node.module], f"{path.name}: {alias.name}"
