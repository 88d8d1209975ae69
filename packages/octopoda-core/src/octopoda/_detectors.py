"""The five loop detectors: processors in the events pipeline.

A loop is repetition **without anything new**. ``NoveltyTracker`` runs first and decides,
for every event, whether it brought something new: a tool result its call had not
returned lately (compared without metadata such as timestamps and request ids:
``volatile_gist``; a bare acknowledgement such as "ok" or None is not new, except as the
first result of new arguments: "minor" progress, the agent did something it had not done
but learned nothing), a memory value that key did not recently have (bookkeeping is not: a
number one step from the key's last, like an attempt counter, or the current time as
epoch seconds or milliseconds or an ISO 8601 string), a message or handoff with new content (case,
spacing, key order and final full stops do not count), a shared value written by another
agent. Every detector keeps short chains per stream (a tool call with its
arguments, a memory key, a decision subject, an agent pair) and a chain only continues
while nothing new happened anywhere in between: progress elsewhere (a new result, an
edit, a new job) resets it. Minor progress ends every chain but a failing call retried
and a decision restated. A sleep (sleep, backoff, ...; see ``is_waiting``) is in no
chain, never new, and marks repeated successful calls as polling; a call that waits for
something (``wait_for_job``) marks them too and is itself a poll, new when it returns
something new and informative (``wait_for_epoch`` returning new metrics).

Defaults (every number is a constructor argument, settable per runtime through
``LoopPolicy(detectors={"retry": {"max_failures": 4}, ...})``):

* ``RetryDetector``: the same tool with the same arguments failing the same way
  ``max_failures`` (3) times in a row (error text compared with numbers, UUIDs and hex ids
  masked), failing in any way ``max_any_failures`` (5) times, or returning the same result
  ``max_same_results`` (5) times with no other tool call between (``max_polls`` (10)
  within ``window_seconds`` when the calls wait in between or are
  ``poll_interval_seconds`` (30) apart with no LLM call between: polling, so a monitor
  checking once a minute is not a loop). Calls more than ``window_seconds`` (300) apart do
  not chain.
* ``OscillationDetector``: a memory key (remember, forget, restore, import, shared writes),
  a decision subject (``context["subject"]``), or the sequence of tool calls with their
  outcomes cycling through 2..``max_period`` states (4; 8 for tool calls) for
  ``min_cycles`` (2) full cycles with nothing new; tool calls that wait in between or
  recur ``poll_interval_seconds`` apart (polling several jobs in turn) are left to
  retry's ``max_polls``.
* ``PingPongDetector``: two agents handing over or messaging each other alternately
  ``min_passes`` (4) times with at most half as many distinct contents, a content handed
  around a ring of agents back to the sender ``min_returns`` (2) times, or two agents
  alternately rewriting one shared key, while neither brings anything new (the partner's
  new tool calls between its passes count); passes more than ``window_seconds`` (600)
  apart do not chain.
* ``ReflectionDetector``: ``min_repeats`` (3) decisions on one subject saying the same
  (``gist_similarity`` >= 0.8: the same content words) with nothing new in between, at
  most ``window_seconds`` (180) apart, and not a periodic check (a wait between them and
  ``check_interval_seconds`` (30) apart).
  Statements that name different numbers or identifiers ("order 42", "order 43") are
  never the same; random hex ids (a trace id) may differ.
* ``RecallWriteDetector``: a key read and written back unchanged or with one of its recent
  values, or rewritten with the value it already has, ``min_churns`` (3) times; a forget
  (or restore, import) of the key ends the churn, and a write with a TTL (a renewal) is
  never churn.

Confidence starts at 0.7-0.8 at the threshold and halves the remaining doubt with every
further repetition. ``docs/loops.md`` is the user's guide to all of this.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import deque
from collections.abc import Callable, Iterable
from collections.abc import Set as AbstractSet
from datetime import datetime, timezone
from itertools import islice
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
    "content_gist",
    "gist_similarity",
    "informative",
    "is_acknowledgement",
    "is_waiting",
    "name_other_things",
    "normalize_error",
    "volatile_gist",
]

_V = TypeVar("_V")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_MASK = re.compile(r"0x[0-9a-fA-F]+|[0-9a-fA-F]{8,}|\w*\d\w*")
_NAME_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
_WAIT_FIRST = frozenset({"wait", "await"})  # wait_for_job, WaitUntilReady
_WAIT_ANYWHERE = frozenset({"sleep", "backoff"})  # time.sleep, exponential_backoff
_WAIT_ALONE = frozenset({"delay", "pause", "idle", "throttle", "wait", "sleep"})
_WAIT_UNITS = frozenset(
    {"s", "ms", "sec", "secs", "second", "seconds", "minute", "minutes", "for", "a", "bit", "while"}
)
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


_TOKEN = re.compile(r"\w+|[^\w\s]", re.UNICODE)


def content_gist(body: str) -> str:
    """What a message or handoff says, whatever its case, spacing or key order: the first
    16 hex digits of the SHA-256 of its tokens. ``body`` is the content's canonical JSON;
    its tokens are the ``\\w+`` runs and other non-space characters of its keys (sorted),
    strings and numbers, in order, case-folded, with each string's final full stops and
    exclamation marks dropped, joined by one space. "Implement the login page." and
    "implement the login  page\\n" have one gist; "a + b" and "a - b", "-5" and "5",
    "deploy now?" and "deploy now" do not."""
    try:
        stack: list[Any] = [json.loads(body)]
    except ValueError:
        stack = [body]
    tokens: list[str] = []
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            for key in sorted(value, reverse=True):
                stack.append(value[key])
                stack.append(key)
        elif isinstance(value, list):
            stack.extend(reversed(value))
        elif isinstance(value, str):
            tokens.extend(_TOKEN.findall(value.casefold().strip().rstrip(".!")))
        elif value is not None:
            tokens.extend(_TOKEN.findall(str(value).casefold()))
    joined = " ".join(tokens).encode("utf-8", "surrogatepass")
    return hashlib.sha256(joined).hexdigest()[:_W]


_RESULT_METADATA = (
    "generated_at|generatedAt|fetched_at|fetchedAt|retrieved_at|retrievedAt|requested_at"
    "|requestedAt|served_at|servedAt|cached_at|cachedAt|responded_at|server_time|serverTime"
    "|timestamp|took|took_ms|tookMs|elapsed_ms|elapsedMs|response_time_ms|responseTimeMs"
    "|request_id|requestId|x_request_id|trace_id|traceId|span_id|spanId|correlation_id"
    "|correlationId|etag|ETag|nonce"
)
_ARGUMENT_NOISE = (
    "nonce|idempotency_key|idempotencyKey|request_id|requestId|trace_id|traceId"
    "|correlation_id|correlationId|cache_buster|cachebuster|nocache|ts|_ts|_t|_"
)
_JSON_VALUE = r'(?:"(?:[^"\\]|\\.)*"|-?\d[\d.eE+-]*)'
_VOLATILE = re.compile(rf'"(?:{_RESULT_METADATA})":{_JSON_VALUE}')
_VOLATILE_ARGS = re.compile(rf'"(?:{_ARGUMENT_NOISE})":{_JSON_VALUE}')
_UUID_HINT = re.compile(r"-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-")  # (a fast prefilter)
_VOLATILE_MAX_CHARS = 16384


def volatile_gist(text: str, *, arguments: bool = False) -> str | None:
    """The first 16 hex digits of the SHA-256 of a result's canonical JSON with its
    metadata masked (UUIDs, and the values of response-metadata keys: ``fetched_at``,
    ``generated_at``, ``timestamp``, ``took_ms``, ``request_id``, ``trace_id``, ``etag``,
    ... exactly; a record's own ``starts_at`` or ``latency_ms`` is data), or None when it
    has none: the same data fetched again with a fresh timestamp is the same result. For
    ``arguments``, only the values of ``nonce``, ``idempotency_key``, ``request_id``,
    ``trace_id``, ``correlation_id`` and cache busters (``ts``, ``_``, ``nocache``): a
    call retried with a fresh idempotency key is the same call (an id that names what to
    act on is not masked). Texts over 16,384 characters are compared whole: scanning
    them would cost far more than their digest."""
    if len(text) > _VOLATILE_MAX_CHARS:
        return None
    masked, n = (_VOLATILE_ARGS if arguments else _VOLATILE).subn(_mask_volatile, text)
    if not arguments and _UUID_HINT.search(masked):
        masked, uuids = _UUID.subn("#", masked)
        n += uuids
    if not n:
        return None
    return hashlib.sha256(masked.encode("utf-8", "surrogatepass")).hexdigest()[:_W]


def _mask_volatile(match: re.Match[str]) -> str:
    found = match.group()
    return found[: found.index('":') + 2] + "#"


def normalize_error(text: str) -> str:
    """Error text with UUIDs, hex ids and anything containing a digit masked, so
    "timeout after 3012 ms (request 9f2c...)" repeats as the same failure."""
    return _MASK.sub("#", _UUID.sub("#", text.strip()))


_DIGIT = re.compile(r"\d")
_waiting_names: dict[str, int] = {}


def is_acknowledgement(preview: Any) -> bool:
    """Whether a tool result only acknowledges (None, true, "ok", {"status": "logged"}):
    short and without a number, it brings no information."""
    text = str(preview)
    return len(text) <= 24 and _DIGIT.search(text) is None


_SLEEPS, _BLOCKS = 1, 2


def _wait_kind(tool_name: str) -> int:
    """0: not a wait; ``_SLEEPS``: only waits (sleep, backoff, pause_seconds); ``_BLOCKS``:
    waits for something and says how it is (wait_for_job, WaitUntilReady)."""
    known = _waiting_names.get(tool_name)
    if known is None:
        words = [w.lower() for w in _NAME_WORD.findall(tool_name)]
        if not words:
            known = 0
        elif not _WAIT_ANYWHERE.isdisjoint(words) or (
            words[0] in _WAIT_ALONE and all(w in _WAIT_UNITS for w in words[1:])
        ):
            known = _SLEEPS
        elif words[0] in _WAIT_FIRST:
            known = _BLOCKS
        else:
            known = 0
        if len(_waiting_names) < 4096:
            _waiting_names[tool_name] = known
    return known


def is_waiting(tool_name: str) -> bool:
    """Whether a tool's name says it waits: its words (split at punctuation and camelCase)
    start with "wait", or include "sleep" or "backoff", or are only "delay", "pause",
    "idle" or "throttle" with a unit ("pause_seconds"). ``pause_subscription``,
    ``get_delivery_delay`` and ``join_waitlist`` do not wait. A sleep is neutral (in no
    chain, never new, unless it fails); a call that waits for something (``wait_for_job``)
    is a poll: it marks the calls around it as polling and is judged like them."""
    return _wait_kind(tool_name) != 0


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


_RANDOM_ID = re.compile(r"[0-9a-f]{8,}")


def _names_something(word: str) -> bool:
    return (
        _DIGIT.search(word) is not None
        and " " not in word
        and (word.isdigit() or _RANDOM_ID.fullmatch(word) is None)
    )


def name_other_things(a: AbstractSet[str], b: AbstractSet[str]) -> bool:
    """Whether the words of two texts differ in a number or an identifier ("order 42" and
    "order 43", "INV2231", "v2", "3rd"): then they are about different things, however
    alike the rest. Random hex ids ("trace 8f3a2c1d", parts of UUIDs) do not count."""
    return any(_names_something(w) for w in a ^ b)


def _same_gist(a: frozenset[str], b: frozenset[str]) -> float:
    if not a and not b:
        return 1.0
    if name_other_things(a, b):
        return 0.0
    small, large = (a, b) if len(a) <= len(b) else (b, a)
    if len(small) >= 3 and small <= large and len(large) <= 2 * len(small):
        return 1.0  # the same statement with words added ("..., final answer")
    return len(a & b) / len(a | b)


def gist_similarity(a: str, b: str) -> float:
    """How much two texts say the same, in [0, 1]: the Jaccard overlap of their content
    words (filler like "I should", "let me", "the" dropped, crude stems), or 1.0 when one
    only adds words to the other; 0.0 when they name different identifiers or numbers
    (another order id). Restatements score high; statements about other things (another
    database) score low."""
    return _same_gist(_gist(a), _gist(b))


def _confidence(base: float, extra: int) -> float:
    """``base`` at the threshold, halving the remaining doubt with each extra repetition."""
    return round(1.0 - (1.0 - base) * (0.5 ** max(0, extra)), 4)


class _Bounded(dict[Any, _V], Generic[_V]):
    """A dict that forgets its oldest entries (first in, first out) once it holds more
    than ``size``. It drops an eighth at a time, so forgetting costs one call in many,
    and a plain dict is cheaper to use than an OrderedDict."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size

    def put(self, key: Any, value: _V) -> _V:
        self[key] = value
        if len(self) > self.size:
            for old in list(islice(self, len(self) - self.size + self.size // 8)):
                del self[old]
        return value


def _writes(event: Any) -> Iterable[dict[str, Any]]:
    writes = event.payload.get("writes")
    return writes if isinstance(writes, list) else ()


def _read_stream(agent: str, namespace: str, key: str) -> str:
    """A key as a stream: the key itself in the agent's own memory (the same stream as its
    writes, whose entries name a namespace only when it is not the agent's own)."""
    return key if namespace == "agent:" + agent else f"{namespace}\x00{key}"


# Streams keep their recent states as one string of fixed-width records (the first 16 hex
# digits of a SHA-256, or of a 64-bit hash): one object per stream instead of a list of
# strings, which matters because detection runs between SQLite statements that leave
# little of it in the CPU cache. A chance collision of two 64-bit records could at worst
# make two states look alike; it cannot lose or change data.
_W = 16
_TOMBSTONE = "-" * _W
_MASK64 = (1 << 64) - 1


def _record(digest: str | None) -> str:
    """A value's digest as a record."""
    if not digest:
        return _TOMBSTONE
    rec = digest[:_W]
    return rec if len(rec) == _W else f"{hash(digest) & _MASK64:016x}"


def _find(records: str, rec: str) -> int:
    """The index of ``rec`` as a whole record of ``records``, or -1."""
    i = records.find(rec)
    while i > 0 and i % _W:
        i = records.find(rec, i + 1)
    return i


def _records(records: str) -> list[str]:
    return [records[i : i + _W] for i in range(0, len(records), _W)]


class _Key:
    """What the detectors know about one memory key (or the sequence of tool calls): its
    recent values, oscillation's chain and recall-write's churn, in one object so that a
    write costs one lookup."""

    __slots__ = ("chain", "churns", "key", "novelty", "number", "read", "recent", "refs", "time")

    def __init__(self, key: str) -> None:
        self.key = key
        self.recent = ""  # the values of its last 6 writes (novelty, recall-write)
        self.chain = ""  # oscillation: its values since the last progress (<= 24)
        # oscillation: the events of the stream's last 24 states (a ring: the chain is always
        # its tail, so a new chain frees nothing)
        self.refs: list[tuple[Any, ...]] = []
        self.novelty = -1  # the novelty count after its last write
        self.time = 0.0  # and that write's time
        self.read: tuple[Any, tuple[Any, ...]] | None = None  # recall-write: a pending read
        self.churns: list[tuple[Any, ...]] | None = None  # recall-write: the churn so far
        self.number: float | None = None  # its last numeric value (a counter?)


_NUMBER_START = frozenset("-0123456789")
_QUOTED_DIGIT = frozenset(f'"{d}' for d in "0123456789")
_ISO_TIME = re.compile(r'"(\d{4}-\d\d-\d\d[T ]\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?:Z|[+-]\d\d:?\d\d)?)"')
_NOW_SECONDS = 120.0


def _learned(touched: list[tuple[Any, ...]], writes: Any, now: float) -> bool:
    """Whether a write of new values taught anything: not when every new value is
    bookkeeping, a counter one step from the key's last number or the current time (an
    epoch number or an ISO 8601 string within two minutes of the event)."""
    if len(writes) != len(touched):
        return True
    for (_, key, _, _, _, new), w in zip(touched, writes, strict=True):
        if new and not _bookkeeping(w.data, key, now):
            return True
    return False


def _bookkeeping(data: Any, key: _Key, now: float) -> bool:
    if not isinstance(data, str) or not data:
        return False
    if data[0] in _NUMBER_START:
        try:
            number = float(data)
        except ValueError:
            return False
        last, key.number = key.number, number
        return (last is not None and abs(number - last) == 1) or _near(number, now)
    return _is_now(data, now)


def _near(number: float, now: float) -> bool:
    """Whether a number is the time ``now`` in epoch seconds or milliseconds."""
    return abs(number - now) <= _NOW_SECONDS or abs(number / 1000 - now) <= _NOW_SECONDS


def _is_now(data: str, now: float) -> bool:
    """Whether JSON text ``data`` is the time ``now``: epoch seconds or an ISO 8601 string
    (naive ones read as UTC or local time) within two minutes."""
    if data[:1] in _NUMBER_START:
        try:
            return _near(float(data), now)
        except ValueError:
            return False
    if not (data[:1] == '"' and data[1:2].isdigit()):
        return False
    match = _ISO_TIME.fullmatch(data)
    if match is None:
        return False
    try:
        moment = datetime.fromisoformat(match.group(1).replace("Z", "+00:00"))
    except ValueError:
        return False
    if moment.tzinfo is None:  # local or UTC: either reading counts
        utc = moment.replace(tzinfo=timezone.utc).timestamp()
        return min(abs(utc - now), abs(moment.timestamp() - now)) <= _NOW_SECONDS
    return abs(moment.timestamp() - now) <= _NOW_SECONDS


def informative(preview: str, now: float) -> bool:
    """Whether a tool result (its preview) tells something: more than an acknowledgement,
    and not merely the current time."""
    return not is_acknowledgement(preview) and not _is_now(preview, now)


class _Detector:
    kind = ""
    kinds: frozenset[str] = frozenset()
    """The event kinds the guard routes to ``__call__`` (memory writes, reads and tool
    calls reach the key and call detectors through the novelty tracker instead)."""
    observes_reads = False

    def __init__(self, monitor: LoopMonitor) -> None:
        self.monitor = monitor

    def __call__(self, event: Any) -> Any:
        """A processor for the kinds in ``kinds`` (none here)."""
        return event

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
    """Decides for every event whether it brought something new, and runs the detectors.

    Called as a processor, it counts the action, judges novelty, then hands the event on:
    memory writes and tool calls to the key and call chains it keeps itself (one lookup
    and one object per memory key; the oscillation, recall-write and retry detectors are
    asked to judge a chain only when it repeats), other kinds to the detectors whose
    ``kinds`` include them. ``attach`` connects the detectors (the guard does).

    A tool result is new when its (tool, arguments) stream had not returned it in its
    last 8 calls that returned something, and it is more than an acknowledgement; a memory
    value is new when its key did not have it in its last 6 writes.

    Detection runs inside every write, between SQLite statements that leave little of it
    in the CPU cache, so the common path (a write or call that brought something new) is
    kept short, in one function, touching few objects.
    """

    observes_reads = True
    __slots__ = (
        "_actions",
        "_chain_polled",
        "_chain_waits",
        "_poll_gap",
        "_routes",
        "_seen",
        "detectors",
        "keys",
        "monitor",
        "oscillation",
        "recall_write",
        "retry",
        "runs",
    )

    def __init__(self, monitor: LoopMonitor, *, memory: int = 4096) -> None:
        self.monitor = monitor
        self.keys: _Bounded[_Key] = _Bounded(memory)
        self.runs: _Bounded[_Run] = _Bounded(memory)
        self._seen: _Bounded[bool] = _Bounded(memory)
        self._actions = _Key("tool calls")
        self._chain_waits = 0  # the wait count when the tool-call chain began
        self._chain_polled = False  # a call in it recurred a poll interval later
        self._poll_gap = 30.0  # calls this far apart are polling (retry's poll interval)
        self.detectors: list[Any] = []
        self._routes: dict[str, list[Callable[[Any], Any]]] = {}
        self.retry: RetryDetector | None = None
        self.oscillation: OscillationDetector | None = None
        self.recall_write: RecallWriteDetector | None = None

    def attach(self, detectors: Iterable[Any]) -> None:
        """Run these detectors: the retry, oscillation and recall-write detectors get
        memory writes and tool calls from the chains kept here; every detector gets the
        kinds it names in ``kinds``."""
        self.detectors = list(detectors)
        self._routes = {}
        for d in self.detectors:
            if isinstance(d, RetryDetector):
                self.retry = d
                self._poll_gap = d.poll_interval_seconds
            elif isinstance(d, OscillationDetector):
                self.oscillation = d
            elif isinstance(d, RecallWriteDetector):
                self.recall_write = d

    def _route(self, kind: str) -> list[Callable[[Any], Any]]:
        routes = self._routes[kind] = [d for d in self.detectors if kind in d.kinds]
        return routes

    def _new(self, fingerprint: Any) -> bool:
        seen = self._seen
        if fingerprint in seen:
            return False
        seen.put(fingerprint, True)
        return True

    def __call__(self, event: Any) -> Any:
        return self.process(event)

    def process(self, event: Any) -> Any:
        """The pipeline step (the guard passes this bound method: calling an instance
        costs more than calling a method)."""
        kind = event.kind
        monitor = self.monitor
        time = event.time
        # (equality with the runtime's own constants first: cheaper than a set lookup)
        if kind == "remember" or kind == "tool_call" or kind not in NOT_ACTIONS:
            # count the action (LoopMonitor.tick, inlined)
            monitor._actions += 1
            monitor._now = time
            if monitor._active and (
                monitor._actions > monitor._due_actions
                or time > monitor._due_time
                or monitor.novelty >= monitor._due_novelty
            ):
                monitor._expire()
        if kind == "remember" or kind in WRITE_KINDS:  # the hot path: every remember
            writes = event.payload.get("writes")
            if not isinstance(writes, list):
                writes = ()
            keys = self.keys
            touched = []
            novel = False
            for entry in writes:
                namespace = entry.get("namespace")
                name = entry["key"]
                stream = name if namespace is None else f"{namespace}\x00{name}"
                key = keys.get(stream)
                if key is None:
                    key = keys.put(stream, _Key(name))
                sha = entry.get("sha256")
                rec = sha[:_W] if sha else _TOMBSTONE
                if len(rec) != _W:
                    rec = _record(sha)
                recent = key.recent
                at = recent.find(rec)
                if at > 0 and at % _W:
                    at = _find(recent, rec)
                if at < 0:  # a value the key did not have in its last 6 writes
                    novel = True
                touched.append((stream, key, rec, entry, recent, at < 0))
            ws = event.writes
            if novel and ws:  # (bookkeeping? only numbers and quoted times can be)
                d = ws[0].data
                if len(ws) > 1 or (
                    type(d) is str and (d[:1] in _NUMBER_START or d[:2] in _QUOTED_DIGIT)
                ):
                    novel = _learned(touched, ws, time)
            before = monitor.before = monitor.novelty
            monitor.event_novel = novel
            novelty = monitor.novelty = before + 1 if novel else before
            osc, churn = self.oscillation, self.recall_write
            seq = event.seq
            for stream, key, rec, entry, recent, _ in touched:
                # does this write continue the key's chains (nothing new since its last)?
                same = before == key.novelty
                follows = same and (osc is None or time - key.time <= osc.window_seconds)
                key.recent = (recent if len(recent) < 6 * _W else recent[_W:]) + rec
                if osc is not None:  # (OscillationDetector.observe, inlined)
                    refs = key.refs
                    refs.append((seq, kind))
                    if len(refs) > 24:
                        del refs[0]
                    chain = key.chain
                    if follows:
                        at = chain.find(rec)
                        if at > 0 and at % _W:
                            at = _find(chain, rec)
                        key.chain = (chain if len(chain) < 24 * _W else chain[_W:]) + rec
                    else:
                        key.chain, at = rec, -1
                    if at < 0:
                        if monitor._active:
                            monitor.clear(osc.kind, stream)
                    elif not chain.endswith(rec):  # (a repeat is not an alternation)
                        osc.judge(stream, key, time, osc.max_period)
                key.novelty, key.time = novelty, time
                if churn is None:
                    continue
                if kind == "remember" or kind == "shared_write":
                    if key.read is not None or key.churns is not None or recent.endswith(rec):
                        # (recall-write: nothing to do for a new value written without a read)
                        churn.observe_write(stream, key, rec, entry, event, recent, same)
                elif key.churns is not None:  # a forget, restore or import ends a churn
                    churn.end(stream, key)
            routes = self._routes.get(kind)
            if routes is None:
                routes = self._route(kind)
            for detector in routes:  # (ping-pong, for shared writes)
                detector(event)
            return event
        if kind == "tool_call":
            p = event.payload
            name, args = p["name"], p.get("args_gist") or p["args_sha256"]
            runs = self.runs
            run = runs.get((name, args))
            if run is None:
                run = runs.put((name, args), _Run(name, args, p.get("args_preview", "")))
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
                rec = result[:_W]
                results = run.results
                at = results.find(rec)
                if at > 0 and at % _W:
                    at = _find(results, rec)
                if at < 0:  # a result this call had not returned lately
                    run.results = (results if len(results) < 8 * _W else results[_W:]) + rec
                    preview = str(p.get("result_preview"))  # (is_acknowledgement, inlined)
                    novel = len(preview) > 24 or _DIGIT.search(preview) is not None
                    if not novel and not results:
                        novel = True  # new arguments, acknowledged: minor progress
                        monitor.minor += 1
            monitor.event_novel = novel
            if novel:
                monitor.novelty = before + 1
            if run.blocking:  # a wait for something: a poll (new only when it tells news)
                monitor.waits += 1
            monitor.calls += 1
            osc = self.oscillation
            if osc is not None:  # (OscillationDetector.observe, inlined)
                rec = run.tag + outcome[1:7]
                actions = self._actions
                refs = actions.refs
                refs.append((event.seq, kind, name, run.preview))
                if len(refs) > 24:
                    del refs[0]
                chain = actions.chain
                if before != actions.novelty or time - actions.time > osc.window_seconds:
                    actions.chain, at = rec, -1
                    self._chain_waits, self._chain_polled = monitor.waits, False
                else:
                    at = chain.find(rec)
                    if at > 0 and at % _W:
                        at = _find(chain, rec)
                    if (
                        at >= 0
                        and time - run.time >= self._poll_gap
                        and run.thoughts == monitor.thoughts
                    ):  # this call again a poll interval later, no model call between
                        self._chain_polled = True
                    actions.chain = (chain if len(chain) < 24 * _W else chain[_W:]) + rec
                actions.novelty, actions.time = monitor.novelty, time
                if at < 0:
                    if monitor._active:
                        monitor.clear(osc.kind, _ACTIONS)
                elif (
                    not chain.endswith(rec)
                    and monitor.waits == self._chain_waits
                    and not self._chain_polled
                ):
                    # (a repeat is not an alternation; calls that waited in between are
                    # polling, which retry judges against its max_polls)
                    osc.judge(_ACTIONS, actions, time, osc.max_action_period)
            retry = self.retry  # (after oscillation, which reads the run's last call)
            if retry is not None:
                retry.observe(event, name, failed, outcome, run)
            return event
        novel = False
        if kind in ("handoff", "message_sent", "broadcast", "message_read"):
            p = event.payload
            novel = self._new(("content", p.get("content_gist") or p.get("content_sha256")))
        elif kind == "llm_call":
            monitor.thoughts += 1
        elif kind == "read":
            p = event.payload
            data = p.get("data")
            namespace, name = p["namespace"], p["key"]
            if data is not None and not namespace.startswith("agent:"):
                novel = self._new((namespace, name, _digest(data)))
            if self.recall_write is not None:
                stream = _read_stream(event.agent, namespace, name)
                key = self.keys.get(stream)
                if key is None:
                    key = self.keys.put(stream, _Key(name))
                preview = "(missing)" if data is None else str(data)[:60]
                key.read = (data, (0, "read", name, preview))
        monitor.event_novel = novel
        monitor.before = monitor.novelty
        if novel:
            monitor.novelty += 1
        routes = self._routes.get(kind)
        if routes is None:
            routes = self._route(kind)
        for detector in routes:
            detector(event)
        return event


# -- retry ----------------------------------------------------------------------------------


class _Run:
    """One (tool, arguments) stream: what is the same for all its calls, the results it
    returned lately (for novelty), and its chain of calls since the last progress (their
    seqs: the calls share name and arguments)."""

    __slots__ = (
        "args",
        "at",
        "blocking",
        "calls",
        "failures",
        "learned",
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
        self.args = args  # the digest of its arguments (without nonces)
        self.preview = preview
        kind = _wait_kind(name)
        self.waiting = kind == _SLEEPS  # sleep, backoff: neutral
        self.blocking = kind == _BLOCKS  # wait_for_job: a poll
        self.tag = f"{hash((name, args)) & 0xFFFFFFFFFF:010x}"  # its part of an action state
        self.results = ""  # the results of its last 8 calls that returned one
        self.outcome = ""
        self.novelty = -1
        self.learned = -1  # the novelty count without minor progress, after its last call
        self.waits = 0
        self.thoughts = 0
        self.at = 0  # the tool-call count at its last call
        self.time = 0.0
        self.polled = False
        self.calls: list[tuple[int, float]] = []  # (seq, time)
        self.failures: list[int] = []


class RetryDetector(_Detector):
    """The same tool with the same arguments, failing or returning the same result. The
    novelty tracker keeps a run per (tool, arguments) and hands each call to ``observe``."""

    kind = "retry"

    def __init__(
        self,
        monitor: LoopMonitor,
        *,
        max_failures: int = 3,
        max_any_failures: int = 5,
        max_same_results: int = 5,
        max_polls: int = 10,
        poll_interval_seconds: float = 30.0,
        window_seconds: float = 300.0,
    ) -> None:
        super().__init__(monitor)
        self.max_failures = max_failures
        self.max_any_failures = max_any_failures
        self.max_same_results = max_same_results
        self.max_polls = max_polls
        self.poll_interval_seconds = poll_interval_seconds
        self.window_seconds = window_seconds
        self._first_threshold = min(max_failures, max_any_failures, max_same_results, max_polls)

    def observe(self, event: Any, name: str, failed: bool, outcome: str, run: _Run) -> None:
        """One call (not a waiting one) of tool ``name`` in ``run``; ``outcome`` is its
        error or result digest."""
        p = event.payload
        monitor = self.monitor
        time = event.time
        if (
            # (a failure after failures: only what taught the agent something is progress)
            (
                run.learned != monitor.before - monitor.minor
                if failed and run.failures
                else monitor.before != run.novelty or run.outcome != outcome
            )
            or time - run.time > self.window_seconds
            # (the same answer again after other calls, not polling: a call asked anew,
            # like a FAQ answered again for the next user, not again and again)
            or (
                not failed
                and monitor.calls - run.at > 1
                and not run.polled
                and not self._polling(run, time)
            )
        ):  # a new result, or progress: not a loop; the stream starts afresh
            if monitor._active:
                monitor.clear(self.kind, f"{name}\x00{run.args}")
            run.outcome = outcome
            run.polled = False
            run.calls = [(event.seq, time)]
            if failed:
                run.failures = [event.seq]
            elif run.failures:
                run.failures = []
        else:
            if run.outcome != outcome:  # failing again, differently: the any-failure chain
                run.outcome = outcome
                run.calls = []
            calls = run.calls
            if calls and self._polling(run, time):
                run.polled = True
            calls.append((event.seq, time))
            if len(calls) > 32:
                del calls[0]
            if failed:
                run.failures.append(event.seq)
                if len(run.failures) > 32:
                    del run.failures[0]
            elif run.failures:
                run.failures = []
        run.novelty, run.waits, run.time = monitor.novelty, monitor.waits, time
        run.thoughts, run.at = monitor.thoughts, monitor.calls
        if failed:
            run.learned = monitor.novelty - monitor.minor
        if len(run.calls) >= self._first_threshold or len(run.failures) >= self._first_threshold:
            self._judge(f"{name}\x00{run.args}", name, run, p, failed, time)

    def _polling(self, run: _Run, time: float) -> bool:
        """Whether this call of ``run`` polls: a wait since its last call, or a poll
        interval with no model call between (a timer's, not a model's)."""
        monitor = self.monitor
        return run.waits != monitor.waits or (
            time - run.time >= self.poll_interval_seconds and run.thoughts == monitor.thoughts
        )

    def _judge(
        self, stream: str, name: str, run: _Run, p: dict[str, Any], failed: bool, time: float
    ) -> None:
        chain = run.calls
        if run.polled and not failed:  # polling: how often within the window
            chain = [c for c in chain if time - c[1] <= self.window_seconds]
        same = len(chain)
        calls = [(seq, "tool_call", name, run.preview) for seq, _ in chain]
        if failed and same >= self.max_failures:
            self.report(
                stream,
                _confidence(0.8, same - self.max_failures),
                f"tool {name}",
                calls,
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
                [(seq, "tool_call", name, run.preview) for seq in run.failures],
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
                    calls,
                    f"{name} was {how} {same} times with the same arguments and returned the"
                    " same result each time",
                    f"use the result {name} already returned, change the arguments, or give"
                    " up waiting",
                    time,
                )


# -- oscillation ----------------------------------------------------------------------------


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


_ACTIONS = "actions\x01"


class OscillationDetector(_Detector):
    """A value or a choice alternating between a few states with nothing new: memory keys
    and the tool-call sequence (handed over by the novelty tracker: ``observe``), and
    decisions on one subject (``__call__``)."""

    kind = "oscillation"
    kinds = frozenset({"decision"})

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
        self._streams: _Bounded[_Key] = _Bounded(streams)  # decision subjects
        self._decisions: dict[str, list[tuple[frozenset[str], str]]] = {}

    def __call__(self, event: Any) -> Any:
        if event.kind == "decision":
            context = event.payload.get("context")
            subject = str(context.get("subject", "")) if isinstance(context, dict) else ""
            text = str(event.payload.get("decision", ""))
            ref = (event.seq, "decision", subject or "decision", text[:80])
            rec = self._decision_state(subject, text)
            stream = f"decision\x01{subject}"
            holder = self._streams.get(stream)
            if holder is None:
                holder = self._streams.put(stream, _Key(subject))
            self.observe(stream, holder, rec, ref, event.time, self.max_period)
        return event

    def _decision_state(self, subject: str, text: str) -> str:
        """Restatements of one decision are one state (the first wording's id)."""
        gist = _gist(text)
        known = self._decisions.setdefault(subject, [])
        for other, state in known:
            if _same_gist(gist, other) >= self.decision_similarity:
                return state
        state = hashlib.sha256(text.encode()).hexdigest()[:_W]
        known.append((gist, state))
        del known[:-16]
        return state

    def observe(
        self,
        stream: str,
        s: _Key,
        rec: str,
        ref: tuple[Any, ...],
        time: float,
        max_period: int,
    ) -> None:
        """State ``rec`` of ``stream``, from the event ``ref``. (The novelty tracker runs
        the same steps inline for memory keys, whose refs are ``(seq, kind)``: the key and
        the value come at report time, and for tool calls.)"""
        monitor = self.monitor
        refs = s.refs  # a ring of the stream's last 24 events: the chain is its tail
        refs.append(ref)
        if len(refs) > 24:
            del refs[0]
        chain = s.chain
        if monitor.before != s.novelty or time - s.time > self.window_seconds:
            s.chain, at = rec, -1  # progress since the stream's last state: a new chain
        else:
            at = chain.find(rec)
            if at > 0 and at % _W:
                at = _find(chain, rec)
            s.chain = (chain if len(chain) < 24 * _W else chain[_W:]) + rec
        s.novelty, s.time = monitor.novelty, time
        if at < 0:  # a state not seen in this chain: progress, and no cycle can end here
            if monitor._active:
                monitor.clear(self.kind, stream)
        elif not chain.endswith(rec):  # (a repeat is not an alternation)
            self.judge(stream, s, time, max_period)

    def judge(self, stream: str, s: _Key, time: float, max_period: int) -> None:
        """Whether the chain of ``stream``, whose last state repeats an earlier one, is
        cycling."""
        if len(s.chain) < 2 * self.min_cycles * _W:
            return
        states = _records(s.chain)
        found = find_cycle(states, max_period=max_period, min_cycles=self.min_cycles)
        if found is None:
            return
        period, length = found
        refs = s.refs
        if len(refs[-1]) == 2:  # a memory key
            tail = [
                (seq, kind, s.key, state[:12])
                for (seq, kind), state in zip(refs[-length:], states[-length:], strict=True)
            ]
        else:
            tail = refs[-length:]
        if stream.startswith("decision\x01"):
            subject = ("decisions " + stream[9:]).strip()
        elif stream == _ACTIONS:
            subject = "tool calls"
        else:
            subject = "key " + stream.replace("\x00", " ")
        names = ", ".join(dict.fromkeys(r[2] for r in tail[-period:]))
        self.report(
            stream,
            _confidence(0.7, length - period * self.min_cycles),
            subject,
            tail,
            f"{subject} keeps cycling through the same {period} states ({names}):"
            f" {length} changes with nothing new",
            "decide once and record why, or find out which steps keep undoing each other",
            time,
        )


# -- recall-write ---------------------------------------------------------------------------


def _digest(data: Any) -> str | None:
    if data is None:
        return None
    raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    return hashlib.sha256(raw).hexdigest()


class RecallWriteDetector(_Detector):
    """Read a key and write back an unchanged or cycling value (or rewrite it unchanged),
    again and again. Reads and writes reach it through the novelty tracker."""

    kind = "recall_write"

    def __init__(self, monitor: LoopMonitor, *, min_churns: int = 3) -> None:
        super().__init__(monitor)
        self.min_churns = min_churns

    def __call__(self, event: Any) -> Any:
        return event

    def end(self, stream: str, churn: _Key) -> None:
        """The key's churn is over (a new value, progress, or not a write of a value)."""
        churn.churns = None
        if self.monitor._active:
            self.monitor.clear(self.kind, stream)

    def observe_write(
        self,
        stream: str,
        churn: _Key,
        rec: str,
        entry: dict[str, Any],
        event: Any,
        recent: str,
        follows: bool,
    ) -> None:
        """A write of value ``rec`` to a key after a read of it, or repeating its last
        value, or continuing a churn. ``recent`` holds the values of its last writes before
        this one; ``follows`` says nothing new happened since the last of them (recall-write
        has no time window)."""
        read = churn.read
        if "expires_at" in entry:  # a renewal: rewriting a value to extend it is not churn
            churn.read = None
            if churn.churns is not None:
                self.end(stream, churn)
            return
        if read is not None:
            churn.read = None
            unchanged = rec == _record(_digest(read[0]))
            repeat = unchanged or _find(recent, rec) >= 0
        else:
            unchanged = repeat = recent.endswith(rec)
        if not repeat or not follows:
            if churn.churns is not None:
                self.end(stream, churn)
            if not repeat:
                return
        refs = churn.churns
        if refs is None:
            refs = churn.churns = []
        if read is not None:
            refs.append(read[1])
        refs.append((event.seq, event.kind, entry["key"], str(entry.get("sha256") or "-")[:12]))
        if len(refs) > 48:
            del refs[:-48]
        n = sum(1 for r in refs if r[0])
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
                refs[-24:],
                f"{entry['key']} was {what}",
                "skip the write when the value did not change, or find what the read-modify-"
                "write step is waiting for",
                event.time,
            )


# -- reflection -----------------------------------------------------------------------------


class _Said:
    __slots__ = ("novelty", "said", "time", "waits")

    def __init__(self) -> None:  # (the detector sets novelty, time and waits)
        self.novelty = 0
        self.time = 0.0
        self.waits = 0
        self.said: deque[tuple[frozenset[str], LoopEventRef]] = deque(maxlen=24)


class ReflectionDetector(_Detector):
    """The same decision, plan or self-critique restated with nothing new in between.
    Decisions with a wait between them and ``check_interval_seconds`` apart, or more than
    ``window_seconds`` apart, are a periodic check (the same verdict each time), not a
    loop."""

    kind = "reflection"
    kinds = frozenset({"decision"})

    def __init__(
        self,
        monitor: LoopMonitor,
        *,
        min_repeats: int = 3,
        similarity: float = 0.8,
        window_seconds: float = 180.0,
        check_interval_seconds: float = 30.0,
    ) -> None:
        super().__init__(monitor)
        self.min_repeats = min_repeats
        self.similarity = similarity
        self.window_seconds = window_seconds
        self.check_interval_seconds = check_interval_seconds
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
            or monitor.before - monitor.minor != said.novelty
            or event.time - said.time > self.window_seconds
            or (
                monitor.waits != said.waits
                and event.time - said.time >= self.check_interval_seconds
            )
        ):
            if said is not None:
                monitor.clear(self.kind, stream)
            said = self._subjects.put(stream, _Said())
        said.novelty, said.time = monitor.novelty - monitor.minor, event.time
        said.waits = monitor.waits
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
"""One pass: (sender, receiver, content, time, ref); content is the ``content_gist`` of a
message or handoff, the SHA-256 of a shared value."""


class PingPongDetector(_Detector):
    """Agents passing the same thing back and forth: handoffs or messages between two agents
    or around a ring, or two agents alternately rewriting one shared key.

    ``exchange(agent)`` returns the recent passes sent or received by ``agent`` in store
    order (oldest first; the event being stored included), and ``key_history(namespace,
    key)`` the recent writes of a shared key, oldest first, as
    ``(author, "", value_sha256, time, ref)``. ``partner_work(agent, start, middle, end)``
    says whether ``agent`` made a successful tool call between its events ``middle`` and
    ``end`` that it had not made between ``start`` (or ``middle``) and ``middle``: then the
    exchange is productive however alike the passes. The runtime reads all three from the
    store, so agents in other processes count.
    """

    kind = "ping_pong"
    KINDS = ("handoff", "message_sent")
    kinds = frozenset({"handoff", "message_sent", "shared_write"})

    def __init__(
        self,
        monitor: LoopMonitor,
        exchange: Callable[[str], list[Pass]],
        key_history: Callable[[str, str], list[Pass]] | None = None,
        partner_work: Callable[[str, int | None, int, int], bool] | None = None,
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
        self.partner_work = partner_work
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
            # the longest newest tail in which every content repeats on average
            seen: set[str] = set()
            for length, item in enumerate(reversed(run), 1):
                seen.add(item[2])
                if len(seen) * 2 > len(run):
                    break  # no longer tail can repeat enough
                if length >= self.min_passes and len(seen) * 2 <= length:
                    best, distinct = run[-length:], len(seen)
        if best and self.partner_work is not None:  # (rare: a ping-pong so far)
            theirs = [p for p in best if p[0] != agent]
            seqs = [p[4].seq for p in theirs]
            if len(seqs) >= 2 and self.partner_work(
                theirs[-1][0], seqs[-3] if len(seqs) >= 3 else None, seqs[-2], seqs[-1]
            ):
                best = []
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
        p = event.payload
        content = str(p.get("content_gist") or p.get("content_sha256"))
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
