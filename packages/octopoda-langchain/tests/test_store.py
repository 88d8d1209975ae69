"""OctopodaStore: LangGraph's BaseStore contract on Octopoda memory."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
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

Embed = Callable[[list[str]], list[list[float]]]


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
    for bad in [(), ("a.b",), ("",), ("a", "nul\x00")]:
        with pytest.raises(InvalidNamespaceError):
            store.batch([PutOp(bad, "k", {"v": 1})])
    with pytest.raises(InvalidNamespaceError):
        store.batch([SearchOp(("a.b",))])
    for path in [("a.b",), ("",), ("*", 3)]:
        with pytest.raises(InvalidNamespaceError):
            store.batch([ListNamespacesOp((MatchCondition("prefix", path),))])  # type: ignore[arg-type]
    # The reserved root label is the public put's rule, as in LangGraph's own stores;
    # batch (what LangGraph itself calls) accepts it.
    with pytest.raises(InvalidNamespaceError):
        store.put(("langgraph", "x"), "k", {"v": 1})
    store.batch([PutOp(("langgraph", "x"), "k", {"v": 1})])
    assert store.get(("langgraph", "x"), "k").value == {"v": 1}  # type: ignore[union-attr]
    assert [i.key for i in store.search(["langgraph"])] == ["k"]  # type: ignore[arg-type]
    assert store.list_namespaces(prefix=("langgraph", "*")) == [("langgraph", "x")]


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
    ranked = [i.key for i in found if i.score is not None]
    assert ranked[:1] == ["1"] and set(ranked) == {"1", "2"}
    assert all(i.score > 0 for i in found if i.score is not None)
    # "3", "4" (not indexed) and "5" (only its body is indexed) have no query word: they
    # come after the ranked items, unscored, newest first, as LangGraph's stores return
    # every item for a query without an index
    assert [(i.key, i.score) for i in found[2:]] == [("5", None), ("4", None), ("3", None)]
    assert [i.key for i in store.search(("mem",), query="postgresql")][:1] == ["3"]
    assert [i.score for i in store.search(("mem",), query="zebra")] == [None] * 5


def test_semantic_query_with_an_index_config(db_path: str, hashed_words: Embed) -> None:
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


def test_default_index_fields_embed_the_whole_value(db_path: str, hashed_words: Embed) -> None:
    """LangGraph's default ``fields`` is ``["$"]``: with only ``dims`` and ``embed``, every
    value is embedded whole, and a query ranks by it."""
    store = OctopodaStore(db_path, index={"dims": 256, "embed": hashed_words})
    store.put(("mem",), "tea", {"text": "green tea every morning", "mood": "calm"})
    store.put(("mem",), "db", {"note": "postgres runs on port 5432"})
    store.put(("mem",), "skip", {"text": "tea tea tea"}, index=False)
    for key in ("tea", "db"):
        stored = store.agent.recall(store_key(("mem",), key)).value
        assert list(stored["vectors"]) == ["$"] and len(stored["vectors"]["$"]) == 256
    found = store.search(("mem",), query="morning tea")
    assert [i.key for i in found] == ["tea", "db", "skip"]
    assert found[0].score is not None and found[1].score is not None
    assert found[0].score > found[1].score
    assert found[2].score is None  # not embedded (index=False): after the ranked ones
    assert [i.key for i in store.search(("mem",), query="postgres port")][:1] == ["db"]


def test_filters_follow_dotted_paths(store: OctopodaStore) -> None:
    store.put(("u",), "ann", {"user": {"tier": "gold", "age": 41}, "user.tier": "literal"})
    store.put(("u",), "bob", {"user": {"tier": "free", "age": 17}})
    store.put(("u",), "cy", {"user": "not a dict"})
    assert [i.key for i in store.search(("u",), filter={"user.age": {"$gte": 18}})] == ["ann"]
    assert [i.key for i in store.search(("u",), filter={"user.tier": "free"})] == ["bob"]
    # a literal key wins over the path it spells
    assert [i.key for i in store.search(("u",), filter={"user.tier": "literal"})] == ["ann"]
    assert store.search(("u",), filter={"user.tier.x": "gold"}) == []
    with pytest.raises(ValueError, match="Invalid filter key"):
        store.search(("u",), filter={"x') OR 1=1 --": "y"})


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
    # a bare string as the path is one label (as a one-label tuple)
    by_str = ListNamespacesOp((MatchCondition("suffix", "prefs"),))  # type: ignore[arg-type]
    assert store.batch([by_str])[0] == [("users", "a", "prefs"), ("users", "b", "prefs")]
    assert store.list_namespaces(limit=1, offset=1) == [("users", "a", "prefs")]
    result = store.batch(
        [ListNamespacesOp((MatchCondition("prefix", ("docs",)),), max_depth=None, limit=10)]
    )
    assert result == [[("docs", "v1")]]


def test_ttl_expires_refreshes_and_defaults(db_path: str) -> None:
    clock = FrozenClock()
    agent = AgentRuntime("ttl", store=db_path, clock=clock)
    store = OctopodaStore(agent, clock=clock, ttl={"default_ttl": 10.0, "refresh_on_read": True})
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


def test_reads_refresh_ttls_only_with_refresh_on_read(db_path: str) -> None:
    """As LangGraph's SqliteStore: a read refreshes an item's TTL only when the store's TTL
    config says ``refresh_on_read`` (and the read does not pass ``refresh_ttl=False``)."""
    clock = FrozenClock()
    agent = AgentRuntime("ttl", store=db_path, clock=clock)
    plain = OctopodaStore(agent, clock=clock, ttl={"default_ttl": 1.0})
    plain.put(("s",), "k", {"v": 1})
    head = agent.audit.head().seq
    clock.advance(50)
    assert plain.get(("s",), "k") is not None
    assert plain.search(("s",))[0].key == "k"
    assert agent.audit.head().seq == head  # no refresh was written
    clock.advance(15)
    assert plain.get(("s",), "k") is None  # expired at 60 s


def test_sweep_ttl_counts_and_tombstones_what_expired(db_path: str) -> None:
    clock = FrozenClock()
    agent = AgentRuntime("ttl", store=db_path, clock=clock)
    store = OctopodaStore(agent, clock=clock, ttl={"default_ttl": 1.0})
    store.put(("s",), "a", {"v": 1})
    store.put(("s",), "b", {"v": 2}, ttl=None)
    assert store.sweep_ttl() == 0
    clock.advance(61)
    assert store.get(("s",), "a") is None  # gone before any sweep
    assert store.sweep_ttl() == 1
    assert store.sweep_ttl() == 0
    history = agent.recall_history("ls/s//a")
    assert [v.tombstone for v in history] == [True, False]
    assert store.start_ttl_sweeper().done() and store.stop_ttl_sweeper()
    assert asyncio.run(store.asweep_ttl()) == 0


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


def test_async_api_with_async_embeddings(db_path: str, hashed_words: Embed) -> None:
    async def aembed(texts: list[str]) -> list[list[float]]:
        return hashed_words(texts)

    store = OctopodaStore(db_path, index={"dims": 256, "embed": aembed, "fields": ["text"]})

    async def scenario() -> Any:
        await store.aput(("m",), "a", {"text": "tea in the morning"})
        await store.aput(("m",), "b", {"text": "ports and servers"})
        return await store.asearch(("m",), query="morning tea")

    assert asyncio.run(scenario())[0].key == "a"


def test_concurrent_async_calls_run_as_one_batch(store: OctopodaStore) -> None:
    """As LangGraph's async stores batch them: calls gathered in one turn share one batch,
    so their writes are one audited event; a caller's bad op fails that caller only."""
    head = store.agent.audit.head().seq

    async def scenario() -> list[Any]:
        return await asyncio.gather(
            *(store.aput(("a",), f"k{i}", {"i": i}) for i in range(20)),
            store.aget(("a",), "k0"),  # in the same batch: sees the state before it
            store.aput(("bad.label",), "k", {"x": 1}),
            return_exceptions=True,
        )

    results = asyncio.run(scenario())
    assert results[:21] == [None] * 21
    assert isinstance(results[21], InvalidNamespaceError)
    assert [e.kind for e in store.agent.timeline(after_seq=head)] == ["remember"]
    assert len(store.search(("a",), limit=50)) == 20

    async def deletes() -> list[Any]:
        return await asyncio.gather(
            *(store.adelete(("a",), f"k{i}") for i in range(20)), store.asearch(("a",))
        )

    *_, found = asyncio.run(deletes())
    assert len(found) == 10  # the search ran before the batch's deletes
    assert store.search(("a",)) == []


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_threads_writing_and_deleting_at_once(
    backend: str, db_path: str, request: pytest.FixtureRequest
) -> None:
    """Deletes read then write (they skip items already gone); under a storm of writes from
    other threads of the process they still go through."""
    import threading

    target = db_path if backend == "sqlite" else request.getfixturevalue("postgres_url")
    store = OctopodaStore(target)

    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            for i in range(30):
                store.put(("t", str(n)), f"k{i}", {"i": i})
                store.delete(("t", str(n)), f"k{i}")
                store.put(("t", str(n)), f"k{i}", {"i": -i})
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    assert len(store.search(("t",), limit=1000)) == 8 * 30


