"""Concurrent ``abatch`` calls of one store, run as one batch (as LangGraph's own async stores
batch them: ``AsyncBatchedBaseStore``).

A graph's tools and nodes call ``aget``/``aput``/``asearch`` concurrently; each is a batch
of one op. The calls that arrive in the same event-loop turn, or while a batch runs, go into
the next batch together: one worker-thread hop, one audited event for their writes, one read
of a namespace for all searches of it. Reads of a batch see the state before its writes, so a
read and a write that were concurrent are ordered either way, as they may be. Ops are checked
before they join a batch, so a caller's bad op fails that caller alone; a failure while the
batch runs (the database) fails every call in it.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["Coalescer"]


class _Queue:
    def __init__(self) -> None:
        self.waiting: list[tuple[list[Any], asyncio.Future[list[Any]]]] = []
        self.draining: asyncio.Task[None] | None = None


class Coalescer:
    """Queues ops per event loop and runs them in batches with ``run`` (one at a time)."""

    def __init__(self, run: Callable[[list[Any]], Awaitable[list[Any]]]) -> None:
        self._run = run
        self._queues: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Queue] = (
            weakref.WeakKeyDictionary()
        )

    async def submit(self, ops: list[Any]) -> list[Any]:
        """The results of ``ops``, run in the next batch of this event loop."""
        loop = asyncio.get_running_loop()
        queue = self._queues.get(loop)
        if queue is None:
            queue = self._queues[loop] = _Queue()
        future: asyncio.Future[list[Any]] = loop.create_future()
        queue.waiting.append((ops, future))
        if queue.draining is None:
            queue.draining = loop.create_task(self._drain(queue))
        return await future

    async def _drain(self, queue: _Queue) -> None:
        try:
            while queue.waiting:
                await asyncio.sleep(0)  # the other calls of this turn join the batch
                batch, queue.waiting = queue.waiting, []
                batch = [(ops, f) for ops, f in batch if not f.done()]  # cancelled callers
                if batch:
                    await self._run_batch(batch)
        finally:
            queue.draining = None

    async def _run_batch(self, batch: list[tuple[list[Any], asyncio.Future[list[Any]]]]) -> None:
        try:
            results = await self._run([op for ops, _ in batch for op in ops])
        except Exception as exc:  # every caller of the batch gets the failure
            for _, future in batch:
                if not future.done():
                    future.set_exception(exc)
            return
        except BaseException:  # cancelled (the loop is closing): so are the callers
            for _, future in batch:
                future.cancel()
            raise
        start = 0
        for ops, future in batch:
            if not future.done():
                future.set_result(results[start : start + len(ops)])
            start += len(ops)
