"""The ``octopoda`` command group and the list of its commands.

To add commands, write them in a module of this folder with the shared decorators of
``options.py`` (``store_option``, ``agent_option``, ``json_option``, ``pass_state``),
register them below, and document each in ``docs/cli.md`` (a test checks that every
command is documented and takes ``--json``).
"""

from __future__ import annotations

import click

from .._version import __version__
from .audit import audit, diff, timeline
from .mcp import mcp
from .memory import export_command, import_command, memory, reindex_command
from .migrate import migrate_command
from .options import OctopodaGroup, store_option
from .run import run_command
from .serve import serve
from .store import agents, doctor, version

__all__ = ["cli"]


@click.group(
    "octopoda", cls=OctopodaGroup, context_settings={"help_option_names": ["-h", "--help"]}
)
@click.version_option(
    __version__, "--version", prog_name="octopoda", message="%(prog)s %(version)s"
)
@store_option
def cli() -> None:
    """Octopoda: versioned, audited memory for AI agents.

    Every command that uses a store takes --store (before or after the command name);
    without it the store is $OCTOPODA_DATABASE_URL, else $OCTOPODA_HOME/octopoda.db, else
    ~/.octopoda/octopoda.db. Data commands print JSON with --json. Errors go to stderr
    with exit code 1.
    """


# -- installation and store ----------------------------------------------------------------
cli.add_command(version)
cli.add_command(doctor)
cli.add_command(agents)
cli.add_command(run_command)

# -- memory ----------------------------------------------------------------------------------
cli.add_command(memory)
cli.add_command(export_command)
cli.add_command(import_command)
cli.add_command(reindex_command)
cli.add_command(migrate_command)

# -- audit -----------------------------------------------------------------------------------
cli.add_command(audit)
cli.add_command(timeline)
cli.add_command(diff)

# -- MCP -------------------------------------------------------------------------------------
cli.add_command(mcp)

# -- server ----------------------------------------------------------------------------------
cli.add_command(serve)
