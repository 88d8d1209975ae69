"""``octopoda run -- CMD...``: ``octopoda-run`` as a subcommand (the same options)."""

from __future__ import annotations

import click

from .options import CliState, pass_state

__all__ = ["run_command"]


@click.command(
    "run",
    context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False},
)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@pass_state
def run_command(state: CliState, args: tuple[str, ...]) -> None:
    """Run a program with octopoda.init() applied before its code starts.

    octopoda run [--agent-id ID] [--store URL] [--policy POLICY] [--disable NAMES] -- CMD...
    is octopoda-run: --agent-id sets OCTOPODA_AGENT_ID (default: the script's name), --store
    OCTOPODA_DATABASE_URL, --policy OCTOPODA_POLICY (warn, pause or raise, then key=value
    settings such as spend_cap_usd=5), --disable OCTOPODA_DISABLED_INTEGRATIONS. The
    program's exit code is the command's.
    """
    from .._instrument.run import main

    argv = list(args)
    options = argv[: argv.index("--")] if "--" in argv else argv
    if state.store is not None and "--store" not in options:  # octopoda --store X run ...
        argv = ["--store", state.store, *argv]
    main(argv)
