"""The lexical ranking of ``octopoda.search`` (pure functions, no store)."""

from __future__ import annotations

import json

import pytest

from octopoda.search import (
    bm25,
    cosine,
    document_text,
    query_terms,
    saturate,
    string_leaves,
    texts_of,
    tokenize,
)


def test_string_leaves_walks_dicts_and_lists_in_order() -> None:
    value = {"a": "tea", "b": [1, "green", {"c": "hot"}], "d": None, "e": True}
    assert string_leaves(value) == ["tea", "green", "hot"]
    assert string_leaves("plain") == ["plain"]
    assert string_leaves(42) == []


def test_texts_of_puts_the_key_first() -> None:
    assert texts_of("user/diet", {"likes": "tea"}) == ["user/diet", "tea"]


def test_document_text_of_each_encoding() -> None:
    assert document_text("k", "json", json.dumps({"x": "oolong", "n": 3})) == "k\noolong"
    assert document_text("k", "json", json.dumps(7)) == "k"
    assert document_text("k", "bytes", b"\x00\x01") == "k"
    assert document_text("k", "tombstone", None) is None
    assert document_text("k", "json", None) is None  # erased


def test_tokenize_folds_case_and_plural() -> None:
    assert tokenize("Prefers TEAS, brewing") == ["prefer", "tea", "brew"]


def test_query_terms_drop_operators_quotes_and_sql() -> None:
    assert query_terms('"tea" OR 1=1; DROP TABLE memories --') == [
        "tea",
        "1",
        "drop",
        "table",
        "memories",
    ]
    assert query_terms("Café café naïve") == ["café", "naïve"]
    assert query_terms("*** ^ :") == []
    assert query_terms("what does the user eat") == ["user", "eat"]
    assert query_terms("the who") == ["the", "who"]  # nothing but stopwords: kept
    assert len(query_terms(" ".join(f"w{i}" for i in range(100)))) == 32


def test_bm25_ranks_rarer_and_denser_matches_higher() -> None:
    docs = [["green tea every morning"], ["coffee", "black"], ["tea tea tea"], ["nothing"]]
    scores = bm25("tea", docs)
    assert scores[1] == scores[3] == 0.0
    assert scores[2] > scores[0] > 0.0
    assert bm25("", docs) == [0.0] * 4
    assert bm25("tea", []) == []


def test_saturate_maps_into_unit_interval() -> None:
    assert saturate(0.0) == 0.0
    assert saturate(-1.0) == 0.0
    assert saturate(1.0) == 0.5
    assert 0.99 < saturate(200.0) < 1.0


def test_cosine() -> None:
    assert cosine([1.0, 0.0], [1.0, 0.0]) == 1.0
    assert cosine([1.0, 0.0], [0.0, 1.0]) == 0.0
    assert cosine([0.0, 0.0], [1.0, 1.0]) == 0.0


def test_similar_results_are_an_immutable_sequence_of_their_matches() -> None:
    from octopoda import MemoryItem, SimilarResults
    from octopoda.search import MatchReason, SimilarMatch

    item = MemoryItem("diet", "vegetarian", 1, 0.0, (), None, 1)
    match = SimilarMatch(item, 1.0, MatchReason("lexical", 1, 2.5, ("vegetarian",)))
    results = SimilarResults("vegetarian?", (match,), "lexical", "no embedder")
    assert len(results) == 1 and results[0] is match and list(results) == [match]
    assert results == SimilarResults("vegetarian?", (match,), "lexical", "no embedder")
    assert results != SimilarResults("vegetarian?", (), "lexical", "no embedder")
    assert hash(results) == hash(SimilarResults("vegetarian?", (match,), "lexical", "no embedder"))
    assert "query='vegetarian?'" in repr(results) and not SimilarResults("q", (), "lexical")
    with pytest.raises(AttributeError, match="immutable"):
        results.note = None  # type: ignore[misc]
