"""Runs an unmodified script after ``octopoda.init()`` (the autogen integration activates
when the script imports autogen).

python with_init.py DB AGENT MODE SCRIPT [ARGS...]
MODE: ``init``; ``init-twice`` (init again with the same settings); ``shutdown``
(init, then shutdown before the script runs: nothing may be recorded); ``activate-twice``
(no init: the integration's ``activate`` called twice with one context, as init would).
"""

from __future__ import annotations

import runpy
import sys

import octopoda

PRICES = {"unknown": (1.0, 2.0)}


def main(db: str, agent: str, mode: str, script: str, *args: str) -> None:
    undo, runtimes = None, None
    if mode == "activate-twice":
        from octopoda_autogen._integration import integration

        from octopoda.integrations import AgentRuntimes, InitContext

        policy = octopoda.LoopPolicy("pause")
        runtimes = AgentRuntimes(db, policy=policy, agent_id=agent)
        ctx = InitContext(agent_id=agent, runtimes=runtimes, policy=policy, prices=PRICES)
        undo = integration.activate(ctx)
        assert integration.activate(ctx) is undo
    else:
        octopoda.init(agent, store=db, policy="pause", prices=PRICES)
        if mode == "init-twice":
            octopoda.init(agent, store=db, policy="pause", prices=PRICES)
        elif mode == "shutdown":
            octopoda.shutdown()
    try:
        sys.argv = [script, *args]
        runpy.run_path(script, run_name="__main__")
    finally:
        if undo is not None:
            undo()
            undo()  # a second call does nothing
        if runtimes is not None:
            runtimes.runtime(agent).close()
        octopoda.shutdown()


if __name__ == "__main__":
    main(*sys.argv[1:])
