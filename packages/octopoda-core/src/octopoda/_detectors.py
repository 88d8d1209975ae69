"""The five loop detectors: processors in the events pipeline.

A loop is repetition **without anything new**. ``NoveltyTracker`` runs first and decides,
for every event, whether it brought something new: a tool result never seen before (a
result seen before, or a bare acknowledgement such as "ok" or None, is not), a memory value that key
did not recently have, a message or handoff with new content, a shared value written by
another agent. Every detector keeps short chains per
stream (a tool call with its arguments, a memory key, a decision subject, an agent pair)
and a chain only continues while nothing new happened anywhere in between: progress
elsewhere (a new result, an edit, a new job) resets it. Calls whose name says they wait
(sleep, wait, backoff, delay, ...) are neutral: they neither make progress nor break a
chain, and they mark repeated successful calls as polling.

Defaults (every number is a constructor argument, settable per runtime through
``LoopPolicy(detectors={"retry": {"max_failures": 4}, ...})``):

* ``RetryDetector``: the same tool with the same arguments failing the same way
  ``max_failures`` (3) times in a row (error text compared with numbers, UUIDs and hex ids
  masked), failing in any way ``max_any_failures`` (5) times, or returning the same result
  ``max_same_results`` (5) times (``max_polls`` (10) when the calls wait in between or are
  ``poll_interval_seconds`` (5) apart: polling). Calls more than ``window_seconds`` (300)
  apart do not chain.
* ``OscillationDetector``: a memory key (remember, forget, restore, import, shared writes),
  a decision subject (``context["subject"]``), or the sequence of tool calls with their
  outcomes cycling through 2..``max_period`` states (4; 8 for tool calls) for
  ``min_cycles`` (2) full cycles with nothing new.
* ``PingPongDetector``: two agents handing over or messaging each other alternately
  ``min_passes`` (4) times with at most half as many distinct contents, a content handed
  around a ring of agents back to the sender ``min_returns`` (2) times, or two agents
  alternately rewriting one shared key; passes more than ``window_seconds`` (600) apart
  do not chain.
* ``ReflectionDetector``: ``min_repeats`` (3) decisions on one subject saying the same
  (``gist_similarity`` >= 0.8: the same content words) with nothing new in between.
* ``RecallWriteDetector``: a key read and written back unchanged or with one of its recent
  values, or rewritten with the value it already has, ``min_churns`` (3) times.

Confidence starts at 0.7-0.8 at the threshold and halves the remaining doubt with every
further repetition.
"""

from __future__ import annotations

import hashlib
import re
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeVar

from ._loops import LoopEventRef, LoopMonitor, LoopSignal

__all__ = [
    "NOT_ACTIONS",
    "NoveltyTracker",
    "OscillationDetector",
    "PingPongDetector",
    "RecallWriteDetector",
    "ReflectionDetector",
    "RetryDetector",
    "gist_similarity",
    "is_acknowledgement",
    "is_waiting",
    "normalize_error",
]

_V = TypeVar("_V")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_MASK = re.compile(r"0x[0-9a-fA-F]+|[0-9a-fA-F]{8,}|\w*\d\w*")
_WAITING = re.compile(r"sleep|wait|backoff|delay|pause|idle|throttle", re.IGNORECASE)
_WORD = re.compile(r"\w+", re.UNICODE)
_STOPWORDS = frozenset(
    (
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "been",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "for",
        "from",
        "had",
        "has",
        "have",
        "i",
        "i'll",
        "i'm",
        "in",
        "is",
        "it",
        "its",
        "it's",
        "just",
        "let",
        "let's",
        "me",
        "my",
        "need",
        "now",
        "of",
        "ok",
        "okay",
        "on",
        "or",
        "our",
        "should",
        "so",
        "that",
        "the",
        "then",
        "there",
        "this",
        "to",
        "try",
        "us",
        "was",
        "we",
        "we'll",
        "will",
        "with",
        "would",
        "you",
        "again",
        "going",
        "think",
        "maybe",
        "probably",
        "first",
        "next",
        "still",
        "also",
    )
)
NOT_ACTIONS = frozenset(
    {"loop_detected", "paused", "resumed", "snapshot", "message_read", "space_created"}
)
WRITE_KINDS = frozenset({"remember", "forget", "shared_write", "restore", "import"})


