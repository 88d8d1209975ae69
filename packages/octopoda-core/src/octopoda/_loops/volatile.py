"""What changes without news: the volatile parts of results, arguments, errors and memory
values, masked before they are compared.

* ``volatile_gist``: a tool result without its metadata (the values of response-metadata
  keys by exact name: ``fetched_at``, ``timestamp``, ``updated_at``, ``duration_ms``,
  ``request_id``, ``etag``, ...), UUIDs, elapsed times in text ("12 failed in 0.41s",
  "took 812 ms", "(12ms)"), request ids in text ("request id: req_ZkQpWm") and echoes of
  the call's own free-text arguments ("results for 'octopoda pricing'"); or tool
  arguments without their nonces (``arguments=True``).
* ``normalize_error``: error text with numbers, UUIDs, hex ids, request ids and echoes of
  the arguments masked.
* ``value_gist``: a memory value without its metadata (as a result's), attempt counters
  by name (``attempt``, ``retry_count``) and the current time wherever it is in the
  value (epoch seconds or milliseconds, or ISO 8601, within two minutes of the write).
* ``is_now``: whether a value is the current time.

Masking costs a scan of the text: texts over 16,384 characters are compared whole, and
each scan starts from a literal (a quote, a space and a word) so that text without any
of it costs little.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from json.encoder import encode_basestring
from typing import Any

from .._regex import lazy_pattern
from .chain import WIDTH

__all__ = [
    "NUMBER_START",
    "free_texts",
    "is_now",
    "near_now",
    "normalize_error",
    "value_gist",
    "volatile_gist",
]

NUMBER_START = frozenset("-0123456789")
"""How the JSON text of a number starts."""

_UUID = lazy_pattern(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_UUID_HINT = lazy_pattern(r"-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-")  # (a fast prefilter)
_MASK = lazy_pattern(r"0x[0-9a-fA-F]+|[0-9a-fA-F]{8,}|\w*\d\w*")
_MAX_CHARS = 16384

# -- metadata by key name ---------------------------------------------------------------------

_RESULT_METADATA = (
    # when the response was made
    "generated_at|generatedAt|fetched_at|fetchedAt|retrieved_at|retrievedAt|requested_at"
    "|requestedAt|served_at|servedAt|cached_at|cachedAt|responded_at|server_time|serverTime"
    "|timestamp|ts|checked_at|checkedAt|polled_at|polledAt"
    # when the record was last touched
    "|updated_at|updatedAt|modified_at|modifiedAt|last_modified|lastModified|last_updated"
    "|lastUpdated|saved_at|savedAt"
    # how long it took
    "|took|took_ms|tookMs|took_s|elapsed|elapsed_ms|elapsedMs|elapsed_s|elapsed_seconds"
    "|response_time_ms|responseTimeMs|duration_ms|durationMs|duration_s|execution_time_ms"
    "|executionTimeMs|processing_time_ms|processingTimeMs|query_time_ms|queryTimeMs"
    # which request it was
    "|request_id|requestId|RequestId|x_request_id|x-request-id|X-Request-Id"
    "|x-amzn-requestid|x-amz-request-id|x-amz-id-2|HostId|trace_id|traceId|span_id|spanId"
    "|correlation_id|correlationId|etag|ETag|nonce"
    # how often it was tried
    "|attempt|attempts|attempt_number|attemptNumber|retry_count|retryCount|retry_attempt"
    "|RetryAttempts"
)
_ARGUMENT_NOISE = (
    "nonce|idempotency_key|idempotencyKey|request_id|requestId|trace_id|traceId"
    "|correlation_id|correlationId|cache_buster|cachebuster|nocache|ts|_ts|_t|_"
)
_JSON_VALUE = r'(?:"(?:[^"\\]|\\.)*"|-?\d[\d.eE+-]*)'


def _trie(words: list[str]) -> str:
    """A regular expression matching exactly ``words``, as a trie of their characters:
    it tries one branch per character where an alternation of 90 names tries them all
    (three times faster on a typical result)."""
    root: dict[str, Any] = {}
    for word in words:
        node = root
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}

    def expression(node: dict[str, Any]) -> str:
        branches = [re.escape(ch) + expression(node[ch]) for ch in sorted(node) if ch]
        if not branches:
            return ""
        group = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        if "" in node:  # (a word ends here, and longer ones go on)
            return f"(?:{group})?" if len(branches) == 1 else group + "?"
        return group

    return expression(root)


class _Lazy:
    """A name trie's pattern, built on first use: building and compiling the two tries costs
    more than the rest of this package's import together."""

    __slots__ = ("_pattern", "_words")

    def __init__(self, words: str) -> None:
        self._words = words
        self._pattern: re.Pattern[str] | None = None

    @property
    def pattern(self) -> re.Pattern[str]:
        pattern = self._pattern
        if pattern is None:
            trie = _trie(self._words.split("|"))
            pattern = self._pattern = re.compile(rf'"{trie}":{_JSON_VALUE}')
        return pattern

    def subn(self, repl: Callable[[re.Match[str]], str], text: str) -> tuple[str, int]:
        pattern = self._pattern
        return (pattern or self.pattern).subn(repl, text)


