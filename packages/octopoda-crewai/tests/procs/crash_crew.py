"""A crew with memory on OctopodaStorage, in its own process (driven by test_processes.py).

python crash_crew.py work DB READY   task 1 answers (its memory is saved), task 2's tool
                                      writes READY once the memory is stored, then hangs
                                      until the test kills the process (SIGKILL)
python crash_crew.py recall DB       a new crew on the same store; prints JSON: whether
                                      the agent's model was shown the first crew's memory
"""

from __future__ import annotations

import json
import os
import sys
import time
import warnings
from pathlib import Path

for name, value in {
    "CREWAI_DISABLE_TELEMETRY": "true",
    "OTEL_SDK_DISABLED": "true",
    "CREWAI_TRACING_ENABLED": "false",
}.items():
    os.environ[name] = value

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from crewai import Agent, Crew, Memory, Task
    from crewai.tools import tool

from octopoda_crewai import OctopodaStorage  # noqa: E402 (after the environment)
from scripted import MemoryLLM, ScriptedLLM, action, final, hashed_words  # noqa: E402

FACT = "The deploy key rotates every Monday."


def memory(db: str) -> Memory:
    return Memory(
        storage=OctopodaStorage(db),
        embedder=hashed_words,
        llm=MemoryLLM(memories=[FACT], scope="/ops", categories=["ops"]),
    )


def work(db: str, ready: str) -> None:
    @tool("wait_for_memory")
    def wait_for_memory(note: str) -> str:
        """Wait until the memory of the first task is stored."""
        with OctopodaStorage(db) as probe:
            while probe.count() == 0:
                time.sleep(0.05)
        Path(ready).write_text("ready")
        time.sleep(3600)  # killed here, mid-run
        return "never"

    llm = ScriptedLLM(
        [final("The deploy key rotates every Monday."), action("wait_for_memory", {"note": "x"})]
    )
    agent = Agent(role="ops", goal="answer", backstory="ops engineer", llm=llm,
                  tools=[wait_for_memory])  # fmt: skip
    tasks = [
        Task(description="When does the deploy key rotate?", expected_output="a day", agent=agent),
        Task(description="Wait for the memory.", expected_output="text", agent=agent),
    ]
    Crew(agents=[agent], tasks=tasks, memory=memory(db)).kickoff()


def recall(db: str) -> None:
    llm = ScriptedLLM([final("Monday.")])
    agent = Agent(role="ops", goal="answer", backstory="ops engineer", llm=llm)
    task = Task(description="When does the deploy key rotate?", expected_output="a day",
                agent=agent)  # fmt: skip
    mem = memory(db)
    out = Crew(agents=[agent], tasks=[task], memory=mem).kickoff()
    mem.drain_writes()
    shown = any(FACT in json.dumps(messages, default=str) for messages in llm.seen)
    storage = mem._storage if hasattr(mem, "_storage") else None
    with OctopodaStorage(db) as check:
        report = {
            "answer": out.raw,
            "shown": shown,
            "records": [r.content for r in check.list_records()],
            "verified": check.agent.audit.verify().ok,
        }
    del storage
    mem.close()
    print(json.dumps(report))


if __name__ == "__main__":
    if sys.argv[1] == "work":
        work(sys.argv[2], sys.argv[3])
    else:
        recall(sys.argv[2])