def test_store_and_saver_share_one_agent(db_path: str) -> None:
    from octopoda_langchain import OctopodaSaver

    agent = AgentRuntime("assistant", store=db_path)
    store = OctopodaStore(agent)
    saver = OctopodaSaver(agent)
    store.put(("users", "u1"), "name", {"name": "Alice"})
    assert store.agent is saver.agent
    assert agent.keys("ls/") == [store_key(("users", "u1"), "name")]
    assert agent.audit.verify().ok


def test_a_value_that_cannot_be_stored_is_named_as_the_caller_put_it(
    store: OctopodaStore,
) -> None:
    from langgraph.store.base import PutOp

    from octopoda import InvalidValue

    cases = [
        ({"s": {1, 2}}, "a set at value['s'] is not JSON-serialisable"),
        ({"a": [1, {"b": float("nan")}]}, "nan at value['a'][1]['b'] has no JSON form"),
        ({"d": {1: "x"}}, "dict key 1 at value['d']"),
    ]
    for value, wanted in cases:
        with pytest.raises(InvalidValue) as refused:
            store.put(("users", "u1"), "prefs", value)
        message = str(refused.value)
        assert wanted in message, message
        assert "['value']" not in message
        assert "'prefs'" in message and "('users', 'u1')" in message
    # in a batch of several puts, the bad one is named
    with pytest.raises(InvalidValue) as refused:
        store.batch(
            [
                PutOp(("users", "u1"), "fine", {"x": 1}),
                PutOp(("users", "u2"), "broken", {"s": {3}}),
            ]
        )
    message = str(refused.value)
    assert "'broken'" in message and "('users', 'u2')" in message
    assert "value['s']" in message and "['value']" not in message
    assert store.get(("users", "u1"), "fine") is None  # nothing of the batch was stored
    assert store.get(("users", "u1"), "prefs") is None
