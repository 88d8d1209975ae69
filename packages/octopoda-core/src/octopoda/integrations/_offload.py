"""Blocking store calls from asynchronous frameworks, and tool arguments as sent."""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["parse_arguments", "run_blocking", "run_settled"]

T = TypeVar("T")


async def run_blocking(func: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """``func(*args, **kwargs)`` in a worker thread, so the event loop never waits on the
    store (what the frameworks' own SQLite sessions do)."""
    return await asyncio.to_thread(func, *args, **kwargs)


async def run_settled(func: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """A blocking write in a worker thread; a cancelled caller gets ``CancelledError``
    only once the write has settled (committed or rolled back).

    A worker thread cannot be stopped mid-write, so returning at the cancel would leave the
    caller not knowing whether the write happened (a retry could then add it twice). Every
    cancellation while the write runs is absorbed; the first is raised after it, whatever
    the write's outcome (a failure is then retrieved and dropped: the caller cancelled).
    """
    call = functools.partial(func, *args, **kwargs)
    task = asyncio.ensure_future(asyncio.to_thread(call))
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
