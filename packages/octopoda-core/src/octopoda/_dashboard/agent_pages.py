"""An agent's pages: overview (breaker, audit, memory browser, recent events), a key's
version history with diffs, the memory as of an event or a time, decisions, totals."""

from __future__ import annotations

import difflib
from datetime import datetime, timezone
from typing import Any, Final

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from .._errors import OctopodaError
from .._runtime.runtime import AgentRuntime
from .._store import Store
from .fleet import reason_of, usage
from .render import PER_PAGE, Pager, pretty
from .security import HEADERS
from .state import dashboard_of, may_agent, not_found
from .waterfall import loop_seqs, steps

__all__ = ["router"]

router = APIRouter(include_in_schema=False)
RECENT: Final = 50
MODES: Final = ("prefix", "words", "meaning")


def _tags(text: str) -> list[str] | None:
    tags = [t.strip() for t in text.split(",") if t.strip()]
    return tags or None


def memory_results(
    runtime: AgentRuntime, mode: str, q: str, tags: str, page: int
) -> dict[str, Any]:
    """The memory browser's listing: by key prefix, by words, or by meaning."""
    offset = (page - 1) * PER_PAGE
    note = None
    error = None
    items: list[Any] = []
    try:
        if mode == "words" and q.strip():
            items = runtime.search(query=q, tags=_tags(tags), limit=PER_PAGE + 1, offset=offset)
        elif mode == "meaning" and q.strip():
            found = runtime.recall_similar(q, limit=PER_PAGE, tags=_tags(tags))
            items = [m.item for m in found.matches]
            note = found.note
        else:
            prefix = q if mode == "prefix" else ""
            items = runtime.search(prefix, tags=_tags(tags), limit=PER_PAGE + 1, offset=offset)
    except OctopodaError as exc:
        error = str(exc)
    return {
        "items": items[:PER_PAGE],
        "has_next": len(items) > PER_PAGE and mode != "meaning",
        "note": note,
        "error": error,
        "mode": mode,
        "q": q,
        "tags": tags,
        "page": page,
        "semantic": runtime.embedder is not None,
    }


def _page_number(request: Request) -> int:
    raw = request.query_params.get("page", "1")
    return int(raw) if raw.isdigit() and int(raw) > 0 else 1


def latency(events: list[Any]) -> dict[str, list[float]]:
    """The durations (ms) of the timed calls among ``events``, by time (uPlot's columns)."""
    timed = [
        (e.time, float(e.payload["duration_ms"]))
        for e in events
        if isinstance(e.payload.get("duration_ms"), (int, float))
    ]
    return {"x": [t for t, _ in timed], "duration_ms": [d for _, d in timed]}


def _wants_fragment(request: Request) -> bool:
    """An htmx request for the memory results only (not htmx restoring a page from history)."""
    headers = request.headers
    return bool(
        headers.get("hx-request")
        and not headers.get("hx-history-restore-request")
        and request.query_params.get("fragment")
    )


def _agent_or_404(request: Request, agent: str) -> HTMLResponse | None:
    if not may_agent(request, agent) or dashboard_of(request).server.store.agent(agent) is None:
        return not_found(request, f"agent {agent!r}")
    return None


@router.get("/agents/{agent}", response_class=HTMLResponse)
def agent_page(
    request: Request, agent: str, mode: str = "prefix", q: str = "", tags: str = ""
) -> HTMLResponse:
    missing = _agent_or_404(request, agent)
    if missing is not None:
        return missing
    dash = dashboard_of(request)
    store = dash.server.store
    mode = mode if mode in MODES else "prefix"
    row = store.agent(agent)
    assert row is not None
    with dash.server.agent(agent) as runtime:
        memory = memory_results(runtime, mode, q, tags, _page_number(request))
        if _wants_fragment(request):
            html = dash.render.fragment("_memory.html", agent=agent, **memory)
            return HTMLResponse(html, headers=HEADERS)
        recent = list(store.events(agent, after_seq=max(0, row.head_seq - RECENT)))
        status = runtime.loop_status()
        history = runtime.loop_history(since=recent[0].time if recent else None)
        decisions = runtime.decisions(limit=None)[-10:]
        paused_runs = runtime.runs(status="paused")
        goal = runtime.get_goal()
    marks = loop_seqs([*history, *status.signals])
    context = {
        "title": agent,
        "agent": agent,
        "row": row,
        "pause_reason": reason_of(row.status_reason) if row.status == "paused" else None,
        "paused_runs": paused_runs,
        "head": row.head_seq,
        "verified": dash.verified(agent),
        "status": status,
        "recent": steps(recent, marks)[::-1],
        "latency": latency(recent),
        "decisions": list(reversed(decisions)),
        "goal": goal,
        "memory": memory,
        "modes": MODES,
    }
    return dash.render.page(request, "agent.html", context)


@router.get("/agents/{agent}/totals", response_class=HTMLResponse)
def totals_fragment(request: Request, agent: str) -> HTMLResponse:
    """The agent's totals over its whole history (a full scan: loaded on demand)."""
    missing = _agent_or_404(request, agent)
    if missing is not None:
        return missing
    dash = dashboard_of(request)
    kinds = ("tool_call", "llm_call", "loop_detected")
    totals = usage(list(dash.server.store.events(agent, kinds=kinds)))
    return dash.render.fragment_or_page(
        request, "_totals.html", f"{agent}: totals", agent, totals=totals
    )


