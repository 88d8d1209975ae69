"""What an adapter declares so that :func:`octopoda.init` can activate it.

Each adapter distribution declares one entry point in the group
:data:`ENTRY_POINT_GROUP`, whose object is an :class:`Integration`::

    # packages/octopoda-crewai/pyproject.toml
    [project.entry-points."octopoda.integrations"]
    crewai = "octopoda_crewai._integration:integration"

Loading the entry point must stay cheap: the module that defines the ``Integration``
imports neither its framework nor the adapter's heavy parts (``activate`` does, when the
framework is imported). ``init`` activates an integration when one of its ``modules`` is
imported (now, or later through a post-import hook) and its framework's installed
version satisfies ``supported``; it calls ``activate(context)`` once and keeps the
returned function, which :func:`octopoda.shutdown` calls to undo the activation.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # kept out of the import: an entry point loads this module at start-up
    from .._loops import LoopPolicy
    from .._runtime.runtime import AgentRuntime
    from ._pricing import Prices
    from ._target import AgentRuntimes

__all__ = ["ENTRY_POINT_GROUP", "Deactivate", "InitContext", "Integration", "OneActivation"]

ENTRY_POINT_GROUP = "octopoda.integrations"

Deactivate = Callable[[], None]
"""Undoes one activation: unregisters every hook, listener, processor and factory the
integration registered, and restores what it replaced. Called at most once."""


@dataclass(frozen=True)
class InitContext:
    """What ``init`` gives an integration's ``activate``.

    ``agent_id`` is the Octopoda agent everything is recorded under (``init(agent_id=)``,
    else ``$OCTOPODA_AGENT_ID``, else the program's name): one memory and one audit chain,
    shared by every script run with the same id. ``runtimes`` maps every framework agent
    name to that one agent (one runtime, one lock: use ``runtimes.call(name, func)`` from
    framework threads); the framework's own agent names, threads, sessions and crew or team
    runs go into the events (the run scope, the handoffs), not into the agent id.
    ``policy`` is the loop policy (``init(policy=)``, else ``$OCTOPODA_POLICY``; None: the
    runtime's default, which records and reports loops but never stops the program).
    ``prices`` are USD per million input and output tokens by model, for LLM call costs.
    """

    agent_id: str
    runtimes: AgentRuntimes
    policy: LoopPolicy | None = None
    prices: Prices | None = None

    @property
    def runtime(self) -> AgentRuntime:
        """The one runtime (opened on first use)."""
        return self.runtimes.runtime(self.agent_id)


@dataclass(frozen=True)
class Integration:
    """One framework's integration, as its adapter declares it.

    ``name``: the entry point's name and what ``integrations=`` and
    ``$OCTOPODA_DISABLED_INTEGRATIONS`` use (``"langchain"``, ``"crewai"``, ``"autogen"``,
    ``"openai_agents"``). ``modules``: top-level modules whose import means the framework
    is in use (``("crewai",)``). ``distribution``: the framework's distribution, whose
    installed version is checked (``"crewai"``). ``supported``: the versions the adapter
    supports, comma-joined comparisons of release numbers (``">=1.10,<2"``).
    ``activate``: installs the integration through the framework's official extension
    points only and returns its :data:`Deactivate`. ``description``: one line for
    ``octopoda doctor`` (what gets hooked).
    """

    name: str
    modules: tuple[str, ...]
    distribution: str
    supported: str
    activate: Callable[[InitContext], Deactivate] = field(repr=False)
    description: str = ""


class OneActivation:
    """The bookkeeping of an integration that is active at most once per process, around
    ``install(context)`` (which registers the hooks and returns the function that removes
    them). Called as the ``activate`` of an :class:`Integration`:

    * activating again with the same context changes nothing (the same undo comes back);
    * activating with another context first undoes the previous activation (the new one
      replaces it, never adds to it);
    * the returned undo runs ``install``'s remover once, however often it is called, and
      forgets the activation only if it is still the current one.
    """

    def __init__(self, install: Callable[[InitContext], Deactivate]) -> None:
        import threading

        self._install = install
        self._lock = threading.Lock()
        self._context: InitContext | None = None
        self._undo: Deactivate | None = None

    def __call__(self, context: InitContext) -> Deactivate:
        with self._lock:
            if self._context is context and self._undo is not None:
                return self._undo
            previous = self._undo
        if previous is not None:
            previous()
        remove = self._install(context)
        removed: list[bool] = []

        def deactivate() -> None:
            with self._lock:
                if removed:
                    return
                removed.append(True)
                if self._undo is deactivate:
                    self._context = self._undo = None
            remove()

        with self._lock:
            self._context, self._undo = context, deactivate
        return deactivate
