"""OctopodaSaver beyond the conformance suite: audit events, key layout, the cache across
savers and processes, the event loop, graphs that crash and resume in one process."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.base.id import uuid6
from octopoda_langchain import OctopodaSaver
from octopoda_langchain._keys import (
    checkpoint_key,
    escape,
    latest_key,
    original,
    parse_checkpoint_key,
    parse_store_key,
    run_key,
    store_key,
    unescape,
    write_key,
)
from octopoda_langchain._ordering import (
    ascending,
    descending,
    filter_tags,
    metadata_tags,
    order_key,
)

from octopoda import AgentRuntime, ConfigError, InvalidInput


def checkpoint(**values: Any) -> Any:
    cp = empty_checkpoint()
    cp["id"] = str(uuid6(clock_seq=-1))
    cp["channel_values"] = dict(values)
    cp["channel_versions"] = {k: 1 for k in values}
    return cp


def cfg(thread: str = "t1", ns: str = "", cid: str | None = None) -> Any:
    conf: dict[str, Any] = {"thread_id": thread, "checkpoint_ns": ns}
    if cid:
        conf["checkpoint_id"] = cid
    return {"configurable": conf}


def put_chain(
    saver: OctopodaSaver, n: int, thread: str = "t1", ns: str = "", **md: Any
) -> list[Any]:
    config, out = cfg(thread, ns), []
    for step in range(n):
        config = saver.put(
            config, checkpoint(step=step), {"source": "loop", "step": step, **md}, {}
        )
        out.append(config)
    return out


# -- keys -------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["", "plain", "a/b", "50%", "%2F", "a%25/b", "nul\x00x", "Ünï/ç"])
def test_escape_round_trips_and_hides_slashes(text: str) -> None:
    assert "/" not in escape(text)
    assert unescape(escape(text)) == text


def test_keys_parse_back() -> None:
    thread, ns, cid = "user/42%", "parent:1|child:2", "1ef-abc"
    t, n = escape(thread), escape(ns)  # parsed back as key segments
    assert parse_checkpoint_key(checkpoint_key(thread, ns, cid))[:4] == ("c", t, n, cid)
    parsed = parse_checkpoint_key(write_key(thread, ns, cid, "task/1", -3))
    assert parsed is not None and (parsed.task_id, parsed.idx) == (escape("task/1"), -3)
    assert parse_checkpoint_key(latest_key(thread, ns))[:3] == ("latest", t, n)
    parsed = parse_checkpoint_key(run_key("run/1", thread, ns, cid))
    assert parsed is not None and parsed.run_id == escape("run/1")
    assert parsed.checkpoint_id == cid and original(parsed.thread) == thread
    assert parse_checkpoint_key("lg/t/broken") is None
    assert parse_checkpoint_key("other") is None
    assert parse_store_key(store_key(("users", "a/b"), "k//x")) == (("users", "a/b"), "k//x")
    assert parse_store_key("ls//x") is None


# -- audit ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "ids",
    [
        ["1", "2", "10", "1a", "", "1f0e-aa", "1f0e-a", "Ünï", "\U0010ffff", "a/b%"],
        [str(uuid6(clock_seq=i)) for i in range(20)],
    ],
)
def test_descending_segments_sort_in_reverse(ids: list[str]) -> None:
    by_bytes = sorted(ids, key=lambda t: t.encode(), reverse=True)
    assert sorted(ids, key=lambda t: descending(t).encode()) == by_bytes
    assert all(ascending(descending(t)) == t for t in ids)
    assert all(set(descending(t)) <= set("0123456789abcdef~") for t in ids)


def test_metadata_tags_and_filter_tags_meet() -> None:
    meta = {"source": "loop", "step": 3, "ok": True, "score": 2.0, "user": {"tier": "gold"}}
    tags = metadata_tags(meta)
    assert tags is not None
    assert set(tags) == {
        'm:source="loop"',
        "m:step=3",
        "m:ok=1",
        "m:score=2",
        'm:user.tier="gold"',
    }
    for wanted in ({"step": 3.0}, {"ok": 1}, {"user.tier": "gold"}, {"user": {"tier": "gold"}}):
        assert set(filter_tags(wanted)) <= set(tags), wanted
    assert filter_tags({"writes": None, "l": [1], "d": {}}) == []  # nothing a tag can say
    assert metadata_tags(None) is None
    assert metadata_tags({"long": "x" * 300, "a": 1}) is None
    assert metadata_tags({f"k{i}": i for i in range(70)}) is None
    deep = {"a": {"b": {"c": {"d": {"e": 1}}}}, "n": None, "l": [1, 2]}
    assert metadata_tags(deep) is None


def test_every_put_and_put_writes_is_one_audited_event(db_path: str) -> None:
    saver = OctopodaSaver(db_path, agent_id="bot")
    head = saver.agent.audit.head().seq
    config = saver.put(cfg(), checkpoint(x=1), {"source": "input", "step": -1, "run_id": "r1"}, {})
    saver.put_writes(config, [("a", 1), ("b", {"n": 2})], "task-1", "path")
    saver.put_writes(config, [("a", 1)], "task-1")  # already stored: no event at all
    events = saver.agent.timeline(after_seq=head)
    assert [e.kind for e in events] == ["remember", "remember"]
    put_keys = sorted(w["key"] for w in events[0].payload["writes"])
    cid = config["configurable"]["checkpoint_id"]
    assert put_keys == sorted(
        [
            checkpoint_key("t1", "", cid),
            latest_key("t1", ""),
            run_key("r1", "t1", "", cid),
            order_key("t1", "", cid),
        ]
    )
    assert len(events[1].payload["writes"]) == 2
    report = saver.agent.audit.verify()
    assert report.ok and report.head.seq == head + 2
    record = saver.agent.recall(checkpoint_key("t1", "", cid)).value
    assert record["metadata"] == {"source": "input", "step": -1, "run_id": "r1"}
    assert record["thread_id"] == "t1" and record["parent_checkpoint_id"] is None


def test_deletes_are_tombstones_and_history_stays(db_path: str) -> None:
    saver = OctopodaSaver(db_path)
    configs = put_chain(saver, 3)
    cid = configs[0]["configurable"]["checkpoint_id"]
    saver.delete_thread("t1")
    assert saver.get_tuple(cfg()) is None
    history = saver.agent.recall_history(checkpoint_key("t1", "", cid))
    assert [v.tombstone for v in history] == [True, False]
    assert history[1].value["checkpoint_id"] == cid
    assert saver.agent.audit.verify().ok


def test_special_thread_ids_and_namespaces(db_path: str) -> None:
    saver = OctopodaSaver(db_path)
    for thread in ["a/b", "50%/x", "Ünï", "t\x00nul"]:
        for ns in ["", "parent:1|child:2/x"]:
            config = saver.put(cfg(thread, ns), checkpoint(v=thread), {"step": 0}, {})
            got = saver.get_tuple(cfg(thread, ns))
            assert got is not None and got.config == config
            assert got.checkpoint["channel_values"] == {"v": thread}
    assert len(list(saver.list(None))) == 8
    assert len(list(saver.list({"configurable": {"thread_id": "a/b"}}))) == 2


def test_metadata_that_is_not_json_round_trips(db_path: str) -> None:
    saver = OctopodaSaver(db_path)
    config = saver.put(cfg(), checkpoint(), {"step": 1, "blob": b"\x00\xff", "when": {1, 2}}, {})
    got = saver.get_tuple(config)
    assert (
        got is not None and got.metadata["blob"] == b"\x00\xff" and got.metadata["when"] == {1, 2}
    )
    assert [t.metadata["step"] for t in saver.list(cfg(), filter={"blob": b"\x00\xff"})] == [1]


def test_list_filters_before_limit_and_all_threads(db_path: str) -> None:
    saver = OctopodaSaver(db_path)
    configs = put_chain(saver, 4, run_id="r")
    put_chain(saver, 2, thread="t2")
    ids = [c["configurable"]["checkpoint_id"] for c in configs]
    assert [t.checkpoint["id"] for t in saver.list(cfg())] == ids[::-1]
    assert [t.metadata["step"] for t in saver.list(cfg(), filter={"step": 2})] == [2]
    assert [t.checkpoint["id"] for t in saver.list(cfg(), before=configs[2], limit=1)] == [ids[1]]
    assert [t.checkpoint["id"] for t in saver.list(cfg(cid=ids[1]))] == [ids[1]]
    assert len(list(saver.list(None))) == 6
    assert list(saver.list(cfg(), limit=0)) == []
    # parent links
    got = saver.get_tuple(configs[3])
    assert got is not None and got.parent_config == {
        "configurable": {"thread_id": "t1", "checkpoint_ns": "", "checkpoint_id": ids[2]}
    }


def test_listing_all_threads_follows_copies_deletes_and_prunes(db_path: str) -> None:
    """list(None) reads the order index: it must follow every change to the checkpoints,
    including copies (tagged m:*, checked one by one), deletes, prunes, run deletes and
    metadata that is not JSON."""
    saver = OctopodaSaver(db_path)

    def ids(**kw: Any) -> list[tuple[str, int]]:
        return [
            (t.config["configurable"]["thread_id"], t.metadata["step"])
            for t in saver.list(None, **kw)
        ]

    put_chain(saver, 3, thread="a", run_id="run-a")
    put_chain(saver, 2, thread="b", run_id="run-b", user={"tier": "gold"})
    assert ids() == [("b", 1), ("b", 0), ("a", 2), ("a", 1), ("a", 0)]
    assert ids(filter={"user.tier": "gold"}, limit=1) == [("b", 1)]
    saver.copy_thread("a", "c")
    assert ids(filter={"step": 2}) == [("a", 2), ("c", 2)]  # the copy has the same ids
    assert ids(filter={"run_id": "run-a"}, limit=10)[:2] == [("a", 2), ("c", 2)]
    saver.delete_thread("b")
    assert ids(filter={"user.tier": "gold"}) == []
    saver.prune(["a"], strategy="keep_latest")
    assert ids(filter={"run_id": "run-a"}) == [("a", 2), ("c", 2), ("c", 1), ("c", 0)]
    saver.delete_for_runs(["run-a"])
    assert ids() == []
    odd = saver.put(cfg("d"), checkpoint(x=1), {"step": 7, "when": {1, 2}}, {})  # not JSON
    assert [t.config for t in saver.list(None, filter={"step": 7})] == [odd]
    assert list(saver.list(None, filter={"step": 8})) == []
    fresh = OctopodaSaver(db_path)  # another saver (its own cache) sees the same
    assert [t.config for t in fresh.list(None, limit=5)] == [odd]
    # the same checkpoint put again, its metadata now taggable: listed once, as it is now
    again = saver.get_tuple(odd)
    assert again is not None
    saver.put(cfg("d"), again.checkpoint, {"step": 8}, {})
    assert [t.metadata["step"] for t in saver.list(None)] == [8]
    assert list(saver.list(None, filter={"step": 7})) == []
    assert [t.config for t in saver.list(None, filter={"step": 8})] == [odd]


def test_metadata_round_trips_with_writes_and_filters_follow_paths(db_path: str) -> None:
    """As InMemorySaver and SqliteSaver: metadata comes back as it was put, the ``writes``
    key included, and ``list(filter=...)`` matches it, dotted keys as paths."""
    saver = OctopodaSaver(db_path)
    meta = {"source": "loop", "step": 1, "writes": {"node": {"x": 1}}, "user": {"tier": "gold"}}
    config = saver.put(cfg(), checkpoint(x=1), meta, {})
    saver.put(cfg("t2"), checkpoint(x=2), {"source": "loop", "step": 2, "writes": None}, {})
    got = saver.get_tuple(config)
    assert got is not None and got.metadata == meta
    by_writes = list(saver.list(None, filter={"writes": {"node": {"x": 1}}}))
    assert [t.config for t in by_writes] == [config]
    assert [t.config for t in saver.list(None, filter={"user.tier": "gold"})] == [config]
    assert [t.config for t in saver.list(None, filter={"writes.node.x": 1})] == [config]
    assert len(list(saver.list(None, filter={"writes": None}))) == 1
    with pytest.raises(ValueError, match="Invalid filter key"):
        list(saver.list(None, filter={"'; DROP TABLE checkpoints; --": 1}))


def test_checkpoints_before_format_4_get_their_parents_sends(db_path: str) -> None:
    """As LangGraph's PostgresSaver migrates them: a checkpoint of format < 4 (before sends
    became the TASKS channel) reads its parent's TASKS writes as that channel."""
    from langgraph.checkpoint.base import create_checkpoint
    from langgraph.checkpoint.serde.types import TASKS

    saver = OctopodaSaver(db_path)
    old = empty_checkpoint()
    old["v"] = 2
    first = saver.put(cfg(), old, {}, {})
    saver.put_writes(first, [(TASKS, "send-1"), (TASKS, "send-2")], task_id="task-1")
    saver.put_writes(first, [(TASKS, "send-3"), ("other", "x")], task_id="task-2")
    second = saver.put(first, create_checkpoint(old, {}, 1), {}, {})
    got = saver.get_tuple(second)
    assert got is not None
    assert got.checkpoint["channel_values"] == {TASKS: ["send-1", "send-2", "send-3"]}
    assert TASKS in got.checkpoint["channel_versions"]
    listed = list(saver.list(cfg()))
    assert [t.checkpoint["channel_values"] for t in listed] == [
        {TASKS: ["send-1", "send-2", "send-3"]},
        {},
    ]
    saver.put_writes(second, [(TASKS, "send-4")], task_id="task-3")
    new = checkpoint(x=1)
    new["v"] = 4
    current = saver.put(second, new, {}, {})  # format 4: its sends are its own business
    assert saver.get_tuple(current).checkpoint["channel_values"] == {"x": 1}  # type: ignore[union-attr]