def normalize_error(text: str) -> str:
    """Error text with UUIDs, hex ids and anything containing a digit masked, so
    "timeout after 3012 ms (request 9f2c...)" repeats as the same failure."""
    return _MASK.sub("#", _UUID.sub("#", text.strip()))


_DIGIT = re.compile(r"\d")
_waiting_names: dict[str, bool] = {}


def is_acknowledgement(preview: Any) -> bool:
    """Whether a tool result only acknowledges (None, true, "ok", {"status": "logged"}):
    short and without a number, it brings no information."""
    text = str(preview)
    return len(text) <= 24 and _DIGIT.search(text) is None


def is_waiting(tool_name: str) -> bool:
    """Whether a tool's name says it only waits (sleep, wait_for, backoff, ...)."""
    known = _waiting_names.get(tool_name)
    if known is None:
        known = _WAITING.search(tool_name) is not None
        if len(_waiting_names) < 4096:
            _waiting_names[tool_name] = known
    return known


def _stem(word: str) -> str:
    """A crude stem: "changing", "changed", "changes" and "change" all become "chang"."""
    if len(word) > 4:
        for suffix in ("ing", "ed", "es", "e", "s"):
            if word.endswith(suffix):
                return word[: -len(suffix)]
    return word


def _gist(text: str) -> frozenset[str]:
    words = _WORD.findall(text.casefold())
    content = frozenset(_stem(w) for w in words if w not in _STOPWORDS)
    return content or frozenset(words)


def _same_gist(a: frozenset[str], b: frozenset[str]) -> float:
    if not a and not b:
        return 1.0
    small, large = (a, b) if len(a) <= len(b) else (b, a)
    if len(small) >= 3 and small <= large and len(large) <= 2 * len(small):
        return 1.0  # the same statement with words added ("..., final answer")
    return len(a & b) / len(a | b)


def gist_similarity(a: str, b: str) -> float:
    """How much two texts say the same, in [0, 1]: the Jaccard overlap of their content
    words (filler like "I should", "let me", "the" dropped, crude stems), or 1.0 when one
    only adds words to the other. Restatements score high; statements about other things
    (another order id, another database) score low."""
    return _same_gist(_gist(a), _gist(b))


def _confidence(base: float, extra: int) -> float:
    """``base`` at the threshold, halving the remaining doubt with each extra repetition."""
    return round(1.0 - (1.0 - base) * (0.5 ** max(0, extra)), 4)


class _Bounded(OrderedDict[Any, _V], Generic[_V]):
    """A dict that forgets its oldest entries beyond ``size`` (first in, first out; an
    OrderedDict, whose popitem from the front is O(1) where a dict's is not)."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size

    def put(self, key: Any, value: _V) -> _V:
        self[key] = value
        if len(self) > self.size:
            self.popitem(last=False)
        return value


def _push(items: list[Any], item: Any, keep: int = 32) -> None:
    """Append, keeping only the last ``keep`` items."""
    items.append(item)
    if len(items) > keep:
        del items[0]


def _writes(event: Any) -> Iterable[dict[str, Any]]:
    writes = event.payload.get("writes")
    return writes if isinstance(writes, list) else ()


def _stream_key(event: Any, entry: dict[str, Any]) -> str:
    """A written key as a stream: the key itself in the agent's own memory."""
    namespace = entry.get("namespace")
    return entry["key"] if namespace is None else f"{namespace}\x00{entry['key']}"


def _read_stream(agent: str, namespace: str, key: str) -> str:
    """The same stream for a read."""
    return key if namespace == "agent:" + agent else f"{namespace}\x00{key}"


def _outcome(p: dict[str, Any]) -> str:
    return ("e" + p["error_sha256"]) if "error_sha256" in p else ("r" + str(p.get("result_sha256")))


class _Detector:
    kind = ""
    observes_reads = False

    def __init__(self, monitor: LoopMonitor) -> None:
        self.monitor = monitor

    def report(
        self,
        stream: str,
        confidence: float,
        subject: str,
        events: Iterable[LoopEventRef | tuple[Any, ...]],
        explanation: str,
        suggestion: str,
        time: float,
    ) -> None:
        refs = tuple(e if isinstance(e, LoopEventRef) else LoopEventRef(*e) for e in events)
        self.monitor.report(
            stream, LoopSignal(self.kind, confidence, subject, refs, explanation, suggestion, time)
        )


