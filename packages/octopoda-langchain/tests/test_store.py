"""OctopodaStore: LangGraph's BaseStore contract on Octopoda memory."""

from __future__ import annotations

import asyncio
import hashlib
import math
import re
from datetime import datetime
from typing import Any

import pytest
from langgraph.store.base import (
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchItem,
    SearchOp,
)
from octopoda_langchain import OctopodaStore
from octopoda_langchain._keys import store_key

from octopoda import AgentRuntime
from octopoda.testing import FrozenClock


def hashed_words(texts: list[str]) -> list[list[float]]:
    """A deterministic, offline embedding: hashed bag of words, normalised (texts sharing
    words point the same way)."""
    out = []
    for text in texts:
        vec = [0.0] * 256
        for word in re.findall(r"\w+", text.lower()):
            vec[int(hashlib.sha256(word.encode()).hexdigest(), 16) % 256] += 1.0
        norm = math.sqrt(sum(v * v for v in vec)) or 1.0
        out.append([v / norm for v in vec])
    return out


@pytest.fixture
def store(db_path: str) -> OctopodaStore:
    return OctopodaStore(db_path)


def test_put_get_update_delete(store: OctopodaStore) -> None:
    assert store.get(("users", "alice"), "prefs") is None
    store.put(("users", "alice"), "prefs", {"drink": "tea"})
    first = store.get(("users", "alice"), "prefs")
    assert isinstance(first, Item)
    assert (first.namespace, first.key, first.value) == (
        ("users", "alice"),
        "prefs",
        {"drink": "tea"},
    )
    assert isinstance(first.created_at, datetime) and first.created_at.tzinfo is not None
    store.put(("users", "alice"), "prefs", {"drink": "coffee"})
    second = store.get(("users", "alice"), "prefs")
    assert second is not None and second.value == {"drink": "coffee"}
    assert second.created_at == first.created_at and second.updated_at >= first.updated_at
    store.delete(("users", "alice"), "prefs")
    assert store.get(("users", "alice"), "prefs") is None
    # versioned and audited: every state is in the agent's history
    history = store.agent.recall_history(store_key(("users", "alice"), "prefs"))
    assert [v.tombstone for v in history] == [True, False, False]
    assert history[2].value["value"] == {"drink": "tea"}
    assert store.agent.audit.verify().ok


def test_one_batch_is_one_event_and_reads_see_the_state_before_it(store: OctopodaStore) -> None:
    store.put(("docs",), "a", {"n": 1})
    head = store.agent.audit.head().seq
    results = store.batch(
        [
            PutOp(("docs",), "b", {"n": 2}),
            GetOp(("docs",), "b"),
            PutOp(("docs",), "c", {"n": 3}),
            PutOp(("docs",), "c", {"n": 4}),  # the last put of a key wins
            SearchOp(("docs",)),
        ]
    )
    assert results[0] is None and results[1] is None and results[2] is None
    assert [i.key for i in results[4]] == ["a"]  # type: ignore[union-attr]
    events = store.agent.timeline(after_seq=head)
    assert [e.kind for e in events] == ["remember"]
    assert store.get(("docs",), "c").value == {"n": 4}  # type: ignore[union-attr]


def test_namespaces_are_checked(store: OctopodaStore) -> None:
    for bad in [(), ("a.b",), ("",), ("langgraph", "x")]:
        with pytest.raises(InvalidNamespaceError):
            store.batch([PutOp(bad, "k", {"v": 1})])
    with pytest.raises(InvalidNamespaceError):
        store.batch([SearchOp(("a.b",))])


def test_odd_labels_and_keys(store: OctopodaStore) -> None:
    store.put(("a/b", "50%"), "k/1//x", {"v": 1})
    store.put(("a",), "b", {"v": 2})
    assert store.get(("a/b", "50%"), "k/1//x").value == {"v": 1}  # type: ignore[union-attr]
    assert [i.key for i in store.search(("a/b",))] == ["k/1//x"]
    assert [i.key for i in store.search(("a",))] == ["b"]
    assert store.list_namespaces() == [("a",), ("a/b", "50%")]


def test_search_scope_filters_order_and_pages(store: OctopodaStore, db_path: str) -> None:
    clock = FrozenClock()
    store = OctopodaStore(AgentRuntime("s", store=db_path, clock=clock), clock=clock)
    for i in range(6):
        clock.advance(1)
        store.put(
            ("items",), f"k{i}", {"n": i, "kind": "odd" if i % 2 else "even", "meta": {"i": i}}
        )
    store.put(("items2",), "other", {"n": 100})
    assert [i.key for i in store.search(("items",))] == ["k5", "k4", "k3", "k2", "k1", "k0"]
    assert all(isinstance(i, SearchItem) and i.score is None for i in store.search(("items",)))
    assert [i.key for i in store.search(("items",), limit=2, offset=1)] == ["k4", "k3"]
    assert [i.key for i in store.search(("items",), filter={"kind": "odd"})] == ["k5", "k3", "k1"]
    assert [i.key for i in store.search(("items",), filter={"n": {"$gte": 4}})] == ["k5", "k4"]
    assert [i.key for i in store.search(("items",), filter={"n": {"$gt": 1, "$lt": 3}})] == ["k2"]
    assert [i.key for i in store.search(("items",), filter={"n": {"$ne": 0}})][-1] == "k1"
    assert [i.key for i in store.search(("items",), filter={"meta": {"i": 3}})] == ["k3"]
    assert len(store.search((), limit=100)) == 7
    with pytest.raises(ValueError, match="unsupported filter operator"):
        store.search(("items",), filter={"n": {"$near": 1}})


