"""New events of an agent as they are committed: a long poll (``GET .../events``) and
server-sent events (``GET .../events/stream``), both from a seq on (``Last-Event-ID`` too).
Events are read from the store, so they include those committed by other processes."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from .models import Page
from .state import allow, jsonable, state_of

__all__ = ["router"]

router = APIRouter(prefix="/v1", tags=["events"])
POLL_SECONDS = 0.25


def _after(request: Request, agent: str, seq: int, limit: int) -> list[Any]:
    store = state_of(request).store
    return list(store.events(agent, after_seq=seq, limit=limit))


@router.get("/agents/{agent}/events", response_model=Page)
async def poll(
    request: Request,
    agent: str,
    cursor: int = Query(0, ge=0, description="the last seq seen"),
    wait: float = Query(0, ge=0, le=60, description="seconds to wait for a new event"),
    limit: int = Query(100, ge=1, le=1000),
) -> dict[str, Any]:
    """Events after ``cursor``; with ``wait``, returns as soon as one is committed."""
    allow(request, agent=agent)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait
    while True:
        found = await run_in_threadpool(_after, request, agent, cursor, limit)
        if found or loop.time() >= deadline:
            nxt = found[-1].seq if found else None
            return {"items": [jsonable(e) for e in found], "next_cursor": nxt}
        await asyncio.sleep(POLL_SECONDS)


@router.get("/agents/{agent}/events/stream")
async def stream(
    request: Request,
    agent: str,
    cursor: int = Query(0, ge=0, description="the last seq seen (or Last-Event-ID)"),
    max_seconds: float = Query(3600, gt=0, le=86400, description="end the stream after"),
) -> StreamingResponse:
    """Server-sent events: one ``event: <kind>`` with ``id: <seq>`` per committed event."""
    allow(request, agent=agent)
    last = request.headers.get("last-event-id")
    start = int(last) if last and last.isdigit() else cursor

    async def events() -> AsyncIterator[bytes]:
        seq = start
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max_seconds
        yield b": octopoda events\n\n"
        while loop.time() < deadline and not await request.is_disconnected():
            for e in await run_in_threadpool(_after, request, agent, seq, 100):
                seq = e.seq
                data = json.dumps(jsonable(e), ensure_ascii=False)
                yield f"id: {e.seq}\nevent: {e.kind}\ndata: {data}\n\n".encode()
            await asyncio.sleep(POLL_SECONDS)

    headers = {"cache-control": "no-store", "x-accel-buffering": "no"}
    return StreamingResponse(events(), media_type="text/event-stream", headers=headers)
