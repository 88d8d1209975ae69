"""Search helpers for OctopodaStore (pure: no I/O): LangGraph's metadata filters and its
index's distance types. The lexical ranking itself (texts, tokenizer, BM25) and cosine
similarity are the core's (``octopoda.search``), shared with ``AgentRuntime.search``."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from typing import Any

from octopoda import InvalidInput
from octopoda.search import cosine

__all__ = ["check_filter", "lookup", "matches", "metadata_matches", "similarity"]

_FILTER_KEY = re.compile(r"[A-Za-z0-9_.-]+")


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