def value_diff(old: Any, new: Any) -> list[tuple[str, str]]:
    """The lines of a unified diff of two values' JSON, each with its class."""
    a, b = pretty(old).splitlines(), pretty(new).splitlines()
    out = []
    for line in list(difflib.unified_diff(a, b, "before", "after", lineterm="", n=3))[2:]:
        cls = {"+": "add", "-": "del", "@": "hunk"}.get(line[:1], "same")
        out.append((cls, line))
    return out


@router.get("/agents/{agent}/memory/{key:path}", response_class=HTMLResponse)
def key_page(request: Request, agent: str, key: str) -> HTMLResponse:
    missing = _agent_or_404(request, agent)
    if missing is not None:
        return missing
    dash = dashboard_of(request)
    with dash.server.agent(agent) as runtime:
        try:
            versions = runtime.recall_history(key)
        except OctopodaError:
            versions = []
        current = runtime.recall(key) if versions else None
    if not versions:
        return not_found(request, f"key {key!r} of agent {agent!r}")
    rows = []
    for i, v in enumerate(versions):  # newest first; each against the one before it
        older = versions[i + 1] if i + 1 < len(versions) else None
        diff = value_diff(older.value if older else None, v.value) if older else []
        rows.append((v, diff))
    context = {
        "title": f"{agent}: {key}",
        "agent": agent,
        "key": key,
        "rows": rows,
        "live": bool(current),
    }
    return dash.render.page(request, "key.html", context)


def seq_at(store: Store, agent: str, head: int, t: float) -> int:
    """The last seq of ``agent`` at or before time ``t`` (0: none), by bisection over
    primary-key reads (event times rise with seqs)."""
    lo, hi = 0, head
    while lo < hi:
        mid = (lo + hi + 1) // 2
        event = next(iter(store.events(agent, after_seq=mid - 1, limit=1)), None)
        if event is not None and event.time <= t:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _parse_time(text: str) -> float | None:
    try:
        dt = datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace(" UTC", ""))
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.timestamp()


@router.get("/agents/{agent}/as-of", response_class=HTMLResponse)
def as_of_page(request: Request, agent: str, seq: str = "", time: str = "") -> HTMLResponse:
    missing = _agent_or_404(request, agent)
    if missing is not None:
        return missing
    dash = dashboard_of(request)
    store = dash.server.store
    row = store.agent(agent)
    assert row is not None
    error = None
    point: int | None = None
    if seq.strip().isdigit():
        point = min(int(seq), row.head_seq)
    elif time.strip():
        t = _parse_time(time)
        if t is None:
            error = f"{time!r} is not a time: use ISO 8601, e.g. 2026-12-02T16:00:00Z"
        else:
            point = seq_at(store, agent, row.head_seq, t)
    items: list[Any] = []
    at = None
    if point is not None:
        with dash.server.agent(agent) as runtime:
            view = runtime.as_of(point)
            items = view.search(limit=500)
            at = view.time
    with dash.server.agent(agent) as runtime:
        decisions = runtime.decisions(limit=None)[-50:]
    context = {
        "title": f"{agent}: memory as of",
        "agent": agent,
        "point": point,
        "at": at,
        "items": items,
        "seq": seq,
        "time": time,
        "error": error,
        "head": row.head_seq,
        "decisions": list(reversed(decisions)),
    }
    return dash.render.page(request, "as_of.html", context)


@router.get("/agents/{agent}/decisions", response_class=HTMLResponse)
def decisions_page(request: Request, agent: str) -> HTMLResponse:
    missing = _agent_or_404(request, agent)
    if missing is not None:
        return missing
    dash = dashboard_of(request)
    with dash.server.agent(agent) as runtime:
        decisions = list(reversed(runtime.decisions()))
    pager = Pager.of(request, len(decisions))
    # (what each knew is an as-of read per decision: loaded when its details are opened)
    shown = decisions[pager.start : pager.stop]
    context = {"title": f"{agent}: decisions", "agent": agent, "decisions": shown}
    return dash.render.page(request, "decisions.html", {**context, "pager": pager})


@router.get("/agents/{agent}/decisions/{seq}/knew", response_class=HTMLResponse)
def knew_fragment(request: Request, agent: str, seq: int) -> HTMLResponse:
    """What the agent knew when it took decision ``seq`` (its memory as of the decision)."""
    missing = _agent_or_404(request, agent)
    if missing is not None:
        return missing
    dash = dashboard_of(request)
    with dash.server.agent(agent) as runtime:
        found = next((d for d in runtime.decisions() if d.seq == seq), None)
        if found is None:
            return not_found(request, f"decision {seq} of agent {agent!r}")
        knew = found.memory().search(limit=20)
    title = f"{agent}: what it knew at decision {seq}"
    return dash.render.fragment_or_page(request, "_knew.html", title, agent, d=found, knew=knew)


@router.get("/agents/{agent}/events", response_class=HTMLResponse)
def events_page(request: Request, agent: str) -> HTMLResponse:
    """Every event, newest first, a page at a time (by seq range: fast at any depth)."""
    missing = _agent_or_404(request, agent)
    if missing is not None:
        return missing
    dash = dashboard_of(request)
    store = dash.server.store
    row = store.agent(agent)
    assert row is not None
    pager = Pager.of(request, row.head_seq)
    top = row.head_seq - pager.start
    events = list(store.events(agent, after_seq=max(0, top - pager.per_page), until_seq=top))
    with dash.server.agent(agent) as runtime:
        since = events[0].time if events else None
        marks = loop_seqs([*runtime.loop_history(since=since), *runtime.loop_status().signals])
    context = {
        "title": f"{agent}: events",
        "agent": agent,
        "steps": steps(events, marks)[::-1],
        "pager": pager,
        "head": row.head_seq,
    }
    return dash.render.page(request, "events.html", context)