def test_pending_writes_come_back_in_writes_sort_key_order(db_path: str) -> None:
    saver = OctopodaSaver(db_path)
    config = saver.put(cfg(), checkpoint(), {"step": 0}, {})
    saver.put_writes(config, [("c", 3), ("d", 4)], "task-b", "~b")
    saver.put_writes(config, [("a", 1), ("b", 2)], "task-a", "~a")
    saver.put_writes(config, [("__error__", "boom")], "task-a", "~a")
    saver.put_writes(config, [("__error__", "boom again")], "task-a", "~a")  # special: replaces
    fresh = OctopodaSaver(db_path)
    for s in (saver, fresh):
        got = s.get_tuple(config)
        assert got is not None
        assert got.pending_writes == [
            ("task-a", "__error__", "boom again"),
            ("task-a", "a", 1),
            ("task-a", "b", 2),
            ("task-b", "c", 3),
            ("task-b", "d", 4),
        ]


def test_copy_prune_and_delete_for_runs_keep_latest_pointer_right(db_path: str) -> None:
    saver = OctopodaSaver(db_path)
    first = put_chain(saver, 2, run_id="run-1")
    second = put_chain(saver, 1, run_id="run-2")  # newest: thread latest is run-2's
    saver.copy_thread("t1", "copy")
    assert [t.checkpoint["id"] for t in saver.list(cfg("copy"))] == [
        t.checkpoint["id"] for t in saver.list(cfg("t1"))
    ]
    saver.delete_for_runs(["run-2"])
    latest = saver.get_tuple(cfg())
    assert latest is not None and latest.config == first[-1]
    saver.delete_for_runs(["run-1"])
    assert saver.get_tuple(cfg()) is None
    # the copy has its own run index: deleting run-1 and run-2 emptied it too
    assert saver.get_tuple(cfg("copy")) is None
    put_chain(saver, 3, thread="p")
    saver.prune(["p"])
    assert len(list(saver.list(cfg("p")))) == 1
    with pytest.raises(InvalidInput):
        saver.prune(["p"], strategy="sometimes")
    assert second and saver.agent.audit.verify().ok


