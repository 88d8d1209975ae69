"""Search building blocks: the one lexical ranking every Octopoda surface uses.

``AgentRuntime.search(query=...)`` and ``recall_similar`` rank memories with the stores'
full-text indexes; adapters that rank in the process (the LangGraph store) use these same
functions, so text is found the same way everywhere:

* :func:`texts_of` / :func:`string_leaves`: the texts a memory is found by (its key, and
  every string in its value);
* :func:`tokenize` and :func:`bm25`: BM25 scores of documents for a query;
* :func:`query_terms`: a query's words as a full-text index splits them;
* :func:`saturate`: a relevance score mapped into [0, 1);
* :func:`cosine`: similarity of two embedding vectors;
* :class:`SimilarResults`, :class:`SimilarMatch`, :class:`MatchReason`: what
  ``recall_similar`` returns (also in ``octopoda``).
"""

from ._search.lexical import (
    bm25,
    coverage,
    document_text,
    query_terms,
    saturate,
    string_leaves,
    texts_of,
    tokenize,
)
from ._search.results import MatchReason, SimilarMatch, SimilarResults
from ._search.vectors import cosine

__all__ = [
    "MatchReason",
    "SimilarMatch",
    "SimilarResults",
    "bm25",
    "cosine",
    "coverage",
    "document_text",
    "query_terms",
    "saturate",
    "string_leaves",
    "texts_of",
    "tokenize",
]
