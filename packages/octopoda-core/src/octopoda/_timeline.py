"""Decisions, point-in-time views of memory, and diffs between two points.

Nothing here copies memory: a point in time is an event seq, and the memory "as of" it is
the newest version of each key written at or before that seq.
"""

from __future__ import annotations

import re
from itertools import pairwise
from typing import Any, NamedTuple

from ._records import MemoryItem, RecallResult
from ._store import Store, StoredRow
from ._values import decode_value, validate_key, validate_tags

__all__ = ["Decision", "MemoryDiff", "MemoryView", "text_similarity"]

_WORD = re.compile(r"\w+", re.UNICODE)


def _shingles(text: str) -> set[str]:
    words = _WORD.findall(text.casefold())
    if len(words) < 2:
        return set(words)
    return {f"{a} {b}" for a, b in pairwise(words)} | set(words)


def text_similarity(a: str, b: str) -> float:
    """Deterministic similarity in [0, 1]: Jaccard overlap of case-folded words and word
    pairs. Identical texts score 1.0; rewordings that keep most words score high."""
    sa, sb = _shingles(a), _shingles(b)
    if not sa and not sb:
        return 1.0 if a.strip() == b.strip() else 0.0
    return len(sa & sb) / len(sa | sb)


def _live_at(row: StoredRow, when: float | None) -> bool:
    if row.tombstone or row.erased:
        return False
    return when is None or row.expires_at is None or row.expires_at > when


class MemoryView:
    """Read-only memory of one agent as it was at event ``seq`` (and at time ``time``)."""

    __slots__ = ("namespace", "seq", "store", "time")

    def __init__(self, store: Store, namespace: str, seq: int, time: float | None) -> None:
        self.store = store
        self.namespace = namespace
        self.seq = seq
        self.time = time

    def __repr__(self) -> str:
        return f"MemoryView(namespace={self.namespace!r}, seq={self.seq}, time={self.time!r})"

    def _key(self) -> tuple[int, str, int, float | None]:
        return (id(self.store), self.namespace, self.seq, self.time)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MemoryView) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def recall(self, key: str) -> RecallResult:
        key = validate_key(key)
        row = self.store.latest(self.namespace, key, as_of_seq=self.seq)
        if row is None or not _live_at(row, self.time):
            return RecallResult(key, False)
        return RecallResult(
            key,
            True,
            decode_value(row.encoding, row.data),
            row.version,
            row.created_at,
            row.tags,
            row.expires_at,
            row.seq,
        )

    def search(
        self, prefix: str = "", *, tags: list[str] | None = None, limit: int | None = None
    ) -> list[MemoryItem]:
        rows = self.store.current(
            self.namespace,
            prefix=prefix,
            tags=validate_tags(tags),
            as_of_seq=self.seq,
            now=self.time,
            limit=limit,
        )
        return [
            MemoryItem(
                r.key,
                decode_value(r.encoding, r.data),
                r.version,
                r.created_at,
                r.tags,
                r.expires_at,
                r.seq,
            )
            for r in rows
        ]

    def to_dict(self) -> dict[str, Any]:
        """Every key's value at that point."""
        return {item.key: item.value for item in self.search()}


class Decision(NamedTuple):
    """A logged decision. ``repeats_seq`` names a recent decision it restates (by text
    similarity >= the threshold), else None."""

    seq: int
    time: float
    decision: str
    reasoning: str | None
    context: dict[str, Any] | None
    repeats_seq: int | None = None
    similarity: float | None = None
    view: MemoryView | None = None

    @property
    def repeated(self) -> bool:
        return self.repeats_seq is not None

    def memory(self) -> MemoryView:
        """What the agent knew when it decided."""
        assert self.view is not None
        return self.view


class MemoryDiff(NamedTuple):
    """Keys added, changed and removed between two points (values as they were)."""

    from_seq: int
    to_seq: int
    added: dict[str, Any]
    changed: dict[str, tuple[Any, Any]]
    removed: dict[str, Any]

    def __bool__(self) -> bool:
        return bool(self.added or self.changed or self.removed)


def diff_rows(
    from_seq: int, to_seq: int, before: list[StoredRow], after: list[StoredRow]
) -> MemoryDiff:
    old = {r.key: r for r in before}
    new = {r.key: r for r in after}
    added = {k: decode_value(r.encoding, r.data) for k, r in new.items() if k not in old}
    removed = {k: decode_value(r.encoding, r.data) for k, r in old.items() if k not in new}
    changed = {
        k: (decode_value(old[k].encoding, old[k].data), decode_value(r.encoding, r.data))
        for k, r in new.items()
        if k in old and (old[k].encoding, old[k].data) != (r.encoding, r.data)
    }
    return MemoryDiff(from_seq, to_seq, added, changed, removed)
