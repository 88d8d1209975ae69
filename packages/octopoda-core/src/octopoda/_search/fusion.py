"""Hybrid ranking, pure: vector similarity fused with a gated lexical signal.

Plain reciprocal rank fusion of BM25 and MiniLM scored below MiniLM alone on paraphrased
queries (issue 17: BM25's one-word matches push correct hits out of the top 5). So the
vectors rank, and words only add to a match that holds (nearly) all of the query's words:

    score = (1 - LEXICAL_WEIGHT) * max(cosine, 0) + LEXICAL_WEIGHT * gate(coverage)

where ``coverage`` is the share of the query's words (stopwords aside) that the memory
holds and ``gate`` keeps it only at :data:`LEXICAL_GATE` or more. A paraphrase, which
shares at most a word or two with its target, is ranked by meaning; a query of exact rare
words (an id, a name) that the memory holds all of is lifted to the top. The score is in
[0, 1]. A memory found by words only (no vector of its current version among the best)
gets the lowest cosine of the vector candidates as its similarity (an upper bound), or 0
when every vector was a candidate.
"""

from collections.abc import Sequence
from typing import Any, Final, NamedTuple

from .results import MatchReason

__all__ = ["LEXICAL_GATE", "LEXICAL_WEIGHT", "LexicalHit", "VectorHit", "fuse"]

LEXICAL_WEIGHT: Final = 0.3
LEXICAL_GATE: Final = 0.99  # all of the query's words (stopwords aside)


class LexicalHit(NamedTuple):
    key: str
    item: Any
    rank: int
    raw: float
    coverage: float
    terms: tuple[str, ...]


class VectorHit(NamedTuple):
    key: str
    item: Any
    rank: int
    cosine: float


def fuse(
    lexical: Sequence[LexicalHit],
    vectors: Sequence[VectorHit],
    *,
    vectors_exhausted: bool,
    weight: float = LEXICAL_WEIGHT,
    gate: float = LEXICAL_GATE,
) -> list[tuple[Any, float, MatchReason]]:
    """``(item, score, why)`` for every memory of either list, best first.
    ``vectors_exhausted``: ``vectors`` holds every stored vector that passed the filters
    (a memory missing from it has no vector)."""
    by_key_lex = {hit.key: hit for hit in lexical}
    by_key_vec = {hit.key: hit for hit in vectors}
    floor = 0.0 if vectors_exhausted or not vectors else max(min(h.cosine for h in vectors), 0.0)
    out = []
    for key in dict.fromkeys([*by_key_vec, *by_key_lex]):
        vec, lex = by_key_vec.get(key), by_key_lex.get(key)
        similarity = max(vec.cosine, 0.0) if vec is not None else floor
        words = lex.coverage if lex is not None and lex.coverage >= gate else 0.0
        score = min(max((1 - weight) * similarity + weight * words, 0.0), 1.0)
        if vec is not None and lex is not None:
            method = "both"
        else:
            method = "semantic" if vec is not None else "lexical"
        why = MatchReason(
            method,
            None if lex is None else lex.rank,
            None if lex is None else round(lex.raw, 6),
            () if lex is None else lex.terms,
            None if vec is None else vec.rank,
            None if vec is None else round(vec.cosine, 6),
            round(score, 6),
        )
        out.append(((vec or lex).item, score, why))  # type: ignore[union-attr]
    # best first; ties: the vector ranking, then the lexical one
    out.sort(key=lambda t: (-t[1], t[2].vector_rank or 1 << 30, t[2].lexical_rank or 1 << 30))
    return [(item, round(score, 6), why) for item, score, why in out]
