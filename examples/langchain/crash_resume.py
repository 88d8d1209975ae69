"""Crash resume: an agent is killed mid-run (SIGKILL), a new process finishes the thread.

    python examples/langchain/crash_resume.py [DB]

Offline: a scripted model asks for two tools at once. `weather` finishes; `book_table` is
still running when the worker process is killed. A second process opens a new
OctopodaSaver on the same file, resumes the thread, re-runs only `book_table` (the
weather result was saved as a pending write of the checkpoint) and finishes. Every
checkpoint is an audited Octopoda event; the chain still verifies after the crash.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langchain_core.tools import tool
from octopoda_langchain import OctopodaSaver
from octopoda_langchain.testing import ScriptedChatModel, tool_call

THREAD = {"configurable": {"thread_id": "dinner-plans"}}


def build_agent(db: str, journal: Path, crash: bool) -> Any:
    """The same agent in every process; tools note each run in `journal`."""

    def note(line: str) -> None:
        with journal.open("a", encoding="utf-8") as f:
            f.write(line + "\n")

    @tool
    def weather(city: str) -> str:
        """Today's weather in a city."""
        note("weather ran")
        return f"Sunny in {city}"

    @tool
    def book_table(city: str) -> str:
        """Book a table for two in a city."""
        note("book_table started")
        if crash:
            time.sleep(600)  # the process is killed while this tool runs
        note("book_table finished")
        return f"Table for two booked in {city}, 19:30"

    model = ScriptedChatModel(
        script=[
            tool_call("weather", {"city": "Oslo"}, ("book_table", {"city": "Oslo"})),
            "It is sunny in Oslo and your table is booked for 19:30.",
        ]
    )
    saver = OctopodaSaver(db, agent_id="dinner-planner")
    return create_agent(model, tools=[weather, book_table], checkpointer=saver), saver


def worker(db: str, journal: Path) -> None:
    """Phase 1 (a child process): start the run; it gets killed inside book_table."""
    agent, _ = build_agent(db, journal, crash=True)
    agent.invoke({"messages": [HumanMessage("Weather in Oslo? And book us a table.")]}, THREAD)


def resume(db: str, journal: Path) -> None:
    """Phase 2 (a new process): a new saver on the same file picks the thread up."""
    agent, saver = build_agent(db, journal, crash=False)
    state = agent.get_state(THREAD)
    print(f"resuming thread {THREAD['configurable']['thread_id']!r}; next step: {state.next}")
    result = agent.invoke(None, THREAD)  # None: continue from the last checkpoint
    for message in result["messages"]:
        print(f"  {type(message).__name__:13} {message.content or message.tool_calls}")
    print(f"audit chain verifies: {saver.agent.audit.verify().ok}")


def main() -> None:
    db = sys.argv[1] if len(sys.argv) > 1 else str(Path(tempfile.mkdtemp()) / "agent.db")
    journal = Path(db + ".journal")
    me = [sys.executable, __file__]
    child = subprocess.Popen([*me, db, "--worker"], env={**os.environ, "PYTHONUNBUFFERED": "1"})
    deadline = time.monotonic() + 60
    while "book_table started" not in (journal.read_text() if journal.exists() else ""):
        if child.poll() is not None or time.monotonic() > deadline:
            sys.exit("the worker ended before it reached book_table")
        time.sleep(0.05)
    # The weather result must be durable before the kill: wait until it is a pending write.
    with OctopodaSaver.from_conn_string(db, agent_id="dinner-planner") as saver:
        while not (saver.get_tuple(THREAD) or (None,) * 5)[4]:
            time.sleep(0.05)
    child.kill()  # SIGKILL: no cleanup, no flush, like a crash
    child.wait()
    print(f"worker killed (exit {child.returncode}) while book_table was running")
    subprocess.run([*me, db, "--resume"], check=True)
    runs = journal.read_text().splitlines()
    print(f"tool runs across both processes: {runs}")
    assert runs.count("weather ran") == 1, "weather must not run again"
    assert runs.count("book_table finished") == 1


if __name__ == "__main__":
    if sys.argv[2:] == ["--worker"]:
        worker(sys.argv[1], Path(sys.argv[1] + ".journal"))
    elif sys.argv[2:] == ["--resume"]:
        resume(sys.argv[1], Path(sys.argv[1] + ".journal"))
    else:
        main()
