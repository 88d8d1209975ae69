"""LangGraph's documented ways to open its SQLite and PostgreSQL backends, with ours in their
place and nothing else changed: ``from_conn_string`` as ``with`` and ``async with``,
``setup()`` and ``await setup()``, ``with`` / ``async with`` on the object itself.

The snippets follow the READMEs of langgraph-checkpoint-sqlite and
langgraph-checkpoint-postgres (``SqliteSaver``, ``AsyncSqliteSaver``, ``PostgresSaver``,
``AsyncPostgresSaver``) and the docstrings of ``SqliteStore`` / ``PostgresStore``; each runs
on a SQLite file and on PostgreSQL.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from octopoda_langchain import OctopodaSaver, OctopodaStore

WRITE_CONFIG: Any = {"configurable": {"thread_id": "1", "checkpoint_ns": ""}}
READ_CONFIG: Any = {"configurable": {"thread_id": "1"}}
CHECKPOINT: Any = {
    "v": 4,
    "ts": "2024-07-31T20:14:19.804150+00:00",
    "id": "1ef4f797-8335-6428-8001-8a1503f9b875",
    "channel_values": {"my_key": "meow", "node": "node"},
    "channel_versions": {"__start__": 2, "my_key": 3, "start:node": 3, "node": 3},
    "versions_seen": {
        "__input__": {},
        "__start__": {"__start__": 1},
        "node": {"start:node": 2},
    },
}


@pytest.fixture(params=["sqlite", "postgresql"])
def DB_URI(request: pytest.FixtureRequest, db_path: str) -> str:
    if request.param == "sqlite":
        return db_path
    url: str = request.getfixturevalue("postgres_url")
    return url


def test_the_sync_checkpointer_snippet(DB_URI: str) -> None:
    with OctopodaSaver.from_conn_string(DB_URI) as checkpointer:
        # call .setup() the first time you're using the checkpointer
        checkpointer.setup()
        checkpointer.put(WRITE_CONFIG, CHECKPOINT, {}, {})
        loaded = checkpointer.get(READ_CONFIG)
        listed = list(checkpointer.list(READ_CONFIG))
    assert loaded is not None and loaded["channel_values"] == CHECKPOINT["channel_values"]
    assert [c.checkpoint["id"] for c in listed] == [CHECKPOINT["id"]]


def test_the_async_checkpointer_snippet(DB_URI: str) -> None:
    async def main() -> tuple[Any, list[Any]]:
        async with OctopodaSaver.from_conn_string(DB_URI) as checkpointer:
            await checkpointer.setup()
            await checkpointer.aput(WRITE_CONFIG, CHECKPOINT, {}, {})
            loaded = await checkpointer.aget(READ_CONFIG)
            listed = [c async for c in checkpointer.alist(READ_CONFIG)]
        return loaded, listed

    loaded, listed = asyncio.run(main())
    assert loaded is not None and loaded["id"] == CHECKPOINT["id"]
    assert [c.checkpoint["id"] for c in listed] == [CHECKPOINT["id"]]


@pytest.mark.graph
def test_a_graph_compiled_inside_from_conn_string(DB_URI: str) -> None:
    from langgraph.graph import StateGraph

    builder: Any = StateGraph(int)
    builder.add_node("add_one", lambda x: x + 1)
    builder.set_entry_point("add_one")
    builder.set_finish_point("add_one")
    config: Any = {"configurable": {"thread_id": "1"}}
    with OctopodaSaver.from_conn_string(DB_URI) as memory:
        graph = builder.compile(checkpointer=memory)
        assert graph.get_state(config).values == {}
        assert graph.invoke(3, config) == 4
        assert graph.get_state(config).values == 4

    async def again() -> Any:
        async with OctopodaSaver.from_conn_string(DB_URI) as memory:
            graph = builder.compile(checkpointer=memory)
            return (await graph.aget_state(config)).values

    assert asyncio.run(again()) == 4  # the same thread, from a new saver


def test_the_store_snippets(DB_URI: str) -> None:
    with OctopodaStore.from_conn_string(DB_URI) as store:
        store.setup()  # Run migrations. Done once
        store.put(("users", "123"), "prefs", {"theme": "dark"})
        item = store.get(("users", "123"), "prefs")
    assert item is not None and item.value == {"theme": "dark"}

    async def main() -> Any:
        async with OctopodaStore.from_conn_string(DB_URI) as store:
            await store.setup()
            await store.aput(("users", "123"), "prefs", {"theme": "light"})
            return await store.aget(("users", "123"), "prefs")

    item = asyncio.run(main())
    assert item is not None and item.value == {"theme": "light"}


def test_the_vector_store_snippet(DB_URI: str, hashed_words: Any) -> None:
    index: Any = {"dims": 256, "embed": hashed_words, "fields": ["text"]}
    with OctopodaStore.from_conn_string(DB_URI, index=index) as store:
        store.setup()
        store.put(("docs",), "doc1", {"text": "Python tutorial"})
        store.put(("docs",), "doc2", {"text": "TypeScript guide"})
        store.put(("docs",), "doc3", {"text": "Other guide"}, index=False)  # don't index
        results = store.search(("docs",), query="TypeScript guides", limit=2)
    assert [r.key for r in results] == ["doc2", "doc1"]


def test_with_and_async_with_on_the_objects_close_them(DB_URI: str) -> None:
    closed: list[str] = []

    class Saver(OctopodaSaver):
        def close(self) -> None:
            closed.append("saver")
            super().close()

    class Store(OctopodaStore):
        def close(self) -> None:
            closed.append("store")
            super().close()

    with Saver(DB_URI) as saver:
        saver.put(WRITE_CONFIG, CHECKPOINT, {}, {})

    async def main() -> Any:
        async with Saver(DB_URI) as saver, Store(DB_URI) as store:
            await store.aput(("a",), "k", {"v": 1})
            return await saver.aget_tuple(READ_CONFIG)

    found = asyncio.run(main())
    assert found is not None and found.checkpoint["id"] == CHECKPOINT["id"]
    assert closed == ["saver", "store", "saver"]


def test_setup_is_idempotent_and_awaitable(DB_URI: str) -> None:
    saver, store = OctopodaSaver(DB_URI), OctopodaStore(DB_URI)
    for _ in range(2):
        saver.setup()
        store.setup()

    async def main() -> None:
        await saver.setup()
        await store.setup()

    asyncio.run(main())
    saver.put(WRITE_CONFIG, CHECKPOINT, {}, {})
    assert saver.get(READ_CONFIG) is not None
