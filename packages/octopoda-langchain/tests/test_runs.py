"""Runs: one agent serving many LangGraph threads judges and pauses loops per thread.

Real ``create_agent`` graphs with a checkpointer, driven by a ``GenericFakeChatModel`` that
binds tools: three users hitting the same failing upstream once each pause nobody (an
outage, reported); one user's retry loop stops that thread only, and
``resume(run_id=thread)`` lets it go on.
"""

from __future__ import annotations

import asyncio
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from octopoda import AgentPaused, AgentRuntime, LoopPolicy

pytestmark = pytest.mark.agents

BILLING = {"url": "https://billing/INV-42"}


def fetch_call(call_id: str, args: dict[str, Any] | None = None) -> Any:
    from langchain_core.messages import AIMessage

    call = {"name": "fetch", "args": dict(args or BILLING), "id": call_id, "type": "tool_call"}
    return AIMessage("", tool_calls=[call])


def answer(text: str) -> Any:
    from langchain_core.messages import AIMessage

    return AIMessage(text)


def fake_model(script: list[Any]) -> Any:
    """A GenericFakeChatModel that plays ``script`` in order (threads run one after the
    other, so each takes its turns from the one script) and accepts tools."""
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel

    class FakeToolModel(GenericFakeChatModel):
        def bind_tools(self, tools: Any, **kwargs: Any) -> FakeToolModel:
            return self

    return FakeToolModel(messages=iter(script))


class Upstream:
    """The billing service: down (HTTP 503) until ``up`` is set."""

    def __init__(self) -> None:
        self.up = False
        self.calls: list[str] = []

    def tools(self) -> list[Any]:
        from langchain_core.tools import ToolException, tool

        @tool
        def fetch(url: str) -> str:
            """Fetch a URL."""
            self.calls.append(url)
            if not self.up:
                raise ToolException(f"HTTP 503 Service Unavailable from {url}")
            return f"invoice from {url}: 120 EUR"

        @tool
        def add(a: int, b: int) -> int:
            """Add two numbers."""
            return a + b

        fetch.handle_tool_error = True
        return [fetch, add]


def build(agent: AgentRuntime, script: list[Any], upstream: Upstream, **options: Any) -> Any:
    from langchain.agents import create_agent
    from octopoda_langchain import OctopodaMiddleware, OctopodaSaver

    return create_agent(
        fake_model(script),
        tools=upstream.tools(),
        checkpointer=OctopodaSaver(agent.store, agent_id=f"{agent.agent_id}.checkpoints"),
        middleware=[OctopodaMiddleware(agent, **options)],
    )


# Before Python 3.11 asyncio cannot pass a context to the tasks LangGraph starts, so an
# async graph's middleware does not see the RunnableConfig (LangGraph documents the same for
# get_config()): its calls are the agent's default run there. Known gap, in the README.
PY310 = "async graphs on Python 3.10: the thread id does not reach the middleware"
MODES = [
    False,
    pytest.param(True, marks=pytest.mark.skipif(sys.version_info < (3, 11), reason=PY310)),
]


def ask(graph: Any, text: str, thread: str, *, use_async: bool = False) -> list[Any]:
    from langchain_core.messages import HumanMessage

    config = {"configurable": {"thread_id": thread}, "recursion_limit": 30}
    payload = {"messages": [HumanMessage(text)]}
    if use_async:
        return list(asyncio.run(graph.ainvoke(payload, config))["messages"])
    return list(graph.invoke(payload, config)["messages"])


def tool_messages(messages: list[Any]) -> list[Any]:
    from langchain_core.messages import ToolMessage

    return [m for m in messages if isinstance(m, ToolMessage)]


def is_uuid(text: object) -> bool:
    try:
        uuid.UUID(str(text))
    except ValueError:
        return False
    return True


@pytest.fixture
def agent(db_path: str) -> Iterator[AgentRuntime]:
    runtime = AgentRuntime("bot", store=db_path, policy=LoopPolicy("pause"))
    yield runtime
    runtime.store.close()


