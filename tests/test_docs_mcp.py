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
    stdio = [c for c in configs if "command" in c["mcpServers"]["octopoda"]]
    (http,) = [c["mcpServers"]["octopoda"] for c in configs if c not in stdio]
    assert len(stdio) == 2
    # the HTTP one: octopoda serve's /mcp/ (tests/test_server_mcp.py serves it), a bearer token
    assert http["type"] == "http" and http["url"].endswith(":7842/mcp/")
    assert http["headers"] == {"Authorization": "Bearer <token>"}
    for config in stdio:
        server = config["mcpServers"]["octopoda"]
        assert Path(server["command"]).name == "octopoda" and server["args"][0] == "mcp"
        assert set(server["env"]) == {"OCTOPODA_AGENT_ID"}  # no API key
    add = re.search(r"^\$ (claude mcp add .*)$", DOC, re.MULTILINE)
    assert add is not None
    words = shlex.split(add[1])
    assert words[-3:] == ["--", "octopoda", "mcp"]
    assert "OCTOPODA_AGENT_ID=claude-code" in words


def test_the_mounting_example_serves_mcp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from starlette.testclient import TestClient

    monkeypatch.chdir(tmp_path)
    (block,) = re.findall(r"```python\n(.*?)```", DOC, flags=re.DOTALL)
    namespace: dict[str, object] = {}
    exec(compile(block, "docs/mcp.md", "exec"), namespace)
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"},
        },
    }
    headers = {"Accept": "application/json, text/event-stream"}
    with TestClient(namespace["app"], base_url="http://127.0.0.1:7842") as client:  # type: ignore[arg-type]
        response = client.post("/mcp/", json=body, headers=headers)
        assert response.status_code == 200, response.text
        assert "octopoda" in response.text
    assert (tmp_path / "team.db").exists()
