"""OctopodaMiddleware in create_agent: recording, the loop breaker, blocked tools, async."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from octopoda import AgentRuntime, InvalidInput, LoopPolicy

pytestmark = pytest.mark.agents


def build(agent: AgentRuntime, script: list[Any], tools: list[Any], **options: Any) -> Any:
    from langchain.agents import create_agent
    from octopoda_langchain import OctopodaMiddleware, OctopodaSaver
    from octopoda_langchain.testing import ScriptedChatModel

    model = ScriptedChatModel(script=script, model_name="scripted-1")
    return create_agent(
        model,
        tools=tools,
        # its own agent: checkpoint writes would count as progress for the loop detectors
        checkpointer=OctopodaSaver(agent.store, agent_id=f"{agent.agent_id}.checkpoints"),
        middleware=[OctopodaMiddleware(agent, **options)],
    )


def failing_tool() -> Any:
    from langchain_core.tools import ToolException, tool

    @tool
    def fetch(url: str) -> str:
        """Fetch a URL."""
        raise ToolException(f"HTTP 503 from {url}")

    fetch.handle_tool_error = True
    return fetch


def adder() -> Any:
    from langchain_core.tools import tool

    @tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    return add


def ask(graph: Any, text: str, thread: str = "t1", *, use_async: bool = False) -> Any:
    from langchain_core.messages import HumanMessage

    config = {"configurable": {"thread_id": thread}, "recursion_limit": 40}
    payload = {"messages": [HumanMessage(text)]}
    if use_async:
        return asyncio.run(graph.ainvoke(payload, config))
    return graph.invoke(payload, config)


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_loop_breaker_stops_a_retrying_agent(db_path: str, use_async: bool) -> None:
    from langchain_core.messages import AIMessage, ToolMessage
    from octopoda_langchain.testing import tool_call

    # the whole agent: a loop in thread t1 stops t2 too (the default pauses t1 only:
    # test_runs.py)
    policy = LoopPolicy("pause", pause_scope="agent")
    agent = AgentRuntime("bot", store=db_path, policy=policy)
    graph = build(agent, [tool_call("fetch", {"url": "https://billing"})], [failing_tool()])
    result = ask(graph, "get the invoice", use_async=use_async)
    messages = result["messages"]
    tool_messages = [m for m in messages if isinstance(m, ToolMessage)]
    assert len(tool_messages) == 3  # the retry signal fires on the third identical failure
    assert all(m.status == "error" for m in tool_messages)
    assert "[octopoda] Agent 'bot' is now paused: retry loop" in tool_messages[-1].content
    final = messages[-1]
    assert isinstance(final, AIMessage) and not final.tool_calls
    assert final.content.startswith("Stopped: Octopoda paused agent 'bot' (retry loop")
    assert "fetch was called 3 times" in final.content
    stats = agent.stats()
    assert stats.paused and stats.tool_calls == 3 and stats.llm_calls == 3
    assert [s.kind for s in agent.loop_history()] == ["retry"]
    assert agent.audit.verify().ok
    kinds = [e.kind for e in agent.timeline()]
    assert kinds.count("paused") == 1 and kinds.count("loop_detected") == 1

    # A new run on the paused agent: the model is not called, the run ends at once.
    again = ask(graph, "try again", thread="t2", use_async=use_async)
    assert again["messages"][-1].content.startswith("Stopped: Octopoda paused agent")
    assert agent.stats().llm_calls == 3
    # After resume() the agent works again.
    assert agent.resume()
    assert not agent.paused


def test_block_tools_lets_the_model_answer(db_path: str) -> None:
    from langchain_core.messages import ToolMessage
    from octopoda_langchain.testing import tool_call

    agent = AgentRuntime("bot", store=db_path)
    agent.pause("maintenance window")
    graph = build(
        agent,
        [tool_call("add", {"a": 1, "b": 2}), "I could not add the numbers: tools are paused."],
        [adder()],
        on_pause="block_tools",
    )
    messages = ask(graph, "add 1 and 2")["messages"]
    blocked = [m for m in messages if isinstance(m, ToolMessage)]
    assert len(blocked) == 1 and blocked[0].status == "error"
    assert "The tool 'add' was not run" in blocked[0].content
    assert "maintenance window" in blocked[0].content
    assert messages[-1].content == "I could not add the numbers: tools are paused."
    assert agent.stats().tool_calls == 0


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_a_model_that_keeps_calling_a_blocked_tool_is_stopped(
    db_path: str, use_async: bool
) -> None:
    """With on_pause="block_tools", a model that calls blocked tools again and again ran until
    the graph's recursion limit (about 57 model calls at LangGraph's default limit, here a
    GraphRecursionError at 40); after max_blocked_calls in a row its next call is not made."""
    from langchain_core.messages import AIMessage, ToolMessage
    from octopoda_langchain.testing import tool_call

    agent = AgentRuntime("bot", store=db_path)
    agent.pause("maintenance window")
    graph = build(agent, [tool_call("add", {"a": 1, "b": 2})], [adder()], on_pause="block_tools")
    messages = ask(graph, "add 1 and 2", use_async=use_async)["messages"]
    blocked = [m for m in messages if isinstance(m, ToolMessage)]
    assert len(blocked) == 3 and all("was not run" in m.content for m in blocked)
    final = messages[-1]
    assert isinstance(final, AIMessage) and not final.tool_calls
    assert final.content.startswith("Stopped: Octopoda paused agent 'bot' (maintenance window;")
    assert "called blocked tools 3 times in a row" in final.content
    assert agent.stats().llm_calls == 3 and agent.stats().tool_calls == 0

    # the streak counts from the user's last message: a new question gets its three calls
    ask(graph, "and now 2 and 3", use_async=use_async)
    assert agent.stats().llm_calls == 6
    # resumed, the same model's calls run
    agent.resume()
    one = build(agent, [tool_call("add", {"a": 1, "b": 2}), "3"], [adder()], on_pause="block_tools")
    assert ask(one, "add", thread="t2")["messages"][-1].content == "3"


def test_max_blocked_calls_is_configurable(db_path: str) -> None:
    from octopoda_langchain.testing import tool_call

    agent = AgentRuntime("bot", store=db_path)
    agent.pause("maintenance")
    graph = build(
        agent,
        [tool_call("add", {"a": 1, "b": 2})],
        [adder()],
        on_pause="block_tools",
        max_blocked_calls=1,
    )
    messages = ask(graph, "add")["messages"]
    assert "called blocked tools 1 times in a row" in messages[-1].content
    assert agent.stats().llm_calls == 1


@pytest.mark.parametrize("octopoda_inside", [True, False], ids=["after-retry", "before-retry"])
def test_order_with_tool_retry_middleware(db_path: str, octopoda_inside: bool) -> None:
    """The documented order: OctopodaMiddleware after ToolRetryMiddleware wraps the tool
    itself, sees every attempt and pauses after three identical failures. Before it, it sees
    one failure per model turn, each after all the retries."""
    from langchain.agents import create_agent
    from langchain_core.tools import tool
    from octopoda_langchain import OctopodaMiddleware
    from octopoda_langchain.testing import ScriptedChatModel, tool_call

    middleware = pytest.importorskip("langchain.agents.middleware")
    if not hasattr(middleware, "ToolRetryMiddleware"):
        pytest.skip("this LangChain has no ToolRetryMiddleware")
    runs: list[str] = []

    @tool
    def fetch(url: str) -> str:
        """Fetch a URL."""
        runs.append(url)
        raise RuntimeError(f"HTTP 503 from {url}")

    agent = AgentRuntime("bot", store=db_path, policy=LoopPolicy("pause"))
    retry = middleware.ToolRetryMiddleware(
        max_retries=6, initial_delay=0.0, backoff_factor=0.0, jitter=False
    )
    octopoda = OctopodaMiddleware(agent)
    graph = create_agent(
        ScriptedChatModel(script=[tool_call("fetch", {"url": "https://billing"})]),
        tools=[fetch],
        middleware=[retry, octopoda] if octopoda_inside else [octopoda, retry],
    )
    from langchain_core.messages import HumanMessage

    result = graph.invoke({"messages": [HumanMessage("get it")]}, {"recursion_limit": 100})
    assert result["messages"][-1].content.startswith("Stopped: Octopoda paused agent 'bot'")
    assert agent.paused
    if octopoda_inside:
        assert len(runs) == 3 and agent.stats().llm_calls == 1
    else:
        assert len(runs) == 21 and agent.stats().llm_calls == 3  # 7 attempts x 3 turns


def test_records_tool_results_model_usage_and_cost(db_path: str) -> None:
    from octopoda_langchain.testing import tool_call

    agent = AgentRuntime("bot", store=db_path)
    graph = build(
        agent,
        [tool_call("add", {"a": 2, "b": 3}), "The sum is 5."],
        [adder()],
        prices={"scripted-1": (1000.0, 2000.0)},  # USD per million tokens in, out
    )
    result = ask(graph, "add 2 and 3")
    assert result["messages"][-1].content == "The sum is 5."
    events = agent.timeline(kinds=["tool_call", "llm_call"])
    assert [e.kind for e in events] == ["llm_call", "tool_call", "llm_call"]
    tool = events[1].payload
    assert tool["name"] == "add" and tool["args_preview"] == '{"a":2,"b":3}'
    assert tool["result_preview"] == '"5"' and "duration_ms" in tool
    model = events[0].payload
    assert model["model"] == "scripted-1" and model["tokens_in"] == 4 and model["tokens_out"] == 1
    assert model["cost_usd"] == pytest.approx((4 * 1000.0 + 1 * 2000.0) / 1e6)
    assert agent.stats().spend_usd > 0


def test_a_tool_exception_is_recorded_and_raised(db_path: str) -> None:
    from langchain_core.tools import tool
    from octopoda_langchain.testing import tool_call

    @tool
    def explode(x: int) -> int:
        """Always fails."""
        raise RuntimeError("kaboom 17")

    agent = AgentRuntime("bot", store=db_path)
    graph = build(agent, [tool_call("explode", {"x": 1})], [explode])
    with pytest.raises(RuntimeError, match="kaboom"):
        ask(graph, "go")
    (event,) = agent.timeline(kinds=["tool_call"])
    assert event.payload["error"] == "RuntimeError: kaboom 17"


def test_an_interrupt_is_not_a_tool_failure(db_path: str) -> None:
    from langchain_core.tools import tool
    from langgraph.types import interrupt
    from octopoda_langchain.testing import tool_call

    @tool
    def approve(amount: int) -> str:
        """Ask a human to approve a payment."""
        return str(interrupt({"amount": amount}))

    agent = AgentRuntime("bot", store=db_path)
    graph = build(agent, [tool_call("approve", {"amount": 5}), "done"], [approve])
    result = ask(graph, "pay 5")
    assert "__interrupt__" in result
    assert agent.timeline(kinds=["tool_call"]) == []


def test_spend_cap_stops_model_calls(db_path: str) -> None:
    from octopoda_langchain.testing import tool_call

    agent = AgentRuntime("bot", store=db_path, policy=LoopPolicy(spend_cap_usd=0.001))
    graph = build(
        agent,
        [tool_call("add", {"a": 1, "b": 1})] * 5 + ["done"],
        [adder()],
        prices={"scripted-1": (400.0, 400.0)},
    )
    result = ask(graph, "add ones forever")
    assert result["messages"][-1].content.startswith("Stopped: Octopoda paused agent")
    assert "spend cap" in result["messages"][-1].content
    assert agent.stats().llm_calls < 5


def test_options_are_checked(db_path: str) -> None:
    from octopoda_langchain import OctopodaMiddleware

    agent = AgentRuntime("bot", store=db_path)
    with pytest.raises(InvalidInput):
        OctopodaMiddleware(agent, on_pause="ignore")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        OctopodaMiddleware(agent, policy=LoopPolicy("pause"))
    with pytest.raises(InvalidInput):
        OctopodaMiddleware(agent, prices={"m": (1.0,)})  # type: ignore[dict-item]
    by_id = OctopodaMiddleware("other", store=db_path, policy=LoopPolicy("pause"))
    assert by_id.agent.agent_id == "other" and by_id.agent.policy.on_loop == "pause"