_VOLATILE = _Lazy(_RESULT_METADATA)
_VOLATILE_ARGS = _Lazy(_ARGUMENT_NOISE)

# -- volatile words in text -------------------------------------------------------------------

_UNITS = r"(?:ms|s|sec|secs|seconds|min|mins|minutes)\b"
_ELAPSED = lazy_pattern(  # "1 failed in 0.41s", "took 812 ms" (after a space)
    rf" (?:in|took|after|elapsed:?|[Tt]ime:) *~?\d+(?:\.\d+)? ?{_UNITS}"
)
_TIME_LINE = lazy_pattern(rf"(?:\\n|^)Time: *~?\d+(?:\.\d+)? ?{_UNITS}")  # jest: "\nTime: 1.2 s"
_ELAPSED_PAREN = lazy_pattern(r"\(\d+(?:\.\d+)? ?m?s\)")  # mocha's "(12ms)"
_TEXT_ID = lazy_pattern(  # "request id: req_ZkQpWm", "X-Request-Id=abc-def-ghi"
    r"(?i)(?:request|req|trace|correlation)[ _-]?id\b(?:\\?[\"'])?\W{0,3}[A-Za-z0-9][\w-]{5,}"
)


def _has_id_hint(text: str) -> bool:
    """Whether text may name a request id (cheaper than the search itself)."""
    return "equest" in text or "req_" in text or "race" in text or "orrelation" in text


def _mask_value(match: re.Match[str]) -> str:
    found = match.group()
    return found[: found.index('":') + 2] + "#"


def _mask_text(text: str) -> tuple[str, int]:
    """Elapsed times and request ids in text masked, and how many."""
    n = 0
    if " " in text:
        text, k = _ELAPSED.subn(" #", text)
        n += k
    if "s)" in text:
        text, k = _ELAPSED_PAREN.subn("(#)", text)
        n += k
    if "Time:" in text:
        text, k = _TIME_LINE.subn("Time: #", text)
        n += k
    if _has_id_hint(text):
        text, k = _TEXT_ID.subn("#", text)
        n += k
    return text, n


# -- echoes of the arguments ------------------------------------------------------------------


def free_texts(value: Any) -> list[str]:
    """The free texts of a JSON value: its strings (not its keys) that contain a space."""
    out: list[str] = []
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            if " " in v.strip():
                out.append(v)
        elif isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, (list, tuple)):
            stack.extend(v)
    return out


def _mask_echoes(text: str, args: Any) -> tuple[str, int]:
    """``text`` with the call's free-text arguments masked where the result repeats them
    (as written, in another case, or URL-encoded): then lower-cased, so that the same
    results under a reworded query compare equal. A text that is mostly the echo is left
    as it is (it says nothing else)."""
    n = 0
    low = ""
    for echo in free_texts(args):
        needle = encode_basestring(echo.strip())[1:-1].lower()
        if len(text) < len(needle) + 24:
            continue
        if not low:
            low = text.lower()
        for form in (needle, needle.replace(" ", "+"), needle.replace(" ", "%20")):
            if form in low:
                low = low.replace(form, "#")
                n += 1
    return (low, n) if n else (text, 0)


# -- the gists --------------------------------------------------------------------------------


def volatile_gist(text: str, *, arguments: bool = False, echoes: Any = None) -> str | None:
    """The first 16 hex digits of the SHA-256 of a result's canonical JSON with its
    volatile parts masked, or None when it has none: the values of metadata keys (exactly
    these names: ``fetched_at``, ``generated_at``, ``timestamp``, ``updated_at``,
    ``took_ms``, ``duration_ms``, ``request_id``, ``trace_id``, ``etag``, ``attempt``, ...;
    a record's own ``starts_at`` or ``latency_ms`` is data), UUIDs, elapsed times and
    request ids in text, and the free texts of ``echoes`` (the call's arguments) where the
    result repeats them. The same data fetched again with a fresh timestamp, or under a
    reworded query the API echoes, is the same result. For ``arguments``, only the values
    of ``nonce``, ``idempotency_key``, ``request_id``, ``trace_id``, ``correlation_id``
    and cache busters (``ts``, ``_``, ``nocache``): a call retried with a fresh
    idempotency key is the same call (an id that names what to act on is not masked).
    Texts over 16,384 characters are compared whole: scanning them would cost far more
    than their digest."""
    if len(text) > _MAX_CHARS:
        return None
    if arguments:
        masked, n = _VOLATILE_ARGS.subn(_mask_value, text)
    else:
        masked, n = _VOLATILE.subn(_mask_value, text) if '":' in text else (text, 0)
        if _UUID_HINT.search(masked):
            masked, k = _UUID.subn("#", masked)
            n += k
        masked, k = _mask_text(masked)
        n += k
        if echoes is not None:
            masked, k = _mask_echoes(masked, echoes)
            n += k
    if not n:
        return None
    return hashlib.sha256(masked.encode("utf-8", "surrogatepass")).hexdigest()[:WIDTH]