# -- novelty --------------------------------------------------------------------------------


class NoveltyTracker:
    """The first processor: decides whether each event brought something new."""

    observes_reads = True

    def __init__(self, monitor: LoopMonitor, *, memory: int = 4096) -> None:
        self.monitor = monitor
        self._seen: _Bounded[bool] = _Bounded(memory)
        self._values: _Bounded[list[str]] = _Bounded(memory)

    def _new(self, fingerprint: Any) -> bool:
        if fingerprint in self._seen:
            return False
        self._seen.put(fingerprint, True)
        return True

    def __call__(self, event: Any) -> Any:
        kind = event.kind
        novel = False
        if kind == "tool_call":
            p = event.payload
            if is_waiting(p["name"]):
                self.monitor.waits += 1
            elif "error_sha256" not in p and not is_acknowledgement(p.get("result_preview")):
                novel = self._new("r" + str(p.get("result_sha256")))
        elif kind in WRITE_KINDS:
            for entry in _writes(event):
                stream = _stream_key(event, entry)
                recent = self._values.get(stream)
                value = str(entry.get("sha256"))
                if recent is None:
                    self._values.put(stream, [value])
                    novel = True
                elif value not in recent:
                    novel = True
                    recent.append(value)
                    if len(recent) > 6:
                        del recent[0]
        elif kind in ("handoff", "message_sent", "broadcast", "message_read"):
            novel = self._new(("content", event.payload.get("content_sha256")))
        elif kind == "read":
            p = event.payload
            data = p.get("data")
            if data is not None and not p["namespace"].startswith("agent:"):
                novel = self._new((p["namespace"], p["key"], _digest(data)))
        monitor = self.monitor
        monitor.event_novel = novel
        monitor.before = monitor.novelty
        if novel:
            monitor.novelty += 1
        return event


# -- retry ----------------------------------------------------------------------------------


class _Run:
    __slots__ = ("calls", "failures", "novelty", "outcome", "polled", "time", "waits")

    def __init__(self, outcome: str, novelty: int, waits: int, time: float) -> None:
        self.outcome = outcome
        self.novelty = novelty
        self.waits = waits
        self.time = time
        self.polled = False
        self.calls: list[tuple[Any, ...]] = []
        self.failures: list[tuple[Any, ...]] = []


class RetryDetector(_Detector):
    """The same tool with the same arguments, failing or returning the same result."""

    kind = "retry"
    kinds = frozenset({"tool_call"})

    def __init__(
        self,
        monitor: LoopMonitor,
        *,
        max_failures: int = 3,
        max_any_failures: int = 5,
        max_same_results: int = 5,
        max_polls: int = 10,
        poll_interval_seconds: float = 5.0,
        window_seconds: float = 300.0,
        streams: int = 512,
    ) -> None:
        super().__init__(monitor)
        self.max_failures = max_failures
        self.max_any_failures = max_any_failures
        self.max_same_results = max_same_results
        self.max_polls = max_polls
        self.poll_interval_seconds = poll_interval_seconds
        self.window_seconds = window_seconds
        self._first_threshold = min(max_failures, max_any_failures, max_same_results, max_polls)
        self._runs: _Bounded[_Run] = _Bounded(streams)

    def __call__(self, event: Any) -> Any:
        if event.kind != "tool_call":
            return event
        p = event.payload
        name = p["name"]
        if is_waiting(name):
            return event
        monitor = self.monitor
        stream = f"{name}\x00{p['args_sha256']}"
        failed = "error_sha256" in p
        outcome = _outcome(p)
        run = self._runs.get(stream)
        fresh = (
            run is None
            or monitor.before != run.novelty
            or event.time - run.time > self.window_seconds
        )
        if fresh or run is None or (run.outcome != outcome and not (failed and run.failures)):
            if run is not None:
                monitor.clear(self.kind, stream)  # a new result, or progress: not a loop
            run = self._runs.put(stream, _Run(outcome, monitor.novelty, monitor.waits, event.time))
        elif run.outcome != outcome:  # failing again, differently: only the any-failure chain
            run.outcome = outcome
            run.calls.clear()
        if run.waits != monitor.waits or event.time - run.time >= self.poll_interval_seconds:
            run.polled = run.polled or bool(run.calls)
        ref = (event.seq, "tool_call", name, p.get("args_preview", ""))
        _push(run.calls, ref)
        if failed:
            _push(run.failures, ref)
        elif run.failures:
            run.failures.clear()
        run.novelty, run.waits, run.time = monitor.novelty, monitor.waits, event.time
        if max(len(run.calls), len(run.failures)) >= self._first_threshold:
            self._judge(stream, name, run, p, failed, event.time)
        return event

    def _judge(
        self, stream: str, name: str, run: _Run, p: dict[str, Any], failed: bool, time: float
    ) -> None:
        same = len(run.calls)
        if failed and same >= self.max_failures:
            self.report(
                stream,
                _confidence(0.8, same - self.max_failures),
                f"tool {name}",
                run.calls,
                f"{name} was called {same} times with the same arguments and failed the same"
                f" way each time ({p.get('error')})",
                f"stop calling {name} with these arguments: change them, back off, or report"
                " the problem instead of retrying",
                time,
            )
        elif failed and len(run.failures) >= self.max_any_failures:
            n = len(run.failures)
            self.report(
                stream,
                _confidence(0.8, n - self.max_any_failures),
                f"tool {name}",
                run.failures,
                f"{name} was called {n} times in a row with the same arguments and failed"
                f" every time (last: {p.get('error')})",
                f"stop retrying {name} with these arguments; report the failures instead",
                time,
            )
        elif not failed:
            limit = self.max_polls if run.polled else self.max_same_results
            if same >= limit:
                how = "polled" if run.polled else "called"
                self.report(
                    stream,
                    _confidence(0.7, same - limit),
                    f"tool {name}",
                    run.calls,
                    f"{name} was {how} {same} times with the same arguments and returned the"
                    " same result each time",
                    f"use the result {name} already returned, change the arguments, or give"
                    " up waiting",
                    time,
                )


