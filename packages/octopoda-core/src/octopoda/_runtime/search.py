"""Search verbs of ``AgentRuntime``: ``search`` (by key prefix and tags, or ranked by the
words of a query) and ``recall_similar`` (ranked matches with a score and why).

Ranking by words uses the store's full-text index (SQLite FTS5, PostgreSQL full text),
which a returned write is in at once. A search ``as_of`` an earlier point ranks that
point's memory in the process with the same lexical rules (:mod:`octopoda.search`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from .._errors import InvalidInput
from .._records import MemoryItem
from .._search.lexical import bm25, coverage, query_terms, texts_of
from .._search.results import LEXICAL_NOTE, MatchReason, SimilarMatch, SimilarResults
from .._store import StoredRow
from .._values import decode_value, validate_prefix, validate_tags
from .base import checked_limit
from .decisions import DecisionsMixin
from .memory import MemoryMixin
from .views import Decision, MemoryView

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
    ) -> list[MemoryItem]:
        """Current values whose key starts with ``prefix`` (exact, case-sensitive) and that
        carry every tag in ``tags``: ordered by key, or with ``query`` ranked by its words
        (best first; only values holding at least one of them).

        A value is found by the words of its key and of its strings (a JSON string, or
        every string in an object or list); case, accents and English plural and verb
        endings do not matter. Any text is a safe query: punctuation, quotes and operators
        only separate words; a query without words finds nothing. ``as_of`` (an event seq
        or a :class:`~octopoda.Decision`) searches the memory as it was then.
        """
        if as_of is not None:
            view = self.as_of(as_of)
            return _view_search(view, prefix, query, tags, limit, offset)
        if query is None:
            return self._listing(prefix, tags=tags, limit=limit, offset=offset)
        return [item for item, _ in self._ranked(query, prefix, tags, limit, offset)]

    def _ranked(
        self,
        query: str,
        prefix: str,
        tags: Iterable[str] | None,
        limit: int | None,
        offset: int,
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
    ) -> SimilarResults:
        """The memories closest to ``query``, best first, each with a score in [0, 1] and
        why it matched (:class:`~octopoda.SimilarMatch`).

        Without an embedder (the default) the ranking is lexical, by words (BM25), and the
        result says so once (``mode == "lexical"`` and ``note``); the score is then the
        share of the query's words (stopwords aside) that the memory holds. ``min_score``
        leaves out weaker matches.
        """
        if checked_limit(limit) is None or limit < 1:
            raise InvalidInput(f"limit must be a positive int, not {limit!r}")
        threshold = _checked_score(min_score)
        terms = search_terms(query)
        pool = self._ranked(query, prefix, tags, max(limit * 4, 20), 0)
        scored = []
        for rank, (item, raw) in enumerate(pool, start=1):
            share, found = coverage(terms, texts_of(item.key, item.value))
            share = max(share, 1.0 / max(len(terms), 1))  # the index matched one word at least
            why = MatchReason("lexical", rank, round(raw, 6), found)
            scored.append(SimilarMatch(item, round(share, 6), why))
        scored.sort(key=lambda m: -m.score)  # stable: BM25 order among equal scores
        matches = tuple(m for m in scored if threshold is None or m.score >= threshold)
        return SimilarResults(query, matches[:limit], "lexical", LEXICAL_NOTE)


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
) -> list[MemoryItem]:
    limit = checked_limit(limit)
    offset = checked_limit(offset, "offset") or 0
    prefix = validate_prefix(prefix)
    listed = view.search(prefix, tags=None if tags is None else list(tags), limit=None)
    items = listed if query is None else [i for i, _ in rank_items(query, listed)]
    if query is not None and not search_terms(query):
        items = []
    end = None if limit is None else offset + limit
    return items[offset:end]
