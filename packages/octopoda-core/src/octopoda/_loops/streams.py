"""Per-stream state: what the novelty tracker and the detectors know about one memory key
(``KeyStream``) and one (tool, arguments) run of calls (``CallRun``).

One object per stream holds the parts of several detectors, so that a write or a call
costs one dictionary lookup; each field says whose it is. The tracker keeps a stream's
identity, recent values or results (for novelty) and its last event; each detector keeps
its own chain in its own fields.
"""

from __future__ import annotations

from .gists import BLOCKS, SLEEPS, wait_kind
from .signals import RefTuple

__all__ = ["ACTIONS", "CallRun", "KeyStream", "read_stream"]

ACTIONS = "actions\x01"
"""The stream of the sequence of tool calls (oscillation between calls)."""

WriteRef = tuple[int, str]
"""The event of a memory write, (seq, kind): the key and the value come at report time."""


def read_stream(agent: str, namespace: str, key: str) -> str:
    """A key as a stream: the key itself in the agent's own memory (the same stream as its
    writes, whose entries name a namespace only when it is not the agent's own)."""
    return key if namespace == "agent:" + agent else f"{namespace}\x00{key}"


class KeyStream:
    """One memory key (or a decision subject, or the sequence of tool calls).

    The tracker's: ``key``, ``recent`` (the records of its last 6 values: a value not
    among them is new), ``novelty`` and ``time`` (the novelty count after its last write,
    and that write's time: a chain continues only while nothing new happened since) and
    ``number`` (its last numeric value: a counter?). Oscillation's: ``chain`` (its states
    since the last progress, at most 24) and ``refs`` (the events of its last 24 states: a
    ring whose tail is the chain). Recall-write's: ``read`` (a pending read: the value
    read, and its event) and ``churns`` (the churn so far)."""

    __slots__ = ("chain", "churns", "key", "novelty", "number", "read", "recent", "refs", "time")

    def __init__(self, key: str) -> None:
        self.key = key
        self.recent = ""
        self.chain = ""
        self.refs: list[WriteRef | RefTuple] = []
        self.novelty = -1
        self.time = 0.0
        self.read: tuple[str | bytes | None, RefTuple] | None = None
        self.churns: list[RefTuple] | None = None
        self.number: float | None = None


class CallRun:
    """One (tool, arguments) stream of calls.

    The tracker's: ``name``, ``args`` (the digest of its arguments, without nonces),
    ``preview``, ``waiting`` (a sleep: neutral) and ``blocking`` (a wait for something: a
    poll), ``tag`` (its part of an action state, for oscillation), ``results`` (the
    records of its last 8 results: a result not among them is new), and its last call:
    ``novelty`` (the novelty count after it), ``waits``, ``thoughts`` and ``at`` (the
    monitor's wait, LLM-call and tool-call counts then) and ``time``. Retry's:
    ``outcome`` (the error or result its chain repeats), ``calls`` (that chain: (seq,
    time)), ``failures`` (the seqs of its failures in a row), ``learned`` (the novelty
    count without minor progress after its last failure) and ``polled``."""

    __slots__ = (
        "args",
        "at",
        "blocking",
        "calls",
        "failures",
        "learned",
        "name",
        "novelty",
        "outcome",
        "polled",
        "preview",
        "results",
        "tag",
        "thoughts",
        "time",
        "waiting",
        "waits",
    )

    def __init__(self, name: str, args: str, preview: str) -> None:
        self.name = name
        self.args = args
        self.preview = preview
        kind = wait_kind(name)
        self.waiting = kind == SLEEPS
        self.blocking = kind == BLOCKS
        self.tag = f"{hash((name, args)) & 0xFFFFFFFFFF:010x}"
        self.results = ""
        self.outcome = ""
        self.novelty = -1
        self.learned = -1
        self.waits = 0
        self.thoughts = 0
        self.at = 0
        self.time = 0.0
        self.polled = False
        self.calls: list[tuple[int, float]] = []
        self.failures: list[int] = []