def test_lexical_query(store: OctopodaStore) -> None:
    store.put(("mem",), "1", {"text": "Alice prefers green tea in the morning"})
    store.put(("mem",), "2", {"text": "Bob drinks coffee", "tags": ["tea-free"]})
    store.put(("mem",), "3", {"text": "The server runs PostgreSQL 15"})
    store.put(("mem",), "4", {"text": "tea tea tea"}, index=False)  # not searchable by query
    store.put(("mem",), "5", {"title": "teas of the world", "body": "nothing"}, index=["body"])
    found = store.search(("mem",), query="What tea does Alice like?")
    assert [i.key for i in found][:1] == ["1"]
    assert "3" not in [i.key for i in found] and "4" not in [i.key for i in found]
    assert "5" not in [i.key for i in found]  # only its body is indexed
    assert all(i.score is not None and i.score > 0 for i in found)
    assert [i.key for i in store.search(("mem",), query="postgresql")] == ["3"]
    assert store.search(("mem",), query="zebra") == []


def test_semantic_query_with_an_index_config(db_path: str) -> None:
    store = OctopodaStore(db_path, index={"dims": 256, "embed": hashed_words, "fields": ["text"]})
    store.put(("mem",), "tea", {"text": "green tea every morning"})
    store.put(("mem",), "db", {"text": "postgres runs on port 5432"})
    store.put(("mem",), "plain", {"other": "no text field"})
    found = store.search(("mem",), query="morning tea")
    assert found[0].key == "tea" and found[0].score is not None
    assert found[0].score > (found[1].score or 0.0)
    assert found[-1].key == "plain" and found[-1].score is None  # nothing embedded: last
    stored = store.agent.recall(store_key(("mem",), "tea")).value
    assert len(stored["vectors"]["text"]) == 256


def test_list_namespaces(store: OctopodaStore) -> None:
    for ns in [
        ("users", "a", "prefs"),
        ("users", "b", "prefs"),
        ("users", "b", "notes"),
        ("docs", "v1"),
    ]:
        store.put(ns, "k", {"v": 1})
    assert store.list_namespaces() == sorted(
        [("users", "a", "prefs"), ("users", "b", "prefs"), ("users", "b", "notes"), ("docs", "v1")]
    )
    assert store.list_namespaces(prefix=("users",), max_depth=2) == [("users", "a"), ("users", "b")]
    assert store.list_namespaces(suffix=("prefs",)) == [
        ("users", "a", "prefs"),
        ("users", "b", "prefs"),
    ]
    assert store.list_namespaces(prefix=("users", "*", "notes")) == [("users", "b", "notes")]
    assert store.list_namespaces(limit=1, offset=1) == [("users", "a", "prefs")]
    result = store.batch(
        [ListNamespacesOp((MatchCondition("prefix", ("docs",)),), max_depth=None, limit=10)]
    )
    assert result == [[("docs", "v1")]]


def test_ttl_expires_refreshes_and_defaults(db_path: str) -> None:
    clock = FrozenClock()
    agent = AgentRuntime("ttl", store=db_path, clock=clock)
    store = OctopodaStore(agent, clock=clock, ttl={"default_ttl": 10.0})
    assert store.supports_ttl
    store.put(("s",), "default", {"v": 1})  # 10 minutes by default
    store.put(("s",), "short", {"v": 2}, ttl=1.0)
    store.put(("s",), "forever", {"v": 3}, ttl=None)
    clock.advance(50)
    assert store.get(("s",), "short") is not None  # read at 50 s: refreshed to 110 s
    clock.advance(50)
    assert store.get(("s",), "short", refresh_ttl=False) is not None  # 100 s < 110 s
    clock.advance(20)
    assert store.get(("s",), "short") is None  # 120 s: expired
    assert {i.key for i in store.search(("s",))} == {"default", "forever"}
    clock.advance(600)
    assert [i.key for i in store.search(("s",))] == ["forever"]
    assert store.list_namespaces() == [("s",)]
    with pytest.raises(Exception, match="ttl"):
        store.put(("s",), "bad", {"v": 1}, ttl=-5)


def test_async_api(db_path: str) -> None:
    store = OctopodaStore(db_path)

    async def scenario() -> Any:
        await store.aput(("a",), "k", {"text": "hello world"})
        got = await store.aget(("a",), "k")
        found = await store.asearch(("a",), query="hello")
        spaces = await store.alist_namespaces()
        await store.adelete(("a",), "k")
        return got, found, spaces, await store.aget(("a",), "k")

    got, found, spaces, gone = asyncio.run(scenario())
    assert got.value == {"text": "hello world"} and [i.key for i in found] == ["k"]
    assert spaces == [("a",)] and gone is None


def test_async_api_with_async_embeddings(db_path: str) -> None:
    async def aembed(texts: list[str]) -> list[list[float]]:
        return hashed_words(texts)

    store = OctopodaStore(db_path, index={"dims": 256, "embed": aembed, "fields": ["text"]})

    async def scenario() -> Any:
        await store.aput(("m",), "a", {"text": "tea in the morning"})
        await store.aput(("m",), "b", {"text": "ports and servers"})
        return await store.asearch(("m",), query="morning tea")

    assert asyncio.run(scenario())[0].key == "a"


def test_store_and_saver_share_one_agent(db_path: str) -> None:
    from octopoda_langchain import OctopodaSaver

    agent = AgentRuntime("assistant", store=db_path)
    store = OctopodaStore(agent)
    saver = OctopodaSaver(agent)
    store.put(("users", "u1"), "name", {"name": "Alice"})
    assert store.agent is saver.agent
    assert agent.keys("ls/") == [store_key(("users", "u1"), "name")]
    assert agent.audit.verify().ok
