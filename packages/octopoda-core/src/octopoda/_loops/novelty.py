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
from itertools import repeat
from types import SimpleNamespace
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
from .paraphrase import (
    VALUE_CHARS,
    Statement,
    restates,
    same_statement,
    statement,
    thought_text,
)
from .payloads import (
    PASS_KINDS,
    WRITE_KINDS,
    DecisionPayload,
    PassPayload,
    ToolCallPayload,
    WriteEntry,
)
from .ping_pong import PingPongDetector
from .recall_write import RecallWriteDetector
from .reflection import ReflectionDetector
from .retry import RetryDetector
from .streams import CallRun, KeyStream, read_stream
from .volatile import value_gist

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

_RECENT_VALUES = 6 * WIDTH  # (a key's last 6 values; a run's last 8 results)
_RECENT_RESULTS = 8 * WIDTH
_BOOKKEEPING_START = NUMBER_START | {'"'}
"""How the JSON text of a value that can be bookkeeping starts (one set lookup rules out
the others: objects, lists, most strings)."""
_NO_VALUES = repeat(SimpleNamespace(data=None))
"""The values of writes replayed from the store (which keeps their digests only)."""
_Touched = tuple[str, KeyStream, str, WriteEntry, str, bool]
"""A write being judged: (stream, key, record, entry, the key's recent values, new?)."""
_Rewrite = tuple[str, Statement, tuple[int, str, str, str], Statement, tuple[int, str, str, str]]
"""A key rewritten in other words: (key, what it says now and its write, what it said and
its last write)."""


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
        "_outcomes",
        "_seen",
        "detectors",
        "keys",
        "monitor",
        "oscillation",
        "paraphrases",
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
        # (tool, outcome) -> the run with free-text arguments that last had it
        self._outcomes: Bounded[CallRun] = Bounded(memory)
        self.paraphrases = 0
        """How often two texts were compared as paraphrases here (a cheap check having found
        a candidate); ping-pong and reflection count their own comparisons."""
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
        rewrites: list[_Rewrite] | None = None
        novel = False
        ws = event.writes  # (the values, in the order of the entries; none in a replay)
        # (no strict=: a keyword costs zip an argument parse, ~800 instructions)
        for entry, w in zip(writes, ws or _NO_VALUES):  # noqa: B905
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
            data = w.data
            if key.masked and type(data) is str:  # (its values are compared without
                raw, rec = rec, value_gist(data, time)[0]  # their volatile parts)
                key.renewed, key.raw = raw != key.raw, raw
            recent = key.recent
            # (a value the key did not have in its last 6 writes; ``in`` first: str.find
            # parses its arguments, and most values are new)
            new = rec not in recent or find(recent, rec) < 0
            if (  # (a rewrite with nothing new since, or a key not yet checked: rare)
                new
                and (not key.checked or monitor.novelty == key.novelty)
                and recent
                and type(data) is str
            ):
                rec, new, rewrites = self._rewritten(key, rec, data, event, rewrites)
            key.data = data
            novel = novel or new
            touched.append((stream, key, rec, entry, recent, new))
        if novel and ws:  # (bookkeeping? only numbers and quoted times can be)
            d = ws[0].data
            if len(ws) > 1 or (
                type(d) is str
                and d[:1] in _BOOKKEEPING_START
                and (d[:1] in NUMBER_START or d[:2] in QUOTED_DIGIT)
            ):
                novel = self._learned(touched, ws, time)
        before = monitor.before = monitor.novelty
        monitor.event_novel = novel
        novelty = monitor.novelty = before + 1 if novel else before
        self._chain_writes(event, kind, time, touched, before, novelty, rewrites)
        return event

    def _chain_writes(
        self,
        event: Event,
        kind: str,
        time: float,
        touched: list[_Touched],
        before: int,
        novelty: int,
        rewrites: list[_Rewrite] | None,
    ) -> None:
        """Each written key's chains: oscillation, recall-write (only for a write it can
        concern), then the key's last write; reflection for restatements, ping-pong for
        shared writes."""
        osc, churn = self.oscillation, self.recall_write
        ref = (event.seq, kind)
        for stream, key, rec, entry, recent, new in touched:
            same = before == key.novelty  # (nothing new since the key's last write)
            key.recent = (recent if len(recent) < _RECENT_VALUES else recent[WIDTH:]) + rec
            if osc is not None:
                osc.observe_write(stream, key, rec, ref, time)
            key.novelty, key.time = novelty, time
            if churn is None:
                continue
            if kind != "remember" and kind != "shared_write":  # a forget, restore or import
                churn.observe_other_write(stream, key)
            elif (
                key.read is not None
                or key.churns is not None
                or (
                    not new and recent.endswith(rec)  # (a new value is not the last one)
                )
            ):  # (recall-write: a read pending, a churn going on, or the last value again)
                renewed = key.masked and key.renewed  # (only volatile parts changed)
                churn.observe_write(stream, key, rec, entry, event, recent, same, renewed)
        if rewrites is not None and self.reflection is not None:
            for name, said, this, earlier, last in rewrites:
                self.reflection.observe_rewrite(name, said, this, (earlier, last), time)
        if kind == "shared_write" and self.ping_pong is not None:
            self.ping_pong.observe_shared_write(event)

    def _rewritten(
        self,
        key: KeyStream,
        rec: str,
        data: str,
        event: Event,
        rewrites: list[_Rewrite] | None,
    ) -> tuple[str, bool, list[_Rewrite] | None]:
        """A key rewritten with a value it had not had: the value's record, whether it is
        new (not when it only restates the last value), and the restatements so far."""
        new = True
        if not key.checked:
            rec, new = self._check_volatile(key, rec, data, event.time)
        if new and self.monitor.novelty == key.novelty and self.reflection is not None:
            rewrite = self._restatement(key, data, event)
            if rewrite is not None:  # (the same said again: not new)
                return rec, False, [*(rewrites or ()), rewrite]
        return rec, new, rewrites

    def _check_volatile(self, key: KeyStream, rec: str, data: str, now: float) -> tuple[str, bool]:
        """A key rewritten with another value for the first time: do its values carry
        volatile parts (metadata, the current time)? If so they are compared without them
        from now on (``value_gist``), its last value too. The new record of the value, and
        whether it is new."""
        key.checked = True
        masked, parts = value_gist(data, now)
        if not parts:
            return rec, True
        key.masked, key.raw = True, key.recent[-WIDTH:]  # (the last value as written)
        if type(key.data) is str:  # (its last value as it reads without them)
            key.remask(value_gist(key.data, key.time)[0])
        return masked, find(key.recent, masked) < 0

    def _restatement(self, key: KeyStream, data: str, event: Event) -> _Rewrite | None:
        """A key rewritten with nothing new since its last write: does the new value say
        what the last one said, in other words (a plan or a critique restated)?"""
        last = key.data
        if type(last) is not str or " " not in data:
            return None
        said = statement(data, limit=VALUE_CHARS)
        earlier = statement(last, limit=VALUE_CHARS) if said is not None else None
        if said is None or earlier is None or self.reflection is None:
            return None
        self.paraphrases += 1
        if not restates(said, earlier, self.reflection.paraphrase_similarity):
            return None
        this = (event.seq, event.kind, key.key, data[:80])
        seq = key.refs[-1][0] if key.refs else 0  # (oscillation's: the key's last write)
        return key.key, said, this, earlier, (seq, event.kind, key.key, last[:80])

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
        acknowledgement, is minor progress), nor a restatement of its last result."""
        p: ToolCallPayload = event.payload  # type: ignore[assignment]  # (tool_call_of)
        monitor = self.monitor
        name, args = p["name"], p.get("args_gist") or p["args_sha256"]
        failed = "error_sha256" in p
        if failed:
            outcome = "e" + p["error_sha256"]
        else:
            found = p.get("result_gist") or p.get("result_sha256")
            result = found if type(found) is str else str(found)  # (str() is a call too)
            outcome = "r" + result
        run = self.runs.get((name, args))
        if run is None:
            run = self._new_run(event, p, name, args, outcome, failed)
        before = monitor.before = monitor.novelty
        if run.neutral and not failed:  # a sleep or a thought: in no chain, never new
            return self._neutral_call(event, p, run)
        novel = False
        if not failed:
            rec = result[:WIDTH]
            results = run.results
            # (a result this call had not returned lately, not in other words?)
            if rec not in results or find(results, rec) < 0:
                preview = p.get("result_preview", "")
                restated = self._restated_result(run, preview, outcome) if " " in preview else None
                if restated is not None:
                    outcome = restated
                else:
                    run.results = (
                        results if len(results) < _RECENT_RESULTS else results[WIDTH:]
                    ) + rec
                    novel = not is_acknowledgement(preview)
                    if not novel and not results:
                        novel = True  # new arguments, acknowledged: minor progress
                        monitor.minor += 1
                    if run.texty:
                        self._outcomes.put((name, outcome), run)
        elif run.texty:
            self._outcomes.put((name, outcome), run)
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

    def _new_run(
        self, event: Event, p: ToolCallPayload, name: str, args: str, outcome: str, failed: bool
    ) -> CallRun:
        """The run of a (tool, arguments) seen for the first time: its own, or the run of
        an earlier call these arguments only reword (free texts paraphrased, the rest the
        same) that got the same result or failure (not an acknowledgement) back."""
        preview = p.get("args_preview", "")
        run = None
        if " " in preview and (failed or not is_acknowledgement(p.get("result_preview"))):
            other = self._outcomes.get((name, outcome))
            window = self.retry.window_seconds if self.retry is not None else 300.0
            if other is not None and event.time - other.time <= window:
                run = self._rewording(preview, other)
        if run is None:
            run = CallRun(name, args, preview)
        return self.runs.put((name, args), run)

    def _rewording(self, preview: str, other: CallRun) -> CallRun | None:
        """``other`` if arguments ``preview`` reword its first or its last wording."""
        said = statement(preview)
        if said is None:
            return None
        threshold = self.retry.reworded_similarity if self.retry is not None else 0.5
        wordings = {other.preview, other.calls[-1][2] if other.calls else ""} - {""}
        for wording in wordings:
            earlier = statement(wording)
            if earlier is not None:
                self.paraphrases += 1
                if same_statement(said, earlier, threshold):
                    other.reworded = True
                    return other
        return None

    def _restated_result(self, run: CallRun, preview: str, outcome: str) -> str | None:
        """A new text result (its ``preview``, with a space): the outcome of the run's last
        text result if it says the same in other words (short texts only); else None, and
        it is the run's last text result."""
        said = run.said
        run.said = (preview, outcome)
        if said is None:
            return None
        now = statement(preview)
        earlier = statement(said[0]) if now is not None else None
        if now is None or earlier is None:
            return None
        self.paraphrases += 1
        threshold = self.retry.paraphrase_similarity if self.retry is not None else 0.6
        if not restates(now, earlier, threshold):
            return None
        run.said = said  # (the same result: the earlier wording stands for it)
        return said[1]

    def _neutral_call(self, event: Event, p: ToolCallPayload, run: CallRun) -> Event:
        """A sleep (it marks the calls around it as polling) or a thought (a call of a
        thinking tool: like a model call, and reflection reads what it thinks)."""
        monitor = self.monitor
        monitor.event_novel = False
        if run.waiting:
            monitor.waits += 1
            return event
        monitor.thoughts += 1
        if self.reflection is not None:
            preview = p.get("args_preview", "")
            ref = (event.seq, "tool_call", run.name, preview)
            self.reflection.observe_thought(event, run.name, thought_text(preview), ref)
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
            if novel and kind == "message_read" and self.ping_pong is not None:
                self.ping_pong.heard += 1  # (what a partner said: not ping-pong's progress)
        elif kind == "llm_call":
            monitor.thoughts += 1
        monitor.event_novel = novel
        monitor.before = monitor.novelty
        if novel:
            monitor.novelty += 1
        if kind == "decision":
            self._observe_decision(event)
        elif kind in PASS_KINDS and self.ping_pong is not None:
            passed: PassPayload = event.payload  # type: ignore[assignment]  # (pass_of)
            self.ping_pong.observe_pass(event, passed)
        return event

    def _observe_decision(self, event: Event) -> None:
        """A decision: one word gist for oscillation and reflection (which adds the
        reasoning's words)."""
        p: DecisionPayload = event.payload  # type: ignore[assignment]  # (decision_of)
        context = p.get("context")
        subject = str(context.get("subject", "")) if isinstance(context, dict) else ""
        found = p.get("decision", "")
        text = found if type(found) is str else str(found)  # (str() is a call)
        gist = word_gist(text)
        ref = (event.seq, "decision", subject or "decision", text[:80])  # (both detectors')
        if self.oscillation is not None:
            self.oscillation.observe_decision(event, subject, text, gist, ref)
        if self.reflection is not None:
            reasoning = p.get("reasoning")
            if isinstance(reasoning, str):
                gist = word_gist(f"{text} {reasoning}")
            self.reflection.observe_decision(event, subject, gist, ref)