def normalize_error(text: str, args: Any = None) -> str:
    """Error text with UUIDs, request ids ("request id: req_ZkQpWm"), hex ids and anything
    containing a digit masked, and the free texts of ``args`` (the call's arguments) where
    the error repeats them, so "timeout after 3012 ms (request 9f2c...)" repeats as the
    same failure, and so does "no index matches 'octopoda pricing'" for a reworded query."""
    text = text.strip()
    if args is not None:  # (first: the echo as the arguments have it, digits and all)
        text = _mask_echoes(text, args)[0]
    if _has_id_hint(text):
        text = _TEXT_ID.sub("#", text)
    return _MASK.sub("#", _UUID.sub("#", text))


# -- memory values ----------------------------------------------------------------------------

_EPOCH = lazy_pattern(r"(?<![\w.])1\d{9}(?:\d{3})?(?:\.\d+)?(?![\w.])")
_ISO_IN_TEXT = lazy_pattern(
    r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?:Z|[+-]\d\d:?\d\d)?"
)
_NOW_SECONDS = 120.0


def value_gist(data: str, now: float) -> tuple[str, int]:
    """The record (16 hex digits of the SHA-256) of a memory value's JSON text with its
    volatile parts masked (as a result's, and the current time wherever it is in the
    value), and how many parts were masked (0: the record of ``data`` itself)."""
    masked, n = _VOLATILE.subn(_mask_value, data) if '":' in data else (data, 0)
    if _UUID_HINT.search(masked):
        masked, k = _UUID.subn("#", masked)
        n += k
    masked, k = _mask_text(masked)
    n += k

    def mask_now(match: re.Match[str]) -> str:
        nonlocal n
        if _is_time_now(match.group(), now):
            n += 1
            return "#"
        return match.group()

    epochs, dates = _now_hints(now)  # (scan only text that holds them: fast to find)
    if any(e in masked for e in epochs):
        masked = _EPOCH.sub(mask_now, masked)
    if any(d in masked for d in dates):
        masked = _ISO_IN_TEXT.sub(mask_now, masked)
    return hashlib.sha256(masked.encode("utf-8", "surrogatepass")).hexdigest()[:WIDTH], n


_hints: dict[int, tuple[frozenset[str], frozenset[str]]] = {}


def _now_hints(now: float) -> tuple[frozenset[str], frozenset[str]]:
    """What the current time looks like in text: the first six digits of epoch seconds
    (and milliseconds) and the dates (UTC and local) within two minutes of ``now``."""
    minute = int(now // 60)
    found = _hints.get(minute)
    if found is None:
        from datetime import datetime, timezone  # (once a minute: not at import)

        moments = (now - _NOW_SECONDS, now + _NOW_SECONDS)
        epochs = frozenset(str(int(m))[:6] for m in moments)
        dates = frozenset(
            day
            for m in moments
            for day in (
                datetime.fromtimestamp(m, timezone.utc).strftime("%Y-%m-%d"),
                datetime.fromtimestamp(m).strftime("%Y-%m-%d"),
            )
        )
        if len(_hints) > 64:
            _hints.clear()
        found = _hints[minute] = (epochs, dates)
    return found


def _is_time_now(found: str, now: float) -> bool:
    if found[:1].isdigit() and "-" not in found:
        return near_now(float(found), now)
    return _iso_now(found, now)


# -- the current time -------------------------------------------------------------------------


def near_now(number: float, now: float) -> bool:
    """Whether a number is the time ``now`` in epoch seconds or milliseconds."""
    return abs(number - now) <= _NOW_SECONDS or abs(number / 1000 - now) <= _NOW_SECONDS


_ISO_TIME = lazy_pattern(
    r'"(\d{4}-\d\d-\d\d[T ]\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?:Z|[+-]\d\d:?\d\d)?)"'
)


def is_now(data: str, now: float) -> bool:
    """Whether JSON text ``data`` is the time ``now``: epoch seconds or an ISO 8601 string
    (naive ones read as UTC or local time) within two minutes."""
    if data[:1] in NUMBER_START:
        try:
            return near_now(float(data), now)
        except ValueError:
            return False
    if not (data[:1] == '"' and data[1:2].isdigit()):
        return False
    match = _ISO_TIME.fullmatch(data)
    return match is not None and _iso_now(match.group(1), now)


def _iso_now(text: str, now: float) -> bool:
    from datetime import datetime, timezone  # (only for ISO-looking text: not at import)

    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return False
    if moment.tzinfo is None:  # local or UTC: either reading counts
        utc = moment.replace(tzinfo=timezone.utc).timestamp()
        return min(abs(utc - now), abs(moment.timestamp() - now)) <= _NOW_SECONDS
    return abs(moment.timestamp() - now) <= _NOW_SECONDS
