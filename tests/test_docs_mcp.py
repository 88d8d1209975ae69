"""docs/mcp.md stays true: its tool table is the server's tools (names, order, hints), and
its client configurations start `octopoda mcp`."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="needs the mcp extra (nox -s mcp)")

from octopoda._mcp.server import ordered_tools

DOC = (Path(__file__).resolve().parent.parent / "docs" / "mcp.md").read_text("utf-8")
ROW = re.compile(r"^\| `(octopoda_\w+)` \| (.+?) \| (yes|no) \| (yes|no) \|$", re.MULTILINE)


def test_the_tool_table_lists_every_tool_with_its_hints() -> None:
    documented = [(m[1], m[3] == "yes", m[4] == "yes") for m in ROW.finditer(DOC)]
    served = [(s.name, s.read_only, s.destructive) for s in ordered_tools()]
    assert documented == served
    assert f"as {len(served)} tools" in DOC


def test_the_client_configurations_start_octopoda_mcp() -> None:
    configs = [json.loads(b) for b in re.findall(r"```json\n(.*?)```", DOC, flags=re.DOTALL)]
    assert len(configs) == 2
    for config in configs:
        server = config["mcpServers"]["octopoda"]
        assert Path(server["command"]).name == "octopoda" and server["args"][0] == "mcp"
        assert set(server["env"]) == {"OCTOPODA_AGENT_ID"}  # no API key
    add = re.search(r"^\$ (claude mcp add .*)$", DOC, re.MULTILINE)
    assert add is not None
    words = shlex.split(add[1])
    assert words[-3:] == ["--", "octopoda", "mcp"]
    assert "OCTOPODA_AGENT_ID=claude-code" in words