# -- oscillation ----------------------------------------------------------------------------


class _States:
    __slots__ = ("novelty", "refs", "states", "time")

    def __init__(self, novelty: int, time: float) -> None:
        self.states: list[str] = []
        self.refs: list[tuple[Any, ...]] = []
        self.novelty = novelty
        self.time = time


def find_cycle(states: list[str], *, max_period: int, min_cycles: int) -> tuple[int, int] | None:
    """The shortest period p (2..max_period) the tail of ``states`` repeats with at least
    ``min_cycles`` times over p distinct states, and how many states the pattern spans."""
    n = len(states)
    for p in range(2, max_period + 1):
        need = p * min_cycles
        if n < need or len(set(states[n - p :])) != p:
            continue
        length = p
        while length < n and states[n - 1 - length] == states[n - 1 - length + p]:
            length += 1
        if length >= need:
            return p, length
    return None


class OscillationDetector(_Detector):
    """A value or a choice alternating between a few states with nothing new."""

    kind = "oscillation"
    kinds = WRITE_KINDS | {"decision", "tool_call"}

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
        self._streams: _Bounded[_States] = _Bounded(streams)
        self._decisions: dict[str, list[tuple[frozenset[str], str]]] = {}

    def __call__(self, event: Any) -> Any:
        kind = event.kind
        if kind in WRITE_KINDS:
            for entry in _writes(event):
                state = entry.get("sha256") or "-"
                ref = (event.seq, kind, entry["key"], state[:12])
                self._observe(_stream_key(event, entry), state, ref, event.time, self.max_period)
        elif kind == "decision":
            context = event.payload.get("context")
            subject = str(context.get("subject", "")) if isinstance(context, dict) else ""
            text = str(event.payload.get("decision", ""))
            ref = (event.seq, kind, subject or "decision", text[:80])
            state = self._decision_state(subject, text)
            self._observe(f"decision\x01{subject}", state, ref, event.time, self.max_period)
        elif kind == "tool_call" and not is_waiting(event.payload["name"]):
            p = event.payload
            state = f"{p['name']}\x00{p['args_sha256']}\x00{_outcome(p)}"
            ref = (event.seq, kind, p["name"], p.get("args_preview", ""))
            self._observe("actions\x01", state, ref, event.time, self.max_action_period)
        return event

    def _decision_state(self, subject: str, text: str) -> str:
        """Restatements of one decision are one state (the first wording's id)."""
        gist = _gist(text)
        known = self._decisions.setdefault(subject, [])
        for other, state in known:
            if _same_gist(gist, other) >= self.decision_similarity:
                return state
        state = hashlib.sha256(text.encode()).hexdigest()[:16]
        known.append((gist, state))
        del known[:-16]
        return state

    def _observe(
        self, stream: str, state: str, ref: tuple[Any, ...], time: float, max_period: int
    ) -> None:
        monitor = self.monitor
        s = self._streams.get(stream)
        if s is None or monitor.before != s.novelty or time - s.time > self.window_seconds:
            if s is not None:
                monitor.clear(self.kind, stream)
            s = self._streams.put(stream, _States(monitor.novelty, time))
        s.novelty, s.time = monitor.novelty, time
        states = s.states
        seen = state in states
        repeat = seen and states[-1] == state
        _push(states, state, 24)
        _push(s.refs, ref, 24)
        if not seen:  # a state not seen in this stream: progress, and no cycle can end here
            monitor.clear(self.kind, stream)
            return
        if repeat or len(states) < 2 * self.min_cycles:
            return  # a repeat, not an alternation (retry and recall-write cover repeats)
        found = find_cycle(states, max_period=max_period, min_cycles=self.min_cycles)
        if found is None:
            return
        period, length = found
        refs = s.refs[-length:]
        if stream.startswith("decision\x01"):
            subject = ("decisions " + stream[9:]).strip()
        elif stream == "actions\x01":
            subject = "tool calls"
        else:
            subject = "key " + stream.replace("\x00", " ")
        names = ", ".join(dict.fromkeys(r[2] for r in refs[-period:]))
        self.report(
            stream,
            _confidence(0.7, length - period * self.min_cycles),
            subject,
            refs,
            f"{subject} keeps cycling through the same {period} states ({names}):"
            f" {length} changes with nothing new",
            "decide once and record why, or find out which steps keep undoing each other",
            time,
        )


