"""Search helpers for OctopodaStore (pure: no I/O): metadata filters, lexical ranking (BM25)
and cosine similarity."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from octopoda import InvalidInput

__all__ = [
    "bm25",
    "check_filter",
    "cosine",
    "lookup",
    "matches",
    "metadata_matches",
    "similarity",
    "string_leaves",
    "tokenize",
]

_WORD = re.compile(r"\w+")
_FILTER_KEY = re.compile(r"[A-Za-z0-9_.-]+")
K1 = 1.2
B = 0.75


def check_filter(wanted: Any) -> dict[str, Any]:
    """``wanted`` if it is a filter: a dict whose keys are letters, digits, ``_``, ``-`` and
    ``.`` (the keys LangGraph's SQLite and PostgreSQL backends accept)."""
    if not isinstance(wanted, dict):
        raise InvalidInput(f"a filter is a dict of keys and values, not {wanted!r}")
    for key in wanted:
        if not isinstance(key, str) or not _FILTER_KEY.fullmatch(key):
            raise InvalidInput(
                f"Invalid filter key: {key!r}. Filter keys contain only letters, digits,"
                " '_', '-' and '.'; a dotted key such as 'user.tier' is a path into nested"
                " values"
            )
    return wanted


def lookup(value: Any, key: str) -> Any:
    """``value[key]``, or for a dotted key the nested value it names (``"user.tier"``), as
    LangGraph's SQL backends read ``$.user.tier``; None when there is none."""
    if not isinstance(value, dict):
        return None
    if key in value:
        return value[key]
    node = value
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def matches(value: Any, wanted: dict[str, Any]) -> bool:
    """LangGraph's store filter semantics: exact values (nested dicts and lists compared field
    by field) and the operators ``$eq $ne $gt $gte $lt $lte``; dotted keys are paths."""
    if not isinstance(value, dict):
        return False
    return all(_compare(lookup(value, key), expected) for key, expected in wanted.items())


def metadata_matches(metadata: Any, wanted: dict[str, Any]) -> bool:
    """A checkpointer's metadata filter: every key (dotted keys are paths) has that value."""
    return all(bool(lookup(metadata, key) == expected) for key, expected in wanted.items())


def _compare(actual: Any, expected: Any) -> bool:
    if isinstance(expected, dict):
        if any(isinstance(k, str) and k.startswith("$") for k in expected):
            return all(_operator(actual, op, operand) for op, operand in expected.items())
        return isinstance(actual, dict) and all(
            _compare(actual.get(k), v) for k, v in expected.items()
        )
    if isinstance(expected, (list, tuple)):
        return (
            isinstance(actual, (list, tuple))
            and len(actual) == len(expected)
            and all(_compare(a, e) for a, e in zip(actual, expected, strict=True))
        )
    return bool(actual == expected)


def _operator(actual: Any, op: str, operand: Any) -> bool:
    if op == "$eq":
        return bool(actual == operand)
    if op == "$ne":
        return bool(actual != operand)
    if op not in ("$gt", "$gte", "$lt", "$lte"):
        raise ValueError(f"unsupported filter operator {op!r}; use $eq $ne $gt $gte $lt $lte")
    try:
        a, b = float(actual), float(operand)
    except (TypeError, ValueError):
        return False
    return {"$gt": a > b, "$gte": a >= b, "$lt": a < b, "$lte": a <= b}[op]


def string_leaves(value: Any) -> list[str]:
    """Every string in a JSON value (dict values, list items), in order."""
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


def _stem(word: str) -> str:
    # Just enough folding that "tea"/"teas" and "prefers"/"prefer" meet; not a real stemmer.
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def tokenize(text: str) -> list[str]:
    return [_stem(w) for w in _WORD.findall(text.lower())]


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


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=False))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0


def _neg_l2(a: Sequence[float], b: Sequence[float]) -> float:
    return -math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b, strict=False)))


def _inner(a: Sequence[float], b: Sequence[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=False))


_SIMILARITIES = {"cosine": cosine, "l2": _neg_l2, "inner_product": _inner}


def similarity(distance_type: str) -> Callable[[Sequence[float], Sequence[float]], float]:
    """The score of a vector against a query for an index's ``distance_type``, higher is
    closer (as LangGraph's PostgresStore scores): cosine similarity, the negated Euclidean
    distance, or the inner product."""
    try:
        return _SIMILARITIES[distance_type]
    except KeyError:
        raise InvalidInput(
            f"unsupported distance_type {distance_type!r}; use 'cosine', 'l2' or 'inner_product'"
        ) from None
