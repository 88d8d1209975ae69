"""Live rows for the ``live-events`` tables: server-sent events, one ``row`` event per new
event, its data the table row's HTML (rendered and escaped here, as on the page).
``static/live.js`` opens the stream named by the table's ``data-stream`` and puts each row
at the top. With ``agent``: that agent's events after ``after`` (of one run: ``run``);
without: every agent's new events (the fleet)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any, Final

from fastapi import APIRouter, Query, Request
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from .._records import Event
from .._store import Store
from .security import HEADERS
from .state import dashboard_of, may_agent
from .waterfall import steps

__all__ = ["router"]

router = APIRouter(include_in_schema=False)
POLL_SECONDS: Final = 0.5
BATCH: Final = 100


def _agent_events(store: Store, agent: str, after: int, run: str | None) -> list[Event]:
    return list(store.events(agent, after_seq=after, limit=BATCH, run_id=run))


def _fleet_events(store: Store, heads: dict[str, int], allowed: Any) -> list[Event]:
    """New events of every agent since ``heads`` (updated in place)."""
    out: list[Event] = []
    for row in store.agents():
        seen = heads.get(row.id)
        if seen is None:
            heads[row.id] = seen = 0 if heads.get("", 0) else row.head_seq
        if row.head_seq > seen and allowed(row.id):
            events = list(store.events(row.id, after_seq=seen, limit=BATCH))
            if events:
                heads[row.id] = events[-1].seq
                out.extend(events)
    heads[""] = 1  # (agents appearing from now on are new: all their events are)
    out.sort(key=lambda e: e.time)
    return out


def _sse(html: str, seq: int) -> bytes:
    data = "\n".join(f"data: {line}" for line in html.splitlines() or [""])
    return f"id: {seq}\nevent: row\n{data}\n\n".encode()


@router.get("/dashboard/stream")
async def stream(
    request: Request,
    agent: str | None = None,
    run: str | None = None,
    after: int = Query(0, ge=0),
    max_seconds: float = Query(3600, gt=0, le=86400),
    layout: str = "events",
) -> StreamingResponse:
    dash = dashboard_of(request)
    store = dash.server.store
    if agent is not None and not may_agent(request, agent):
        agent = None
        max_seconds = 0.001
    fleet_wide = agent is None

    def allowed(a: str) -> bool:
        return may_agent(request, a)

    async def rows() -> AsyncIterator[bytes]:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max_seconds
        heads: dict[str, int] = {}
        seq = after
        yield b": octopoda dashboard\n\n"
        while loop.time() < deadline and not await request.is_disconnected():
            if fleet_wide:
                events = await run_in_threadpool(_fleet_events, store, heads, allowed)
            else:
                assert agent is not None
                events = await run_in_threadpool(_agent_events, store, agent, seq, run)
                if events:
                    seq = events[-1].seq
            for step, event in zip(steps(events, set()), events, strict=True):
                if layout == "waterfall":
                    html = dash.render.fragment("_step_row.html", s=step)
                else:
                    html = dash.render.fragment(
                        "_event_row.html", step=step, agent=event.agent, show_agent=fleet_wide
                    )
                yield _sse(html, event.seq)
            await asyncio.sleep(POLL_SECONDS)

    headers = {**HEADERS, "x-accel-buffering": "no"}
    return StreamingResponse(rows(), media_type="text/event-stream", headers=headers)
