"""Runs ``loop_script`` with the octopoda-langchain integration activated, the way
``octopoda.init()`` activates it (until the core's ``init`` lands: by hand).

    python init_run.py DB AGENT MODE   # MODE: once | twice | deactivated | none
"""

from __future__ import annotations

import json
import sys

from octopoda_langchain._integration import integration

from octopoda import LoopPolicy
from octopoda.integrations import AgentRuntimes, InitContext


def main(db: str, agent: str, mode: str) -> None:
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
    print(json.dumps(loop_script.main(None)))
    for deactivate in undo:
        deactivate()
        deactivate()  # a second call is a no-op
    context.runtime.store.close()


if __name__ == "__main__":
    main(*sys.argv[1:4])
