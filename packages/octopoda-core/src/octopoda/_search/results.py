"""What a search by meaning returns: ranked matches, each with why it matched."""

from collections.abc import Iterator
from typing import Any, NamedTuple, overload

from .._records import MemoryItem

__all__ = ["HYBRID_NOTE", "LEXICAL_NOTE", "MatchReason", "SimilarMatch", "SimilarResults"]

LEXICAL_NOTE = (
    "ranked by words (BM25 over keys and values): no embedder is configured, so"
    " paraphrases without a shared word are not found"
)

HYBRID_NOTE = (
    "ranked by meaning (the embedder {name!r}) and by words: a match holding all of the"
    " query's words is lifted"
)


class MatchReason(NamedTuple):
    """Why a memory matched. ``method`` is ``"lexical"`` (found by words only: the only
    one without an embedder), ``"semantic"`` (by its vector only) or ``"both"``.
    ``lexical_rank`` is its place in the store's full-text ranking (1 = best) and
    ``lexical_score`` the store's relevance there (BM25 on SQLite, ``ts_rank`` on
    PostgreSQL: compare it within one backend only); ``terms`` are the query's words found
    in it. ``vector_rank`` and ``vector_score`` (the cosine similarity) are its place in
    the ranking by meaning, and ``fused_score`` the hybrid score; each is None where that
    ranking did not find it (or, for the vector fields, with no embedder)."""

    method: str
    lexical_rank: int | None
    lexical_score: float | None
    terms: tuple[str, ...]
    vector_rank: int | None = None
    vector_score: float | None = None
    fused_score: float | None = None


class SimilarMatch(NamedTuple):
    """One match of ``recall_similar``: the memory, a score in [0, 1] (lexically: the
    share of the query's words, stopwords aside, that the memory holds; hybrid: the fused
    score, mostly the cosine similarity, see ``octopoda._search.fusion``) and why."""

    item: MemoryItem
    score: float
    why: MatchReason

    @property
    def key(self) -> str:
        return self.item.key

    @property
    def value(self) -> Any:
        return self.item.value


class SimilarResults:
    """The matches of ``recall_similar``, best first (a sequence of :class:`SimilarMatch`),
    with how they were ranked: ``mode`` (``"lexical"``, ``"hybrid"``, or ``"vector"`` for
    ``search_vectors``) and ``note``, which says once why
    (e.g. that no embedder is configured). Immutable; equal when all four fields are.
    (A plain class: ``dataclasses`` would add its imports, ``inspect`` among them, to
    ``from octopoda import AgentRuntime``.)"""

    __slots__ = ("matches", "mode", "note", "query")
    query: str
    matches: tuple[SimilarMatch, ...]
    mode: str
    note: str | None

    def __init__(
        self, query: str, matches: tuple[SimilarMatch, ...], mode: str, note: str | None = None
    ) -> None:
        for name, value in (("query", query), ("matches", matches), ("mode", mode)):
            object.__setattr__(self, name, value)
        object.__setattr__(self, "note", note)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"SimilarResults is immutable: cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"SimilarResults is immutable: cannot delete {name!r}")

    def __repr__(self) -> str:
        return (
            f"SimilarResults(query={self.query!r}, matches={self.matches!r},"
            f" mode={self.mode!r}, note={self.note!r})"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SimilarResults):
            return NotImplemented
        return (self.query, self.matches, self.mode, self.note) == (
            other.query,
            other.matches,
            other.mode,
            other.note,
        )

    def __hash__(self) -> int:
        return hash((self.query, self.matches, self.mode, self.note))

    def __len__(self) -> int:
        return len(self.matches)

    def __iter__(self) -> Iterator[SimilarMatch]:
        return iter(self.matches)

    @overload
    def __getitem__(self, index: int) -> SimilarMatch: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[SimilarMatch, ...]: ...

    def __getitem__(self, index: int | slice) -> SimilarMatch | tuple[SimilarMatch, ...]:
        return self.matches[index]

    def __bool__(self) -> bool:
        return bool(self.matches)
