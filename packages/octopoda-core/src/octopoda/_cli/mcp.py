"""``octopoda mcp``: the MCP server over stdio (the ``mcp`` extra; see docs/mcp.md)."""

from __future__ import annotations

import json

import click

from .options import CliState, json_option, pass_state, store_option

__all__ = ["mcp"]


@click.command("mcp")
@store_option
@click.option(
    "--agent",
    "-a",
    "agent",
    default=None,
    metavar="AGENT",
    help="The agent of tool calls that name none. Default: $OCTOPODA_AGENT_ID, else mcp.",
)
@click.option("--list-tools", is_flag=True, help="Print the tools and exit instead of serving.")
@json_option
@pass_state
def mcp(state: CliState, agent: str | None, list_tools: bool, as_json: bool) -> None:
    """Serve memory, loop detection and the audit trail to an MCP client over stdio.

    Claude Desktop, Claude Code, Cursor and other MCP clients start this command; stdout
    carries only the protocol, logs go to stderr. Needs the mcp extra:
    pip install 'octopoda-core[mcp]'.
    """
    from .._mcp import require_mcp

    require_mcp()
    from .._mcp.server import ordered_tools, run_stdio

    if list_tools:
        rows = [
            {"name": s.name, "title": s.title, "read_only": s.read_only} for s in ordered_tools()
        ]
        if as_json:
            click.echo(json.dumps(rows))
        else:
            for row in rows:
                click.echo(f"{row['name']:34} {row['title']}")
        return
    # None: $OCTOPODA_DATABASE_URL, else the default file (its folder created), as the runtime
    run_stdio(state.store, agent)
