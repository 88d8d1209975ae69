"""Oscillation: a value or a choice alternating between a few states with nothing new.

Fires when a memory key (remember, forget, restore, import, shared writes), a decision
subject (``context["subject"]``) or the sequence of tool calls with their outcomes cycles
through 2..``max_period`` states (4; ``max_action_period``, 8, for tool calls) for
``min_cycles`` (2) full cycles with nothing new in between, each state at most
``window_seconds`` (600) after the last. Restatements of one decision
(``decision_similarity`` >= 0.8) are one state. Tool calls that wait in between or recur a
poll interval apart (polling several jobs in turn) are left to retry's ``max_polls``.
Confidence 0.7 at the threshold.
"""

from __future__ import annotations

import hashlib

from .._records import Event
from .chain import WIDTH, Bounded, find, find_cycle, records
from .gists import Gist
from .monitor import Detector, LoopMonitor
from .signals import RefTuple, call_text, confidence
from .streams import ACTIONS, CallRun, KeyStream, WriteRef

__all__ = ["OscillationDetector"]

_RING = 24  # the states (and their events) a stream keeps
_RING_CHARS = _RING * WIDTH


def _extend(s: KeyStream, rec: str) -> int:
    """Add state ``rec`` to the chain of ``s``, which it continues; where ``rec`` was in
    the chain before, or -1. (A state that does not continue the chain starts a new one:
    ``s.chain = rec``.)"""
    chain = s.chain
    at = find(chain, rec) if rec in chain else -1
    s.chain = (chain if len(chain) < _RING_CHARS else chain[WIDTH:]) + rec
    return at


