"""The CrewAI integration of :func:`octopoda.init` (entry point ``crewai`` of the group
``octopoda.integrations``).

Importing this module imports neither crewai nor the rest of the adapter; ``activate``
does, once crewai is imported. It installs, through CrewAI's own extension points:

* the memory storage factory (``set_memory_storage_factory``, where crewai has it: 1.15,
  not 1.13 or 1.10): ``Memory()``, ``Memory(storage="octopoda")`` and ``Crew(memory=True)``
  keep their records in the one Octopoda agent's memory (:func:`octopoda_crewai.install`);
* the loop breaker (:func:`octopoda_crewai.install_breaker`): CrewAI's global before/after
  tool-call and LLM-call hooks and its event-bus listener record every tool call, model
  call (tokens, cost with ``prices``) and crew, task and agent start and finish, each crew
  run its own run (``crew:<crew id>/<kickoff>``), all under the one agent; a run the loop policy
  paused ends its ``kickoff()`` (crewai 1.15: :class:`octopoda_crewai.CrewPaused`; older
  lines: CrewAI's "LLM call blocked" error, with the loop named in a warning of the
  ``octopoda`` logger).
"""

from __future__ import annotations

import logging

from octopoda import ConfigError
from octopoda.integrations import Deactivate, InitContext, Integration, OneActivation

__all__ = ["integration"]

logger = logging.getLogger("octopoda")


def _install(ctx: InitContext) -> Deactivate:
    from ._breaker import install_breaker, uninstall_breaker
    from ._install import install, installed, uninstall

    runtime = ctx.runtime
    try:
        install(runtime, agent_id=ctx.agent_id)
    except ConfigError:  # a crewai without the storage factory (1.13, 1.10): the breaker only
        logger.debug("octopoda-crewai: this crewai has no memory storage factory")
    try:
        breaker = install_breaker(prices=ctx.prices, runtimes=ctx.runtimes)
    except BaseException:
        if installed() is runtime:
            uninstall()
        raise

    def remove() -> None:
        uninstall_breaker(breaker)
        if installed() is runtime:
            uninstall()

    return remove


integration = Integration(
    name="crewai",
    modules=("crewai",),
    distribution="crewai",
    supported=">=1.10.1,<1.16",
    activate=OneActivation(_install),
    description=(
        "CrewAI: memory storage factory; before/after tool-call and LLM-call hooks and an"
        " event-bus listener (tool and model calls, crew/task/agent events, loop breaker)"
    ),
)