# -- recall-write ---------------------------------------------------------------------------


class _Churn:
    __slots__ = ("novelty", "read", "refs", "values")

    def __init__(self) -> None:
        self.read: tuple[Any, tuple[Any, ...]] | None = None
        self.values: list[str] = []
        self.refs: list[tuple[Any, ...]] = []
        self.novelty = -1


def _digest(data: Any) -> str | None:
    if data is None:
        return None
    raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    return hashlib.sha256(raw).hexdigest()


class RecallWriteDetector(_Detector):
    """Read a key and write back an unchanged or cycling value (or rewrite it unchanged),
    again and again."""

    kind = "recall_write"
    kinds = frozenset({"read", "remember", "shared_write"})
    observes_reads = True

    def __init__(self, monitor: LoopMonitor, *, min_churns: int = 3, streams: int = 1024) -> None:
        super().__init__(monitor)
        self.min_churns = min_churns
        self._keys: _Bounded[_Churn] = _Bounded(streams)

    def _churn(self, stream: str) -> _Churn:
        churn = self._keys.get(stream)
        if churn is None:
            return self._keys.put(stream, _Churn())
        return churn

    def __call__(self, event: Any) -> Any:
        kind = event.kind
        if kind == "read":
            p = event.payload
            data = p.get("data")
            preview = "(missing)" if data is None else str(data)[:60]
            self._churn(_read_stream(event.agent, p["namespace"], p["key"])).read = (
                data,
                (0, "read", p["key"], preview),
            )
        elif kind == "remember" or kind == "shared_write":
            for entry in _writes(event):
                self._write(_stream_key(event, entry), event, entry)
        return event

    def _write(self, stream: str, event: Any, entry: dict[str, Any]) -> None:
        churn = self._churn(stream)
        sha = entry.get("sha256") or "-"
        read, churn.read = churn.read, None
        if read is not None:
            unchanged = sha == _digest(read[0])
            repeat = unchanged or sha in churn.values
            links = [read[1]]
        else:
            unchanged = bool(churn.values) and churn.values[-1] == sha
            repeat = unchanged
            links = []
        if not repeat or self.monitor.before != churn.novelty:
            if churn.refs:
                churn.refs = []
                self.monitor.clear(self.kind, stream)
            if not repeat:
                _push(churn.values, sha, 4)
                churn.novelty = self.monitor.novelty
                return
        churn.novelty = self.monitor.novelty
        _push(churn.values, sha, 4)
        churn.refs.extend(links)
        churn.refs.append((event.seq, event.kind, entry["key"], sha[:12]))
        n = sum(1 for r in churn.refs if r[0])
        if n >= self.min_churns:
            if read is None:
                what = f"rewritten with the value it already had {n} times in a row"
            else:
                how = "unchanged" if unchanged else "with a value it already had"
                what = f"read and written back {how} {n} times in a row"
            self.report(
                stream,
                _confidence(0.8, n - self.min_churns),
                f"key {entry['key']}",
                churn.refs[-24:],
                f"{entry['key']} was {what}",
                "skip the write when the value did not change, or find what the read-modify-"
                "write step is waiting for",
                event.time,
            )


