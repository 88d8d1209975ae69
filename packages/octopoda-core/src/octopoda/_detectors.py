"""The five loop detectors: processors in the events pipeline.

Each keeps bounded state per stream and costs O(1) (or O(window)) per event. Defaults
(every number is a constructor argument):

* ``RetryDetector``: one tool called with the same arguments ``max_failures`` (3) times in a
  row failing the same way (error text compared with numbers and hex ids masked), or
  ``max_same_results`` (5) times returning the same result. A new result or a success resets
  it; calls more than ``window_seconds`` (300) apart do not chain.
* ``OscillationDetector``: a memory key, a decision subject (``context["subject"]``), or the
  sequence of tool calls with their outcomes cycling through 2..``max_period`` (4) states for
  ``min_cycles`` (2) full cycles with no new state. A new state resets it.
* ``PingPongDetector``: two agents handing over or messaging each other alternately
  ``min_passes`` (4) times with at most half as many distinct contents (nothing new).
* ``ReflectionDetector``: ``min_repeats`` (3) near-identical decisions (text similarity >=
  0.8) with no new tool result, memory value or message in between.
* ``RecallWriteDetector``: a key read and then written back unchanged, or with one of its
  recent values, ``min_churns`` (3) times. A genuinely new value resets it.

Confidence starts at the threshold (0.7-0.8) and rises with every further repetition.
"""

from __future__ import annotations

import hashlib
import re
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeVar

from ._loops import LoopEventRef, LoopMonitor, LoopSignal
from ._records import Event
from ._timeline import text_similarity

__all__ = [
    "OscillationDetector",
    "PingPongDetector",
    "RecallWriteDetector",
    "ReflectionDetector",
    "RetryDetector",
    "normalize_error",
]

_V = TypeVar("_V")
_MASK = re.compile(r"0x[0-9a-fA-F]+|[0-9a-fA-F]{8,}|\d+")
NOT_ACTIONS = frozenset({"loop_detected", "paused", "resumed", "snapshot"})


def normalize_error(text: str) -> str:
    """Error text with numbers and hex ids masked, so "timeout after 3012 ms (req 9f2c...)"
    repeats as the same failure."""
    return _MASK.sub("#", text.strip())


def _confidence(base: float, extra: int) -> float:
    """``base`` at the threshold, halving the remaining doubt with each extra repetition."""
    return round(1.0 - (1.0 - base) * (0.5 ** max(0, extra)), 4)