@pytest.mark.parametrize("use_async", MODES, ids=["sync", "async"])
def test_three_threads_failing_once_pause_nobody(agent: AgentRuntime, use_async: bool) -> None:
    users = ("u1", "u2", "u3")
    script: list[Any] = []
    for user in users:
        script += [fetch_call(f"{user}-c1"), answer("The billing service is down, sorry.")]
    upstream = Upstream()
    graph = build(agent, script, upstream)

    for user in users:
        messages = ask(graph, "send me invoice INV-42", user, use_async=use_async)
        (failed,) = tool_messages(messages)
        assert failed.status == "error" and "[octopoda]" not in failed.content
        assert messages[-1].content == "The billing service is down, sorry."

    assert len(upstream.calls) == 3
    assert not agent.paused and agent.loop_history() == []
    assert {r.id: r.status for r in agent.runs()} == dict.fromkeys(users, "active")
    status = agent.loop_status()
    (outage,) = status.outages  # the same failure in three threads: reported, not paused
    assert outage.tool == "fetch" and outage.runs == users
    assert "HTTP 503" in outage.error and status.state == "warning"
    assert [e.kind for e in agent.timeline(kinds=["outage_detected"])] == ["outage_detected"]

    calls = agent.timeline(kinds=["tool_call"])
    assert [(e.payload["run_id"], e.payload["call_id"]) for e in calls] == [
        (user, f"{user}-c1") for user in users
    ]
    models = agent.timeline(kinds=["llm_call"])
    assert [e.payload["run_id"] for e in models] == [u for u in users for _ in (1, 2)]
    assert all(is_uuid(e.payload["call_id"]) for e in models)  # the LLM run's id
    assert len({e.payload["call_id"] for e in models}) == 6


@pytest.mark.parametrize("use_async", MODES, ids=["sync", "async"])
def test_a_looping_thread_is_stopped_alone(agent: AgentRuntime, use_async: bool) -> None:
    from langchain_core.messages import AIMessage

    upstream = Upstream()
    script = [fetch_call(f"t1-c{i}") for i in range(1, 4)]  # t1 retries the same call
    script += [fetch_call("t2-c1", {"url": "https://billing/INV-7"}), answer("Down, sorry.")]
    script += [answer("Hello, how can I help?")]  # t3
    script += [fetch_call("t1-c4"), answer("Here is your invoice: 120 EUR.")]  # t1, resumed
    graph = build(agent, script, upstream)

    looping = ask(graph, "send me invoice INV-42", "t1", use_async=use_async)
    failed = tool_messages(looping)
    assert len(failed) == 3 and len(upstream.calls) == 3  # no fourth call
    assert "[octopoda] Run 't1' of agent 'bot' is now paused: retry loop" in failed[-1].content
    stopped = looping[-1]
    assert isinstance(stopped, AIMessage) and not stopped.tool_calls
    assert stopped.content.startswith("Stopped: Octopoda paused run 't1' of agent 'bot' (retry")
    assert "agent.resume(run_id='t1')" in stopped.content
    assert [(s.kind, s.run_id) for s in agent.loop_history()] == [("retry", "t1")]
    assert [r.id for r in agent.runs(status="paused")] == ["t1"]
    with pytest.raises(AgentPaused) as refused:
        agent.guard_tool_call("fetch", BILLING, run_id="t1")
    assert refused.value.run_id == "t1"

    # the other threads keep working: a failure of theirs is theirs, a chat is a chat
    other = ask(graph, "and invoice INV-7?", "t2", use_async=use_async)
    assert other[-1].content == "Down, sorry." and "[octopoda]" not in str(other)
    assert ask(graph, "hi", "t3", use_async=use_async)[-1].content == "Hello, how can I help?"
    agent.guard_tool_call("fetch", BILLING, run_id="t2")  # not refused

    # t1 stays stopped, without a model call, until it is resumed
    model_calls = len(agent.timeline(kinds=["llm_call"], run_id="t1"))
    again = ask(graph, "try again", "t1", use_async=use_async)
    assert again[-1].content.startswith("Stopped: Octopoda paused run 't1'")
    assert len(agent.timeline(kinds=["llm_call"], run_id="t1")) == model_calls

    # one thread's timeline is its own events only
    t1_events = agent.timeline(run_id="t1")
    assert {e.payload.get("run_id") for e in t1_events} == {"t1"}
    assert [e.payload["call_id"] for e in t1_events if e.kind == "tool_call"] == [
        "t1-c1",
        "t1-c2",
        "t1-c3",
    ]
    assert [e.kind for e in t1_events].count("paused") == 1
    t2_calls = [e.payload["call_id"] for e in agent.timeline(run_id="t2") if e.kind == "tool_call"]
    assert t2_calls == ["t2-c1"]

    # the cause fixed and the thread resumed, it goes on where it was
    upstream.up = True
    assert agent.resume(run_id="t1")
    assert not agent.paused
    resumed = ask(graph, "try again", "t1", use_async=use_async)
    assert resumed[-1].content == "Here is your invoice: 120 EUR."
    assert "120 EUR" in tool_messages(resumed)[-1].content
    assert agent.audit.verify().ok