# -- reflection -----------------------------------------------------------------------------


class _Said:
    __slots__ = ("novelty", "said", "time")

    def __init__(self, novelty: int, time: float) -> None:
        self.novelty = novelty
        self.time = time
        self.said: deque[tuple[frozenset[str], LoopEventRef]] = deque(maxlen=24)


class ReflectionDetector(_Detector):
    """The same decision, plan or self-critique restated with nothing new in between."""

    kind = "reflection"
    kinds = frozenset({"decision"})

    def __init__(
        self,
        monitor: LoopMonitor,
        *,
        min_repeats: int = 3,
        similarity: float = 0.8,
        window_seconds: float = 600.0,
    ) -> None:
        super().__init__(monitor)
        self.min_repeats = min_repeats
        self.similarity = similarity
        self.window_seconds = window_seconds
        self._subjects: _Bounded[_Said] = _Bounded(256)

    def __call__(self, event: Any) -> Any:
        if event.kind != "decision":
            return event
        p = event.payload
        context = p.get("context")
        subject = str(context.get("subject", "")) if isinstance(context, dict) else ""
        stream = "decisions " + subject
        text = str(p.get("decision", ""))
        reasoning = p.get("reasoning")
        gist = _gist(f"{text} {reasoning}" if isinstance(reasoning, str) else text)
        monitor = self.monitor
        said = self._subjects.get(stream)
        if (
            said is None
            or monitor.before != said.novelty
            or event.time - said.time > self.window_seconds
        ):
            if said is not None:
                monitor.clear(self.kind, stream)
            said = self._subjects.put(stream, _Said(monitor.novelty, event.time))
        said.novelty, said.time = monitor.novelty, event.time
        ref = LoopEventRef(event.seq, "decision", subject or "decision", text[:80])
        similar = [r for g, r in said.said if _same_gist(gist, g) >= self.similarity]
        said.said.append((gist, ref))
        n = len(similar) + 1
        if n >= self.min_repeats:
            self.report(
                stream,
                _confidence(0.8, n - self.min_repeats),
                f"decisions {subject}".strip(),
                [*similar, ref],
                f"the agent restated the same decision {n} times with nothing new in between",
                "act on the decision, or gather new information before deciding again",
                event.time,
            )
        return event


# -- ping-pong ------------------------------------------------------------------------------

Pass = tuple[str, str, str, float, LoopEventRef]
"""One pass: (sender, receiver, content_sha256, time, ref)."""


