"""The novelty tracker: the pipeline step that judges what is new and runs the detectors.

A loop is repetition **without anything new**. ``NoveltyTracker`` decides, for every
event, whether it brought something new: a tool result its call had not returned lately
(compared without metadata such as timestamps and request ids: ``volatile_gist``; a bare
acknowledgement such as "ok" or None is not new, except as the first result of new
arguments: "minor" progress, the agent did something it had not done but learned
nothing), a memory value that key did not recently have (bookkeeping is not: a number one
step from the key's last, like an attempt counter, or the current time), a message or
handoff with new content (``content_gist``), a shared value written by another agent.
Every detector keeps short chains per stream and a chain only continues while nothing new
happened anywhere in between: progress elsewhere resets it. Minor progress ends every
chain but a failing call retried and a decision restated. A sleep (sleep, backoff, ...;
see ``is_waiting``) is in no chain, never new, and marks repeated successful calls as
polling; a call that waits for something (``wait_for_job``) marks them too and is itself
a poll, new when it returns something new and informative.

The tracker counts the action (``LoopMonitor.tick``), judges novelty, and hands the event
to the detectors' ``observe_*`` methods: memory writes to oscillation and recall-write
(and shared writes to ping-pong), tool calls to oscillation and retry, reads to
recall-write, decisions to oscillation and reflection, handoffs and messages to
ping-pong. ``docs/loops.md`` is the user's guide; each detector's module documents its
thresholds.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .._records import Event
from .chain import TOMBSTONE, WIDTH, Bounded, find, record
from .gists import (
    NUMBER_START,
    QUOTED_DIGIT,
    bookkeeping,
    digest,
    is_acknowledgement,
    word_gist,
)
from .monitor import Detector, LoopMonitor
from .oscillation import OscillationDetector
from .payloads import (
    PASS_KINDS,
    WRITE_KINDS,
    ToolCallPayload,
    WriteEntry,
    decision_of,
    pass_of,
)
from .ping_pong import PingPongDetector
from .recall_write import RecallWriteDetector
from .reflection import ReflectionDetector
from .retry import RetryDetector
from .streams import CallRun, KeyStream, read_stream

__all__ = ["NOT_ACTIONS", "NoveltyTracker"]

NOT_ACTIONS = frozenset(
    {
        "loop_detected",
        "outage_detected",
        "paused",
        "resumed",
        "snapshot",
        "message_read",
        "space_created",
    }
)
"""Event kinds that are bookkeeping, not actions of the agent: not counted."""

_Touched = tuple[str, KeyStream, str, WriteEntry, str, bool]
"""A write being judged: (stream, key, record, entry, the key's recent values, new?)."""


class NoveltyTracker:
    """Decides for every event whether it brought something new, and runs the detectors.

    As the pipeline processor (``process``) it lets the monitor count the action
    (``LoopMonitor.tick``, needed only while a signal is active), judges novelty, then
    hands the event to each detector's ``observe_*`` method (one lookup and one object per
    memory key or call run: the streams are shared with the detectors). ``attach``
    connects the detectors (the guard does).

    A tool result is new when its (tool, arguments) run had not returned it in its last
    8 calls that returned something, and it is more than an acknowledgement; a memory
    value is new when its key did not have it in its last 6 writes.

    Detection runs inside every write, between SQLite statements that leave little of it
    in the CPU cache, where each further function call costs about 0.1 us (bench 7). So
    the tracker's own rules run inline (a write's or a result's novelty), each detector is
    called once per event, and recall-write only for a write it can concern.
    """

    __slots__ = (
        "_seen",
        "detectors",
        "keys",
        "monitor",
        "oscillation",
        "ping_pong",
        "recall_write",
        "reflection",
        "retry",
        "runs",
    )

    def __init__(self, monitor: LoopMonitor, *, memory: int = 4096) -> None:
        self.monitor = monitor
        self.keys: Bounded[KeyStream] = Bounded(memory)
        self.runs: Bounded[CallRun] = Bounded(memory)
        self._seen: Bounded[bool] = Bounded(memory)
        self.detectors: list[Detector] = []
        self.retry: RetryDetector | None = None
        self.oscillation: OscillationDetector | None = None
        self.recall_write: RecallWriteDetector | None = None
        self.reflection: ReflectionDetector | None = None
        self.ping_pong: PingPongDetector | None = None

    def attach(self, detectors: Iterable[Detector]) -> None:
        """Run these detectors (at most one of each kind)."""
        self.detectors = list(detectors)
        for d in self.detectors:
            if isinstance(d, RetryDetector):
                self.retry = d
            elif isinstance(d, OscillationDetector):
                self.oscillation = d
            elif isinstance(d, RecallWriteDetector):
                self.recall_write = d
            elif isinstance(d, ReflectionDetector):
                self.reflection = d
            elif isinstance(d, PingPongDetector):
                self.ping_pong = d
        if self.retry is not None and self.oscillation is not None:  # polling is retry's
            self.oscillation.poll_interval_seconds = self.retry.poll_interval_seconds

    def __call__(self, event: Event) -> Event:
        return self.process(event)

    def process(self, event: Event) -> Event:
        """The pipeline step. Memory writes, the most frequent events, are handled here:
        which values are new, then each key's chains (oscillation, recall-write)."""
        kind = event.kind
        monitor = self.monitor
        time = event.time
        if monitor.active and kind not in NOT_ACTIONS:  # (counted only to let signals expire)
            monitor.tick(time)
        if kind != "remember" and kind not in WRITE_KINDS:
            return self._observe_call(event) if kind == "tool_call" else self._observe_other(event)
        found = event.payload.get("writes")  # (writes_of, inlined: every remember)
        writes: list[WriteEntry] = found if isinstance(found, list) else []
        keys = self.keys
        touched: list[_Touched] = []
        novel = False
        for entry in writes:
            namespace = entry.get("namespace")
            name = entry["key"]
            stream = name if namespace is None else f"{namespace}\x00{name}"
            key = keys.get(stream)
            if key is None:
                key = keys.put(stream, KeyStream(name))
            sha = entry.get("sha256")
            rec = sha[:WIDTH] if sha else TOMBSTONE
            if len(rec) != WIDTH:
                rec = record(sha)
            recent = key.recent
            at = recent.find(rec)
            if at > 0 and at % WIDTH:
                at = find(recent, rec)
            novel = novel or at < 0  # (a value the key did not have in its last 6 writes)
            touched.append((stream, key, rec, entry, recent, at < 0))
        ws = event.writes
        if novel and ws:  # (bookkeeping? only numbers and quoted times can be)
            d = ws[0].data
            if len(ws) > 1 or (type(d) is str and (d[:1] in NUMBER_START or d[:2] in QUOTED_DIGIT)):
                novel = self._learned(touched, ws, time)
        before = monitor.before = monitor.novelty
        monitor.event_novel = novel
        novelty = monitor.novelty = before + 1 if novel else before
        osc, churn = self.oscillation, self.recall_write
        ref = (event.seq, kind)
        for stream, key, rec, entry, recent, _ in touched:
            same = before == key.novelty  # (nothing new since the key's last write)
            key.recent = (recent if len(recent) < 6 * WIDTH else recent[WIDTH:]) + rec
            if osc is not None:
                osc.observe_write(stream, key, rec, ref, time)
            key.novelty, key.time = novelty, time
            if churn is None:
                continue
            if kind != "remember" and kind != "shared_write":  # a forget, restore or import
                churn.observe_other_write(stream, key)
            elif key.read is not None or key.churns is not None or recent.endswith(rec):
                # (recall-write: a read pending, a churn going on, or the last value again)
                churn.observe_write(stream, key, rec, entry, event, recent, same)
        if kind == "shared_write" and self.ping_pong is not None:
            self.ping_pong.observe_shared_write(event)
        return event

    def _new(self, fingerprint: Any) -> bool:
        seen = self._seen
        if fingerprint in seen:
            return False
        seen.put(fingerprint, True)
        return True

    @staticmethod
    def _learned(touched: list[_Touched], writes: Any, now: float) -> bool:
        """Whether new values taught anything: not when each is bookkeeping."""
        if len(writes) != len(touched):
            return True
        for (_, key, _, _, _, new), w in zip(touched, writes, strict=True):
            if new:
                kept, number = bookkeeping(w.data, key.number, now)
                if number is not None:
                    key.number = number
                if not kept:
                    return True
        return False

    # -- tool calls -------------------------------------------------------------------------

    def _observe_call(self, event: Event) -> Event:
        """A tool call: a new result?, then oscillation and retry, then the run's last
        call. A result is new when the run had not returned it in its last 8 results and
        it is more than an acknowledgement (the first result of new arguments, even an
        acknowledgement, is minor progress)."""
        p: ToolCallPayload = event.payload  # type: ignore[assignment]  # (tool_call_of)
        monitor = self.monitor
        name, args = p["name"], p.get("args_gist") or p["args_sha256"]
        run = self.runs.get((name, args))
        if run is None:
            run = self.runs.put((name, args), CallRun(name, args, p.get("args_preview", "")))
        before = monitor.before = monitor.novelty
        failed = "error_sha256" in p
        if run.waiting and not failed:  # a sleep: neutral, in no chain, never new
            monitor.waits += 1
            monitor.event_novel = False
            return event
        novel = False
        if failed:
            outcome = "e" + p["error_sha256"]
        else:
            result = str(p.get("result_gist") or p.get("result_sha256"))
            outcome = "r" + result
            rec = result[:WIDTH]
            results = run.results
            at = results.find(rec)
            if at > 0 and at % WIDTH:
                at = find(results, rec)
            if at < 0:  # a result this call had not returned lately
                run.results = (results if len(results) < 8 * WIDTH else results[WIDTH:]) + rec
                novel = not is_acknowledgement(p.get("result_preview"))
                if not novel and not results:
                    novel = True  # new arguments, acknowledged: minor progress
                    monitor.minor += 1
        monitor.event_novel = novel
        if novel:
            monitor.novelty = before + 1
        if run.blocking:  # a wait for something: a poll (new only when it tells news)
            monitor.waits += 1
        monitor.calls += 1
        if self.oscillation is not None:  # (before retry: both read the run's last call)
            self.oscillation.observe_call(event, run, outcome)
        if self.retry is not None:
            self.retry.observe_call(event, p, run, failed, outcome)
        run.novelty, run.waits, run.time = monitor.novelty, monitor.waits, event.time
        run.thoughts, run.at = monitor.thoughts, monitor.calls
        return event

    # -- reads, decisions, messages ---------------------------------------------------------

    def observe_read(self, agent: str, namespace: str, key: str, data: Any, time: float) -> None:
        """A read (in memory only: reads are not events): a shared value another agent
        wrote is new; recall-write notes what was read."""
        monitor = self.monitor
        if monitor.active:
            monitor.tick(time)
        novel = False
        if data is not None and not namespace.startswith("agent:"):
            novel = self._new((namespace, key, digest(data)))
        if self.recall_write is not None:
            stream = read_stream(agent, namespace, key)
            known = self.keys.get(stream)
            if known is None:
                known = self.keys.put(stream, KeyStream(key))
            self.recall_write.observe_read(known, data)
        monitor.event_novel = novel
        monitor.before = monitor.novelty
        if novel:
            monitor.novelty += 1

    def _observe_other(self, event: Event) -> Event:
        """Every other kind: messages and handoffs (new content?), LLM calls, decisions."""
        monitor = self.monitor
        kind = event.kind
        novel = False
        if kind in PASS_KINDS or kind == "broadcast" or kind == "message_read":
            p = event.payload
            novel = self._new(("content", p.get("content_gist") or p.get("content_sha256")))
        elif kind == "llm_call":
            monitor.thoughts += 1
        monitor.event_novel = novel
        monitor.before = monitor.novelty
        if novel:
            monitor.novelty += 1
        if kind == "decision":
            self._observe_decision(event)
        elif kind in PASS_KINDS and self.ping_pong is not None:
            self.ping_pong.observe_pass(event, pass_of(event))
        return event

    def _observe_decision(self, event: Event) -> None:
        """A decision: one word gist for oscillation and reflection (which adds the
        reasoning's words)."""
        p = decision_of(event)
        context = p.get("context")
        subject = str(context.get("subject", "")) if isinstance(context, dict) else ""
        text = str(p.get("decision", ""))
        gist = word_gist(text)
        if self.oscillation is not None:
            self.oscillation.observe_decision(event, subject, text, gist)
        if self.reflection is not None:
            reasoning = p.get("reasoning")
            if isinstance(reasoning, str):
                gist = word_gist(f"{text} {reasoning}")
            self.reflection.observe_decision(event, subject, text, gist)