def test_the_whole_agent_with_pause_scope_agent(db_path: str) -> None:
    upstream = Upstream()
    script = [fetch_call(f"t1-c{i}") for i in range(1, 4)] + [answer("never said")]
    runtime = AgentRuntime("bot", store=db_path, policy=LoopPolicy("pause", pause_scope="agent"))
    try:
        graph = build(runtime, script, upstream)
        ask(graph, "send me invoice INV-42", "t1")
        other = ask(graph, "hi", "t2")
        assert other[-1].content.startswith("Stopped: Octopoda paused agent 'bot' (retry loop")
        assert runtime.runs(status="paused") == [] and runtime.stats().paused
    finally:
        runtime.store.close()


def test_the_callback_handler_records_each_thread(agent: AgentRuntime) -> None:
    """Without the middleware: the callbacks of a graph carry LangGraph's thread id, and the
    handler's guard refuses the looping thread's next tool call only."""
    from langchain.agents import create_agent
    from langchain_core.messages import HumanMessage
    from langgraph.checkpoint.memory import InMemorySaver
    from octopoda_langchain import OctopodaCallbackHandler

    upstream = Upstream()
    script = [fetch_call(f"t1-c{i}") for i in range(1, 5)]
    script += [fetch_call("t2-c1", {"url": "https://billing/INV-7"}), answer("Down, sorry.")]
    graph = create_agent(fake_model(script), upstream.tools(), checkpointer=InMemorySaver())
    handler = OctopodaCallbackHandler(agent, guard=True)

    def run(thread: str) -> Any:
        config = {"configurable": {"thread_id": thread}, "callbacks": [handler]}
        return graph.invoke({"messages": [HumanMessage("invoice")]}, config)

    with pytest.raises(AgentPaused) as refused:
        run("t1")
    assert refused.value.run_id == "t1" and "retry loop" in str(refused.value)
    assert len(upstream.calls) == 3
    assert run("t2")["messages"][-1].content == "Down, sorry."
    calls = agent.timeline(kinds=["tool_call"])
    assert [(e.payload["run_id"], e.payload["call_id"]) for e in calls] == [
        ("t1", "t1-c1"),
        ("t1", "t1-c2"),
        ("t1", "t1-c3"),
        ("t2", "t2-c1"),
    ]
    models = agent.timeline(kinds=["llm_call"])
    assert [e.payload["run_id"] for e in models] == ["t1"] * 4 + ["t2"] * 2
    assert all(is_uuid(e.payload["call_id"]) for e in models)


def test_without_a_thread_id_calls_are_the_agent_s_default_run(agent: AgentRuntime) -> None:
    from langchain.agents import create_agent
    from langchain_core.messages import HumanMessage
    from octopoda_langchain import OctopodaMiddleware

    upstream = Upstream()
    upstream.up = True
    model = fake_model([fetch_call("c1"), answer("120 EUR."), fetch_call("c2"), answer("ok")])
    graph = create_agent(model, upstream.tools(), middleware=[OctopodaMiddleware(agent)])
    result = graph.invoke({"messages": [HumanMessage("invoice")]})  # no checkpointer, no thread
    assert result["messages"][-1].content == "120 EUR."
    events = agent.timeline(kinds=["tool_call", "llm_call"])
    assert len(events) == 3 and all("run_id" not in e.payload for e in events)
    assert events[1].payload["call_id"] == "c1" and agent.runs() == []
    # a thread id in the config gives the invocation its run, checkpointer or not
    graph.invoke({"messages": [HumanMessage("invoice")]}, {"configurable": {"thread_id": "x"}})
    assert [e.payload["call_id"] for e in agent.timeline(run_id="x", kinds=["tool_call"])] == ["c2"]


def test_the_readme_runs_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    section = readme.split("## Runs: one agent, many threads", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    script: list[Any] = []
    for user in ("ana", "ben", "carl"):
        script += [fetch_call(f"{user}-1"), answer("The billing service is down, sorry.")]
    script += [fetch_call(f"dora-{i}") for i in range(3)] + [answer("You're welcome!")]
    monkeypatch.chdir(tmp_path)
    scope: dict[str, Any] = {"model": fake_model(script), "tools": Upstream().tools()}
    exec(compile(code, "README.md", "exec"), scope)
    agent: AgentRuntime = scope["agent"]
    try:
        assert agent.loop_status().outages[0].runs == ("ana", "ben", "carl", "dora")
        assert [(s.kind, s.run_id) for s in agent.loop_history()] == [("retry", "dora")]
        assert len(agent.timeline(run_id="ana", kinds=["llm_call"])) == 3  # ana went on
        assert not agent.paused  # resumed by the example's last line
        dora = agent.timeline(run_id="dora", kinds=["tool_call"])
        assert [e.payload["call_id"] for e in dora] == ["dora-0", "dora-1", "dora-2"]
        assert agent.audit.verify().ok
    finally:
        agent.store.close()
