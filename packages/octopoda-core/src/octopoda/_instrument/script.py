"""An unmodified script run after ``octopoda.init()``: what each adapter's init tests run
in a subprocess (``octopoda.testing.run_script_with_init``), so the adapters do not each
keep a copy.

The modes: ``init``; ``init-twice`` (init again with the same settings: nothing may be
recorded twice); ``shutdown`` (init, then shutdown before the script runs: nothing may be
recorded); ``activate-twice`` (no init: the integration's ``activate`` called twice with
one context, as init would, and its undo twice).
"""

from __future__ import annotations

import runpy
import sys
from collections.abc import Mapping, Sequence
from importlib import import_module

__all__ = ["MODES", "run_script_with_init"]

MODES = ("init", "init-twice", "shutdown", "activate-twice")


def run_script_with_init(
    integration_module: str,
    argv: Sequence[str],
    *,
    prices: Mapping[str, tuple[float, float]] | None = None,
    policy: str = "pause",
) -> None:
    """``argv``: DB AGENT MODE SCRIPT [ARGS...]. Runs SCRIPT as ``__main__`` (with ARGS as
    its ``sys.argv``) on the store DB under the Octopoda agent AGENT, prepared as MODE says
    (module docstring); ``integration_module`` holds the adapter's ``integration``."""
    import octopoda
    from octopoda.integrations import AgentRuntimes, InitContext

    db, agent, mode, script, *args = argv
    if mode not in MODES:
        raise SystemExit(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
    price_table = dict(prices or {})
    undo, runtimes = None, None
    if mode == "activate-twice":
        integration = import_module(integration_module).integration
        loop_policy = octopoda.LoopPolicy(policy)
        runtimes = AgentRuntimes(db, policy=loop_policy, agent_id=agent)
        ctx = InitContext(agent_id=agent, runtimes=runtimes, policy=loop_policy, prices=price_table)
        undo = integration.activate(ctx)
        assert integration.activate(ctx) is undo, "activating twice must change nothing"
    else:
        octopoda.init(agent, store=db, policy=policy, prices=price_table)
        if mode == "init-twice":
            octopoda.init(agent, store=db, policy=policy, prices=price_table)
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
