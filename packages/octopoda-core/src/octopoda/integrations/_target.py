"""Which runtime an adapter works with: store-target resolution, and one runtime per
framework agent on one store."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from .._errors import ConfigError, InvalidInput
from .._loops import LoopPolicy
from .._runtime.client import Octopoda
from .._runtime.runtime import AgentRuntime
from .._store.protocol import Store

__all__ = ["AgentRuntimes", "Target", "resolve_runtime"]

T = TypeVar("T")

Target = AgentRuntime | Octopoda | Store | str | os.PathLike[str] | None
"""What an adapter accepts as "the store": an ``AgentRuntime`` (used as is), an
``Octopoda`` client (its agent of that id), an open ``Store``, a path or URL
(``"agent.db"``, ``"sqlite:///agent.db"``, ``"postgresql://..."``), or None for
Octopoda's default store (``$OCTOPODA_DATABASE_URL``, else ``$OCTOPODA_HOME/octopoda.db``,
else ``~/.octopoda/octopoda.db``)."""


def resolve_runtime(
    target: Any, agent_id: str, policy: LoopPolicy | None = None
) -> tuple[AgentRuntime, bool]:
    """The runtime to work with, and whether the adapter opened it (and so may close it).
    ``policy`` applies to a runtime opened here; an ``AgentRuntime`` keeps its own (passing
    both is an error: the adapter would silently not apply it)."""
    if isinstance(target, AgentRuntime):
        if policy is not None:
            raise InvalidInput("pass policy to the AgentRuntime itself, not to the adapter")
        return target, False
    if isinstance(target, Octopoda):
        return target.agent(agent_id, policy=policy), False
    if isinstance(target, os.PathLike):
        target = os.fspath(target)
    if target is None or isinstance(target, (str, Store)):
        return AgentRuntime(agent_id, store=target, policy=policy), True
    raise ConfigError(
        "pass an AgentRuntime, an Octopoda client, a Store, a path or a store URL;"
        f" got {type(target).__name__}"
    )


class AgentRuntimes:
    """One :class:`AgentRuntime` per framework agent name, all on one store, each with a lock.
    The Octopoda agent of framework agent ``name`` is ``agent_ids[name]``, else
    ``agent_prefix + name``; with ``agent_id`` every framework agent is that one Octopoda
    agent (what ``octopoda.init`` uses: one memory, one chain). ``store`` is any
    :data:`Target` but an ``AgentRuntime`` (which is one agent). Frameworks run hooks on an
    event loop while the store calls run in worker threads: ``call`` keeps one runtime's
    detectors and breaker bookkeeping to one thread at a time. The first runtime's store is
    shared by the others (``":memory:"`` would otherwise give each agent its own database,
    and ping-pong needs both sides in one store).
    """

    def __init__(
        self,
        store: Target = None,
        *,
        policy: LoopPolicy | None = None,
        agent_prefix: str = "",
        agent_ids: Mapping[str, str] | None = None,
        agent_id: str | None = None,
    ) -> None:
        if not isinstance(agent_prefix, str):
            raise InvalidInput(f"agent_prefix must be a str, not {type(agent_prefix).__name__}")
        if isinstance(store, AgentRuntime):
            raise ConfigError(
                "an AgentRuntime is one agent; pass its store (runtime.store) or an Octopoda"
                " client so that each framework agent gets its own runtime"
            )
        self._store: Any = store
        self._policy = policy
        self._prefix = agent_prefix
        self._ids = dict(agent_ids or {})
        self._one = agent_id
        self._runtimes: dict[str, tuple[AgentRuntime, threading.Lock]] = {}
        self._guard = threading.Lock()

    def agent_id(self, name: str) -> str:
        """The Octopoda agent id of the framework agent called ``name``."""
        if self._one is not None:
            return self._one
        return self._ids.get(name, self._prefix + name)

    def get(self, name: str) -> tuple[AgentRuntime, threading.Lock]:
        """The runtime of framework agent ``name`` (opened on first use) and its lock."""
        agent_id = self.agent_id(name)
        with self._guard:
            entry = self._runtimes.get(agent_id)
            if entry is None:
                runtime, _ = resolve_runtime(self._store, agent_id, self._policy)
                if not isinstance(self._store, Octopoda):
                    self._store = runtime.store
                entry = self._runtimes[agent_id] = (runtime, threading.Lock())
            return entry

    def runtime(self, name: str) -> AgentRuntime:
        return self.get(name)[0]

    def call(self, name: str, func: Callable[[AgentRuntime], T]) -> T:
        """``func(runtime)`` with framework agent ``name``'s runtime, under its lock."""
        runtime, lock = self.get(name)
        with lock:
            return func(runtime)
