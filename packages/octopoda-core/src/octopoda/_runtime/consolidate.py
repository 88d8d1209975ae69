"""``consolidate``: near-duplicate memories (the same thing under different keys) found by
meaning with an embedder, else by words, and merged in one audited event
(:mod:`octopoda._search.duplicates` has the rules and their cost)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._errors import InvalidInput
from .._search.duplicates import DuplicateGroup, duplicate_groups, lexical_threshold, value_text
from .._search.embedders import Embedder, checked_vectors
from .._store import MemoryWrite, StoredRow, stored_sha256
from .._store.rows import decode_stored
from .._store.vector_reads import EMBED_BATCH
from .._values import MAX_TAGS
from .base import RuntimeBase

__all__ = ["ConsolidateMixin", "embed_texts", "near_duplicates", "newest_first"]


def newest_first(rows: Sequence[StoredRow]) -> list[StoredRow]:
    return sorted(rows, key=lambda r: (r.created_at, r.seq, r.key), reverse=True)


def near_duplicates(rows: Sequence[StoredRow], threshold: float = 0.9) -> list[DuplicateGroup]:
    """The groups of near-duplicates among current ``rows`` by words (``rows`` newest
    first); what ``memory_health`` counts."""
    return duplicate_groups([decode_stored(r) for r in rows], threshold)


def embed_texts(embedder: Embedder, texts: Sequence[str]) -> list[list[float]]:
    """``texts`` embedded by ``embedder``, :data:`EMBED_BATCH` per call (unit vectors)."""
    vectors: list[list[float]] = []
    for start in range(0, len(texts), EMBED_BATCH):
        chunk = texts[start : start + EMBED_BATCH]
        vectors += checked_vectors(
            embedder.embed(chunk),
            len(chunk),
            embedder.dimension or None,
            f"embedder {embedder.name!r}",
        )
    return vectors


def _checked_threshold(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise InvalidInput(f"similarity_threshold must be a number in [0, 1], not {value!r:.60}")
    return float(value)


class ConsolidateMixin(RuntimeBase):
    """``consolidate`` of ``AgentRuntime``."""

    def _duplicates(
        self, threshold: float, now: float
    ) -> tuple[list[StoredRow], list[DuplicateGroup]]:
        rows = newest_first(self._store.current(self._ns, now=now))
        values = [decode_stored(r) for r in rows]
        vectors = None
        if self._embedder is not None and rows:
            vectors = embed_texts(self._embedder, [value_text(v) for v in values])
        return rows, duplicate_groups(values, threshold, vectors)

    def consolidate(self, similarity_threshold: float = 0.9, dry_run: bool = True) -> Any:
        """Find near-duplicate memories (the same thing under different keys) and, with
        ``dry_run=False``, merge each group into its newest memory.

        With an embedder configured (``AgentRuntime(embedder=...)``), two current values
        are near-duplicates when the cosine similarity of their vectors (of the strings in
        each value) is at least ``similarity_threshold``; without one, when the Jaccard
        overlap of their words (stopwords aside, endings folded) is at least
        ``1 - 2.5 * (1 - similarity_threshold)``: 0.75 for the default 0.9 (``mode`` in the
        result says which). Equal values are always duplicates. Groups are greedy: the
        newest memory not yet grouped keeps its key and gathers those similar enough to it.

        The merge is one ``consolidate`` event (its payload lists the groups): the
        survivor of each group gets a new version (its value, with the tags of the whole
        group) and every other key of the group a tombstone. History keeps every version.

        Returns ``{"groups": [{"keep", "duplicates", "scores", "score"}], "dry_run",
        "mode", "threshold", "forgotten", "merged", "seq"}``: ``score`` is a group's
        weakest similarity, ``forgotten`` the tombstoned keys and ``merged`` the survivors
        given a new version (both empty on a dry run), ``seq`` the event's (or None).
        Embedding every current memory costs an embedder call per 256 of them.
        """
        threshold = _checked_threshold(similarity_threshold)
        mode = "lexical" if self._embedder is None else "semantic"
        effective = threshold if self._embedder is not None else lexical_threshold(threshold)
        out: dict[str, Any] = {"dry_run": bool(dry_run), "mode": mode, "threshold": effective}
        if dry_run:
            rows, groups = self._duplicates(threshold, self._now())
            return {**out, **_report(rows, groups), "forgotten": [], "merged": [], "seq": None}
        found: list[dict[str, Any]] = []

        def plan(now: float) -> tuple[str, dict[str, Any], list[MemoryWrite]] | None:
            rows, groups = self._duplicates(threshold, now)
            found[:] = _report(rows, groups)["groups"]
            if not groups:
                return None
            payload = {"groups": [_summary(g) for g in found], "mode": mode, "threshold": effective}
            return "consolidate", payload, self._merge_writes(rows, groups)

        done = self._unchanged(plan)
        merged = [g["keep"] for g in found] if done else []
        forgotten = [k for g in found for k in g["duplicates"]] if done else []
        seq = done[0].seq if done else None
        return {**out, "groups": found, "forgotten": forgotten, "merged": merged, "seq": seq}

    def _merge_writes(
        self, rows: Sequence[StoredRow], groups: Sequence[DuplicateGroup]
    ) -> list[MemoryWrite]:
        writes = []
        for group in groups:
            keep = rows[group.keep]
            members = [keep, *(rows[i] for i in group.duplicates)]
            tags = tuple(dict.fromkeys(t for r in members for t in r.tags))[:MAX_TAGS]
            writes.append(
                MemoryWrite(
                    self._ns,
                    keep.key,
                    keep.encoding,
                    keep.data,
                    stored_sha256(keep),
                    tags,
                    keep.expires_at,
                    kind=keep.kind,  # (the survivor stays what it was)
                )
            )
            writes.extend(
                MemoryWrite(self._ns, rows[i].key, "tombstone", None, None)
                for i in group.duplicates
            )
        return writes


def _report(rows: Sequence[StoredRow], groups: Sequence[DuplicateGroup]) -> dict[str, Any]:
    return {
        "groups": [
            {
                "keep": rows[g.keep].key,
                "duplicates": [rows[i].key for i in g.duplicates],
                "scores": list(g.scores),
                "score": min(g.scores),
            }
            for g in groups
        ]
    }


def _summary(group: dict[str, Any]) -> dict[str, Any]:
    return {"keep": group["keep"], "duplicates": group["duplicates"], "score": group["score"]}
