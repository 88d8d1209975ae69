"""Octopoda: one store handle for many agents."""

import time
from collections.abc import Callable, Iterable
from typing import Any, Literal, NamedTuple

from .._loops import LoopPolicy
from .._search.embedders import embedder_from_env, resolve_embedder
from .._store import SpaceRow, Store
from .._store.config import open_store
from .._values import validate_agent_id, validate_seconds
from .pipeline import Processor
from .runtime import AgentRuntime

__all__ = ["AgentInfo", "Octopoda"]

IDLE_AFTER_SECONDS = 15 * 60.0
"""An active agent with no activity for this long is listed as ``idle``."""


class AgentInfo(NamedTuple):
    """One agent of a store. ``status`` is ``active``, ``paused`` or ``idle``."""

    id: str
    status: str
    created_at: float
    last_active: float | None
    events: int
    pause_reason: str | None = None


class Octopoda:
    """A store opened once, shared by many agents::

        client = Octopoda(store="team.db")
        researcher = client.agent("researcher")
        coder = client.agent("coder")

    ``client.agent(id)`` returns the same :class:`AgentRuntime` for the same id, so its loop
    detection state is shared by everyone holding it. No background threads: activity is
    recorded as agents act.
    """

    def __init__(
        self,
        store: Store | str | None = None,
        *,
        durability: Literal["normal", "full"] | None = None,
        clock: Callable[[], float] | None = None,
        embedder: Any = None,
    ) -> None:
        self._store = open_store(store, durability=durability)
        self._clock = clock or time.time
        # resolved once (one model in memory for every agent); None: OCTOPODA_EMBEDDER
        self._embedder = embedder_from_env() if embedder is None else resolve_embedder(embedder)
        self._embedder_spec: Any = "" if self._embedder is None else self._embedder
        self._agents: dict[str, AgentRuntime] = {}

    @property
    def store(self) -> Store:
        return self._store

    def agent(
        self,
        agent_id: str,
        *,
        policy: LoopPolicy | None = None,
        processors: Iterable[Processor] = (),
    ) -> AgentRuntime:
        """The runtime of ``agent_id`` on this store (created on first use)."""
        agent_id = validate_agent_id(agent_id)
        runtime = self._agents.get(agent_id)
        if runtime is None or policy is not None or processors:
            runtime = AgentRuntime(
                agent_id,
                store=self._store,
                policy=policy,
                processors=processors,
                clock=self._clock,
                embedder=self._embedder_spec,
            )
            self._agents[agent_id] = runtime
        return runtime

    def agents(self, *, idle_after_seconds: float = IDLE_AFTER_SECONDS) -> list[AgentInfo]:
        """Every agent in the store with its status, last activity and event count."""
        idle_after = validate_seconds(idle_after_seconds, "idle_after_seconds")
        now = self._clock()
        out = []
        for row in self._store.agents():
            status = row.status
            if status == "active" and (row.last_active or row.created_at) < now - idle_after:
                status = "idle"
            out.append(
                AgentInfo(
                    row.id,
                    status,
                    row.created_at,
                    row.last_active,
                    row.head_seq,
                    _reason(row.status_reason) if row.status == "paused" else None,
                )
            )
        return out

    def spaces(self) -> list[SpaceRow]:
        """Shared spaces created explicitly (open spaces need no creation)."""
        return self._store.spaces()

    def close(self) -> None:
        self._agents.clear()

    def __enter__(self) -> "Octopoda":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Octopoda(store={self._store.url!r})"


def _reason(text: str | None) -> str | None:
    import json

    if not text:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return str(value.get("reason")) if isinstance(value, dict) else text
