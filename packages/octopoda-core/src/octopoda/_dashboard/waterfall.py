"""A run's events as a waterfall: one timed row per event (what it was, its details, when it
started relative to the run, how long it took) with the events of each loop marked."""

from collections.abc import Iterable, Sequence
from typing import Any, Final, NamedTuple

from .._loops import LoopSignal
from .._records import Event

__all__ = ["Step", "describe", "loop_seqs", "steps"]

LABELS: Final = {
    "tool_call": "tool",
    "llm_call": "LLM",
    "decision": "decision",
    "handoff": "handoff",
    "remember": "memory write",
    "forget": "forget",
    "consolidate": "consolidate",
    "shared_write": "shared write",
    "loop_detected": "loop verdict",
    "paused": "paused",
    "resumed": "resumed",
    "message_sent": "message",
}


class Step(NamedTuple):
    seq: int
    kind: str
    label: str
    title: str
    details: list[tuple[str, str]]
    time: float
    offset_ms: float  # when it started, from the run's first event
    duration_ms: float | None
    bar_x: float  # percent of the run's span
    bar_w: float
    loop: bool
    failed: bool
    signal: dict[str, Any] | None  # a loop verdict's payload
    loop_refs: tuple[int, ...]  # a loop verdict's events (the agent's own seqs)


def describe(e: Event) -> tuple[str, list[tuple[str, str]]]:
    """An event's title and its details (name, value) for a row."""
    p = e.payload
    if e.kind == "tool_call":
        out = [("args", str(p.get("args_preview", "")))]
        if "error" in p:
            out.append(("error", str(p["error"])))
        else:
            out.append(("result", str(p.get("result_preview", ""))))
        return str(p.get("name", "")), out + _usage(p)
    if e.kind == "llm_call":
        return str(p.get("model", "")), _usage(p)
    if e.kind == "decision":
        return str(p.get("decision", "")), [("reasoning", str(p.get("reasoning") or ""))]
    if e.kind == "handoff":
        return f"to {p.get('to', '')}", [("content", str(p.get("preview", "")))]
    if e.kind == "loop_detected":
        return f"{p.get('kind')} loop ({float(p.get('confidence', 0)):.0%})", [
            ("why", str(p.get("explanation", ""))),
            ("suggestion", str(p.get("suggestion", ""))),
        ]
    writes = p.get("writes") or []
    if writes:
        keys = ", ".join(f"{w.get('key')} v{w.get('version')}" for w in writes[:5])
        more = f" (+{len(writes) - 5})" if len(writes) > 5 else ""
        return keys + more, []
    if e.kind in ("paused", "resumed"):
        return str(p.get("reason") or ""), []
    return "", []


def _usage(p: dict[str, Any]) -> list[tuple[str, str]]:
    out = []
    if p.get("tokens_in") or p.get("tokens_out"):
        out.append(("tokens", f"{p.get('tokens_in', 0)} in / {p.get('tokens_out', 0)} out"))
    if p.get("cost_usd"):
        out.append(("cost", f"${float(p['cost_usd']):.4f}"))
    return out


def _refs(e: Event) -> tuple[int, ...]:
    refs = e.payload.get("events") or []
    return tuple(
        r["seq"]
        for r in refs
        if isinstance(r, dict) and isinstance(r.get("seq"), int) and r["seq"] and not r.get("agent")
    )


def loop_seqs(signals: Iterable[LoopSignal]) -> set[int]:
    """The seqs of the agent's own events that the signals name."""
    return {r.seq for s in signals for r in s.events if r.seq and not r.agent}


def steps(events: Sequence[Event], loops: set[int]) -> list[Step]:
    """The waterfall rows of ``events`` (in seq order); ``loops``: the seqs to mark."""
    if not events:
        return []
    ends = []
    for e in events:
        d = e.payload.get("duration_ms")
        duration = float(d) if isinstance(d, (int, float)) else None
        begin = e.time - duration / 1000 if duration is not None else e.time
        ends.append((begin, e.time, duration))
    start = min(begin for begin, _, _ in ends)
    span = max(1e-6, max(end for _, end, _ in ends) - start)
    out = []
    for e, (begin, end, duration) in zip(events, ends, strict=True):
        title, details = describe(e)
        x = (begin - start) / span * 100
        w = max(0.5, (end - begin) / span * 100)
        out.append(
            Step(
                e.seq,
                e.kind,
                LABELS.get(e.kind, e.kind.replace("_", " ")),
                title,
                details,
                e.time,
                round((begin - start) * 1000, 1),
                duration,
                round(min(x, 99.5), 2),
                round(min(w, 100 - min(x, 99.5)), 2),
                e.seq in loops,
                "error" in e.payload,
                e.payload if e.kind == "loop_detected" else None,
                _refs(e) if e.kind == "loop_detected" else (),
            )
        )
    return out
