"""The MCP tools at ``/mcp`` of a real ``octopoda serve`` process (streamable HTTP), with
and without the server's tokens: the same tool set as over stdio, behind the same guard."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("requests")
pytest.importorskip("mcp", reason="the MCP tests need the mcp extra")

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from octopoda import AgentRuntime, SqliteStore
from octopoda._mcp.server import tool_names

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _load(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(
        f"octopoda_test_{name}", Path(__file__).with_name(f"{name}.py")
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


serving = _load("serving")
TOKEN = serving.TOKEN
LIMITED = "bot-only-token-0123456789"
READER = "reader-token-0123456789"


async def _session_calls(
    url: str, token: str | None, calls: list[tuple[str, dict[str, Any]]]
) -> Any:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        create_mcp_http_client(headers=headers) as http,
        streamable_http_client(f"{url}/mcp/", http_client=http) as streams,
        ClientSession(streams[0], streams[1]) as session,
    ):
        await session.initialize()
        names = [t.name for t in (await session.list_tools()).tools]
        results = [await session.call_tool(name, args) for name, args in calls]
        return names, results


@pytest.fixture(scope="module")
def open_server(tmp_path_factory: Any) -> Iterator[tuple[str, Path]]:
    db = tmp_path_factory.mktemp("mcp-open") / "octopoda.db"
    with serving.running_server("--store", str(db)) as url:
        yield url, db


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: Any) -> Iterator[tuple[str, Path]]:
    root = tmp_path_factory.mktemp("mcp-guarded")
    tokens = [
        {"token": READER, "scope": "read"},
        {"token": LIMITED, "scope": "write", "agents": ["bot"]},
    ]
    (root / "tokens.json").write_text(json.dumps(tokens))
    args = ("--store", str(root / "g.db"), "--token-file", str(root / "tokens.json"))
    with serving.running_server(*args, env={"OCTOPODA_SERVER_TOKEN": TOKEN}) as url:
        yield url, root / "g.db"


async def test_the_tool_set_over_http_without_a_token(open_server: tuple[str, Path]) -> None:
    url, _ = open_server
    names, (receipt, read, bad) = await _session_calls(
        url,
        None,
        [
            ("octopoda_remember", {"key": "k", "value": "over http", "agent_id": "web"}),
            ("octopoda_recall", {"key": "k", "agent_id": "web"}),
            ("octopoda_recall", {"key": "", "agent_id": "web"}),
        ],
    )
    assert names == tool_names()
    assert not receipt.is_error and receipt.structured_content["version"] == 1
    assert read.structured_content["seq"] == receipt.structured_content["seq"]
    assert bad.is_error and "InvalidKey" in bad.content[0].text
    with serving.session() as http:  # the JSON API sees the same write
        got = http.get(f"{url}/v1/agents/web/memories/k").json()
        assert got["value"] == "over http" and got["version"] == 1


async def test_the_tool_set_over_http_with_a_token(guarded: tuple[str, Path]) -> None:
    url, db = guarded
    names, (receipt,) = await _session_calls(
        url, TOKEN, [("octopoda_remember", {"key": "k", "value": 7, "agent_id": "bot"})]
    )
    assert names == tool_names() and not receipt.is_error
    with SqliteStore(db, read_only=True) as store:
        assert AgentRuntime("bot", store=store).recall("k").value == 7


async def test_mcp_refuses_missing_read_only_and_limited_tokens(guarded: tuple[str, Path]) -> None:
    url, _ = guarded
    with serving.session() as anon:
        ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        assert anon.post(f"{url}/mcp/", json=ping).status_code == 401
    for token, why in ((READER, "read-only"), (LIMITED, "limited to agents")):
        with serving.session(token) as http:
            refused = http.post(f"{url}/mcp/", json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
            assert refused.status_code == 403 and why in refused.json()["detail"]
