"""Decisions, point-in-time views of memory, and diffs between two points.

Nothing here copies memory: a point in time is an event seq, and the memory "as of" it is
the newest version of each key written at or before that seq.
"""

import re
from collections import deque
from collections.abc import Iterable
from itertools import pairwise
from typing import Any, NamedTuple

from .._loops.gists import name_other_things
from .._records import MemoryItem, RecallResult
from .._regex import lazy_pattern
from .._store import Store, StoredRow
from .._store.rows import decode_stored
from .._values import validate_key, validate_kinds, validate_tags

__all__ = ["Decision", "MemoryDiff", "MemoryView", "RecentDecisions"]

_WORD = lazy_pattern(r"\w+", re.UNICODE)


def _shingles(text: str) -> set[str]:
    words = _WORD.findall(text.casefold())
    if len(words) < 2:
        return set(words)
    return {f"{a} {b}" for a, b in pairwise(words)} | set(words)


def _similarity(sa: set[str], sb: set[str], a: str, b: str) -> float:
    """Deterministic similarity in [0, 1] of texts ``a`` and ``b`` from their shingles:
    Jaccard overlap of case-folded words and word pairs. Identical texts score 1.0;
    rewordings that keep most words score high."""
    if not sa and not sb:
        return 1.0 if a.strip() == b.strip() else 0.0
    common = len(sa & sb)
    return common / (len(sa) + len(sb) - common)


class RecentDecisions:
    """An agent's decisions among its last ``window`` events, as word shingles, kept in
    memory and topped up from the store. Seqs are gapless and committed in order per
    agent, so each check reads only the events after the last seq it saw (decisions of the
    same agent in other processes included) instead of re-reading and re-parsing the
    window every time."""

    __slots__ = ("_read", "_recent", "window")

    def __init__(self, window: int) -> None:
        self.window = window
        self._read = 0  # events up to this seq have been read
        self._recent: deque[tuple[int, set[str], str, Any]] = deque()

    def most_similar(
        self,
        store: Store,
        agent: str,
        head: int,
        text: str,
        threshold: float,
        run_id: str | None = None,
    ) -> tuple[int, float] | None:
        """The (seq, similarity) of the recent decision of run ``run_id`` most similar to
        ``text``, when it reaches ``threshold``; the latest such on a tie. ``head`` is the
        agent's last seq."""
        low = head - self.window  # decisions after this seq count
        recent = self._recent
        if head < self._read:  # not the chain this cache was read from
            recent.clear()
            self._read = 0
        for event in store.events(
            agent, after_seq=max(self._read, low, 0), until_seq=head, kinds=["decision"]
        ):
            said = str(event.payload.get("decision", ""))
            recent.append((event.seq, _shingles(said), said, event.payload.get("run_id")))
        self._read = head
        while recent and recent[0][0] <= low:
            recent.popleft()
        mine = _shingles(text)
        size = len(mine)
        best: tuple[int, float] | None = None
        for seq, theirs, said, run in recent:
            if run != run_id:
                continue  # (another conversation's decision is not a restatement)
            other = len(theirs)
            if other and size and min(size, other) < threshold * max(size, other):
                continue  # too different in length to reach the threshold
            score = _similarity(mine, theirs, text, said)
            if (
                score >= threshold
                and (best is None or score >= best[1])
                and not name_other_things(mine, theirs)  # (order 1001 is not order 1002)
            ):
                best = (seq, score)
        return best


def _live_at(row: StoredRow, when: float | None) -> bool:
    if row.tombstone or row.erased:
        return False
    return when is None or row.expires_at is None or row.expires_at > when


def kind_filter(kinds: Iterable[str] | None) -> dict[str, Any]:
    """The ``kinds`` argument of a store read for ``search(kinds=)`` (validated): none when
    it does not filter, so a store made before kinds existed still answers the others."""
    checked = validate_kinds(kinds)
    return {"kinds": checked} if checked else {}


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
            decode_stored(row),
            row.version,
            row.created_at,
            row.tags,
            row.expires_at,
            row.seq,
            row.kind,
        )

    def search(
        self,
        prefix: str = "",
        *,
        tags: list[str] | None = None,
        limit: int | None = None,
        kinds: Iterable[str] | None = None,
    ) -> list[MemoryItem]:
        """The values current then under ``prefix``, with every tag of ``tags`` and (if
        given) a kind among ``kinds``, ordered by key."""
        rows = self.store.current(
            self.namespace,
            prefix=prefix,
            tags=validate_tags(tags),
            as_of_seq=self.seq,
            now=self.time,
            limit=limit,
            **kind_filter(kinds),
        )
        return [
            MemoryItem(
                r.key,
                decode_stored(r),
                r.version,
                r.created_at,
                r.tags,
                r.expires_at,
                r.seq,
                r.kind,
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
    added = {k: decode_stored(r) for k, r in new.items() if k not in old}
    removed = {k: decode_stored(r) for k, r in old.items() if k not in new}
    changed = {
        k: (decode_stored(old[k]), decode_stored(r))
        for k, r in new.items()
        if k in old and (old[k].encoding, old[k].data) != (r.encoding, r.data)
    }
    return MemoryDiff(from_seq, to_seq, added, changed, removed)