class OscillationDetector(Detector):
    """Memory keys (``observe_write``), the tool-call sequence (``observe_call``) and
    decisions on one subject (``observe_decision``), each a chain of states."""

    kind = "oscillation"
    __slots__ = (
        "_calls",
        "_chain_polled",
        "_chain_waits",
        "_decisions",
        "_subjects",
        "decision_similarity",
        "max_action_period",
        "max_period",
        "min_cycles",
        "poll_interval_seconds",
        "window_seconds",
    )

    def __init__(
        self,
        monitor: LoopMonitor,
        *,
        min_cycles: int = 2,
        max_period: int = 4,
        max_action_period: int = 8,
        window_seconds: float = 600.0,
        decision_similarity: float = 0.8,
        streams: int = 512,
    ) -> None:
        super().__init__(monitor)
        self.min_cycles = min_cycles
        self.max_period = max_period
        self.max_action_period = max(max_action_period, max_period)
        self.window_seconds = window_seconds
        self.decision_similarity = decision_similarity
        self.poll_interval_seconds = 30.0
        """Calls recurring this far apart (with no LLM call between) are polling: the novelty
        tracker sets retry's ``poll_interval_seconds`` here, since polling is retry's."""
        self._subjects: Bounded[KeyStream] = Bounded(streams)  # decision subjects
        # decision subject -> (its states' gists and ids, oldest first; the same by gist)
        self._decisions: dict[str, tuple[list[tuple[Gist, str]], dict[Gist, str]]] = {}
        self._calls = KeyStream("tool calls")
        self._chain_waits = 0  # the monitor's wait count when the tool-call chain began
        self._chain_polled = False  # a call in it recurred a poll interval later

    def observe_write(
        self, stream: str, key: KeyStream, rec: str, ref: WriteRef | RefTuple, time: float
    ) -> None:
        """A write of value ``rec`` to ``key`` (its event ``ref``), before the tracker
        records it as the key's last write (decisions pass through here too)."""
        refs = key.refs  # a ring of the stream's last 24 events: the chain is its tail
        refs.append(ref)
        if len(refs) > _RING:
            del refs[0]
        if self.monitor.before == key.novelty and time - key.time <= self.window_seconds:
            at = _extend(key, rec)  # (nothing new since the key's last state)
        else:
            key.chain, at = rec, -1
        if at < 0:  # a state not seen in this chain: progress, and no cycle can end here
            monitor = self.monitor
            if monitor.active:
                monitor.clear(self.kind, stream)
        elif key.chain[-2 * WIDTH : -WIDTH] != rec:  # (a repeat is not an alternation)
            self.judge(stream, key, time, self.max_period)

    def observe_call(self, event: Event, run: CallRun, outcome: str) -> None:
        """A tool call of ``run`` with ``outcome`` (its error or result digest), before the
        tracker records it as the run's last call. Calls that waited in between (a sleep or
        a wait since the chain began) or recur a poll interval later are polling: their
        cycles are left to retry."""
        monitor = self.monitor
        time = event.time
        s = self._calls
        rec = run.tag + outcome[1:7]
        refs = s.refs
        refs.append((event.seq, "tool_call", run.name, run.preview))
        if len(refs) > _RING:
            del refs[0]
        if monitor.before == s.novelty and time - s.time <= self.window_seconds:
            at = _extend(s, rec)
        else:
            s.chain, at = rec, -1
            self._chain_waits, self._chain_polled = monitor.waits, False
        if (
            at >= 0
            and time - run.time >= self.poll_interval_seconds
            and run.thoughts == monitor.thoughts
        ):  # this call again a poll interval later, no model call between
            self._chain_polled = True
        s.novelty, s.time = monitor.novelty, time
        if at < 0:
            if monitor.active:
                monitor.clear(self.kind, ACTIONS)
        elif (
            s.chain[-2 * WIDTH : -WIDTH] != rec
            and monitor.waits == self._chain_waits
            and not self._chain_polled
        ):
            self.judge(ACTIONS, s, time, self.max_action_period)

    def observe_decision(
        self, event: Event, subject: str, text: str, gist: Gist, ref: RefTuple
    ) -> None:
        """A decision on ``subject`` saying ``text`` (whose word gist is ``gist``; ``ref``
        names it): a state of the subject's chain, as a value is of a key's."""
        rec = self._decision_state(subject, text, gist)
        stream = f"decision\x01{subject}"
        s = self._subjects.get(stream)
        if s is None:
            s = self._subjects.put(stream, KeyStream(subject))
        self.observe_write(stream, s, rec, ref, event.time)
        s.novelty, s.time = self.monitor.novelty, event.time

    def _decision_state(self, subject: str, text: str, gist: Gist) -> str:
        """Restatements of one decision are one state (the first wording's id). A gist
        already kept (the same words again: ``word_gist`` keeps recent ones) has its state;
        it would be the first to match, since no state before it did."""
        states = self._decisions.get(subject)
        if states is None:
            states = self._decisions[subject] = ([], {})
        known, exact = states
        state = exact.get(gist) if self.decision_similarity <= 1.0 else None
        if state is not None:
            return state
        for other, state in known:
            if gist.similarity(other) >= self.decision_similarity:
                return state
        state = hashlib.sha256(text.encode()).hexdigest()[:WIDTH]
        known.append((gist, state))
        exact[gist] = state
        if len(known) > 16:
            exact.pop(known.pop(0)[0], None)
        return state

    def judge(self, stream: str, s: KeyStream, time: float, max_period: int) -> None:
        """Whether the chain of ``stream``, whose last state repeats an earlier one, is
        cycling."""
        if len(s.chain) < 2 * self.min_cycles * WIDTH:
            return
        states = records(s.chain)
        found = find_cycle(states, max_period=max_period, min_cycles=self.min_cycles)
        if found is None:
            return
        period, length = found
        tail: list[RefTuple] = []
        for ref, state in zip(s.refs[-length:], states[-length:], strict=True):
            if len(ref) == 2:  # a memory key: its name and value come now
                tail.append((ref[0], ref[1], s.key, state[:12]))
            else:
                tail.append(ref)
        if stream.startswith("decision\x01"):
            subject = ("decisions " + stream[9:]).strip()
        elif stream == ACTIONS:
            subject = "tool calls"
        else:
            subject = "key " + stream.replace("\x00", " ")
        if stream == ACTIONS:  # the calls as written: fetch(page=1), fetch(page=2)
            names = ", ".join(dict.fromkeys(call_text(r[2], r[3]) for r in tail[-period:]))
        else:
            names = ", ".join(dict.fromkeys(r[2] for r in tail[-period:]))
        self.report(
            stream,
            confidence(0.7, length - period * self.min_cycles),
            subject,
            tail,
            f"{subject} keeps cycling through the same {period} states ({names}):"
            f" {length} changes with nothing new",
            "decide once and record why, or find out which steps keep undoing each other",
            time,
        )
