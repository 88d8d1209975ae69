"""A create_agent run for the crash-resume test (run as a script, one process per phase).

    crash_agent.py DB THREAD LOG first    run the agent; the tool `slow` hangs (to be killed)
    crash_agent.py DB THREAD LOG resume   a new process and saver resume the thread, finish

The model asks for two tools in parallel: `fast` finishes (its result is a pending write of
the checkpoint), `slow` hangs in the first process. Every model and tool call appends a
line to LOG, so the test can count what ran where. The resume phase prints one JSON line.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langchain_core.tools import tool
from octopoda_langchain import OctopodaSaver
from octopoda_langchain.testing import ScriptedChatModel, tool_call

DB, THREAD, LOG, PHASE = sys.argv[1:5]


def log(line: str) -> None:
    with open(LOG, "a", encoding="utf-8") as f:
        f.write(f"{line}\n")
        f.flush()


class LoggedModel(ScriptedChatModel):
    def _generate(self, messages: list[Any], *args: Any, **kwargs: Any) -> Any:
        log(f"model {PHASE}")
        return super()._generate(messages, *args, **kwargs)


@tool
def fast(city: str) -> str:
    """Look up the weather of a city."""
    log(f"fast {PHASE}")
    return f"sunny in {city}"


@tool
def slow(city: str) -> str:
    """Book a table in a city."""
    log(f"slow-start {PHASE}")
    if PHASE == "first":
        time.sleep(600)  # killed here
    log(f"slow-done {PHASE}")
    return f"table booked in {city}"


model = LoggedModel(
    script=[
        tool_call("fast", {"city": "Oslo"}, ("slow", {"city": "Oslo"})),
        "Sunny in Oslo, and your table is booked.",
    ]
)
saver = OctopodaSaver(DB, agent_id="crash-agent")
agent = create_agent(model, tools=[fast, slow], checkpointer=saver)
config: Any = {"configurable": {"thread_id": THREAD}}

if PHASE == "first":
    agent.invoke({"messages": [HumanMessage("Weather in Oslo, and book a table")]}, config)
    sys.exit("the first phase should have been killed")

before = agent.get_state(config)
result = agent.invoke(None, config)
print(
    json.dumps(
        {
            "next_before": list(before.next),
            "pending_before": len(before.tasks),
            "final": result["messages"][-1].content,
            "kinds": [type(m).__name__ for m in result["messages"]],
            "tool_results": sorted(
                str(m.content) for m in result["messages"] if type(m).__name__ == "ToolMessage"
            ),
            "verify_ok": saver.agent.audit.verify().ok,
        }
    )
)
