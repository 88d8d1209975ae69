"""The fleet, runs, spaces, messages and goals pages (GET: they never write)."""

from __future__ import annotations

from typing import Any, Final
from urllib.parse import quote

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from .._loops import SIGNAL_KINDS
from .._runtime.collab_records import message_of
from .._store.rows import decode_stored
from . import fleet
from .render import Pager
from .state import dashboard_of, may_agent, may_space, not_found
from .waterfall import loop_seqs, steps

__all__ = ["router"]

router = APIRouter(include_in_schema=False)
RUN_EVENTS: Final = 500
"""A waterfall shows this many events of a run per page."""


@router.get("/", response_class=HTMLResponse)
def fleet_page(
    request: Request, name: str = "", status: str = "", sort: str = "name"
) -> HTMLResponse:
    dash = dashboard_of(request)
    store = dash.server.store
    selected = fleet.select(
        store, name=name, status=status, sort=sort, allowed=lambda a: may_agent(request, a)
    )
    pager = Pager.of(request, len(selected))
    rows = fleet.fleet_rows(store, selected[pager.start : pager.stop])
    context = {
        "title": "Fleet",
        "rows": rows,
        "pager": pager,
        "name": name,
        "status": status,
        "sort": sort,
        "sorts": fleet.SORTS,
        "signals": SIGNAL_KINDS,
        "chart": fleet.chart(rows),
        "conflicts": [
            c
            for c in fleet.open_conflicts(store, [n for r in rows for n in r.spaces])
            if may_space(request, c[0])
        ],
        "verified": {r.id: dash.verified(r.id) for r in rows},
        "recent": fleet.RECENT_EVENTS,
    }
    return dash.render.page(request, "fleet.html", context)


@router.get("/agents/{agent}/runs", response_class=HTMLResponse)
def runs_page(request: Request, agent: str) -> HTMLResponse:
    dash = dashboard_of(request)
    if not may_agent(request, agent) or dash.server.store.agent(agent) is None:
        return not_found(request, f"agent {agent!r}")
    with dash.server.agent(agent) as runtime:
        runs = runtime.runs()
    pager = Pager.of(request, len(runs))
    context = {"title": f"{agent}: runs", "agent": agent, "runs": runs[pager.start : pager.stop]}
    return dash.render.page(request, "runs.html", {**context, "pager": pager})


@router.get("/agents/{agent}/runs/{run:path}", response_class=HTMLResponse)
def run_page(request: Request, agent: str, run: str, after: int = 0) -> HTMLResponse:
    dash = dashboard_of(request)
    row = dash.server.store.agent(agent)
    if not may_agent(request, agent) or row is None:
        return not_found(request, f"agent {agent!r}")
    with dash.server.agent(agent) as runtime:
        events = runtime.timeline(run_id=run, after_seq=max(0, after), limit=RUN_EVENTS + 1)
        if not events and after == 0:
            return not_found(request, f"run {run!r} of agent {agent!r}")
        history = runtime.loop_history(run_id=run)
        status = runtime.loop_status(run_id=run)
        info = runtime.run_info(run)
    more = len(events) > RUN_EVENTS
    events = events[:RUN_EVENTS]
    marks = loop_seqs([*history, *status.signals])
    context = {
        "title": f"{agent}: run {run}",
        "agent": agent,
        "run": run,
        "info": info,
        "agent_pause": fleet.reason_of(row.status_reason) if row.status == "paused" else None,
        "steps": steps(events, marks),
        "signals": status.signals,
        "history": history,
        "state": status.state,
        "next_after": events[-1].seq if more and events else None,
        "after": after,
        "head": events[-1].seq if events else after,
    }
    return dash.render.page(request, "run.html", context)


@router.get("/spaces", response_class=HTMLResponse)
def spaces_page(request: Request) -> HTMLResponse:
    dash = dashboard_of(request)
    store = dash.server.store
    created = {s.name: s for s in store.spaces()}
    names = [
        n for n in fleet.known_spaces(store, fleet.recent_spaces(store)) if may_space(request, n)
    ]
    spaces = [(n, created.get(n), len(store.conflicts("space:" + n, status="open"))) for n in names]
    return dash.render.page(request, "spaces.html", {"title": "Spaces", "spaces": spaces})


@router.get("/spaces/go", response_model=None)
def space_go(request: Request, name: str = "") -> RedirectResponse:
    """The "open a space by name" form (spaces need no creation, so not all are listed)."""
    target = f"/spaces/{quote(name, safe='')}" if name else "/spaces"
    return RedirectResponse(target, status_code=303)


@router.get("/spaces/{space:path}", response_class=HTMLResponse)
def space_page(request: Request, space: str, prefix: str = "") -> HTMLResponse:
    dash = dashboard_of(request)
    if not may_space(request, space):
        return not_found(request, f"space {space!r}", 403)
    store = dash.server.store
    ns = "space:" + space
    pager = Pager.of(request, 10**9)
    rows = store.current(ns, prefix=prefix, limit=pager.per_page + 1, offset=pager.start)
    items = [(r, _value(r)) for r in rows[: pager.per_page]]
    conflicts = []
    for c in store.conflicts(ns, status=None):
        mine, theirs = store.version(ns, c.key, c.version), store.version(ns, c.key, c.head_version)
        conflicts.append((c, _value(mine), _value(theirs)))
    conflicts.sort(key=lambda c: (c[0].status != "open", -c[0].id))
    context = {
        "title": f"Space {space}",
        "space": space,
        "info": store.space(space),
        "items": items,
        "prefix": prefix,
        "page": pager.page,
        "has_next": len(rows) > pager.per_page,
        "pager": pager,
        "conflicts": conflicts,
    }
    return dash.render.page(request, "space.html", context)


def _value(row: Any) -> Any:
    if row is None or row.tombstone or row.erased:
        return None
    return decode_stored(row)


@router.get("/agents/{agent}/messages", response_class=HTMLResponse)
def messages_page(request: Request, agent: str) -> HTMLResponse:
    dash = dashboard_of(request)
    if not may_agent(request, agent) or dash.server.store.agent(agent) is None:
        return not_found(request, f"agent {agent!r}")
    rows = dash.server.store.messages(party=agent, limit=1000)
    messages = [message_of(r) for r in reversed(rows)]
    pager = Pager.of(request, len(messages))
    context = {
        "title": f"{agent}: messages",
        "agent": agent,
        "messages": messages[pager.start : pager.stop],
        "pager": pager,
    }
    return dash.render.page(request, "messages.html", context)


@router.get("/agents/{agent}/goals", response_class=HTMLResponse)
def goals_page(request: Request, agent: str) -> HTMLResponse:
    dash = dashboard_of(request)
    if not may_agent(request, agent) or dash.server.store.agent(agent) is None:
        return not_found(request, f"agent {agent!r}")
    with dash.server.agent(agent) as runtime:
        goal, history = runtime.get_goal(), runtime.goal_history()
    context = {"title": f"{agent}: goals", "agent": agent, "goal": goal, "history": history}
    return dash.render.page(request, "goals.html", context)
