"""Lexical ranking, pure (no I/O): the text of a memory, a tokenizer and BM25.

The text of a memory is its key and every string in its value (a JSON string, or the
string leaves of a JSON object or array); bytes contribute nothing but the key. The stores'
full-text indexes hold this text, and :func:`bm25` ranks it in the process.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any, Final

from .._regex import lazy_pattern

__all__ = [
    "bm25",
    "coverage",
    "document_text",
    "index_words",
    "query_terms",
    "saturate",
    "string_leaves",
    "texts_of",
    "tokenize",
]

_WORD: Final = lazy_pattern(r"\w+")
_TERM: Final = lazy_pattern(r"[^\W_]+")  # letters and digits: a full-text index's words
_DECODER: Final = json.JSONDecoder()
K1: Final = 1.2
B: Final = 0.75
MAX_TERMS: Final = 32  # query words past this many are ignored (a pasted page is no query)
# Words that say little about what a memory is about; left out of :func:`coverage`'s count
# (unless a query has nothing else).
_STOPWORD_TEXT = (
    "a an and are as at be by did do does for from had has have how i in is it me my of "
    "on or our so that the their them they this to was we were what when where which who "
    "why will with you your"
)
STOPWORDS: Final = frozenset(_STOPWORD_TEXT.split())


_SCALARS: Final = (int, float, bool, type(None))
_SUFFIX_ENDS: Final = frozenset("gds")  # the last letters of _stem's suffixes


def string_leaves(value: Any) -> list[str]:
    """Every string in a JSON value (dict values, list items), in order."""
    if isinstance(value, str):
        return [value]
    if type(value) is dict or type(value) is list:  # most values: flat, no walk needed
        items = value.values() if type(value) is dict else value
        flat = [item for item in items if type(item) is str]
        if len(flat) == len(items) or all(
            type(item) is str or type(item) in _SCALARS for item in items
        ):
            return flat
    out: list[str] = []
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            out.append(node)
        elif isinstance(node, dict):
            stack.extend(reversed(list(node.values())))
        elif isinstance(node, (list, tuple)):
            stack.extend(reversed(node))
    return out


def texts_of(key: str, value: Any) -> list[str]:
    """The texts a memory is found by: its key, then the string leaves of its value."""
    return [key, *string_leaves(value)]


def document_text(key: str, encoding: str, data: str | bytes | None) -> str | None:
    """The text a store indexes for one stored version (``encoding`` and ``data`` as in
    a ``MemoryWrite``): key and strings, one per line; None for a version with no value
    (a tombstone or an erased version), which leaves the index. NUL characters and lone
    surrogates (which a JSON string may hold) become spaces and ``?``."""
    if encoding == "tombstone" or data is None:
        return None
    if encoding != "json" or not isinstance(data, str):
        return key
    try:  # (raw_decode: json.loads without its two white-space matches, half its time)
        value, end = _DECODER.raw_decode(data)
    except ValueError:
        end = -1
    if end != len(data):  # pragma: no cover - the runtime stores bare, valid JSON only
        try:
            value = json.loads(data)  # (white space around it: as json.loads reads it)
        except ValueError:
            return key
    text = "\n".join(texts_of(key, value))
    if "\x00" in text:
        text = text.replace("\x00", " ")
    if not text.isascii():
        text = text.encode("utf-8", "replace").decode("utf-8")
    return text


def index_words(text: str) -> str:
    """``text`` as its words (runs of letters and digits) separated by spaces: how a
    full-text index that has its own notion of tokens (PostgreSQL's parser reads
    ``user/name`` as one file path, ``a.b@c.d`` as one email) is given text, so that it
    splits words as FTS5's ``unicode61`` and :func:`query_terms` do."""
    return " ".join(_TERM.findall(text))


def _stem(word: str) -> str:
    # Just enough folding that "tea"/"teas" and "prefers"/"prefer" meet; not a real stemmer.
    if word[-1:] not in _SUFFIX_ENDS:  # (most words: no suffix to try)
        return word
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def tokenize(text: str) -> list[str]:
    """Lower-cased, lightly stemmed words of ``text`` (``\\w+`` runs)."""
    return [_stem(w) for w in _WORD.findall(text.lower())]


def query_terms(query: str) -> list[str]:
    """The distinct words of a query as a full-text index splits text (runs of letters
    and digits, lower-cased), in order, at most :data:`MAX_TERMS`; :data:`STOPWORDS` left
    out unless the query has nothing else. Any text is safe: what is not a letter or digit
    (quotes, operators, SQL) only separates words."""
    words = list(dict.fromkeys(w.lower() for w in _TERM.findall(query)))
    return ([w for w in words if w not in STOPWORDS] or words)[:MAX_TERMS]


def _fold(word: str) -> str:
    if not word.isascii():
        import unicodedata  # (for the first non-ASCII word: not at import)

        decomposed = unicodedata.normalize("NFKD", word)
        word = "".join(c for c in decomposed if not unicodedata.combining(c))
    return _stem(word)


def coverage(terms: Sequence[str], texts: Iterable[str]) -> tuple[float, tuple[str, ...]]:
    """Which of a query's ``terms`` (from :func:`query_terms`) occur in ``texts`` (case,
    accents and plural endings folded), and their share of the query's terms in [0, 1]
    (stopwords left out of the count when the query has other words)."""
    words = {_fold(w) for w in {w.lower() for text in texts for w in _TERM.findall(text)}}
    found = tuple(t for t in terms if _fold(t) in words)
    counted = [t for t in terms if t not in STOPWORDS] or list(terms)
    if not counted:
        return 0.0, found
    return sum(1 for t in counted if t in found) / len(counted), found


def saturate(raw: float) -> float:
    """A relevance score (BM25, ``ts_rank``: 0 and up) mapped into [0, 1): ``raw / (raw + 1)``."""
    return raw / (raw + 1.0) if raw > 0 else 0.0


def bm25(query: str, documents: Sequence[Iterable[str]]) -> list[float]:
    """BM25 score of each document (its texts) for ``query``; 0.0 when no term matches."""
    terms = set(tokenize(query))
    if not terms or not documents:
        return [0.0] * len(documents)
    bags = [Counter(t for text in doc for t in tokenize(text)) for doc in documents]
    lengths = [sum(bag.values()) for bag in bags]
    average = (sum(lengths) / len(lengths)) or 1.0
    n = len(bags)
    idf = {}
    for term in terms:
        df = sum(1 for bag in bags if term in bag)
        idf[term] = math.log((n - df + 0.5) / (df + 0.5) + 1.0)
    scores = []
    for bag, length in zip(bags, lengths, strict=True):
        score = 0.0
        for term in terms:
            tf = bag.get(term, 0)
            if tf:
                score += idf[term] * tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / average))
        scores.append(score)
    return scores
