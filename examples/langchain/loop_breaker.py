"""Loop breaker: an agent that keeps retrying a failing tool is stopped by Octopoda.

    python examples/langchain/loop_breaker.py [DB]

Offline: a scripted model calls `fetch_invoice` with the same arguments on every turn, and
the tool fails with HTTP 503 every time. With ``LoopPolicy("pause")`` Octopoda's retry
detector fires on the third identical failure, the breaker pauses that conversation (the
LangGraph thread ``billing-1``), and OctopodaMiddleware ends its run with a message saying
why, instead of paying for more model calls. Another customer's thread on the same agent
goes on; ``agent.resume(run_id="billing-1")`` would let the first one continue. The pause,
the detection and every call are on the agent's audit chain.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langchain_core.tools import ToolException, tool
from octopoda_langchain import OctopodaMiddleware, OctopodaSaver
from octopoda_langchain.testing import ScriptedChatModel, tool_call

from octopoda import AgentRuntime, LoopPolicy


@tool
def fetch_invoice(invoice_id: str) -> str:
    """Fetch an invoice from the billing service."""
    raise ToolException(f"HTTP 503 Service Unavailable for invoice {invoice_id}")


fetch_invoice.handle_tool_error = True  # the model sees the error and (here) just retries


def main() -> None:
    db = sys.argv[1] if len(sys.argv) > 1 else str(Path(tempfile.mkdtemp()) / "agent.db")
    agent = AgentRuntime("billing-bot", store=db, policy=LoopPolicy("pause"))
    model = ScriptedChatModel(script=[tool_call("fetch_invoice", {"invoice_id": "INV-42"})])
    # Checkpoints go to their own agent on the same store: every checkpoint is a new
    # memory value, which the loop detectors would count as progress on "billing-bot".
    checkpointer = OctopodaSaver(db, agent_id="billing-bot.checkpoints")
    graph = create_agent(
        model,
        tools=[fetch_invoice],
        checkpointer=checkpointer,
        middleware=[OctopodaMiddleware(agent)],
    )
    result = graph.invoke(
        {"messages": [HumanMessage("Send me invoice INV-42")]},
        {"configurable": {"thread_id": "billing-1"}, "recursion_limit": 50},
    )
    for message in result["messages"]:
        print(f"{type(message).__name__:13} {message.content or message.tool_calls}")

    status = agent.stats()
    calls = f"tool calls: {status.tool_calls}; model calls: {status.llm_calls}"
    print(f"\npaused: {status.paused}; {calls}")
    for signal in agent.loop_history():
        seen = f"confidence {signal.confidence:.0%}, events {signal.seqs}"
        print(f"detected: {signal.kind} loop, {seen}")
    print(f"paused threads: {[run.id for run in agent.runs(status='paused')]}")

    # Another customer's thread on the same agent is not stopped (here, a greeting).
    greeter = create_agent(
        ScriptedChatModel(script=["Hello! How can I help?"]),
        tools=[fetch_invoice],
        checkpointer=checkpointer,
        middleware=[OctopodaMiddleware(agent)],
    )
    other = greeter.invoke(
        {"messages": [HumanMessage("Hi")]}, {"configurable": {"thread_id": "billing-2"}}
    )
    print(f"billing-2: {other['messages'][-1].content}")
    print(f"audit chain verifies: {agent.audit.verify().ok}")
    assert status.paused and status.tool_calls == 3
    assert result["messages"][-1].content.startswith("Stopped: Octopoda paused run 'billing-1'")


if __name__ == "__main__":
    main()
