"""Per-stream state: what the novelty tracker and the detectors know about one memory key
(``KeyStream``) and one (tool, arguments) run of calls (``CallRun``).

One object per stream holds the parts of several detectors, so that a write or a call
costs one dictionary lookup; each field says whose it is. The tracker keeps a stream's
identity, recent values or results (for novelty) and its last event; each detector keeps
its own chain in its own fields.
"""

from __future__ import annotations

from .chain import WIDTH
from .gists import BLOCKS, SLEEPS, THINKS, tool_kind
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
    read, and its event) and ``churns`` (the churn so far).

    The tracker's too: ``data`` (its last value's JSON text: a rewrite restating it in
    other words is not new), ``checked`` (whether its values were
    looked at for volatile fields) and ``masked`` (they have some: its values are compared
    without them, ``raw`` being the record of its last value as written, ``renewed``
    whether that write changed only volatile parts)."""

    __slots__ = (
        "chain",
        "checked",
        "churns",
        "data",
        "key",
        "masked",
        "novelty",
        "number",
        "raw",
        "read",
        "recent",
        "refs",
        "renewed",
        "time",
    )

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
        self.data: str | bytes | None = None
        self.checked = False
        self.masked = False
        self.raw = ""
        self.renewed = False

    def remask(self, rec: str) -> None:
        """Its last value is ``rec`` from now on (the same value without its volatile
        parts), in its recent values and in oscillation's chain."""
        last = self.recent[-WIDTH:]
        self.recent = self.recent[:-WIDTH] + rec
        if self.chain.endswith(last):
            self.chain = self.chain[:-WIDTH] + rec


class CallRun:
    """One (tool, arguments) stream of calls.

    The tracker's: ``name``, ``args`` (the digest of its arguments, without nonces),
    ``preview``, ``waiting`` (a sleep: neutral) and ``blocking`` (a wait for something: a
    poll), ``thinking`` (a thought: neutral, read by reflection), ``neutral`` (either),
    ``texty`` (its arguments hold free text: other wordings of them may join the run,
    ``reworded`` once one did), ``tag`` (its part of an action state, for oscillation),
    ``results`` (the records of its last 8 results: a result not among them is new),
    ``said`` (its last text result's preview and outcome: a result restating it in
    other words is not new), and its last call:
    ``novelty`` (the novelty count after it), ``waits``, ``thoughts`` and ``at`` (the
    monitor's wait, LLM-call and tool-call counts then) and ``time``. Retry's:
    ``outcome`` (the error or result its chain repeats), ``calls`` (that chain: (seq,
    time, and its arguments' preview once other wordings joined the run)), ``failures``
    (the seqs of its failures in a row), ``learned`` (the novelty count without minor
    progress after its last failure) and ``polled``."""

    __slots__ = (
        "args",
        "at",
        "blocking",
        "calls",
        "failures",
        "learned",
        "name",
        "neutral",
        "novelty",
        "outcome",
        "polled",
        "preview",
        "results",
        "reworded",
        "said",
        "tag",
        "texty",
        "thinking",
        "thoughts",
        "time",
        "waiting",
        "waits",
    )

    def __init__(self, name: str, args: str, preview: str) -> None:
        self.name = name
        self.args = args
        self.preview = preview
        kind = tool_kind(name)
        self.waiting = kind == SLEEPS
        self.blocking = kind == BLOCKS
        self.thinking = kind == THINKS
        self.neutral = self.waiting or self.thinking
        self.texty = " " in preview
        self.reworded = False
        self.said: tuple[str, str] | None = None
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
        self.calls: list[tuple[int, float, str]] = []
        self.failures: list[int] = []
