"""OctopodaSession: the Session contract, tombstones, audit, layout, concurrency."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, RunConfig, Runner, Session, SessionABC, SessionSettings
from octopoda_openai_agents import OctopodaSession, session_ids
from octopoda_openai_agents.testing import ScriptedModel, assistant_message

from octopoda import InvalidInput, InvalidValue, SqliteStore

SDK = tuple(int(p) for p in version("openai-agents").split(".")[:2])


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def test_is_an_sdk_session(store: SqliteStore) -> None:
    session = OctopodaSession("s", store)
    assert isinstance(session, SessionABC)
    assert isinstance(session, Session)
    assert session.session_id == "s"
    assert session.agent_id == "openai-session:s"
    assert session.session_settings == SessionSettings()
    assert "openai-session:s" not in repr(session) and "'s'" in repr(session)


def test_add_items_is_one_audited_event(store: SqliteStore) -> None:
    session = OctopodaSession("s", store)
    asyncio.run(session.add_items([user("a"), user("b"), user("c")]))
    events = session.runtime.timeline()
    assert [e.kind for e in events] == ["remember"]
    assert [w["key"] for w in events[0].payload["writes"]] == [
        "item/000000000000",
        "item/000000000001",
        "item/000000000002",
        "meta",
    ]
    assert session.runtime.recall("meta").value == {"session_id": "s", "next_index": 3}
    asyncio.run(session.add_items([]))  # nothing to add: nothing written
    assert len(session.runtime.timeline()) == 1


def test_pop_and_clear_write_tombstones_and_keep_history(store: SqliteStore) -> None:
    session = OctopodaSession("s", store)

    async def play() -> list[Any]:
        await session.add_items([user("a"), user("b")])
        popped = await session.pop_item()
        await session.add_items([user("c")])
        await session.clear_session()
        await session.clear_session()  # already empty: nothing written
        return [popped, await session.get_items(), await session.pop_item()]

    popped, items, empty_pop = asyncio.run(play())
    assert popped == user("b") and items == [] and empty_pop is None
    runtime = session.runtime
    assert [e.kind for e in runtime.timeline()] == ["remember", "forget", "remember", "forget"]
    history = runtime.recall_history("item/000000000001")
    assert [(v.tombstone, v.value) for v in history] == [(True, None), (False, user("b"))]
    # indexes are never reused: "c" went to index 2, not to popped index 1
    assert runtime.recall_history("item/000000000002")[-1].value == user("c")
    assert runtime.keys() == ["meta"]
    report = runtime.audit.verify()
    assert report.ok and report.checked == 4


def test_get_items_limit_like_sqlite_session(store: SqliteStore) -> None:
    session = OctopodaSession("s", store, session_settings=SessionSettings(limit=2))
    items = [user(str(i)) for i in range(5)]

    async def play() -> list[Any]:
        await session.add_items(items)
        return [
            await session.get_items(),  # the settings' limit
            await session.get_items(limit=3),
            await session.get_items(limit=0),
            await session.get_items(limit=99),
            await session.get_items(limit=-1),  # SQLite's LIMIT -1: no limit
        ]

    assert asyncio.run(play()) == [items[-2:], items[-3:], [], items, items]
    with pytest.raises(InvalidInput):
        asyncio.run(session.get_items(limit="2"))  # type: ignore[arg-type]
    dict_settings = OctopodaSession("t", store, session_settings={"limit": 1})
    assert dict_settings.session_settings == SessionSettings(limit=1)
    for bad in ({"limt": 1}, {"limit": "many"}, ["limit"]):
        with pytest.raises(InvalidInput):
            OctopodaSession("u", store, session_settings=bad)  # type: ignore[arg-type]


def test_items_come_back_as_new_objects(store: SqliteStore) -> None:
    session = OctopodaSession("s", store)
    item = {"role": "user", "content": [{"type": "input_text", "text": "x"}]}
    asyncio.run(session.add_items([item]))
    first = asyncio.run(session.get_items())
    first[0]["content"][0]["text"] = "changed by the caller"
    item["role"] = "changed too"
    assert asyncio.run(session.get_items()) == [
        {"role": "user", "content": [{"type": "input_text", "text": "x"}]}
    ]


def test_a_value_json_cannot_hold_is_refused_and_nothing_is_written(store: SqliteStore) -> None:
    session = OctopodaSession("s", store)
    with pytest.raises(InvalidValue):
        asyncio.run(session.add_items([user("ok"), {"role": "user", "content": float("nan")}]))
    assert asyncio.run(session.get_items()) == []
    assert session.runtime.timeline() == []


@pytest.mark.parametrize("bad", ["", None, 7])
def test_session_id_must_be_text(store: SqliteStore, bad: Any) -> None:
    with pytest.raises(InvalidInput):
        OctopodaSession(bad, store)


def test_sessions_are_listed_and_reopened(tmp_path: Path) -> None:
    db = str(tmp_path / "chat.db")
    for sid in ("user-2", "user-1"):
        asyncio.run(OctopodaSession(sid, db).add_items([user(sid)]))
    assert session_ids(db) == ["user-1", "user-2"]
    assert session_ids(db, agent_prefix="other:") == []
    assert asyncio.run(OctopodaSession("user-1", db).get_items()) == [user("user-1")]


def test_two_objects_on_one_session_see_each_others_writes(tmp_path: Path) -> None:
    db = str(tmp_path / "chat.db")
    a, b = OctopodaSession("s", db), OctopodaSession("s", db)

    async def play() -> list[Any]:
        await a.add_items([user("1")])
        await b.add_items([user("2")])  # b had never read: it reads, then appends
        await a.add_items([user("3")])  # a's view is old: its write is refused and redone
        popped = await b.pop_item()
        return [popped, await a.get_items(), await b.get_items()]

    popped, seen_a, seen_b = asyncio.run(play())
    assert popped == user("3")
    assert seen_a == seen_b == [user("1"), user("2")]
    assert a.runtime.audit.verify().ok


def test_concurrent_writers_never_overwrite_each_other(tmp_path: Path) -> None:
    db = str(tmp_path / "chat.db")
    writers = [OctopodaSession("shared", db) for _ in range(3)]
    errors: list[BaseException] = []

    def write(n: int, session: OctopodaSession) -> None:
        try:
            for i in range(20):
                asyncio.run(session.add_items([user(f"{n}-{i}"), user(f"{n}-{i}b")]))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(n, s)) for n, s in enumerate(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    items = asyncio.run(OctopodaSession("shared", db).get_items())
    texts = [i["content"] for i in items]
    expected = {n: [f"{n}-{i}{s}" for i in range(20) for s in ("", "b")] for n in range(3)}
    assert sorted(texts) == sorted(t for mine in expected.values() for t in mine)
    for n in range(3):  # each writer's items in its own order, each pair together
        assert [t for t in texts if t.startswith(f"{n}-")] == expected[n]
    for i in range(0, 120, 2):
        assert texts[i + 1] == texts[i] + "b"


@pytest.mark.skipif(SDK < (0, 20), reason="sessions receive the run context from 0.20")
def test_the_run_context_reaches_the_session(store: SqliteStore) -> None:
    session = OctopodaSession("s", store, item_tags=lambda w: [f"user:{w.context['user']}"])
    agent = Agent(name="a", model=ScriptedModel([[assistant_message("hello")]]))
    asyncio.run(
        Runner.run(
            agent,
            "hi",
            session=session,
            context={"user": "u1"},
            run_config=RunConfig(tracing_disabled=True),
        )
    )
    tagged = session.runtime.search("item/", tags=["user:u1"])
    assert [i.value.get("role") for i in tagged] == ["user", "assistant"]


def test_item_tags_must_be_callable(store: SqliteStore) -> None:
    with pytest.raises(InvalidInput):
        OctopodaSession("s", store, item_tags=["x"])  # type: ignore[arg-type]


def test_sessions_are_inspected_with_the_cli(tmp_path: Path) -> None:
    pytest.importorskip("click", reason="the octopoda CLI needs octopoda-core[cli]")
    db = str(tmp_path / "chat.db")
    session = OctopodaSession("u1", db)

    async def play() -> None:
        await session.add_items([user("hi")])
        await session.pop_item()
        await session.add_items([user("again")])

    asyncio.run(play())

    def cli(*args: str) -> Any:
        done = subprocess.run(
            [sys.executable, "-m", "octopoda", "--store", db, *args, "--json"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    assert [a["id"] for a in cli("agents")] == ["openai-session:u1"]
    items = cli("memory", "list", "--agent", "openai-session:u1", "--prefix", "item/")
    assert [(i["key"], i["value"]) for i in items] == [("item/000000000001", user("again"))]
    history = cli("memory", "history", "--agent", "openai-session:u1", "item/000000000000")
    assert [(v["tombstone"], v["value"]) for v in history] == [(True, None), (False, user("hi"))]
