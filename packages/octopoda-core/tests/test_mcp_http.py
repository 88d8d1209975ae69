"""The MCP tools over streamable HTTP: the ASGI app served by uvicorn on a loopback port,
standalone and mounted at /mcp inside another app (as ``octopoda serve`` will mount it)."""

from __future__ import annotations

import json
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the MCP tests need the mcp extra (nox -s mcp)")

import uvicorn
from mcp import Client
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Mount, Route

from octopoda import AgentRuntime, SqliteStore
from octopoda._mcp.server import streamable_http_app, tool_names

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serving(app: Any) -> Iterator[str]:
    port = _free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(20)


async def _exercise(url: str, store_path: Path) -> None:
    async with Client(url) as client:
        names = [t.name for t in (await client.list_tools()).tools]
        assert names == tool_names()
        receipt = await client.call_tool("octopoda_remember", {"key": "k", "value": "http"})
        assert not receipt.is_error and receipt.structured_content is not None
        read = await client.call_tool("octopoda_recall", {"key": "k"})
        assert read.structured_content is not None
        assert read.structured_content["seq"] == receipt.structured_content["seq"]
        bad = await client.call_tool("octopoda_recall", {"key": ""})
        assert bad.is_error and "InvalidKey" in bad.content[0].text  # type: ignore[union-attr]
    with SqliteStore(store_path) as store:
        assert AgentRuntime("web", store=store).recall("k").value == "http"


async def test_the_streamable_http_app_standalone(tmp_path: Path) -> None:
    db = tmp_path / "http.db"
    app = streamable_http_app(str(db), "web", path="/mcp")
    with serving(app) as base:
        await _exercise(base + "/mcp", db)


async def test_the_app_mounted_at_mcp_inside_another_app(tmp_path: Path) -> None:
    db = tmp_path / "mounted.db"
    mcp_app = streamable_http_app(str(db), "web")

    @asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
        async with mcp_app.router.lifespan_context(mcp_app):
            yield

    async def health(request: Any) -> PlainTextResponse:
        return PlainTextResponse("ok")

    host = Starlette(
        routes=[Route("/health", health), Mount("/mcp", app=mcp_app)], lifespan=lifespan
    )
    with serving(host) as base:
        await _exercise(base + "/mcp", db)


def _initialize(url: str, host: str) -> int:
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
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={
            "Host": host,
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=20) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        exc.close()
        return int(exc.code)


def test_a_loopback_app_refuses_other_host_headers(tmp_path: Path) -> None:
    app = streamable_http_app(str(tmp_path / "host.db"), "web", path="/mcp")
    with serving(app) as base:
        port = base.rsplit(":", 1)[1]
        assert _initialize(base + "/mcp", f"127.0.0.1:{port}") == 200
        assert _initialize(base + "/mcp", "evil.example") >= 400  # DNS rebinding
