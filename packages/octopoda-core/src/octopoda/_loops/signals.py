"""What a detection is: the events of a loop, the signal naming them, an agent's status, and
how a signal reads to a person (``describe``, ``call_text``)."""

from __future__ import annotations

import json
from typing import Any, NamedTuple

__all__ = [
    "SIGNAL_KINDS",
    "AgentRefTuple",
    "LoopEventRef",
    "LoopSignal",
    "LoopStatus",
    "RefTuple",
    "call_text",
    "confidence",
    "describe",
]

SIGNAL_KINDS = ("retry", "oscillation", "ping_pong", "reflection", "recall_write")


class LoopEventRef(NamedTuple):
    """One event of a loop: its seq (0 for a read, which is never stored) in the chain of
    ``agent`` (empty: the agent whose status this is), what it was, and a short preview of
    its arguments or value."""

    seq: int
    kind: str
    name: str
    preview: str
    agent: str = ""


RefTuple = tuple[int, str, str, str]
"""A ``LoopEventRef`` of the agent's own as a plain tuple, (seq, kind, name, preview):
cheaper to keep on hot paths; ``Detector.report`` makes the refs."""
AgentRefTuple = tuple[int, str, str, str, str]
"""The same with the event's agent: (seq, kind, name, preview, agent)."""


class LoopSignal(NamedTuple):
    """An active (or past) detection."""

    kind: str
    confidence: float
    subject: str
    events: tuple[LoopEventRef, ...]
    explanation: str
    suggestion: str
    detected_at: float

    @property
    def seqs(self) -> tuple[int, ...]:
        return tuple(e.seq for e in self.events if e.seq)

    def to_dict(self) -> dict[str, Any]:
        out = self._asdict()
        out["events"] = [e._asdict() for e in self.events]
        return out


class LoopStatus(NamedTuple):
    """``state`` is ``ok``, ``warning`` (signals below the policy's confidence) or
    ``looping``."""

    state: str
    signals: tuple[LoopSignal, ...]

    @property
    def looping(self) -> bool:
        return self.state == "looping"

    def to_dict(self) -> dict[str, Any]:
        return {"state": self.state, "signals": [s.to_dict() for s in self.signals]}


def confidence(base: float, extra: int) -> float:
    """``base`` at the threshold, halving the remaining doubt with each extra repetition."""
    return round(1.0 - (1.0 - base) * (0.5 ** max(0, extra)), 4)


def describe(signal: LoopSignal, agent: str = "") -> str:
    """One line for logs and pause reasons: kind, confidence, explanation, the events and
    the suggestion. Events of one agent are listed by seq ("events 3, 5, 7"); when the
    loop spans agents (a ping-pong), each is named with its agent ("events researcher#2,
    coder#2, researcher#4"), ``agent`` standing for an event's empty owner (the agent
    whose signal it is)."""
    refs = [e for e in signal.events if e.seq]
    if len({e.agent or agent for e in refs}) > 1:
        listed = ", ".join(f"{e.agent or agent}#{e.seq}" for e in refs)
    else:
        listed = ", ".join(str(e.seq) for e in refs) or "reads"
    return (
        f"{signal.kind} loop ({signal.confidence:.0%}): {signal.explanation} (events {listed});"
        f" suggestion: {signal.suggestion}"
    )


CALL_CHARS = 80


def call_text(name: str, arguments: str) -> str:
    """A tool call as a person writes it: ``fetch(url="https://example.com", page=2)`` from
    the tool's name and the preview of its JSON arguments (an object becomes keyword
    arguments, a list positional ones, null none). JSON values stay JSON; a preview cut
    short (or not JSON) is shown as it is; the whole is cut to 80 characters."""
    try:
        args = json.loads(arguments) if arguments else None
    except ValueError:
        inner = arguments
    else:
        if args is None:
            inner = ""
        elif isinstance(args, dict):
            inner = ", ".join(
                f"{k if k.isidentifier() else json.dumps(k, ensure_ascii=False)}={_json(v)}"
                for k, v in args.items()
            )
        elif isinstance(args, list):
            inner = ", ".join(_json(v) for v in args)
        else:
            inner = _json(args)
    text = f"{name}({inner})"
    return text if len(text) <= CALL_CHARS else text[: CALL_CHARS - 4] + "...)"


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
