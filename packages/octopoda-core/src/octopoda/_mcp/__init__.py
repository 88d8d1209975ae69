"""The MCP server: every runtime verb as an MCP tool (``octopoda mcp``; see docs/mcp.md).

It needs the ``mcp`` extra (the MCP Python SDK 2.x). Importing this package does not import
the SDK: :func:`require_mcp` checks for it and says how to install it when it is missing.

- ``octopoda._mcp.server.build_server(store, agent_id)``: the ``MCPServer`` with every tool.
- ``octopoda._mcp.server.run_stdio(store, agent_id)``: serve it over stdio (protocol on
  stdout, logs on stderr).
- ``octopoda._mcp.server.streamable_http_app(store, agent_id)``: the streamable-HTTP ASGI
  app, for ``octopoda serve`` to mount at ``/mcp``.
"""

from __future__ import annotations

from typing import Final

from .._errors import ConfigError

__all__ = ["MISSING_MCP", "require_mcp"]

MISSING_MCP: Final = (
    "the MCP server needs the MCP Python SDK 2.x, which is not installed. Install the mcp"
    " extra:\n\n    pip install 'octopoda-core[mcp]'\n"
)


def require_mcp() -> None:
    """Raise :class:`~octopoda.ConfigError` with the install line unless mcp 2.x imports."""
    try:
        from mcp.server.mcpserver import MCPServer  # noqa: F401
    except ImportError:
        raise ConfigError(MISSING_MCP) from None
