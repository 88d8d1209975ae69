"""The fleet page's data from store-level reads: one read of the agents table for every
agent (filter, sort, count), then, for the agents of the shown page only, their most recent
events (a seq range read by primary key) for activity, loops, spend and the chart.

Totals over an agent's whole history need a full scan of its events, so the fleet shows the
``RECENT_EVENTS`` most recent ones and the agent page computes the totals.
"""

import json
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from typing import Any, Final, NamedTuple

from .._loops import SIGNAL_KINDS
from .._store import Store
from .._store.rows import AgentRow

__all__ = [
    "RECENT_EVENTS",
    "SORTS",
    "FleetRow",
    "Usage",
    "fleet_rows",
    "known_spaces",
    "open_conflicts",
    "recent_spaces",
    "usage",
]

RECENT_EVENTS: Final = 200
"""How many of each listed agent's latest events the fleet page reads."""
IDLE_AFTER: Final = 15 * 60.0
SORTS: Final = ("name", "status", "last_active", "events")
CHART_BUCKET: Final = 60.0  # seconds
CHART_MINUTES: Final = 120


class Usage(NamedTuple):
    """What a run of events added up to: calls, tokens, spend, loops per signal."""

    tool_calls: int
    llm_calls: int
    tokens_in: int
    tokens_out: int
    spend_usd: float
    loops: dict[str, int]
    operations: int


def usage(events: Sequence[Any]) -> Usage:
    """The totals of ``events`` (Event objects)."""
    kinds: Counter[str] = Counter()
    loops: Counter[str] = Counter()
    tokens_in = tokens_out = 0
    spend = 0.0
    for e in events:
        kinds[e.kind] += 1
        p = e.payload
        if e.kind == "loop_detected":
            loops[str(p.get("kind"))] += 1
        elif e.kind in ("tool_call", "llm_call"):
            spend += float(p.get("cost_usd", 0.0))
            tokens_in += int(p.get("tokens_in", 0))
            tokens_out += int(p.get("tokens_out", 0))
    return Usage(
        kinds["tool_call"],
        kinds["llm_call"],
        tokens_in,
        tokens_out,
        round(spend, 6),
        {k: loops[k] for k in SIGNAL_KINDS if loops[k]},
        sum(kinds.values()),
    )


SPACE_KINDS: Final = ("shared_write", "conflict_resolved", "space_created")


class FleetRow(NamedTuple):
    id: str
    status: str  # active, idle, paused
    pause_reason: str | None
    paused_runs: tuple[str, ...]
    created_at: float
    last_active: float | None
    events: int
    recent: Usage
    times: tuple[tuple[float, float], ...]  # (time, cost) of each recent event
    spaces: tuple[str, ...]  # the spaces its recent events wrote to


def status_of(row: AgentRow, now: float) -> str:
    if row.status == "paused":
        return "paused"
    return "idle" if (row.last_active or row.created_at) < now - IDLE_AFTER else "active"


def reason_of(text: str | None) -> str | None:
    if not text:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return str(value.get("reason")) if isinstance(value, dict) else text


def _sort_key(sort: str) -> Callable[[tuple[AgentRow, str]], Any]:
    if sort == "status":
        return lambda r: (r[1], r[0].id)
    if sort == "last_active":
        return lambda r: (-(r[0].last_active or r[0].created_at), r[0].id)
    if sort == "events":
        return lambda r: (-r[0].head_seq, r[0].id)
    return lambda r: r[0].id


def select(
    store: Store,
    *,
    name: str = "",
    status: str = "",
    sort: str = "name",
    allowed: Callable[[str], bool] = lambda _: True,
) -> list[tuple[AgentRow, str]]:
    """Every agent matching the filters (name: a case-insensitive substring), sorted."""
    now = time.time()
    needle = name.casefold()
    rows = [
        (r, status_of(r, now))
        for r in store.agents()
        if allowed(r.id) and (not needle or needle in r.id.casefold())
    ]
    if status:
        rows = [r for r in rows if r[1] == status]
    rows.sort(key=_sort_key(sort if sort in SORTS else "name"))
    return rows


def fleet_rows(store: Store, page: Sequence[tuple[AgentRow, str]]) -> list[FleetRow]:
    """The shown agents with their recent activity (``RECENT_EVENTS`` events each)."""
    out = []
    for row, status in page:
        after = max(0, row.head_seq - RECENT_EVENTS)
        events = list(store.events(row.id, after_seq=after)) if row.head_seq else []
        runs = store.runs(row.id, status="paused") if row.head_seq else []
        out.append(
            FleetRow(
                row.id,
                status,
                reason_of(row.status_reason) if row.status == "paused" else None,
                tuple(r.run_id for r in runs),
                row.created_at,
                row.last_active,
                row.head_seq,
                usage(events),
                tuple((e.time, _cost(e.payload)) for e in events),
                spaces_in(events),
            )
        )
    return out


def _cost(payload: dict[str, Any]) -> float:
    cost = payload.get("cost_usd", 0.0)
    return float(cost) if isinstance(cost, (int, float)) else 0.0


def chart(rows: Sequence[FleetRow]) -> dict[str, list[float]]:
    """Operations and spend per minute of the shown agents' recent events (uPlot's columns): the
    minutes up to the latest one (at most ``CHART_MINUTES``, at least 30), quiet ones 0."""
    buckets: Counter[float] = Counter()
    spend: defaultdict[float, float] = defaultdict(float)
    for r in rows:
        for t, cost in r.times:
            buckets[t - t % CHART_BUCKET] += 1
            spend[t - t % CHART_BUCKET] += cost
    if not buckets:
        return {"x": [], "operations": [], "spend": []}
    end = max(buckets)
    first = max(min(buckets), end - (CHART_MINUTES - 1) * CHART_BUCKET)
    first = min(first, end - 29 * CHART_BUCKET)
    xs = [first + i * CHART_BUCKET for i in range(int((end - first) // CHART_BUCKET) + 1)]
    return {
        "x": xs,
        "operations": [float(buckets[x]) for x in xs],
        "spend": [round(spend[x], 6) for x in xs],
    }


def spaces_in(events: Sequence[Any]) -> tuple[str, ...]:
    """The spaces that ``events`` wrote to (shared writes, resolutions, creations)."""
    names = (e.payload.get("space") for e in events if e.kind in SPACE_KINDS)
    return tuple(dict.fromkeys(n for n in names if isinstance(n, str)))


def known_spaces(store: Store, seen: Sequence[str] = ()) -> list[str]:
    """``global``, the created spaces, then ``seen`` (open spaces need no creation, so
    the store lists only the created ones: the others are found in agents' events)."""
    return list(dict.fromkeys(["global", *(s.name for s in store.spaces()), *seen]))


def recent_spaces(store: Store, agents: int = 100) -> list[str]:
    """The spaces written to in the recent events of the most recently active agents."""
    rows = sorted(store.agents(), key=lambda r: -(r.last_active or r.created_at))[:agents]
    seen: list[str] = []
    for row in rows:
        after = max(0, row.head_seq - RECENT_EVENTS)
        seen.extend(spaces_in(list(store.events(row.id, after_seq=after, kinds=SPACE_KINDS))))
    return seen


def open_conflicts(store: Store, seen: Sequence[str] = ()) -> list[tuple[str, int]]:
    """The spaces with open conflicts (of :func:`known_spaces`) and how many."""
    names = known_spaces(store, seen)
    out = []
    for name in names:
        n = len(store.conflicts("space:" + name, status="open"))
        if n:
            out.append((name, n))
    return out
