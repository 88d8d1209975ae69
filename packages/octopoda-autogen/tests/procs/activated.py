"""Runs a script with the AutoGen integration activated, as ``octopoda.init`` would.

python activated.py DB AGENT MODE SCRIPT [ARGS...]
MODE: ``once``; ``twice`` (activate again with the same context); ``deactivated``
(activate, then deactivate before the script runs); ``replaced`` (a second context with
its own runtimes replaces the first).
"""

from __future__ import annotations

import runpy
import sys

from octopoda_autogen._integration import integration

from octopoda import LoopPolicy
from octopoda.integrations import AgentRuntimes, InitContext

PRICES = {"unknown": (1.0, 2.0)}


def context(db: str, agent: str) -> InitContext:
    policy = LoopPolicy("pause")
    runtimes = AgentRuntimes(db, policy=policy, agent_id=agent)
    return InitContext(agent_id=agent, runtimes=runtimes, policy=policy, prices=PRICES)


def main(db: str, agent: str, mode: str, script: str, *args: str) -> None:
    ctx = context(db, agent)
    undo = integration.activate(ctx)
    if mode == "twice":
        assert integration.activate(ctx) is undo
    elif mode == "replaced":
        ctx = context(db, agent)
        undo = integration.activate(ctx)
    elif mode == "deactivated":
        undo()
        undo()  # a second call does nothing
    try:
        sys.argv = [script, *args]
        runpy.run_path(script, run_name="__main__")
    finally:
        undo()  # what octopoda.shutdown does: every handler removed
        ctx.runtimes.runtime(agent).close()


if __name__ == "__main__":
    main(*sys.argv[1:])
