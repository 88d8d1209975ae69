"""Runs ``loop_script`` with the octopoda-openai-agents integration activated, the way
``octopoda.init()`` activates it (until the core's ``init`` lands: by hand).

    python init_run.py DB AGENT MODE [HOW]   # MODE: once | twice | deactivated | none
                                             # HOW: run | sync | streamed (loop_script)
"""

from __future__ import annotations

import json
import sys

from octopoda_openai_agents._integration import integration

from octopoda import LoopPolicy
from octopoda.integrations import AgentRuntimes, InitContext


def main(db: str, agent: str, mode: str, how: str = "run") -> None:
    import loop_script
    from agents.run import get_default_agent_runner

    before = get_default_agent_runner()
    policy = LoopPolicy("pause")
    context = InitContext(
        agent_id=agent,
        runtimes=AgentRuntimes(db, policy=policy, agent_id=agent),
        policy=policy,
        prices={"ScriptedModel": (1.0, 2.0)},
    )
    undo = []
    if mode in ("once", "twice", "deactivated"):
        undo.append(integration.activate(context))
    if mode == "twice":
        undo.append(integration.activate(context))
    if mode == "deactivated":
        undo.pop()()
    out = loop_script.main(how)
    for deactivate in undo:  # first activation first: the order must not matter
        deactivate()
        deactivate()  # a second call is a no-op
    out["runner_restored"] = get_default_agent_runner() is before
    print(json.dumps(out))
    context.runtime.store.close()


if __name__ == "__main__":
    main(*sys.argv[1:5])