def test_a_stale_latest_pointer_falls_back_to_the_newest_checkpoint(db_path: str) -> None:
    saver = OctopodaSaver(db_path, agent_id="bot")
    configs = put_chain(saver, 2)
    newest = configs[1]["configurable"]["checkpoint_id"]
    saver.agent.forget(checkpoint_key("t1", "", newest))  # behind the saver's back
    for s in (saver, OctopodaSaver(db_path, agent_id="bot")):
        got = s.get_tuple(cfg())
        assert got is not None and got.config == configs[0]


def test_options_are_checked() -> None:
    with pytest.raises(InvalidInput):
        OctopodaSaver(":memory:", cache_size=-1)
    with pytest.raises(ConfigError):
        OctopodaSaver(42)  # type: ignore[arg-type]
    saver = OctopodaSaver(":memory:")
    with pytest.raises(InvalidInput):
        saver.put_writes(cfg(), [("a", 1)], "task")
    assert "OctopodaSaver(agent='langgraph'" in repr(saver)


def test_next_versions_increase(db_path: str) -> None:
    saver = OctopodaSaver(db_path)
    versions = [saver.get_next_version(None, None)]
    for _ in range(3):
        versions.append(saver.get_next_version(versions[-1], None))
    assert versions == sorted(versions) and len(set(versions)) == 4
    assert saver.get_next_version(7, None).startswith(f"{8:032}.")  # type: ignore[arg-type]


