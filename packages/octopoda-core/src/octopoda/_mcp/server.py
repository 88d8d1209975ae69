"""The MCPServer with every Octopoda tool, over stdio or streamable HTTP."""

import inspect
import logging
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any

import anyio.to_thread
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field, ValidationError

from .._store.protocol import Store
from .._version import __version__
from . import agent_tools, collab_tools, conversation, memory_tools  # noqa: F401  (register tools)
from .calls import Calls, ToolSpec
from .registry import TOOLS

__all__ = [
    "INSTRUCTIONS",
    "build_server",
    "ordered_tools",
    "run_stdio",
    "streamable_http_app",
    "tool_names",
]

INSTRUCTIONS = (
    "Octopoda is this agent's persistent, versioned and audited memory. Call"
    " octopoda_get_context at the start of a conversation; octopoda_remember facts worth"
    " keeping; octopoda_recall a known key, octopoda_search or octopoda_recall_similar"
    " otherwise. Every write returns a receipt (version, event seq, audit hash). Tool calls"
    " are recorded: when you repeat a failing call, the result reports the loop."
)

_AGENT_PARAM = inspect.Parameter(
    "agent_id",
    inspect.Parameter.KEYWORD_ONLY,
    default=None,
    annotation=Annotated[
        str | None,
        Field(description="act as this agent; omit for the server's (OCTOPODA_AGENT_ID)"),
    ],
)


_MODULE_ORDER = ("memory_tools", "conversation", "collab_tools", "agent_tools")


def ordered_tools() -> list[ToolSpec]:
    """The tools as listed: memory first, then conversations, collaboration, the agent."""
    return sorted(TOOLS, key=lambda s: _MODULE_ORDER.index(s.fn.__module__.rsplit(".", 1)[1]))


def tool_names() -> list[str]:
    """The names of the server's tools, in the order the server lists them."""
    return [spec.name for spec in ordered_tools()]


def build_server(
    store: Store | str | None = None, agent_id: str | None = None
) -> tuple[MCPServer, Calls]:
    """The MCP server and its :class:`Calls` (close it when done). ``store`` as for
    :class:`~octopoda.AgentRuntime`; ``agent_id``: the agent of calls that name none
    (default ``$OCTOPODA_AGENT_ID``, else ``mcp``)."""
    calls = Calls(store, agent_id)
    server = _Server(name="octopoda", version=__version__, instructions=INSTRUCTIONS)
    server.calls = calls
    for spec in ordered_tools():
        annotations = ToolAnnotations(
            title=spec.title,
            read_only_hint=spec.read_only,
            destructive_hint=spec.destructive,
            idempotent_hint=spec.idempotent,
            open_world_hint=False,
        )
        server.add_tool(
            calls.tool_function(spec, _AGENT_PARAM),
            name=spec.name,
            title=spec.title,
            description=inspect.cleandoc(spec.fn.__doc__ or ""),
            annotations=annotations,
            structured_output=True,
        )
    return server, calls


class _Server(MCPServer):
    """MCPServer that also records calls whose arguments fail a tool's schema: they never
    reach the tool, but a client sending one again and again is a loop all the same."""

    calls: Calls

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if not isinstance(exc.__cause__, ValidationError):
                raise
            fields = sorted({".".join(map(str, e["loc"])) for e in exc.__cause__.errors()})
            message = f"invalid arguments: {', '.join(fields)}"
            loop = await anyio.to_thread.run_sync(self.calls.rejected, name, arguments, message)
            if not loop:
                raise
            raise ToolError(f"{exc}{loop}") from exc.__cause__


def _log_to_stderr(level: int = logging.INFO) -> None:
    """Logs on stderr only: stdout carries the protocol."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)


def run_stdio(store: Store | str | None = None, agent_id: str | None = None) -> None:
    """Serve over stdio until the client closes it."""
    _log_to_stderr()
    server, calls = build_server(store, agent_id)
    logging.getLogger("octopoda.mcp").info(
        "octopoda mcp %s on %s, default agent %r", __version__, calls.store.url, calls.default_agent
    )
    try:
        server.run("stdio")
    finally:
        calls.close()
        calls.store.close()


def streamable_http_app(
    store: Store | str | None = None,
    agent_id: str | None = None,
    *,
    path: str = "/",
    host: str = "127.0.0.1",
    stateless: bool = False,
    transport_security: Any = None,
    close_store: bool = True,
) -> Any:
    """The MCP streamable-HTTP ASGI app (a Starlette app) serving every tool at ``path``.

    To mount it in another app at ``/mcp``, pass ``path="/"``, mount it, and run its
    lifespan inside the host's (mounted apps' lifespans do not run by themselves)::

        mcp_app = streamable_http_app(store)
        @asynccontextmanager
        async def lifespan(app):
            async with mcp_app.router.lifespan_context(mcp_app):
                yield
        api = FastAPI(lifespan=lifespan); api.mount("/mcp", mcp_app)

    The app closes its store when its lifespan ends (``close_store=False``: a store the
    caller closes). ``host`` is the host the server
    binds: for a loopback host the SDK's DNS-rebinding protection accepts only loopback
    ``Host`` headers; ``transport_security`` (an ``mcp.server.transport_security.
    TransportSecuritySettings``) sets the allowed hosts and origins instead.
    """
    server, calls = build_server(store, agent_id)
    app = server.streamable_http_app(
        streamable_http_path=path,
        host=host,
        stateless_http=stateless,
        transport_security=transport_security,
    )
    inner = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(a: Any) -> AsyncIterator[None]:
        try:
            async with inner(a):
                yield
        finally:
            calls.close()
            if close_store:
                calls.store.close()

    app.router.lifespan_context = lifespan
    app.state.octopoda_calls = calls
    return app