class PingPongDetector(_Detector):
    """Agents passing the same thing back and forth: handoffs or messages between two agents
    or around a ring, or two agents alternately rewriting one shared key.

    ``exchange(agent)`` returns the recent passes sent or received by ``agent`` in store
    order (oldest first; the event being stored included), and ``key_history(namespace,
    key)`` the recent writes of a shared key, oldest first, as
    ``(author, "", content_sha256, time, ref)``. The runtime reads both from the store, so
    agents in other processes count.
    """

    kind = "ping_pong"
    KINDS = ("handoff", "message_sent")
    kinds = frozenset({"handoff", "message_sent", "shared_write"})

    def __init__(
        self,
        monitor: LoopMonitor,
        exchange: Callable[[str], list[Pass]],
        key_history: Callable[[str, str], list[Pass]] | None = None,
        *,
        min_passes: int = 4,
        min_returns: int = 2,
        window_seconds: float = 600.0,
    ) -> None:
        super().__init__(monitor)
        self.min_passes = min_passes
        self.min_returns = min_returns
        self.window_seconds = window_seconds
        self.exchange = exchange
        self.key_history = key_history
        self._my_novelty: _Bounded[int] = _Bounded(256)  # my earlier passes -> novelty then

    def __call__(self, event: Any) -> Any:
        if event.kind in self.KINDS:
            p = event.payload
            partner = str(p.get("to"))
            passes = self.exchange(event.agent)
            self._pair(event, partner, passes)
            self._ring(event, passes)
            self._my_novelty.put(event.seq, self.monitor.novelty)
        elif event.kind == "shared_write" and self.key_history is not None:
            for entry in _writes(event):
                namespace = entry.get("namespace", "")
                passes = self.key_history(namespace, entry["key"])
                ref = LoopEventRef(
                    event.seq, event.kind, entry["key"], str(entry.get("sha256"))[:12], event.agent
                )
                passes.append((event.agent, "", str(entry.get("sha256")), event.time, ref))
                stream = f"key\x00{namespace}\x00{entry['key']}"
                subject = f"shared key {entry['key']} ({namespace})"
                self._judge_pair(stream, event.agent, passes, subject, "rewrote", event.time)
            self._my_novelty.put(event.seq, self.monitor.novelty)
        return event

    def _since_my_last(self, agent: str, run: list[Pass]) -> bool:
        """Whether this agent brought something new since its previous pass of ``run``."""
        for sender, _, _, _, ref in reversed(run[:-1]):
            if sender == agent and ref.seq in self._my_novelty:
                return self._my_novelty[ref.seq] != self.monitor.before
            if sender == agent:
                return False
        return False

    def _pair(self, event: Any, partner: str, passes: list[Pass]) -> None:
        pair = {event.agent, partner}
        between = [x for x in passes if x[0] in pair and x[1] in pair and x[0] != x[1]]
        stream = "\x00".join(sorted(pair))
        self._judge_pair(
            stream,
            event.agent,
            between,
            f"agents {event.agent} and {partner}",
            "passed",
            event.time,
        )

    def _judge_pair(
        self, stream: str, agent: str, passes: list[Pass], subject: str, verb: str, time: float
    ) -> None:
        run: list[Pass] = []
        for item in reversed(passes):  # the newest run alternating between two agents
            if run and (
                item[0] == run[-1][0]
                or (len(run) > 1 and item[0] != run[-2][0])
                or run[-1][3] - item[3] > self.window_seconds
            ):
                break
            run.append(item)
        run.reverse()
        best: list[Pass] = []
        distinct = 0
        if not self._since_my_last(agent, run):
            for length in range(self.min_passes, len(run) + 1):
                tail = run[-length:]
                count = len({content for _, _, content, _, _ in tail})
                if count * 2 <= length:
                    best, distinct = tail, count
        if not best:
            self.monitor.clear(self.kind, stream)
            return
        agents = " and ".join(dict.fromkeys(p[0] for p in best))
        self.report(
            stream,
            _confidence(0.8, (len(best) - self.min_passes) // 2),
            subject,
            [p[4] for p in best],
            f"{agents} {verb} the same content back and forth {len(best)} times"
            f" ({distinct} distinct)",
            "give one agent the final say, or change what is handed over",
            time,
        )

    def _ring(self, event: Any, passes: list[Pass]) -> None:
        """The same content handed on by this agent, going around other agents and coming
        back: ``min_returns`` returns with nothing new."""
        content = str(event.payload.get("content_sha256"))
        chain: list[Pass] = []
        returns = 0
        agents: set[str] = set()
        for item in reversed(passes):
            if item[2] != content or (chain and chain[-1][3] - item[3] > self.window_seconds):
                break
            chain.append(item)
            agents.update(item[:2])
            if item[1] == event.agent:
                returns += 1
        if (
            returns < self.min_returns
            or len(agents) < 3
            or self._since_my_last(event.agent, chain[::-1])
        ):
            return
        chain.reverse()
        self.report(
            f"ring\x00{content}",
            _confidence(0.8, returns - self.min_returns),
            f"agents {', '.join(sorted(agents))}",
            [p[4] for p in chain],
            f"the same content went around {len(agents)} agents and back to {event.agent}"
            f" {returns} times",
            "give one agent ownership of the task instead of passing it on",
            event.time,
        )