def test_with_allowlist_clone_shares_the_store(db_path: str) -> None:
    saver = OctopodaSaver(db_path)
    if not hasattr(saver, "with_allowlist"):
        pytest.skip("with_allowlist arrived in langgraph-checkpoint 4.0")
    clone = saver.with_allowlist([("builtins", "set")])
    config = clone.put(cfg(), checkpoint(x=1), {"step": 0}, {})
    assert saver.get_tuple(config) is not None


# -- the cache --------------------------------------------------------------------------------


def test_a_warm_cache_sees_other_savers_writes(db_path: str) -> None:
    reader = OctopodaSaver(db_path)
    writer = OctopodaSaver(db_path)
    configs = put_chain(writer, 2)
    assert reader.get_tuple(cfg()).config == configs[-1]  # type: ignore[union-attr]
    newer = writer.put(configs[-1], checkpoint(x=2), {"step": 2}, {})
    writer.put_writes(newer, [("x", 2)], "task")
    got = reader.get_tuple(cfg())
    assert got is not None and got.config == newer and got.pending_writes == [("task", "x", 2)]
    writer.delete_thread("t1")
    assert reader.get_tuple(cfg()) is None
    assert reader.get_tuple(newer) is None


def test_a_warm_cache_sees_another_process(db_path: str, run_python: Any) -> None:
    reader = OctopodaSaver(db_path)
    first = put_chain(reader, 1)[0]
    assert reader.get_tuple(cfg()) is not None
    code = (
        "import sys\n"
        "from langgraph.checkpoint.base import empty_checkpoint\n"
        "from octopoda_langchain import OctopodaSaver\n"
        "s = OctopodaSaver(sys.argv[1])\n"
        "cp = empty_checkpoint(); cp['channel_values'] = {'from': 'child'}\n"
        "c = s.put({'configurable': {'thread_id': 't1', 'checkpoint_ns': '',"
        " 'checkpoint_id': sys.argv[2]}}, cp, {'step': 9}, {})\n"
        "s.put_writes(c, [('x', 'child')], 'task')\n"
    )
    done = run_python("-c", code, db_path, first["configurable"]["checkpoint_id"])
    assert done.returncode == 0, done.stderr
    got = reader.get_tuple(cfg())
    assert got is not None and got.checkpoint["channel_values"] == {"from": "child"}
    assert got.pending_writes == [("task", "x", "child")]
    assert got.parent_config is not None


