"""``octopoda mcp`` as MCP clients start it: a subprocess speaking JSON-RPC on stdio.

Claude Code and Claude Desktop start a server from a command, its arguments and extra
environment variables; these tests do the same with the ``octopoda`` console script of
this environment (or ``python -m octopoda`` when there is none).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the MCP tests need the mcp extra (nox -s mcp)")

import anyio
from mcp import Client, StdioServerParameters

from octopoda import AgentRuntime, SqliteStore

pytestmark = pytest.mark.anyio

SCRIPT = Path(sys.executable).with_name("octopoda")


def command(store: Path) -> tuple[str, list[str]]:
    """The command and arguments of an MCP client's configuration."""
    if SCRIPT.is_file():
        return str(SCRIPT), ["mcp", "--store", str(store)]
    return sys.executable, ["-m", "octopoda", "mcp", "--store", str(store)]


def environment(agent: str) -> dict[str, str]:
    # what a client passes: its "env" block over a minimal environment (PATH, HOME)
    return {
        "PATH": os.environ.get("PATH", ""),
        "HOME": os.environ.get("HOME", "/tmp"),
        "OCTOPODA_AGENT_ID": agent,
    }


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _rpc(id_: int | None, method: str, params: dict[str, Any] | None = None) -> str:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if id_ is not None:
        message["id"] = id_
    if params is not None:
        message["params"] = params
    return json.dumps(message) + "\n"


def test_stdout_carries_only_json_rpc_and_logs_go_to_stderr(tmp_path: Path) -> None:
    cmd, args = command(tmp_path / "claude.db")
    requests = [
        _rpc(
            1,
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "claude-code", "version": "2"},
            },
        ),
        _rpc(None, "notifications/initialized"),
        _rpc(2, "tools/list"),
        _rpc(
            3, "tools/call", {"name": "octopoda_remember", "arguments": {"key": "k", "value": "v"}}
        ),
        _rpc(4, "tools/call", {"name": "octopoda_recall", "arguments": {"key": ""}}),
        _rpc(5, "tools/call", {"name": "octopoda_recall", "arguments": {"key": "k"}}),
    ]
    proc = subprocess.Popen(
        [cmd, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=environment("claude-code"),
        text=True,
    )
    responses: dict[int, dict[str, Any]] = {}
    lines: list[str] = []
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(requests[0])
        proc.stdin.flush()
        lines.append(proc.stdout.readline())  # the initialize response, before the rest
        for request in requests[1:]:
            proc.stdin.write(request)
        proc.stdin.flush()
        while len(lines) < 5:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
        rest, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    lines += rest.splitlines(keepends=True)
    for line in lines:
        if not line.strip():
            continue
        message = json.loads(line)  # every stdout line is a JSON-RPC message
        assert message["jsonrpc"] == "2.0"
        if "id" in message:
            responses[message["id"]] = message
    assert set(responses) == {1, 2, 3, 4, 5}
    assert responses[1]["result"]["serverInfo"]["name"] == "octopoda"
    assert len(responses[2]["result"]["tools"]) > 34
    receipt = responses[3]["result"]["structuredContent"]
    assert receipt["agent_id"] == "claude-code" and receipt["version"] == 1
    assert responses[4]["result"]["isError"] is True
    assert "InvalidKey" in responses[4]["result"]["content"][0]["text"]
    read = responses[5]["result"]["structuredContent"]
    assert (read["value"], read["seq"]) == ("v", receipt["seq"])
    assert "octopoda mcp" in stderr  # the start-up line, on stderr
    assert proc.returncode == 0, stderr


async def test_the_sdk_stdio_client_calls_tools(tmp_path: Path) -> None:
    # no --store: the default store under OCTOPODA_HOME, its folder created
    cmd, args = command(tmp_path / "unused.db")
    args = args[: args.index("--store")]
    home = tmp_path / "new" / "home"
    env = {**environment("desktop"), "OCTOPODA_HOME": str(home)}
    params = StdioServerParameters(command=cmd, args=args, env=env)
    async with Client(params) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert {"octopoda_remember", "octopoda_audit_verify"} <= names
        r = await client.call_tool("octopoda_remember", {"key": "a", "value": [1, 2]})
        assert r.structured_content is not None and r.structured_content["agent_id"] == "desktop"
        bad = await client.call_tool("octopoda_restore", {"name": "none"})
        assert bad.is_error and "SnapshotNotFound" in bad.content[0].text  # type: ignore[union-attr]
        ok = await client.call_tool("octopoda_audit_verify", {})
        assert ok.structured_content is not None and ok.structured_content["ok"] is True
    with SqliteStore(home / "octopoda.db") as store:
        assert AgentRuntime("desktop", store=store).recall("a").value == [1, 2]


async def test_two_clients_in_parallel_on_one_store_lose_nothing(tmp_path: Path) -> None:
    db = tmp_path / "shared.db"
    SqliteStore(db).close()  # created up front, as a user's first run would
    cmd, args = command(db)
    writes = 25
    receipts: dict[str, list[dict[str, Any]]] = {"a": [], "b": []}

    async def client_run(name: str) -> None:
        params = StdioServerParameters(command=cmd, args=args, env=environment("team"))
        async with Client(params) as client:

            async def one(i: int) -> None:
                own = await client.call_tool(
                    "octopoda_remember", {"key": f"{name}.{i}", "value": i}
                )
                same = await client.call_tool(
                    "octopoda_remember", {"key": "counter", "value": f"{name}{i}"}
                )
                assert not own.is_error and not same.is_error, (own.content, same.content)
                receipts[name] += [own.structured_content, same.structured_content]  # type: ignore[list-item]

            async with anyio.create_task_group() as tg:
                for i in range(writes):
                    tg.start_soon(one, i)

    async with anyio.create_task_group() as tg:
        tg.start_soon(client_run, "a")
        tg.start_soon(client_run, "b")

    with SqliteStore(db) as store:
        rt = AgentRuntime("team", store=store)
        for name in ("a", "b"):
            for i in range(writes):
                assert rt.recall(f"{name}.{i}").value == i
        history = rt.recall_history("counter")
        assert [v.version for v in history] == list(range(2 * writes, 0, -1))
        assert {v.value for v in history} == {f"{n}{i}" for n in "ab" for i in range(writes)}
        for r in receipts["a"] + receipts["b"]:  # every receipt is what the store holds
            row = rt.recall(r["key"], version=r["version"])
            assert row.seq == r["seq"]
        assert rt.audit.verify().ok


def test_list_tools_prints_the_servers_tools(tmp_path: Path) -> None:
    from octopoda._mcp.server import tool_names

    cmd, args = command(tmp_path / "unused.db")
    proc = subprocess.run(
        [cmd, *args, "--list-tools", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        env=environment("x"),
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert [t["name"] for t in json.loads(proc.stdout)] == tool_names()
    assert not (tmp_path / "unused.db").exists()  # listing opens no store
