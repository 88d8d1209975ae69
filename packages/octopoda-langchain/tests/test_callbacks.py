"""OctopodaCallbackHandler: tool and model calls of plain LangChain runs."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from langchain_core.tools import ToolException, tool
from octopoda_langchain import OctopodaCallbackHandler
from octopoda_langchain.testing import ScriptedChatModel

from octopoda import AgentPaused, AgentRuntime, InvalidInput, LoopPolicy


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool
def flaky(url: str) -> str:
    """Always fails."""
    raise ToolException(f"HTTP 503 from {url}")


flaky.handle_tool_error = True


@tool
def broken(x: int) -> int:
    """Raises."""
    raise RuntimeError("kaboom")


def call(name: str, **args: Any) -> dict[str, Any]:
    """A tool call as a model emits it: tools then return ToolMessages (errors included)."""
    return {"name": name, "args": args, "id": f"call-{name}", "type": "tool_call"}


def test_tool_calls_are_recorded(db_path: str) -> None:
    agent = AgentRuntime("chain", store=db_path)
    handler = OctopodaCallbackHandler(agent)
    assert add.invoke({"a": 2, "b": 3}, config={"callbacks": [handler]}) == 5
    assert flaky.invoke(call("flaky", url="x"), config={"callbacks": [handler]}).status == "error"
    with pytest.raises(RuntimeError):
        broken.invoke({"x": 1}, config={"callbacks": [handler]})
    events = agent.timeline(kinds=["tool_call"])
    assert [e.payload["name"] for e in events] == ["add", "flaky", "broken"]
    assert events[0].payload["args_preview"] == '{"a":2,"b":3}'
    assert events[0].payload["result_preview"] == "5"
    assert events[1].payload["error"] == "HTTP 503 from x"
    assert events[2].payload["error"] == "RuntimeError: kaboom"
    assert agent.audit.verify().ok


def test_model_calls_are_recorded_with_tokens_and_cost(db_path: str) -> None:
    agent = AgentRuntime("chain", store=db_path)
    handler = OctopodaCallbackHandler(agent, prices={"gpt-x": (1.0, 2.0)})
    model = ScriptedChatModel(script=["hello there friend"], model_name="gpt-x")
    assert model.invoke("one two", config={"callbacks": [handler]}).content == "hello there friend"
    asyncio.run(model.ainvoke("three", config={"callbacks": [handler]}))
    first, second = agent.timeline(kinds=["llm_call"])
    assert first.payload["model"] == "gpt-x"
    assert (first.payload["tokens_in"], first.payload["tokens_out"]) == (2, 3)
    assert first.payload["cost_usd"] == pytest.approx((2 * 1.0 + 3 * 2.0) / 1e6)
    assert second.payload["tokens_in"] == 1


def test_guard_raises_when_the_agent_is_paused(db_path: str) -> None:
    agent = AgentRuntime("chain", store=db_path, policy=LoopPolicy("pause"))
    handler = OctopodaCallbackHandler(agent, guard=True)
    for _ in range(3):
        flaky.invoke(call("flaky", url="x"), config={"callbacks": [handler]})
    assert agent.paused
    with pytest.raises(AgentPaused, match="retry loop"):
        add.invoke({"a": 1, "b": 1}, config={"callbacks": [handler]})
    assert agent.stats().tool_calls == 3  # the blocked call never ran


def test_options_are_checked(db_path: str) -> None:
    with pytest.raises(InvalidInput):
        OctopodaCallbackHandler(42)  # type: ignore[arg-type]
    handler: Any = OctopodaCallbackHandler("by-id", store=db_path, record_models=False)
    ScriptedChatModel(script=["x"]).invoke("y", config={"callbacks": [handler]})
    assert handler.agent.agent_id == "by-id" and handler.agent.timeline() == []


@pytest.mark.graph
def test_each_thread_of_a_graph_is_its_run(db_path: str) -> None:
    """In a LangGraph graph (any LangGraph line) the callbacks carry the thread: a loop in
    one thread is refused there only, and each call keeps its ids."""
    from langchain_core.runnables import RunnableConfig
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import END, START, StateGraph
    from typing_extensions import TypedDict

    class State(TypedDict):
        url: str

    def fetch_node(state: State, config: RunnableConfig) -> State:
        flaky.invoke(call("flaky", url=state["url"]), config)
        return state

    builder = StateGraph(State)
    builder.add_node("fetch", fetch_node)
    builder.add_edge(START, "fetch")
    builder.add_edge("fetch", END)
    graph = builder.compile(checkpointer=InMemorySaver())
    agent = AgentRuntime("chain", store=db_path, policy=LoopPolicy("pause"))
    handler = OctopodaCallbackHandler(agent, guard=True)

    def run(thread: str) -> None:
        config = {"configurable": {"thread_id": thread}, "callbacks": [handler]}
        graph.invoke({"url": "https://billing"}, config)

    for _ in range(3):
        run("t1")
    with pytest.raises(AgentPaused) as refused:
        run("t1")
    assert refused.value.run_id == "t1"
    run("t2")  # another thread is not refused
    events = agent.timeline(kinds=["tool_call"])
    assert [e.payload["run_id"] for e in events] == ["t1", "t1", "t1", "t2"]
    call_ids = [e.payload["call_id"] for e in events]
    # the tool call's id where LangChain hands it to callbacks (langchain-core 1.x), else
    # LangChain's run id of each tool call
    if set(call_ids) != {"call-flaky"}:
        assert len({str(uuid.UUID(c)) for c in call_ids}) == 4
    assert [r.id for r in agent.runs(status="paused")] == ["t1"]
    agent.store.close()


def test_thread_ids_as_run_ids() -> None:
    from octopoda_langchain._recording import run_of_thread, thread_of_config

    assert thread_of_config({"configurable": {"thread_id": "t1"}}) == "t1"
    assert thread_of_config({"configurable": {"thread_id": 42}}) == "42"
    assert thread_of_config({"configurable": {}}) is None and thread_of_config(None) is None
    assert run_of_thread("") is None
    long = run_of_thread("x" * 2000)
    assert long is not None and len(long) <= 512 and long == run_of_thread("x" * 2000)
    assert long != run_of_thread("x" * 1999)
    assert "\x00" not in (run_of_thread("a\x00b") or "\x00")