def test_other_events_of_the_agent_do_not_break_the_cache(db_path: str) -> None:
    agent = AgentRuntime("bot", store=db_path)
    saver = OctopodaSaver(agent)
    config = put_chain(saver, 1)[0]
    agent.record_tool_call("search", {"q": "x"}, result="ok")
    agent.remember("note", "unrelated")
    agent.forget("note")
    got = saver.get_tuple(cfg())
    assert got is not None and got.config == config


def _reads_outside_commits(statements: list[str]) -> list[str]:
    """The SQL a saver ran besides its commits (BEGIN ... COMMIT: the write and its event)."""
    out, in_commit = [], False
    for sql in statements:
        word = sql.lstrip().split(" ", 1)[0].upper()
        if word == "BEGIN":
            in_commit = True
        elif word in ("COMMIT", "ROLLBACK"):
            in_commit = False
        elif not in_commit:
            out.append(sql)
    return out


def test_a_new_threads_steps_read_nothing_but_the_chain_head(tmp_path: Any) -> None:
    """The cache's speed: once a new thread's slot was read (it is empty), its steps (put,
    put_writes, get_tuple) read only the chain head. A saver that finds the thread existing
    reads each new checkpoint's writes once (they may have been stored before it)."""
    from octopoda import SqliteStore

    statements: list[str] = []
    store = SqliteStore(str(tmp_path / "t.db"), tracer=statements.append)
    saver = OctopodaSaver(AgentRuntime("lg", store=store))
    config = saver.put(cfg(), checkpoint(step=0), {"step": 0}, {})  # reads the empty slot
    assert any("lg/t/" in s for s in _reads_outside_commits(statements))
    for step in range(1, 4):
        statements.clear()
        saver.put_writes(config, [("x", step)], f"task-{step}")
        config = saver.put(config, checkpoint(step=step), {"step": step}, {})
        got = saver.get_tuple(cfg())
        assert got is not None and got.config == config and got.pending_writes == []
        reads = _reads_outside_commits(statements)
        assert all("FROM agents WHERE id" in s for s in reads), reads

    other = OctopodaSaver(AgentRuntime("lg", store=store))
    assert other.get_tuple(cfg()) is not None
    statements.clear()
    newer = other.put(config, checkpoint(step=9), {"step": 9}, {})
    other.put_writes(newer, [("x", 9)], "task-9")
    assert other.get_tuple(cfg()).pending_writes == [("task-9", "x", 9)]  # type: ignore[union-attr]
    writes_reads = [s for s in _reads_outside_commits(statements) if "/w/" in s]
    assert len(writes_reads) == 1, writes_reads


