"""Search verbs of ``AgentRuntime``: ``search`` (by key prefix, tags and kinds, or ranked by
the words of a query) and ``recall_similar`` (ranked matches with a score and why).

Ranking by words uses the store's full-text index (SQLite FTS5, PostgreSQL full text),
which a returned write is in at once. A search ``as_of`` an earlier point ranks that
point's memory in the process with the same lexical rules (:mod:`octopoda.search`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from .._errors import ConfigError, InvalidInput, NotFound
from .._records import MemoryItem
from .._search.lexical import bm25, coverage, query_terms, texts_of
from .._search.results import (
    HYBRID_NOTE,
    LEXICAL_NOTE,
    MatchReason,
    SimilarMatch,
    SimilarResults,
)
from .._store import StoredRow
from .._values import decode_value, validate_key, validate_kinds, validate_prefix, validate_tags
from .base import checked_limit, is_live
from .decisions import DecisionsMixin
from .memory import MemoryMixin
from .views import Decision, MemoryView, kind_filter

if TYPE_CHECKING:
    # (fusion loads with the first hybrid search: it is not on a write's path)
    from .._search.fusion import LexicalHit, VectorHit

__all__ = ["SearchMixin", "rank_items", "search_terms"]


def search_terms(query: Any) -> list[str]:
    """The words of ``query`` a search matches (none: nothing matches)."""
    if not isinstance(query, str):
        raise InvalidInput(f"query must be a str of words to look for, not {query!r:.80}")
    return query_terms(query)


def _item(row: StoredRow) -> MemoryItem:
    return MemoryItem(
        row.key,
        decode_value(row.encoding, row.data),
        row.version,
        row.created_at,
        row.tags,
        row.expires_at,
        row.seq,
        row.kind,
    )


def rank_items(query: str, items: Sequence[MemoryItem]) -> list[tuple[MemoryItem, float]]:
    """``items`` that hold a word of ``query``, best first by BM25 (in the process: for
    a point in the past, which the store's index of current values cannot rank)."""
    scores = bm25(query, [texts_of(i.key, i.value) for i in items])
    ranked = [(item, s) for item, s in zip(items, scores, strict=True) if s > 0]
    ranked.sort(key=lambda pair: (-pair[1], pair[0].key))
    return ranked


class SearchMixin(MemoryMixin, DecisionsMixin):
    def search(
        self,
        prefix: str = "",
        *,
        query: str | None = None,
        tags: Iterable[str] | None = None,
        limit: int | None = 50,
        offset: int = 0,
        as_of: int | Decision | None = None,
        kinds: Iterable[str] | None = None,
    ) -> list[MemoryItem]:
        """Current values whose key starts with ``prefix`` (exact, case-sensitive), that
        carry every tag in ``tags`` and, with ``kinds`` (a list such as ``["fact"]``), whose
        kind (``remember(kind=)``) is one of them: ordered by key, or with ``query`` ranked
        by its words (best first; only values holding at least one of them).

        A value is found by the words of its key and of its strings (a JSON string, or
        every string in an object or list); case, accents and English plural and verb
        endings do not matter. Any text is a safe query: punctuation, quotes and operators
        only separate words; a query without words finds nothing. ``as_of`` (an event seq
        or a :class:`~octopoda.Decision`) searches the memory as it was then (the kinds of
        the versions current then).
        """
        if as_of is not None:
            view = self.as_of(as_of)
            return _view_search(view, prefix, query, tags, limit, offset, kinds)
        if query is None:
            return self._listing(prefix, tags=tags, limit=limit, offset=offset, kinds=kinds)
        return [item for item, _ in self._ranked(query, prefix, tags, limit, offset, kinds)]

    def _ranked(
        self,
        query: str,
        prefix: str,
        tags: Iterable[str] | None,
        limit: int | None,
        offset: int,
        kinds: Iterable[str] | None = None,
    ) -> list[tuple[MemoryItem, float]]:
        terms = search_terms(query)
        found = self._store.search(
            self._ns,
            terms,
            prefix=validate_prefix(prefix),
            tags=validate_tags(tags),
            now=self._now(),
            limit=checked_limit(limit),
            offset=checked_limit(offset, "offset") or 0,
            **kind_filter(kinds),
        )
        return [(_item(row), score) for row, score in found]

    def recall_similar(
        self,
        query: str,
        *,
        limit: int = 5,
        min_score: float | None = None,
        prefix: str = "",
        tags: Iterable[str] | None = None,
        kinds: Iterable[str] | None = None,
    ) -> SimilarResults:
        """The memories closest to ``query``, best first, each with a score in [0, 1] and
        why it matched (:class:`~octopoda.SimilarMatch`). ``prefix``, ``tags`` and
        ``kinds`` filter as in :meth:`search`.

        With an embedder (``AgentRuntime(embedder=...)`` or ``OCTOPODA_EMBEDDER``) the
        ranking is hybrid (``mode == "hybrid"``): by the cosine similarity of the memories'
        vectors to the query's, and a match that holds all of the query's words is lifted
        (``octopoda._search.fusion``). The memories written since the last search are
        embedded first (a write never waits for the embedder). Without one (the default)
        the ranking is lexical, by words (BM25), and the result says so once
        (``mode == "lexical"`` and ``note``); the score is then the share of the query's
        words (stopwords aside) that the memory holds. ``min_score`` leaves out weaker
        matches.
        """
        from .._search.fusion import fuse

        if checked_limit(limit) is None or limit < 1:
            raise InvalidInput(f"limit must be a positive int, not {limit!r}")
        threshold = _checked_score(min_score)
        terms = search_terms(query)
        pool = max(limit * 4, 20)
        lexical = self._lexical_hits(query, terms, prefix, tags, pool, kinds)
        if self._embedder is None:
            scored = [SimilarMatch(h.item, h.coverage, _lexical_reason(h)) for h in lexical]
            scored.sort(key=lambda m: -m.score)  # stable: BM25 order among equal scores
            mode, note = "lexical", LEXICAL_NOTE
        else:
            vectors = self._vector_hits(self._embed_query(query), prefix, tags, pool, kinds)
            fused = fuse(lexical, vectors, vectors_exhausted=len(vectors) < pool)
            scored = [SimilarMatch(item, score, why) for item, score, why in fused if score > 0]
            mode, note = "hybrid", HYBRID_NOTE.format(name=self._embedder.name)
        matches = tuple(m for m in scored if threshold is None or m.score >= threshold)
        return SimilarResults(query, matches[:limit], mode, note)

    def search_vectors(
        self,
        vector: Sequence[float],
        *,
        limit: int = 10,
        min_score: float | None = None,
        prefix: str = "",
        tags: Iterable[str] | None = None,
        kinds: Iterable[str] | None = None,
    ) -> SimilarResults:
        """Current memories ranked by the cosine similarity of their stored vector to
        ``vector`` (``mode == "vector"``; score: the cosine, at least 0), for frameworks
        that bring their own embeddings (stored with :meth:`put_vector`) or to search by a
        vector of the configured embedder. Memories written since the last search are
        embedded first when an embedder is configured. ``prefix``, ``tags`` and ``kinds``
        filter as in :meth:`search`."""
        if checked_limit(limit) is None or limit < 1:
            raise InvalidInput(f"limit must be a positive int, not {limit!r}")
        threshold = _checked_score(min_score)
        if self._embedder is not None:
            self._store.index_vectors(self._embedder)
        hits = self._vector_hits(vector, prefix, tags, limit, kinds)
        matches = []
        for hit in hits:
            score = round(max(hit.cosine, 0.0), 6)
            why = MatchReason("semantic", None, None, (), hit.rank, round(hit.cosine, 6), score)
            if threshold is None or score >= threshold:
                matches.append(SimilarMatch(hit.item, score, why))
        return SimilarResults("", tuple(matches), "vector", None)

    def put_vector(self, key: str, vector: Sequence[float], *, model: str | None = None) -> None:
        """Store ``vector`` (made by the caller's own embedding model ``model``; default:
        the configured embedder's name, else ``"external"``) for the current version of
        ``key``: :meth:`search_vectors` then finds it, until a newer version of the key
        (which needs a vector of its own). Every vector of a store is of one model."""
        row = self._store.latest(self._ns, validate_key(key))
        if row is None or not is_live(row, self._now()):
            raise NotFound(f"no current memory {key!r} to store a vector for; remember it first")
        name = model or (self._embedder.name if self._embedder is not None else "external")
        self._store.put_vectors(self._ns, [(row.key, row.version, vector)], model=name)

    def reindex(self) -> int:
        """Drop the store's vectors and embed every current memory again with this
        runtime's embedder (after a change of model: ``EmbedderMismatch`` says so); the
        number of memories embedded. Every agent of the store is re-embedded."""
        if self._embedder is None:
            raise ConfigError(
                "reindex needs an embedder: AgentRuntime(..., embedder=...) or"
                " OCTOPODA_EMBEDDER=octopoda-embed"
            )
        self._store.reset_vectors()
        return self._store.index_vectors(self._embedder)

    def _embed_query(self, query: str) -> Sequence[float]:
        assert self._embedder is not None
        self._store.index_vectors(self._embedder)  # before the query: a write never waits
        return self._embedder.embed([query])[0]

    def _lexical_hits(
        self,
        query: str,
        terms: list[str],
        prefix: str,
        tags: Iterable[str] | None,
        pool: int,
        kinds: Iterable[str] | None = None,
    ) -> list[LexicalHit]:
        from .._search.fusion import LexicalHit

        hits = []
        ranked = self._ranked(query, prefix, tags, pool, 0, kinds)
        for rank, (item, raw) in enumerate(ranked, start=1):
            share, found = coverage(terms, texts_of(item.key, item.value))
            share = max(share, 1.0 / max(len(terms), 1))  # the index matched one word at least
            hits.append(LexicalHit(item.key, item, rank, raw, round(share, 6), found))
        return hits

    def _vector_hits(
        self,
        vector: Sequence[float],
        prefix: str,
        tags: Iterable[str] | None,
        limit: int,
        kinds: Iterable[str] | None = None,
    ) -> list[VectorHit]:
        from .._search.fusion import VectorHit

        found = self._store.search_vectors(
            self._ns,
            vector,
            prefix=validate_prefix(prefix),
            tags=validate_tags(tags),
            now=self._now(),
            limit=limit,
            **kind_filter(kinds),
        )
        return [
            VectorHit(row.key, _item(row), rank, score)
            for rank, (row, score) in enumerate(found, start=1)
        ]


def _lexical_reason(hit: LexicalHit) -> MatchReason:
    return MatchReason("lexical", hit.rank, round(hit.raw, 6), hit.terms)


def _checked_score(value: float | None) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise InvalidInput(f"min_score must be None or a number in [0, 1], not {value!r}")
    return float(value)


def _view_search(
    view: MemoryView,
    prefix: str,
    query: str | None,
    tags: Iterable[str] | None,
    limit: int | None,
    offset: int,
    kinds: Iterable[str] | None = None,
) -> list[MemoryItem]:
    limit = checked_limit(limit)
    offset = checked_limit(offset, "offset") or 0
    prefix = validate_prefix(prefix)
    tag_list = None if tags is None else list(tags)
    listed = view.search(prefix, tags=tag_list, limit=None, kinds=validate_kinds(kinds))
    items = listed if query is None else [i for i, _ in rank_items(query, listed)]
    if query is not None and not search_terms(query):
        items = []
    end = None if limit is None else offset + limit
    return items[offset:end]
