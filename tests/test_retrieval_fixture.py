"""The retrieval fixture (bench/data/retrieval.json) is well formed, graded and paraphrased.

The search benchmark ranks each query's agent's memories and scores recall@5 and MRR against
the grades; these tests hold the fixture to the rules in bench/retrieval_fixture.md, so a bad
edit (a typo in an id, a target of another agent, a "paraphrase" copied from its memory) fails
here instead of skewing the numbers.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "bench" / "data" / "retrieval.json"

KINDS = frozenset(
    {"preference", "fact", "decision", "procedure", "tool_result"}
    | {"summary", "error", "contact", "schedule", "note"}
)
QUERY_TYPES = frozenset({"paraphrase", "keyword", "mixed"})
# Function words only: content words such as "user", "time" or "plan" still count as overlap.
STOPWORDS = frozenset().union(
    {"a", "an", "the", "and", "or", "but", "of", "to", "in", "on", "at", "for", "with", "by"},
    {"from", "as", "about", "into", "up", "out", "so", "if", "then", "than", "not", "no", "yes"},
    {"is", "are", "was", "were", "be", "been", "being", "am", "do", "does", "did", "done"},
    {"have", "has", "had", "having", "get", "got", "can", "could", "should", "would", "will"},
    {"shall", "may", "might", "must", "i", "me", "my", "mine", "we", "us", "our", "you", "your"},
    {"he", "him", "his", "she", "her", "it", "its", "they", "them", "their", "this", "that"},
    {"these", "those", "what", "which", "who", "whom", "whose", "when", "where", "why", "how"},
    {"any", "some", "there", "here", "too", "also", "just", "one", "each"},
    {"s", "t", "d", "ll", "re", "ve", "m"},  # the tails of "user's", "can't", "we'll", ...
)
MEMORY_FIELDS = {"id", "agent", "key", "value", "kind", "tags"}
QUERY_FIELDS = {"id", "agent", "query", "relevant", "type"}


@pytest.fixture(scope="module")
def fixture() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(FIXTURE.read_text(encoding="utf-8"))
    return data


@pytest.fixture(scope="module")
def memories(fixture: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {m["id"]: m for m in fixture["memories"]}


def _words(text: str) -> list[str]:
    """Lower-cased runs of letters and digits (so "user.diet" is "user" and "diet")."""
    return re.findall(r"[^\W_]+", text.lower())


def _stem(word: str) -> str:
    """A light suffix strip, so that plurals and -ed/-ing forms count as the same word."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith(("ches", "shes", "xes", "sses", "zes")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    if len(word) > 5 and word.endswith("ing"):
        return word[:-3]
    if len(word) > 4 and word.endswith("ed"):
        return word[:-2]
    return word


def _content_words(text: str) -> set[str]:
    return {_stem(w) for w in _words(text) if w not in STOPWORDS}


def memory_text(memory: dict[str, Any]) -> str:
    """What a search indexes: the key, then the value (a dict as its JSON text)."""
    value = memory["value"]
    shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return f"{memory['key']} {shown}"


