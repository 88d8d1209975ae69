"""Thread ids and namespaces of any length (issue 15): keys stay under the core's limit, every
saver call round-trips the exact ids, and ids that differ only late never collide."""

from __future__ import annotations

import operator
from typing import Annotated, Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.base.id import uuid6
from octopoda_langchain import OctopodaSaver
from octopoda_langchain._keys import (
    MAX_SEGMENT,
    checkpoint_key,
    escape,
    is_segment_of,
    original,
    run_key,
    segment,
    write_key,
)
from octopoda_langchain._ordering import order_key

# 5,000 characters; B differs from A only after character 1,000; slashes and % escaped
LONG_A = "u/%" * 334 + "a" * 3998
LONG_B = "u/%" * 334 + "b" * 3998
LONG_NS = "parent:1|" * 150
assert len(LONG_A) == len(LONG_B) == 5000 and LONG_A[:1000] == LONG_B[:1000]


def checkpoint(**values: Any) -> Any:
    cp = empty_checkpoint()
    cp["id"] = str(uuid6(clock_seq=-1))
    cp["channel_values"] = dict(values)
    cp["channel_versions"] = {k: 1 for k in values}
    return cp


def cfg(thread: str, ns: str = "", cid: str | None = None) -> Any:
    conf: dict[str, Any] = {"thread_id": thread, "checkpoint_ns": ns}
    if cid:
        conf["checkpoint_id"] = cid
    return {"configurable": conf}


def put_chain(saver: OctopodaSaver, n: int, thread: str, ns: str = "", **md: Any) -> list[Any]:
    config, out = cfg(thread, ns), []
    for step in range(n):
        config = saver.put(config, checkpoint(step=step), {"step": step, **md}, {})
        out.append(config)
    return out


# -- key segments -------------------------------------------------------------------------------


def test_long_segments_are_a_readable_start_and_a_digest() -> None:
    a, b = segment(LONG_A), segment(LONG_B)
    assert a != b and len(a) <= MAX_SEGMENT and len(b) <= MAX_SEGMENT
    assert a.startswith(escape(LONG_A)[:150]) and "/" not in a
    assert original(a) is None and is_segment_of(LONG_A, a) and not is_segment_of(LONG_B, a)
    # short ones are kept as they were (existing keys stay where they are)
    assert segment("user/42") == escape("user/42") and original(segment("user/42")) == "user/42"
    # a short id spelling out a shortened segment is escaped, so it never equals one
    literal = a.replace("%25", "%").replace("%2F", "/")
    assert segment(literal) != a and not is_segment_of(literal, a)
    # the cut never splits an escape: %2F across the boundary
    for pad in range(4):
        text = "x" * pad + "/" * 400
        assert segment(text).split("%~")[0].endswith("%2F")
    cid = str(uuid6(clock_seq=-1))
    for key in [
        checkpoint_key(LONG_A, LONG_NS, cid),
        write_key(LONG_A, LONG_NS, cid, "t" * 3000, 2**31),
        run_key("r" * 3000, LONG_A, LONG_NS, cid),
        order_key(LONG_A, LONG_NS, cid),
    ]:
        assert len(key) <= 1024


# -- the saver ------------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", ["db_path", "postgres_url"], ids=["sqlite", "postgres"])
def test_every_saver_call_round_trips_long_thread_ids(
    backend: str, request: pytest.FixtureRequest
) -> None:
    saver = OctopodaSaver(request.getfixturevalue(backend))
    a = put_chain(saver, 3, LONG_A, LONG_NS, run_id="run-" + "x" * 2000)
    b = put_chain(saver, 2, LONG_B, run_id="run-b")
    saver.put_writes(a[-1], [("messages", "for a")], "task-" + "z" * 2000)
    saver.put_writes(b[-1], [("messages", "for b")], "task-b")

    got = saver.get_tuple(cfg(LONG_A, LONG_NS))
    assert got is not None and got.config == a[-1]
    assert got.config["configurable"]["thread_id"] == LONG_A
    assert got.parent_config == a[-2]
    assert got.pending_writes == [("task-" + "z" * 2000, "messages", "for a")]
    got_b = saver.get_tuple(cfg(LONG_B))
    assert got_b is not None and got_b.config == b[-1]
    assert got_b.pending_writes == [("task-b", "messages", "for b")]
    assert saver.get_tuple(cfg(LONG_A)) is None  # the root namespace of A has nothing

    assert [t.config for t in saver.list({"configurable": {"thread_id": LONG_A}})] == a[::-1]
    assert [t.config for t in saver.list(cfg(LONG_B))] == b[::-1]
    everything = [t.config for t in saver.list(None)]
    assert sorted(map(str, everything)) == sorted(map(str, a + b))
    filtered = [t.config for t in saver.list(None, filter={"step": 2})]
    assert filtered == [a[-1]]

    saver.copy_thread(LONG_A, LONG_B + "-copy")
    copy = {"configurable": {"thread_id": LONG_B + "-copy"}}
    copied = [t.config["configurable"] for t in saver.list(copy)]
    assert [c["thread_id"] for c in copied] == [LONG_B + "-copy"] * 3
    assert [c["checkpoint_id"] for c in copied] == [
        c["configurable"]["checkpoint_id"] for c in a[::-1]
    ]
    assert any(t.config["configurable"]["thread_id"] == LONG_B + "-copy" for t in saver.list(None))

    saver.prune([LONG_B + "-copy"])
    assert len(list(saver.list(copy))) == 1

    saver.delete_for_runs(["run-" + "x" * 2000])
    # A's own checkpoints and the copy's (the copy has its own run index) are gone
    assert saver.get_tuple(cfg(LONG_A, LONG_NS)) is None
    assert saver.get_tuple(cfg(LONG_B + "-copy", LONG_NS)) is None
    assert saver.get_tuple(cfg(LONG_B)) is not None  # B is untouched

    saver.delete_thread(LONG_B)
    assert saver.get_tuple(cfg(LONG_B)) is None
    assert list(saver.list(None)) == []
    assert saver.agent.audit.verify().ok
    saver.close()


