"""A plain StateGraph for the crash-resume test on every LangGraph line (run as a script).

    crash_graph.py DB LOG first    nodes plan -> work; `work` hangs (to be killed)
    crash_graph.py DB LOG resume   a new process and saver finish the thread

Each node appends a line to LOG; the resume phase prints one JSON line.
"""

from __future__ import annotations

import json
import sys
import time
from inspect import signature
from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph
from octopoda_langchain import OctopodaSaver

DB, LOG, PHASE = sys.argv[1:4]


def log(line: str) -> None:
    with open(LOG, "a", encoding="utf-8") as f:
        f.write(f"{line}\n")


class State(TypedDict):
    steps: list[str]


def plan(state: State) -> State:
    log(f"plan {PHASE}")
    return {"steps": [*state["steps"], "plan"]}


def work(state: State) -> State:
    log(f"work-start {PHASE}")
    if PHASE == "first":
        time.sleep(600)
    log(f"work-done {PHASE}")
    return {"steps": [*state["steps"], "work"]}


builder = StateGraph(State)
builder.add_node("plan", plan)
builder.add_node("work", work)
builder.add_edge(START, "plan")
builder.add_edge("plan", "work")
builder.add_edge("work", END)
saver = OctopodaSaver(DB, agent_id="graph")
graph = builder.compile(checkpointer=saver)
config: Any = {"configurable": {"thread_id": "job-1"}}
if PHASE == "first":
    # LangGraph >= 0.6 saves checkpoints in the background by default ("async"), so the
    # kill could land after plan's writes but before the checkpoint after plan (the resume
    # is then still correct, from the pending writes, but `next` is empty). "sync" makes
    # the crash point the one this test is about: mid-node, after the last checkpoint.
    sync = {"durability": "sync"} if "durability" in signature(graph.invoke).parameters else {}
    graph.invoke({"steps": []}, config, **sync)
    sys.exit("the first phase should have been killed")
before = graph.get_state(config)
result = graph.invoke(None, config)
print(
    json.dumps(
        {"next_before": list(before.next), "result": result, "ok": saver.agent.audit.verify().ok}
    )
)