def _targets(query: dict[str, Any], memories: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    return [memories[i] for i, grade in query["relevant"].items() if grade == 2]


def overlap_share(query: dict[str, Any], memories: dict[str, dict[str, Any]]) -> float:
    """The share of the query's content words found in its grade-2 memories' text."""
    asked = _content_words(query["query"])
    found: set[str] = set()
    for memory in _targets(query, memories):
        found |= _content_words(memory_text(memory))
    return len(asked & found) / len(asked) if asked else 1.0


def _queries_of(fixture: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [q for q in fixture["queries"] if q["type"] == kind]


def test_file_is_indented_utf8_json_in_a_stable_form(fixture: dict[str, Any]) -> None:
    text = FIXTURE.read_text(encoding="utf-8")
    assert text == json.dumps(fixture, indent=2, ensure_ascii=False) + "\n"
    assert set(fixture) == {"version", "description", "memories", "queries"}
    assert fixture["version"] == 1
    assert isinstance(fixture["description"], str) and fixture["description"].strip()


def test_ids_are_unique_and_numbered_in_order(fixture: dict[str, Any]) -> None:
    for items, prefix in ((fixture["memories"], "m"), (fixture["queries"], "q")):
        ids = [item["id"] for item in items]
        assert ids == [f"{prefix}{n:03d}" for n in range(1, len(ids) + 1)]


def test_memories_are_well_formed(fixture: dict[str, Any]) -> None:
    for m in fixture["memories"]:
        assert set(m) == MEMORY_FIELDS, m["id"]
        assert isinstance(m["agent"], str) and m["agent"], m["id"]
        assert isinstance(m["key"], str) and m["key"] == m["key"].strip() and m["key"], m["id"]
        assert m["kind"] in KINDS, m["id"]
        tags = m["tags"]
        assert isinstance(tags, list) and tags and len(set(tags)) == len(tags), m["id"]
        assert all(isinstance(t, str) and t for t in tags), m["id"]
        value = m["value"]
        if isinstance(value, dict):
            assert 2 <= len(value) <= 8, m["id"]
            for field, item in value.items():
                assert isinstance(field, str) and field, m["id"]
                assert type(item) in (str, int, float) and item != "", m["id"]
        else:
            assert isinstance(value, str) and value == value.strip() and value, m["id"]


def test_a_key_is_stored_once_per_agent(fixture: dict[str, Any]) -> None:
    keys = Counter((m["agent"], m["key"]) for m in fixture["memories"])
    assert [k for k, n in keys.items() if n > 1] == []


def test_counts_per_agent_and_query_type(fixture: dict[str, Any]) -> None:
    memory_agents = Counter(m["agent"] for m in fixture["memories"])
    query_agents = Counter(q["agent"] for q in fixture["queries"])
    assert len(fixture["memories"]) >= 320
    assert len(fixture["queries"]) >= 160
    assert len(memory_agents) >= 8
    assert set(query_agents) == set(memory_agents)
    assert min(memory_agents.values()) >= 30
    assert min(query_agents.values()) >= 15
    types = Counter(q["type"] for q in fixture["queries"])
    assert set(types) == QUERY_TYPES
    assert types["paraphrase"] >= 120
    assert types["keyword"] >= 20


def test_values_are_mostly_short_sentences_some_json_a_few_paragraphs(
    fixture: dict[str, Any],
) -> None:
    values = [m["value"] for m in fixture["memories"]]
    objects = [v for v in values if isinstance(v, dict)]
    lengths = [len(v.split()) for v in values if isinstance(v, str)]
    assert 0.10 <= len(objects) / len(values) <= 0.20
    assert max(lengths) <= 150
    assert sum(5 <= n <= 40 for n in lengths) / len(lengths) >= 0.9
    assert 3 <= sum(80 <= n <= 150 for n in lengths) <= 20


def test_relevance_is_graded_within_the_queried_agent(
    fixture: dict[str, Any], memories: dict[str, dict[str, Any]]
) -> None:
    for q in fixture["queries"]:
        assert set(q) == QUERY_FIELDS, q["id"]
        assert q["type"] in QUERY_TYPES, q["id"]
        assert isinstance(q["query"], str) and q["query"].strip() == q["query"] != "", q["id"]
        relevant = q["relevant"]
        assert isinstance(relevant, dict) and relevant, q["id"]
        for memory_id, grade in relevant.items():
            assert memory_id in memories, (q["id"], memory_id)
            assert memories[memory_id]["agent"] == q["agent"], (q["id"], memory_id)
            assert type(grade) is int and grade in (1, 2), (q["id"], memory_id)
        assert 2 in relevant.values(), q["id"]


def test_no_query_is_asked_twice_of_one_agent(fixture: dict[str, Any]) -> None:
    asked = Counter((q["agent"], q["query"].casefold()) for q in fixture["queries"])
    assert [k for k, n in asked.items() if n > 1] == []


def test_paraphrases_share_few_words_with_their_targets(
    fixture: dict[str, Any], memories: dict[str, dict[str, Any]]
) -> None:
    shares = {q["id"]: overlap_share(q, memories) for q in _queries_of(fixture, "paraphrase")}
    assert sum(shares.values()) / len(shares) <= 0.5
    assert {i: s for i, s in shares.items() if s > 0.8} == {}


def test_keyword_queries_appear_in_their_targets(
    fixture: dict[str, Any], memories: dict[str, dict[str, Any]]
) -> None:
    for q in _queries_of(fixture, "keyword"):
        found: set[str] = set()
        for memory in _targets(q, memories):
            found |= set(_words(memory_text(memory)))
        assert set(_words(q["query"])) <= found, q["id"]


def test_mixed_queries_sit_between_keywords_and_paraphrases(
    fixture: dict[str, Any], memories: dict[str, dict[str, Any]]
) -> None:
    mixed = [overlap_share(q, memories) for q in _queries_of(fixture, "mixed")]
    paraphrase = [overlap_share(q, memories) for q in _queries_of(fixture, "paraphrase")]
    assert min(mixed) > 0
    assert sum(mixed) / len(mixed) > sum(paraphrase) / len(paraphrase)


def test_some_text_is_not_ascii_and_all_of_it_is_nfc(
    fixture: dict[str, Any], memories: dict[str, dict[str, Any]]
) -> None:
    memory_texts = [memory_text(m) for m in memories.values()]
    query_texts = [q["query"] for q in fixture["queries"]]
    assert sum(not t.isascii() for t in memory_texts) >= 8
    assert sum(not t.isascii() for t in query_texts) >= 3
    for text in memory_texts + query_texts:
        assert unicodedata.is_normalized("NFC", text), text
