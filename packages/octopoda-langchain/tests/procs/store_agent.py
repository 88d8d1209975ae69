"""An agent whose tools use LangGraph's store through get_store() (run as a script).

    store_agent.py DB write   a run whose tool saves a memory (OctopodaStore)
    store_agent.py DB read    a later run, in a new process, whose tool finds it by search

Uses create_agent (LangChain 1.x) or, on older lines, LangGraph's create_react_agent.
Prints one JSON line: the run's tool results and final answer.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.config import get_store
from octopoda_langchain import OctopodaSaver, OctopodaStore
from octopoda_langchain.testing import ScriptedChatModel, tool_call

DB, PHASE = sys.argv[1:3]
NAMESPACE = ("users", "u-7", "memories")


@tool
def save_memory(text: str) -> str:
    """Remember a fact about the user."""
    get_store().put(NAMESPACE, "fact-1", {"text": text})
    return "saved"


@tool
def find_memories(query: str) -> str:
    """Search what is known about the user."""
    return json.dumps(
        [item.value["text"] for item in get_store().search(NAMESPACE[:2], query=query)]
    )


if PHASE == "write":
    script: list[Any] = [
        tool_call("save_memory", {"text": "Ana drinks green tea, no sugar"}),
        "Noted.",
    ]
    question = "Remember that I drink green tea without sugar."
else:
    script = [tool_call("find_memories", {"query": "what tea does she drink"}), "Green tea."]
    question = "What do I drink?"

model = ScriptedChatModel(script=script)
tools = [save_memory, find_memories]
saver, store = OctopodaSaver(DB, agent_id="assistant"), OctopodaStore(DB, agent_id="assistant")
try:
    from langchain.agents import create_agent

    agent = create_agent(model, tools=tools, checkpointer=saver, store=store)
except ImportError:  # LangChain 0.3 line
    from langgraph.prebuilt import create_react_agent

    agent = create_react_agent(model, tools, checkpointer=saver, store=store)

result = agent.invoke(
    {"messages": [HumanMessage(question)]}, {"configurable": {"thread_id": PHASE}}
)
print(
    json.dumps(
        {
            "tools": [m.content for m in result["messages"] if isinstance(m, ToolMessage)],
            "final": result["messages"][-1].content,
        }
    )
)
