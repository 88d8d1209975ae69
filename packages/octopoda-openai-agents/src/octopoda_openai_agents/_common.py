"""Pieces shared by the session, the run hooks and the tracing processor."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from agents import AgentsException

from octopoda import AgentPaused, AgentRuntime, InvalidInput, LoopPolicy, Store

__all__ = ["RunPaused", "Runtimes", "StoreArg", "parse_arguments", "run_blocking", "run_settled"]

T = TypeVar("T")

StoreArg = Store | str | None
"""What ``store=`` accepts: an open store, a path or ``sqlite:///`` URL, or None for the
default store (``$OCTOPODA_DATABASE_URL``, else ``$OCTOPODA_HOME/octopoda.db``, else
``~/.octopoda/octopoda.db``)."""


class RunPaused(AgentPaused, AgentsException):
    """:class:`octopoda.AgentPaused`, raised from inside an Agents SDK run.

    It is also an ``agents.AgentsException``, which the SDK re-raises unchanged (it wraps
    other exceptions from hooks in ``UserError``), so ``Runner.run`` ends with it and
    ``except AgentPaused`` catches it. ``reason`` and ``signal`` are the core's; ``calls``
    names the SDK tool calls (name, call id, arguments) that formed the loop, when known.
    """

    def __init__(
        self,
        message: str,
        reason: str = "",
        signal: Any = None,
        calls: tuple[tuple[str, str, str], ...] = (),
    ) -> None:
        super().__init__(message, reason, signal)
        self.calls = calls


async def run_blocking(func: Callable[[], T]) -> T:
    """Run a blocking store operation off the event loop (as the SDK's SQLiteSession does)."""
    return await asyncio.to_thread(func)


async def run_settled(func: Callable[[], T]) -> T:
    """Run a blocking write off the event loop; a cancelled caller gets ``CancelledError``
    only once the write has settled (committed or rolled back), as with ``SQLiteSession``.

    A worker thread cannot be stopped mid-write, so returning at the cancel would leave the
    caller not knowing whether the write happened (a retry could then add it twice). Every
    cancellation while the write runs is absorbed; the first is raised after it, whatever
    the write's outcome (a failure is then retrieved and dropped: the caller cancelled).
    """
    task = asyncio.ensure_future(asyncio.to_thread(func))
    cancelled: asyncio.CancelledError | None = None
    while not task.done():
        try:
            await asyncio.wait({task})
        except asyncio.CancelledError as exc:
            cancelled = cancelled or exc
    if cancelled is not None:
        if not task.cancelled():
            task.exception()  # retrieved: no "exception was never retrieved" from the loop
        raise cancelled
    return task.result()


def parse_arguments(arguments: Any) -> Any:
    """Tool arguments as the model sent them: a JSON text becomes its value (so the same
    arguments give the same digest however they are spaced), anything else stays as is."""
    if isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except ValueError:
            return arguments
    return arguments


class Runtimes:
    """One :class:`AgentRuntime` per SDK agent name, on one store, each with a lock.

    The SDK runs hooks on the event loop and we run store calls in worker threads; the lock
    keeps one runtime's detectors and breaker bookkeeping to one thread at a time.
    """

    def __init__(
        self,
        store: StoreArg,
        *,
        policy: LoopPolicy | None,
        agent_prefix: str,
        agent_ids: Mapping[str, str] | None,
    ) -> None:
        if not isinstance(agent_prefix, str):
            raise InvalidInput(f"agent_prefix must be a str, not {type(agent_prefix).__name__}")
        self._store = store
        self._policy = policy
        self._prefix = agent_prefix
        self._ids = dict(agent_ids or {})
        self._runtimes: dict[str, tuple[AgentRuntime, threading.Lock]] = {}
        self._guard = threading.Lock()

    def agent_id(self, name: str) -> str:
        """The Octopoda agent id of the SDK agent called ``name``."""
        return self._ids.get(name, self._prefix + name)

    def get(self, name: str) -> tuple[AgentRuntime, threading.Lock]:
        agent_id = self.agent_id(name)
        with self._guard:
            entry = self._runtimes.get(agent_id)
            if entry is None:
                runtime = AgentRuntime(agent_id, store=self._store, policy=self._policy)
                # Share the store the first runtime opened (":memory:" would else give each
                # agent its own database, and ping-pong needs both sides in one store).
                self._store = runtime.store
                entry = self._runtimes[agent_id] = (runtime, threading.Lock())
            return entry

    def runtime(self, name: str) -> AgentRuntime:
        return self.get(name)[0]

    def call(self, name: str, func: Callable[[AgentRuntime], T]) -> T:
        runtime, lock = self.get(name)
        with lock:
            return func(runtime)