def test_delete_for_runs_repoints_a_long_threads_latest(db_path: str) -> None:
    saver = OctopodaSaver(db_path)
    first = put_chain(saver, 2, LONG_A, run_id="run-1")
    put_chain(saver, 1, LONG_A, run_id="run-2")
    saver.delete_for_runs(["run-2"])
    latest = saver.get_tuple(cfg(LONG_A))
    assert latest is not None and latest.config == first[-1]
    saver.close()


def test_a_warm_cache_sees_another_savers_write_to_a_long_thread(db_path: str) -> None:
    one, two = OctopodaSaver(db_path), OctopodaSaver(db_path)
    put_chain(one, 1, LONG_A)
    put_chain(one, 1, LONG_B)
    assert one.get_tuple(cfg(LONG_A)) is not None  # cached
    newer = two.put(cfg(LONG_A), checkpoint(step=9), {"step": 9}, {})
    two.put_writes(newer, [("x", 1)], "task")
    got = one.get_tuple(cfg(LONG_A))
    assert got is not None and got.config == newer and got.pending_writes == [("task", "x", 1)]
    two.delete_thread(LONG_A)
    assert one.get_tuple(cfg(LONG_A)) is None
    assert one.get_tuple(cfg(LONG_B)) is not None
    one.close()
    two.close()


# -- real graphs ----------------------------------------------------------------------------------


@pytest.mark.graph
def test_a_state_graph_resumes_a_5000_character_thread(db_path: str) -> None:
    from langgraph.graph import END, START, StateGraph
    from typing_extensions import TypedDict

    class State(TypedDict):
        seen: Annotated[list[str], operator.add]

    builder: Any = StateGraph(State)
    builder.add_node("note", lambda state: {"seen": [f"n{len(state['seen'])}"]})
    builder.add_edge(START, "note")
    builder.add_edge("note", END)
    with OctopodaSaver.from_conn_string(db_path) as saver:
        graph = builder.compile(checkpointer=saver)
        conf_a: Any = {"configurable": {"thread_id": LONG_A}}
        conf_b: Any = {"configurable": {"thread_id": LONG_B}}
        graph.invoke({"seen": ["a"]}, conf_a)
        graph.invoke({"seen": ["b"]}, conf_b)
        assert graph.invoke({"seen": ["a2"]}, conf_a)["seen"] == ["a", "n1", "a2", "n3"]
        assert graph.get_state(conf_b).values["seen"] == ["b", "n1"]
        history = list(graph.get_state_history(conf_a))
        assert len(history) == 6
        assert {h.config["configurable"]["thread_id"] for h in history} == {LONG_A}
    with OctopodaSaver.from_conn_string(db_path) as saver:  # a new process's view
        graph = builder.compile(checkpointer=saver)
        assert graph.get_state(conf_a).values["seen"] == ["a", "n1", "a2", "n3"]


@pytest.mark.agents
def test_create_agent_keeps_the_conversation_of_a_5000_character_thread(db_path: str) -> None:
    from langchain.agents import create_agent
    from langchain_core.messages import HumanMessage
    from octopoda_langchain.testing import ScriptedChatModel

    with OctopodaSaver.from_conn_string(db_path) as saver:
        graph = create_agent(
            ScriptedChatModel(script=["first answer", "second answer"]),
            tools=[],
            checkpointer=saver,
        )
        conf_a: Any = {"configurable": {"thread_id": LONG_A}}
        graph.invoke({"messages": [HumanMessage("one")]}, conf_a)
        out = graph.invoke({"messages": [HumanMessage("two")]}, conf_a)
        assert [m.content for m in out["messages"]] == [
            "one",
            "first answer",
            "two",
            "second answer",
        ]
        conf_b: Any = {"configurable": {"thread_id": LONG_B}}
        other = graph.invoke({"messages": [HumanMessage("b")]}, conf_b)
        # a fresh conversation: nothing of A (the scripted model answers by turn)
        assert [m.content for m in other["messages"]] == ["b", "first answer"]
        saver.delete_thread(LONG_A)
        assert graph.get_state(conf_a).values == {}
        assert len(graph.get_state(conf_b).values["messages"]) == 2
