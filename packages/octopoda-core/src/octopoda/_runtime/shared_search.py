"""Search on shared spaces: ``search_shared`` (by key prefix and tags, or ranked by the
words of a query) and ``recall_similar_shared`` (ranked matches with a score and why), the
agent's own ``search`` and ``recall_similar`` over a space's current values.

A space is the namespace ``space:<name>`` of the store, indexed like an agent's own memory
(a shared write is an event of its author that names the space's namespace), so a search of
a space never sees an agent's own memories, nor a search of an agent's memory a space's.
Membership is checked as ``read_shared`` checks it (``AccessDenied`` for a non-member).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from .._errors import InvalidInput
from .._records import MemoryItem
from .._search.fusion import LexicalHit, VectorHit, fuse
from .._search.lexical import coverage, texts_of
from .._search.results import HYBRID_NOTE, LEXICAL_NOTE, SimilarMatch, SimilarResults
from .._store import StoredRow
from .._store.rows import decode_stored
from .._values import validate_limit, validate_prefix, validate_tags
from .base import checked_limit
from .collab import CollabMixin, SharedValue
from .search import _checked_score, _lexical_reason, search_terms

__all__ = ["SharedSearchMixin"]


def _item(row: StoredRow) -> MemoryItem:
    return MemoryItem(
        row.key, decode_stored(row), row.version, row.created_at, row.tags, row.expires_at, row.seq
    )


class SharedSearchMixin(CollabMixin):
    """``search_shared`` and ``recall_similar_shared`` of ``AgentRuntime``."""

    def search_shared(
        self,
        query: str | None = None,
        *,
        space: str = "global",
        prefix: str = "",
        tags: Iterable[str] | None = None,
        limit: int | None = 50,
        offset: int = 0,
    ) -> list[SharedValue]:
        """Current values of a space whose key starts with ``prefix`` and that carry every
        tag in ``tags``: ordered by key (``shared_items``), or with ``query`` ranked by its
        words (BM25; best first, only values holding at least one of them), each with its
        author. The words rules are ``search``'s. Listed values count as seen (updating
        them is not a stale write)."""
        namespace = self._space(space)
        options: dict[str, Any] = {
            "prefix": validate_prefix(prefix),
            "tags": validate_tags(tags),
            "now": self._now(),
            "limit": validate_limit(limit),
            "offset": checked_limit(offset, "offset") or 0,
        }
        if query is None:
            rows = self._store.current(namespace, **options)
        else:
            found = self._store.search(namespace, search_terms(query), **options)
            rows = [row for row, _ in found]
        return [self._shared_value(namespace, space, row) for row in rows]

    def _shared_value(self, namespace: str, space: str, row: StoredRow) -> SharedValue:
        self._seen[(namespace, row.key)] = row.version
        return SharedValue(
            row.key,
            space,
            True,
            decode_stored(row),
            row.version,
            row.author,
            row.created_at,
            row.tags,
        )

    def recall_similar_shared(
        self,
        query: str,
        *,
        space: str = "global",
        limit: int = 5,
        min_score: float | None = None,
        prefix: str = "",
        tags: Iterable[str] | None = None,
    ) -> SimilarResults:
        """``recall_similar`` over a space's current values: the closest to ``query``,
        best first, each with a score in [0, 1] and why (hybrid with an embedder, else
        lexical, and the result says so)."""
        namespace = self._space(space)
        if checked_limit(limit) is None or limit < 1:
            raise InvalidInput(f"limit must be a positive int, not {limit!r}")
        threshold = _checked_score(min_score)
        terms = search_terms(query)
        pool = max(limit * 4, 20)
        options: dict[str, Any] = {
            "prefix": validate_prefix(prefix),
            "tags": validate_tags(tags),
            "now": self._now(),
        }
        lexical = self._shared_lexical(namespace, terms, options, pool)
        if self._embedder is None:
            scored = [SimilarMatch(h.item, h.coverage, _lexical_reason(h)) for h in lexical]
            scored.sort(key=lambda m: -m.score)  # stable: BM25 order among equal scores
            mode, note = "lexical", LEXICAL_NOTE
        else:
            self._store.index_vectors(self._embedder)  # before the query: a write never waits
            vector = self._embedder.embed([query])[0]
            vectors = self._shared_vectors(namespace, vector, options, pool)
            fused = fuse(lexical, vectors, vectors_exhausted=len(vectors) < pool)
            scored = [SimilarMatch(item, score, why) for item, score, why in fused if score > 0]
            mode, note = "hybrid", HYBRID_NOTE.format(name=self._embedder.name)
        matches = tuple(m for m in scored if threshold is None or m.score >= threshold)
        for match in matches[:limit]:
            self._seen[(namespace, match.key)] = match.item.version
        return SimilarResults(query, matches[:limit], mode, note)

    def _shared_lexical(
        self, namespace: str, terms: list[str], options: dict[str, Any], pool: int
    ) -> list[LexicalHit]:
        found = self._store.search(namespace, terms, limit=pool, **options)
        hits = []
        for rank, (row, raw) in enumerate(found, start=1):
            item = _item(row)
            share, words = coverage(terms, texts_of(item.key, item.value))
            share = max(share, 1.0 / max(len(terms), 1))  # the index matched one word at least
            hits.append(LexicalHit(item.key, item, rank, raw, round(share, 6), words))
        return hits

    def _shared_vectors(
        self, namespace: str, vector: Sequence[float], options: dict[str, Any], pool: int
    ) -> list[VectorHit]:
        found = self._store.search_vectors(namespace, vector, limit=pool, **options)
        return [
            VectorHit(row.key, _item(row), rank, score)
            for rank, (row, score) in enumerate(found, start=1)
        ]
