"""Resolve what a user passes as "the store" into an Octopoda AgentRuntime."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from typing import Any, TypeVar

from octopoda import AgentRuntime, ConfigError, InvalidInput, LoopPolicy, Octopoda, Store

__all__ = ["Target", "resolve_runtime", "to_thread"]

Target = AgentRuntime | Octopoda | Store | str | os.PathLike[str] | None
"""An ``AgentRuntime`` (used as is), an ``Octopoda`` client (its agent ``agent_id``), an
open ``Store``, a path or URL (``"agent.db"``, ``"sqlite:///agent.db"``,
``"postgresql://..."``), or None for Octopoda's default store."""

T = TypeVar("T")


def resolve_runtime(
    target: Any, agent_id: str, policy: LoopPolicy | None = None
) -> tuple[AgentRuntime, bool]:
    """The runtime to work with, and whether this adapter opened it (and so may close it).
    ``policy`` applies to a runtime opened here; an ``AgentRuntime`` keeps its own."""
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


async def to_thread(func: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """Run blocking store I/O in a worker thread, so the event loop never waits on it."""
    return await asyncio.to_thread(func, *args, **kwargs)