class _Bounded(OrderedDict[str, _V], Generic[_V]):
    """A dict that forgets its least recently touched streams beyond ``size``."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size

    def touch(self, key: str, make: Callable[[], _V]) -> _V:
        value = self.get(key)
        if value is None:
            value = self[key] = make()
            if len(self) > self.size:
                self.popitem(last=False)
        else:
            self.move_to_end(key)
        return value


def _writes(event: Event) -> Iterable[dict[str, Any]]:
    writes = event.payload.get("writes")
    return writes if isinstance(writes, list) else ()


def _stream_key(event: Event, entry: dict[str, Any]) -> str:
    return f"{entry.get('namespace', 'agent:' + event.agent)}\x00{entry['key']}"


class _Detector:
    kind = ""
    observes_reads = True

    def __init__(self, monitor: LoopMonitor) -> None:
        self.monitor = monitor

    def signal(
        self,
        confidence: float,
        subject: str,
        events: Iterable[LoopEventRef],
        explanation: str,
        suggestion: str,
        time: float,
    ) -> LoopSignal:
        return LoopSignal(
            self.kind, confidence, subject, tuple(events), explanation, suggestion, time
        )


# -- retry ----------------------------------------------------------------------------------


class _Run:
    __slots__ = ("calls", "outcome", "time")

    def __init__(self, outcome: str, time: float) -> None:
        self.outcome = outcome
        self.time = time
        self.calls: deque[LoopEventRef] = deque(maxlen=32)


class RetryDetector(_Detector):
    """The same tool with the same arguments, failing or returning the same result."""

    kind = "retry"

    def __init__(
        self,
        monitor: LoopMonitor,
        *,
        max_failures: int = 3,
        max_same_results: int = 5,
        window_seconds: float = 300.0,
        streams: int = 512,
    ) -> None:
        super().__init__(monitor)
        self.max_failures = max_failures
        self.max_same_results = max_same_results
        self.window_seconds = window_seconds
        self._runs: _Bounded[_Run] = _Bounded(streams)

    def __call__(self, event: Event) -> Event:
        if event.kind != "tool_call":
            return event
        p = event.payload
        stream = f"{p['name']}\x00{p['args_sha256']}"
        failed = "error_sha256" in p
        outcome = ("e" + p["error_sha256"]) if failed else ("r" + str(p.get("result_sha256")))
        run = self._runs.get(stream)
        if run is None or run.outcome != outcome or event.time - run.time > self.window_seconds:
            if run is not None:
                self.monitor.clear(self.kind, stream)  # a new result, or success: progress
            run = _Run(outcome, event.time)
            self._runs[stream] = run
            if len(self._runs) > self._runs.size:
                self._runs.popitem(last=False)
        preview = p.get("error") if failed else p.get("result_preview")
        run.calls.append(LoopEventRef(event.seq, "tool_call", p["name"], p.get("args_preview", "")))
        run.time = event.time
        n = len(run.calls)
        threshold = self.max_failures if failed else self.max_same_results
        if n >= threshold:
            what = f"failed the same way ({preview})" if failed else "returned the same result"
            self.monitor.report(
                stream,
                self.signal(
                    _confidence(0.8 if failed else 0.7, n - threshold),
                    f"tool {p['name']}",
                    run.calls,
                    f"{p['name']} was called {n} times with the same arguments and {what}"
                    " each time",
                    f"stop calling {p['name']} with these arguments: change them, back off, or"
                    " report the problem instead of retrying"
                    if failed
                    else f"use the result {p['name']} already returned, or change the arguments",
                    event.time,
                ),
            )
        return event


# -- oscillation ----------------------------------------------------------------------------


class _States:
    __slots__ = ("refs", "states", "time")

    def __init__(self) -> None:
        self.states: deque[str] = deque(maxlen=16)
        self.refs: deque[LoopEventRef] = deque(maxlen=16)
        self.time = 0.0


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
    """A value or a choice alternating between a few states with no new state."""

    kind = "oscillation"
    observes_reads = False

    def __init__(
        self,
        monitor: LoopMonitor,
        *,
        min_cycles: int = 2,
        max_period: int = 4,
        window_seconds: float = 600.0,
        decision_similarity: float = 0.8,
        streams: int = 512,
    ) -> None:
        super().__init__(monitor)
        self.min_cycles = min_cycles
        self.max_period = max_period
        self.window_seconds = window_seconds
        self.decision_similarity = decision_similarity
        self._streams: _Bounded[_States] = _Bounded(streams)
        self._decision_texts: dict[str, list[tuple[str, str]]] = {}

    def __call__(self, event: Event) -> Event:
        kind = event.kind
        if kind == "remember" or kind == "forget" or kind == "shared_write":
            for entry in _writes(event):
                state = entry.get("sha256") or "-"
                ref = LoopEventRef(event.seq, kind, entry["key"], state[:12])
                self._observe("key " + _stream_key(event, entry), state, ref, event.time)
        elif kind == "decision":
            context = event.payload.get("context")
            subject = context.get("subject", "") if isinstance(context, dict) else ""
            text = str(event.payload.get("decision", ""))
            state = self._decision_state(str(subject), text)
            ref = LoopEventRef(event.seq, kind, str(subject) or "decision", text[:80])
            self._observe(f"decision {subject}", state, ref, event.time)
        elif kind == "tool_call":
            p = event.payload
            outcome = p.get("error_sha256") or p.get("result_sha256") or ""
            state = f"{p['name']}\x00{p['args_sha256']}\x00{outcome}"
            ref = LoopEventRef(event.seq, kind, p["name"], p.get("args_preview", ""))
            self._observe("actions", state, ref, event.time)
        return event

    def _decision_state(self, subject: str, text: str) -> str:
        """Near-identical decisions are one state: the first text of its cluster."""
        known = self._decision_texts.setdefault(subject, [])
        for representative, state in known:
            if text_similarity(text, representative) >= self.decision_similarity:
                return state
        state = hashlib.sha256(text.encode()).hexdigest()[:16]
        known.append((text, state))
        del known[:-16]
        return state

    def _observe(self, stream: str, state: str, ref: LoopEventRef, time: float) -> None:
        s = self._streams.touch(stream, _States)
        if s.states and time - s.time > self.window_seconds:
            s.states.clear()
            s.refs.clear()
        new_state = state not in s.states
        s.states.append(state)
        s.refs.append(ref)
        s.time = time
        if new_state:
            self.monitor.clear(self.kind, stream)
            return
        if s.states[-1] == (s.states[-2] if len(s.states) > 1 else None):
            return  # a repeat, not an alternation (retry and recall-write cover repeats)
        found = find_cycle(list(s.states), max_period=self.max_period, min_cycles=self.min_cycles)
        if found is None:
            return
        period, length = found
        refs = list(s.refs)[-length:]
        subject = stream.replace("\x00", " ")
        self.monitor.report(
            stream,
            self.signal(
                _confidence(0.7, length - period * self.min_cycles),
                subject,
                refs,
                f"{subject} keeps cycling through the same {period} states"
                f" ({length} changes, nothing new)",
                "decide once and record why, or find out which two steps keep undoing each other",
                time,
            ),
        )


# -- recall-write ---------------------------------------------------------------------------


class _Churn:
    __slots__ = ("read", "refs", "values")

    def __init__(self) -> None:
        self.read: tuple[Any, LoopEventRef] | None = None
        self.values: deque[str] = deque(maxlen=4)
        self.refs: deque[LoopEventRef] = deque(maxlen=24)


def _digest(data: Any) -> str | None:
    if data is None:
        return None
    raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    return hashlib.sha256(raw).hexdigest()


class RecallWriteDetector(_Detector):
    """Read a key, write back an unchanged or cycling value, again and again."""

    kind = "recall_write"

    def __init__(self, monitor: LoopMonitor, *, min_churns: int = 3, streams: int = 1024) -> None:
        super().__init__(monitor)
        self.min_churns = min_churns
        self._keys: _Bounded[_Churn] = _Bounded(streams)

    def __call__(self, event: Event) -> Event:
        kind = event.kind
        if kind == "read":
            p = event.payload
            stream = f"{p['namespace']}\x00{p['key']}"
            preview = str(p.get("data"))[:60] if p.get("data") is not None else "(missing)"
            churn = self._keys.touch(stream, _Churn)
            churn.read = (p.get("data"), LoopEventRef(0, "read", p["key"], preview))
        elif kind == "remember" or kind == "shared_write":
            for entry in _writes(event):
                self._write(_stream_key(event, entry), event, entry)
        return event

    def _write(self, stream: str, event: Event, entry: dict[str, Any]) -> None:
        churn = self._keys.touch(stream, _Churn)
        sha = entry.get("sha256") or "-"
        read, churn.read = churn.read, None
        if read is not None:
            unchanged = sha == _digest(read[0])
            if unchanged or sha in churn.values:
                churn.refs.append(read[1])
                churn.refs.append(LoopEventRef(event.seq, event.kind, entry["key"], sha[:12]))
                n = len(churn.refs) // 2
                if n >= self.min_churns:
                    how = "unchanged" if unchanged else "with a value it already had"
                    self.monitor.report(
                        stream,
                        self.signal(
                            _confidence(0.8, n - self.min_churns),
                            f"key {entry['key']}",
                            churn.refs,
                            f"{entry['key']} was read and written back {how} {n} times in a row",
                            "skip the write when the value did not change, or find what the"
                            " read-modify-write step is waiting for",
                            event.time,
                        ),
                    )
            else:
                churn.refs.clear()
                self.monitor.clear(self.kind, stream)
        elif sha not in churn.values:
            churn.refs.clear()
            self.monitor.clear(self.kind, stream)
        churn.values.append(sha)


# -- reflection -----------------------------------------------------------------------------


class ReflectionDetector(_Detector):
    """The same decision, plan or self-critique restated with no new information between."""

    kind = "reflection"
    observes_reads = False

    def __init__(
        self,
        monitor: LoopMonitor,
        *,
        min_repeats: int = 3,
        similarity: float = 0.8,
        memory: int = 2048,
    ) -> None:
        super().__init__(monitor)
        self.min_repeats = min_repeats
        self.similarity = similarity
        self._since_progress: deque[tuple[str, LoopEventRef]] = deque(maxlen=24)
        self._seen: _Bounded[bool] = _Bounded(memory)

    def _progress(self, fingerprint: str) -> None:
        if fingerprint not in self._seen:
            self._seen.touch(fingerprint, lambda: True)
            if self._since_progress:
                self._since_progress.clear()
                self.monitor.clear(self.kind, "decisions")
        else:
            self._seen.move_to_end(fingerprint)

    def __call__(self, event: Event) -> Event:
        kind = event.kind
        if kind == "tool_call":
            p = event.payload
            self._progress(f"t{p['name']}\x00{p.get('error_sha256') or p.get('result_sha256')}")
        elif kind in ("remember", "shared_write", "message_received"):
            for entry in _writes(event):
                self._progress(f"w{entry['key']}\x00{entry.get('sha256')}")
            if kind == "message_received":
                self._progress(f"m{event.payload.get('body_sha256')}")
        elif kind == "decision":
            text = str(event.payload.get("decision", ""))
            reasoning = event.payload.get("reasoning")
            full = f"{text} {reasoning}" if isinstance(reasoning, str) else text
            ref = LoopEventRef(event.seq, kind, "decision", text[:80])
            similar = [
                r for t, r in self._since_progress if text_similarity(full, t) >= self.similarity
            ]
            self._since_progress.append((full, ref))
            n = len(similar) + 1
            if n >= self.min_repeats:
                self.monitor.report(
                    "decisions",
                    self.signal(
                        _confidence(0.8, n - self.min_repeats),
                        "decisions",
                        [*similar, ref],
                        f"the agent restated the same decision {n} times with no new"
                        " information in between",
                        "act on the decision, or gather new information before deciding again",
                        event.time,
                    ),
                )
        return event


# -- ping-pong ------------------------------------------------------------------------------


class PingPongDetector(_Detector):
    """Two agents passing the same thing back and forth: handoffs, messages, or alternating
    writes to one shared key.

    ``exchange(agent, partner)`` returns the recent passes between two agents, and
    ``key_history(namespace, key)`` the recent writes of a shared key, oldest first, as
    ``(sender, content_sha256, LoopEventRef)``. The runtime reads both from the store, so
    agents in other processes count.
    """

    kind = "ping_pong"
    observes_reads = False
    KINDS = ("handoff", "message_sent")

    def __init__(
        self,
        monitor: LoopMonitor,
        exchange: Callable[[str, str], list[tuple[str, str, LoopEventRef]]],
        key_history: Callable[[str, str], list[tuple[str, str, LoopEventRef]]] | None = None,
        *,
        min_passes: int = 4,
    ) -> None:
        super().__init__(monitor)
        self.min_passes = min_passes
        self.exchange = exchange
        self.key_history = key_history

    def __call__(self, event: Event) -> Event:
        if event.kind in self.KINDS:
            p = event.payload
            partner = str(p.get("to"))
            passes = self.exchange(event.agent, partner)
            ref = LoopEventRef(
                event.seq, event.kind, partner, str(p.get("preview", "")), event.agent
            )
            passes.append((event.agent, str(p.get("content_sha256")), ref))
            stream = "\x00".join(sorted((event.agent, partner)))
            self._judge(stream, passes, f"agents {event.agent} and {partner}", "passed", event.time)
        elif event.kind == "shared_write" and self.key_history is not None:
            for entry in _writes(event):
                namespace = entry.get("namespace", "")
                passes = self.key_history(namespace, entry["key"])
                ref = LoopEventRef(
                    event.seq, event.kind, entry["key"], str(entry.get("sha256"))[:12]
                )
                passes.append((event.agent, str(entry.get("sha256")), ref))
                subject = f"shared key {entry['key']} ({namespace})"
                self._judge(
                    f"key\x00{namespace}\x00{entry['key']}", passes, subject, "rewrote", event.time
                )
        return event

    def _judge(
        self,
        stream: str,
        passes: list[tuple[str, str, LoopEventRef]],
        subject: str,
        verb: str,
        time: float,
    ) -> None:
        run: list[tuple[str, str, LoopEventRef]] = []
        for item in reversed(passes):  # the newest run alternating between two agents
            if run and (item[0] == run[-1][0] or (len(run) > 1 and item[0] != run[-2][0])):
                break
            run.append(item)
        run.reverse()
        best: list[tuple[str, str, LoopEventRef]] = []
        distinct = 0
        for length in range(self.min_passes, len(run) + 1):
            tail = run[-length:]
            count = len({content for _, content, _ in tail})
            if count * 2 <= length:
                best, distinct = tail, count
        if not best:
            self.monitor.clear(self.kind, stream)
            return
        agents = " and ".join(dict.fromkeys(sender for sender, _, _ in best))
        self.monitor.report(
            stream,
            self.signal(
                _confidence(0.8, (len(best) - self.min_passes) // 2),
                subject,
                [ref for _, _, ref in best],
                f"{agents} {verb} the same content back and forth {len(best)} times"
                f" ({distinct} distinct)",
                "give one agent the final say, or change what is handed over",
                time,
            ),
        )