# -- async ------------------------------------------------------------------------------------


def test_async_methods_do_not_block_the_event_loop(db_path: str) -> None:
    saver = OctopodaSaver(db_path)
    real = saver.agent.remember_many

    def slow_remember_many(*args: Any, **kwargs: Any) -> Any:
        time.sleep(0.3)  # a slow disk or a remote database
        return real(*args, **kwargs)

    saver.agent.remember_many = slow_remember_many  # type: ignore[method-assign]
    main_thread = threading.get_ident()
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    async def scenario() -> Any:
        task = asyncio.create_task(ticker())
        config = await saver.aput(cfg(), checkpoint(x=1), {"step": 0}, {})
        await saver.aput_writes(config, [("x", 1)], "task")
        got = await saver.aget_tuple(cfg())
        listed = [t async for t in saver.alist(cfg())]
        task.cancel()
        return got, listed

    got, listed = asyncio.run(scenario())
    assert threading.get_ident() == main_thread
    assert got is not None and got.pending_writes == [("task", "x", 1)] and len(listed) == 1
    # Blocking calls would leave it at about 0; a free loop ticks ~60 times in 0.6 s.
    assert ticks >= 10, f"the loop ticked only {ticks} times in 0.6 s of store writes"


# -- graphs -----------------------------------------------------------------------------------


@pytest.mark.graph
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_graph_resumes_the_failed_step_only(db_path: str, mode: str) -> None:
    from typing import TypedDict

    from langgraph.graph import END, START, StateGraph

    class State(TypedDict):
        log: list[str]

    runs: list[str] = []
    fail = {"b": True}

    def a(state: State) -> State:
        runs.append("a")
        return {"log": [*state["log"], "a"]}

    def b(state: State) -> State:
        runs.append("b")
        if fail["b"]:
            raise RuntimeError("b crashed")
        return {"log": [*state["log"], "b"]}

    builder = StateGraph(State)
    builder.add_node("a", a)
    builder.add_node("b", b)
    builder.add_edge(START, "a")
    builder.add_edge("a", "b")
    builder.add_edge("b", END)
    config: Any = {"configurable": {"thread_id": f"crash-{mode}"}}

    def run(graph: Any, value: Any) -> Any:
        if mode == "sync":
            return graph.invoke(value, config)
        return asyncio.run(graph.ainvoke(value, config))

    with pytest.raises(RuntimeError, match="b crashed"):
        run(builder.compile(checkpointer=OctopodaSaver(db_path)), {"log": []})
    fail["b"] = False
    graph = builder.compile(checkpointer=OctopodaSaver(db_path))  # a new saver: cold cache
    assert graph.get_state(config).next == ("b",)
    assert run(graph, None) == {"log": ["a", "b"]}
    assert runs == ["a", "b", "b"]
    history = list(graph.get_state_history(config))
    assert [s.metadata["step"] for s in history] == sorted(
        (s.metadata["step"] for s in history), reverse=True
    )
    assert OctopodaSaver(db_path).agent.audit.verify().ok
