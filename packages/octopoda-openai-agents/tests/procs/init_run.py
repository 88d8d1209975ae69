"""Runs ``loop_script`` under ``octopoda.init()``, the way a user adds one line to it.

    python init_run.py DB AGENT MODE [HOW]   # HOW: run | sync | streamed (loop_script)

MODE ``once``: ``init`` before the SDK is imported (the integration activates when it
is); ``twice``: ``init`` called again, and the integration activated once more by hand
(its contract: a second activation records nothing twice); ``deactivated``: the SDK
imported, ``init`` (active at once), then ``shutdown`` before the run; ``none``: no init.
Prints loop_script's JSON line, with ``state`` (the integration's, after ``init``) and
``runner_restored`` (the SDK's default runner is its own again after ``shutdown``).
"""

from __future__ import annotations

import json
import sys

import octopoda


def start(db: str, agent: str) -> octopoda.Instrumentation:
    prices = {"ScriptedModel": (1.0, 2.0)}
    return octopoda.init(
        agent, store=db, policy="pause", integrations=["openai_agents"], prices=prices
    )


def main(db: str, agent: str, mode: str, how: str = "run") -> None:
    state = None
    undo = []
    if mode == "deactivated":
        import agents  # noqa: F401  (the SDK first: init activates at once)
    if mode != "none":
        status = start(db, agent)
        if mode == "twice":
            assert start(db, agent) == status  # idempotent
    import loop_script
    from agents.run import AgentRunner, get_default_agent_runner

    if mode != "none":
        state = start(db, agent)["openai_agents"].state
    if mode == "twice":
        from octopoda_openai_agents._integration import integration

        from octopoda.integrations import AgentRuntimes, InitContext

        policy = octopoda.LoopPolicy("pause")
        runtimes = AgentRuntimes(db, policy=policy, agent_id=agent)
        undo.append(integration.activate(InitContext(agent, runtimes, policy)))
    if mode == "deactivated":
        octopoda.shutdown()
    out = loop_script.main(how)
    for deactivate in undo:
        deactivate()
        deactivate()  # a second call is a no-op
    octopoda.shutdown()
    out["runner_restored"] = type(get_default_agent_runner()) is AgentRunner
    print(json.dumps({**out, "state": state}))


if __name__ == "__main__":
    main(*sys.argv[1:5])
