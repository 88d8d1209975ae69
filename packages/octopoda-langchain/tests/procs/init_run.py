"""Runs ``loop_script`` with the octopoda-langchain integration activated, the way
``octopoda.init()`` activates it (until the core's ``init`` lands: by hand).

    python init_run.py DB AGENT MODE [HOW]   # MODE: once | twice | deactivated | none
                                             # HOW: invoke | astream (loop_script)
"""

from __future__ import annotations

import json
import sys

from octopoda_langchain._integration import integration

from octopoda import LoopPolicy
from octopoda.integrations import AgentRuntimes, InitContext


def main(db: str, agent: str, mode: str, how: str = "invoke") -> None:
    import loop_script

    policy = LoopPolicy("pause")
    context = InitContext(
        agent_id=agent,
        runtimes=AgentRuntimes(db, policy=policy, agent_id=agent),
        policy=policy,
        prices={"scripted": (1.0, 2.0)},
    )
    undo = []
    if mode in ("once", "twice", "deactivated"):
        undo.append(integration.activate(context))
    if mode == "twice":
        undo.append(integration.activate(context))
    if mode == "deactivated":
        undo.pop()()
    print(json.dumps(loop_script.main(None, how)))
    for deactivate in undo:
        deactivate()
        deactivate()  # a second call is a no-op
    context.runtime.store.close()


if __name__ == "__main__":
    main(*sys.argv[1:5])
