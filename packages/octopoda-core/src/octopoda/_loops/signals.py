"""What a detection is: the events of a loop, the signal naming them (and its run), an
outage (one failure across many runs), an agent's status, and how a signal reads to a
person (``describe``, ``call_text``)."""

import json
from typing import Any, NamedTuple

__all__ = [
    "SIGNAL_KINDS",
    "AgentRefTuple",
    "LoopEventRef",
    "LoopSignal",
    "LoopStatus",
    "Outage",
    "RefTuple",
    "call_text",
    "confidence",
    "describe",
    "describe_outage",
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
    """An active (or past) detection. ``run_id`` is the run it was seen in (None: the
    agent's default run, the actions recorded without a run id)."""

    kind: str
    confidence: float
    subject: str
    events: tuple[LoopEventRef, ...]
    explanation: str
    suggestion: str
    detected_at: float
    run_id: str | None = None

    @property
    def seqs(self) -> tuple[int, ...]:
        return tuple(e.seq for e in self.events if e.seq)

    def to_dict(self) -> dict[str, Any]:
        """As JSON-safe data; ``run_id`` only when the signal has one."""
        out = self._asdict()
        out["events"] = [e._asdict() for e in self.events]
        if self.run_id is None:
            del out["run_id"]
        return out


class Outage(NamedTuple):
    """The same failure (tool and error digest) in several runs at once: an upstream that
    is down, not a loop of any one run. It names the tool, the error (a preview), the runs
    it was seen in and the seqs of the failed calls (oldest first), and when it was first
    and last seen. Reported by ``loop_status()``, recorded once as an ``outage_detected``
    event; it never pauses a run by itself."""

    tool: str
    error: str
    error_sha256: str
    runs: tuple[str, ...]
    seqs: tuple[int, ...]
    first_seen: float
    last_seen: float

    def to_dict(self) -> dict[str, Any]:
        out = self._asdict()
        out["runs"], out["seqs"] = list(self.runs), list(self.seqs)
        return out


class _StatusFields(NamedTuple):
    state: str
    signals: tuple[LoopSignal, ...]


class LoopStatus(_StatusFields):
    """``state`` is ``ok``, ``warning`` (signals below the policy's confidence, or an
    outage) or ``looping``; ``signals`` the active signals, strongest first.

    ``outages``: failures seen across runs (:class:`Outage`). It is an attribute, not a
    field: a status is still the pair ``(state, signals)`` (``status == ("ok", ())``)."""

    outages: tuple[Outage, ...] = ()  # (also for a status made by _make or _replace)

    def __new__(
        cls, state: str, signals: tuple[LoopSignal, ...], outages: tuple[Outage, ...] = ()
    ) -> "LoopStatus":
        status = super().__new__(cls, state, signals)
        status.outages = outages
        return status

    @property
    def looping(self) -> bool:
        return self.state == "looping"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"state": self.state, "signals": [s.to_dict() for s in self.signals]}
        if self.outages:
            out["outages"] = [o.to_dict() for o in self.outages]
        return out


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


def describe_outage(outage: Outage) -> str:
    """One line for logs: the tool, how many runs failed the same way, and the error."""
    runs = ", ".join(outage.runs[:5]) + (", ..." if len(outage.runs) > 5 else "")
    return (
        f"outage: {outage.tool} failed the same way in {len(outage.runs)} runs ({runs})"
        f" (events {', '.join(map(str, outage.seqs[-10:]))}): {outage.error}; this is"
        " the tool's upstream, not a loop of any one run"
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
