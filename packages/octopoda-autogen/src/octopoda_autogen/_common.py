"""Pieces shared by the memory, the model context and the team guard (the rest is the
core's adapter kit, ``octopoda.integrations``)."""

from __future__ import annotations

from typing import Any

from octopoda import AgentRuntime, InvalidInput
from octopoda.integrations import Target, resolve_runtime

__all__ = ["StoreArg", "open_runtime", "store_url"]

StoreArg = Target
"""What ``store=`` accepts: an open :class:`octopoda.Store`, a path or URL (``"agent.db"``,
``"sqlite:///agent.db"``, ``"postgresql://..."``), an :class:`octopoda.Octopoda` client, or
None for the default store (``$OCTOPODA_DATABASE_URL``, else ``$OCTOPODA_HOME/octopoda.db``,
else ``~/.octopoda/octopoda.db``)."""


def open_runtime(store: Any, agent_id: str) -> tuple[AgentRuntime, bool]:
    """The runtime of ``agent_id`` on ``store``, and whether it was opened here. A private
    ``":memory:"`` store opened here is owned (closed with the adapter object)."""
    if isinstance(store, AgentRuntime):
        raise InvalidInput(
            "pass a store (a path, URL or Store) rather than an AgentRuntime: the adapter"
            f" keeps its own agent ({agent_id!r}) on it; runtime.store is the store"
        )
    runtime, _ = resolve_runtime(store, agent_id)
    owned = isinstance(store, str) and runtime.store.url == "sqlite:///:memory:"
    return runtime, owned


def store_url(runtime: AgentRuntime) -> str:
    """The URL a declarative config names the store by (PostgreSQL passwords masked)."""
    return runtime.store.url
