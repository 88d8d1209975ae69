"""docs/migrating.md against both packages: every public method of 3.3.4's AgentRuntime,
public name of its ``octopoda`` package, console script and environment variable is in the
guide's tables, nothing else is, and each replacement named exists here. Rows marked "same
shape" take 3.3.4's positional call; rows marked *not supported* raise NotSupported.

3.3.4's surface comes from ``legacy/introspect_334.py`` run by ``OCTOPODA_LEGACY_PYTHON``
(the nox session ``migrate``); without it the 3.3.4 side skips.
"""

from __future__ import annotations

import inspect
import json
import os
import re
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import pytest

import octopoda
from octopoda import AgentRuntime, NotSupported
from octopoda._cli.app import cli

HERE = Path(__file__).parent
DOC = HERE.parents[2] / "docs" / "migrating.md"
SRC = HERE.parent / "src" / "octopoda"


def legacy_python() -> str:
    python = os.environ.get("OCTOPODA_LEGACY_PYTHON")
    if not python:
        if os.environ.get("OCTOPODA_REQUIRE_LEGACY"):
            pytest.fail("OCTOPODA_LEGACY_PYTHON is not set", pytrace=False)
        pytest.skip("no octopoda 3.3.4 interpreter (OCTOPODA_LEGACY_PYTHON); nox -s migrate")
    return python


def _section(title: str) -> list[list[str]]:
    """The rows (cells) of the table under the heading that starts with ``title``."""
    text = DOC.read_text(encoding="utf-8")
    start = text.index(f"## {title}")
    end = text.find("\n## ", start + 3)
    rows = []
    for line in text[start : None if end < 0 else end].splitlines():
        if line.startswith("|") and not line.startswith("|---"):
            rows.append([c.strip() for c in line.strip("|").split(" | ")])
    return rows[1:]  # without the header


def _ticked(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


METHODS = _section("3. Methods")
NAMES = _section("4. Other names")
COMMANDS = _section("5. Commands")
ENV = _section("6. Environment")


@cache
def surface() -> dict[str, Any]:
    proc = subprocess.run(
        [legacy_python(), str(HERE / "legacy" / "introspect_334.py")],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        check=True,
    )
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["version"] == "3.3.4"
    return result


def _method_name(row: list[str]) -> str:
    return _ticked(row[0])[0].split("(")[0]


def test_every_334_method_is_in_the_table_once() -> None:
    documented = [_method_name(r) for r in METHODS if _method_name(r) != "AgentRuntime"]
    assert sorted(documented) == sorted(set(documented))
    assert set(documented) == set(surface()["methods"])


def test_every_334_public_name_command_and_variable_is_in_the_tables() -> None:
    assert {_ticked(r[0])[0] for r in NAMES} == set(surface()["names"])
    assert {t for r in COMMANDS for t in _ticked(r[0])} == set(surface()["scripts"])
    assert {t for r in ENV for t in _ticked(r[0])} == set(surface()["env"])


def test_every_replacement_exists_here() -> None:
    for row in METHODS:
        for ref in _ticked(row[1]):
            name = ref.removeprefix("agent.").split("(")[0]
            assert hasattr(AgentRuntime, name), f"{row[0]}: AgentRuntime has no {name}"
    for row in NAMES:
        name = _ticked(row[1])[0].removeprefix("octopoda.")
        assert hasattr(octopoda, name), f"{row[0]}: octopoda has no {name}"
    commands = set(cli.commands)
    for row in COMMANDS:
        for ref in _ticked(row[1]):
            assert ref.split()[1] in commands, f"{row[0]}: no command {ref}"
    source = "".join(p.read_text(encoding="utf-8") for p in SRC.rglob("*.py"))
    for row in ENV:
        for var in _ticked(row[1]):
            assert f'"{var}"' in source, f"{row[0]}: {var} is not read here"


@pytest.mark.parametrize("row", [r for r in METHODS if r[2].startswith("same shape")], ids=str)
def test_same_shape_rows_take_the_334_positional_call(row: list[str]) -> None:
    name = _method_name(row)
    params = surface()["methods"][name]
    ours = inspect.signature(getattr(AgentRuntime, name))
    ours.bind(None, *(f"<{p}>" for p, _ in params))  # every 3.3.4 parameter, by position
    ours.bind(None, *(f"<{p}>" for p, has_default in params if not has_default))


@pytest.mark.parametrize("row", [r for r in METHODS if "*not supported*" in r[2]], ids=str)
def test_not_supported_rows_raise_naming_the_replacement(row: list[str]) -> None:
    name = _method_name(row)
    params = surface()["methods"][name]
    agent = AgentRuntime("bot", store=":memory:")
    required = [f"<{p}>" for p, has_default in params if not has_default]
    with pytest.raises(NotSupported, match=r"use .+docs/migrating\.md"):
        getattr(agent, name)(*required)
