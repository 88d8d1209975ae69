"""What a text says, whatever its wording: the gists and rules the novelty tracker and the
detectors judge by.

* ``content_gist``: a message or handoff, whatever its case, spacing, key order or final
  full stop.
* ``volatile_gist``, ``normalize_error`` (from ``volatile``, where the masking rules
  are): a tool result without its volatile parts, tool arguments without their nonces,
  error text with numbers and ids masked.
* ``word_gist`` / ``Gist``: the content words of a decision (reflection, oscillation of
  decisions), and ``name_other_things``: texts naming other numbers or identifiers.
* ``is_acknowledgement`` / ``informative``: a result that tells nothing ("ok", None, the
  current time).
* ``bookkeeping``: a written value that teaches nothing (a counter one step on, the
  current time).
* ``tool_kind`` / ``wait_kind`` / ``is_waiting``: tool names that sleep, wait for
  something, or think.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Set as AbstractSet
from typing import Any

from .._regex import lazy_pattern
from .chain import WIDTH
from .volatile import NUMBER_START, is_now, near_now, normalize_error, volatile_gist

__all__ = [
    "BLOCKS",
    "NUMBER_START",
    "QUOTED_DIGIT",
    "SLEEPS",
    "THINKS",
    "Gist",
    "bookkeeping",
    "content_gist",
    "digest",
    "gist_similarity",
    "informative",
    "is_acknowledgement",
    "is_now",
    "is_waiting",
    "name_other_things",
    "normalize_error",
    "tool_kind",
    "volatile_gist",
    "wait_kind",
    "word_gist",
]

_TOKEN = lazy_pattern(r"\w+|[^\w\s]", re.UNICODE)
_DIGIT = lazy_pattern(r"\d")


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
    return hashlib.sha256(joined).hexdigest()[:WIDTH]


def digest(data: Any) -> str | None:
    """The SHA-256 of stored value data (JSON text or bytes), or None for no value."""
    if data is None:
        return None
    raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    return hashlib.sha256(raw).hexdigest()


# -- the content words of a decision --------------------------------------------------------

_WORD = lazy_pattern(r"\w+", re.UNICODE)
_FILLER = (  # words that say nothing about what was decided
    "a an and are as at be been but by can could did do does for from had has have i i'll "
    "i'm in is it its it's just let let's me my need now of ok okay on or our should so "
    "that the then there this to try us was we we'll will with would you again going "
    "think maybe probably first next still also"
)
_STOPWORDS = frozenset(_FILLER.split())
_RANDOM_ID = lazy_pattern(r"[0-9a-f]{8,}")
_CACHE_WORDS = 16384
_CACHE_TEXTS = 1024
_texts: dict[str, Gist] = {}  # text (up to 512 characters) -> its gist
_words: dict[str, tuple[str, bool]] = {}  # word -> (its stem, "" for filler; names something?)


def _stem(word: str) -> str:
    """A crude stem: "changing", "changed", "changes" and "change" all become "chang"."""
    if len(word) > 4:
        for suffix in ("ing", "ed", "es", "e", "s"):
            if word.endswith(suffix):
                return word[: -len(suffix)]
    return word


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


class Gist:
    """The content words of a text (``word_gist``): case-folded, filler ("I should", "let
    me", "the") dropped, crudely stemmed; all its words when it has no others. ``names``
    are the words among them that name something (a number, an identifier: see
    ``name_other_things``), kept so that comparing two gists needs no second look at
    their words."""

    __slots__ = ("names", "words")

    def __init__(self, words: frozenset[str], names: frozenset[str]) -> None:
        self.words = words
        self.names = names

    def similarity(self, other: Gist) -> float:
        """How much the two say the same, in [0, 1]: the Jaccard overlap of their words, 1.0
        when one only adds words to the other (at least three, at most doubled), 0.0 when
        they name different numbers or identifiers."""
        a, b = self.words, other.words
        if not a and not b:
            return 1.0
        if self.names != other.names:  # (the named words of a ^ b: name_other_things)
            return 0.0
        small, large = (a, b) if len(a) <= len(b) else (b, a)
        if len(small) >= 3 and small <= large and len(large) <= 2 * len(small):
            return 1.0  # the same statement with words added ("..., final answer")
        return len(a & b) / len(a | b)


_NO_NAMES: frozenset[str] = frozenset()


def word_gist(text: str) -> Gist:
    """The :class:`Gist` of ``text``. Gists of recent texts are kept (agents restate their
    decisions word for word: that is what reflection looks for), and each word's stem is
    worked out once."""
    gist = _texts.get(text)
    if gist is None:
        gist = _word_gist(text)
        if len(text) <= 512:
            if len(_texts) >= _CACHE_TEXTS:
                _texts.clear()
            _texts[text] = gist
    return gist


def _word_gist(text: str) -> Gist:
    words = _WORD.findall(text.casefold())
    known = _words
    content = set()
    names = []
    for w in words:
        entry = known.get(w)
        if entry is None:
            if len(known) >= _CACHE_WORDS:
                known.clear()
            stem = "" if w in _STOPWORDS else _stem(w)
            entry = known[w] = (stem, bool(stem) and _names_something(stem))
        if entry[0]:
            content.add(entry[0])
            if entry[1]:
                names.append(entry[0])
    if not content:  # only filler: its words (which name nothing) are the gist
        return Gist(frozenset(words), _NO_NAMES)
    return Gist(frozenset(content), frozenset(names))


def gist_similarity(a: str, b: str) -> float:
    """How much two texts say the same, in [0, 1]: the Jaccard overlap of their content
    words (filler like "I should", "let me", "the" dropped, crude stems), or 1.0 when one
    only adds words to the other; 0.0 when they name different identifiers or numbers
    (another order id). Restatements score high; statements about other things (another
    database) score low."""
    return word_gist(a).similarity(word_gist(b))


# -- results that tell nothing, writes that teach nothing -----------------------------------

QUOTED_DIGIT = frozenset(f'"{d}' for d in "0123456789")
"""How the JSON text of an ISO 8601 time starts: only a value starting so, or a number
(``NUMBER_START``), can be bookkeeping."""


def is_acknowledgement(preview: Any) -> bool:
    """Whether a tool result only acknowledges (None, true, "ok", {"status": "logged"}):
    short and without a number, it brings no information."""
    text = preview if type(preview) is str else str(preview)  # (str() is a call)
    return len(text) <= 24 and _DIGIT.search(text) is None


def informative(preview: str, now: float) -> bool:
    """Whether a tool result (its preview) tells something: more than an acknowledgement,
    and not merely the current time."""
    return not is_acknowledgement(preview) and not is_now(preview, now)


def bookkeeping(data: Any, last: float | None, now: float) -> tuple[bool, float | None]:
    """Whether a newly written value (its JSON text ``data``) is bookkeeping: a number one
    step from ``last`` (the key's last number: an attempt or turn counter) or the current
    time (an epoch number or an ISO 8601 string within two minutes of ``now``); and the
    number it holds, if it is one (the key's next ``last``), else None."""
    if not isinstance(data, str) or not data:
        return False, None
    if data[0] in NUMBER_START:
        try:
            value = float(data)
        except ValueError:
            return False, None
        return (last is not None and abs(value - last) == 1) or near_now(value, now), value
    return is_now(data, now), None


# -- tools that wait ------------------------------------------------------------------------

_NAME_WORD = lazy_pattern(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
_WAIT_FIRST = frozenset({"wait", "await"})  # wait_for_job, WaitUntilReady
_WAIT_ANYWHERE = frozenset({"sleep", "backoff"})  # time.sleep, exponential_backoff
_WAIT_ALONE = frozenset({"delay", "pause", "idle", "throttle", "wait", "sleep"})
_WAIT_UNITS = frozenset(
    {"s", "ms", "sec", "secs", "second", "seconds", "minute", "minutes", "for", "a", "bit", "while"}
)
SLEEPS, BLOCKS, THINKS = 1, 2, 3
_THINK_CORE = frozenset(
    {"think", "thinking", "thought", "thoughts", "reflect", "reflection", "critique"}
    | {"ponder", "brainstorm", "reasoning", "deliberate", "sequentialthinking"}
)
_THINK_ALSO = frozenset({"tool", "step", "self", "sequential", "out", "loud", "inner", "a"})
_tool_kinds: dict[str, int] = {}


def tool_kind(tool_name: str) -> int:
    """0: a tool that acts; ``SLEEPS``: only waits (sleep, backoff, pause_seconds);
    ``BLOCKS``: waits for something and says how it is (wait_for_job, WaitUntilReady);
    ``THINKS``: a thought (``think``, ``reflect``, ``self_critique``, ``think_step``,
    ``sequential_thinking``: only such words)."""
    known = _tool_kinds.get(tool_name)
    if known is None:
        words = [w.lower() for w in _NAME_WORD.findall(tool_name)]
        if not words:
            known = 0
        elif not _WAIT_ANYWHERE.isdisjoint(words) or (
            words[0] in _WAIT_ALONE and all(w in _WAIT_UNITS for w in words[1:])
        ):
            known = SLEEPS
        elif words[0] in _WAIT_FIRST:
            known = BLOCKS
        elif not _THINK_CORE.isdisjoint(words) and all(
            w in _THINK_CORE or w in _THINK_ALSO for w in words
        ):
            known = THINKS
        else:
            known = 0
        if len(_tool_kinds) < 4096:
            _tool_kinds[tool_name] = known
    return known


def wait_kind(tool_name: str) -> int:
    """0: not a wait; ``SLEEPS`` or ``BLOCKS`` (see ``tool_kind``)."""
    kind = tool_kind(tool_name)
    return 0 if kind == THINKS else kind


def is_waiting(tool_name: str) -> bool:
    """Whether a tool's name says it waits: its words (split at punctuation and camelCase)
    start with "wait", or include "sleep" or "backoff", or are only "delay", "pause",
    "idle" or "throttle" with a unit ("pause_seconds"). ``pause_subscription``,
    ``get_delivery_delay`` and ``join_waitlist`` do not wait. A sleep is neutral (in no
    chain, never new, unless it fails); a call that waits for something (``wait_for_job``)
    is a poll: it marks the calls around it as polling and is judged like them."""
    return wait_kind(tool_name) != 0
