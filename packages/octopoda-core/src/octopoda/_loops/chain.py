"""The chain primitive: a stream's recent states as one string of fixed-width records.

Streams keep their recent states (values, results, outcomes) as one string of fixed-width
records: the first 16 hex digits of a SHA-256, or of a 64-bit hash. One object per stream
instead of a list of strings matters because detection runs between SQLite statements that
leave little of it in the CPU cache. A chance collision of two 64-bit records could at
worst make two states look alike; it cannot lose or change data.
"""

from __future__ import annotations

from itertools import islice
from typing import Any, Generic, TypeVar

__all__ = ["TOMBSTONE", "WIDTH", "Bounded", "find", "find_cycle", "record", "records"]

WIDTH = 16
"""The characters of one record."""
TOMBSTONE = "-" * WIDTH
"""The record of no value (a forget)."""
_MASK64 = (1 << 64) - 1
_V = TypeVar("_V")


def record(digest: str | None) -> str:
    """A value's digest as a record."""
    if not digest:
        return TOMBSTONE
    rec = digest[:WIDTH]
    return rec if len(rec) == WIDTH else f"{hash(digest) & _MASK64:016x}"


def find(records: str, rec: str) -> int:
    """The index of ``rec`` as a whole record of ``records``, or -1. (Hot paths test
    ``rec in records`` first and call this only then: most records are not there.)"""
    i = records.find(rec)
    while i > 0 and i % WIDTH:
        i = records.find(rec, i + 1)
    return i


def records(chain: str) -> list[str]:
    """The records of a chain, oldest first."""
    return [chain[i : i + WIDTH] for i in range(0, len(chain), WIDTH)]


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


class Bounded(dict[Any, _V], Generic[_V]):
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
