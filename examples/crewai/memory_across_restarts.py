"""CrewAI memory on Octopoda: what one crew learned, a crew started later recalls.

Offline: scripted models (``octopoda_crewai.testing``) and a hashed-words embedder. The first
crew answers a question and its memory saves what it learned; the storage is closed (as a
process exit would); a second crew, on a new storage over the same store, is shown that
memory before its task. Every record is a versioned Octopoda memory on the audit chain. Runs
on the default store (``OCTOPODA_HOME``); each run adds to it.

    python examples/crewai/memory_across_restarts.py
"""

from __future__ import annotations

import json
import os

os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("OTEL_SDK_DISABLED", "true")
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")

from crewai import Agent, Crew, Memory, Task
from octopoda_crewai import OctopodaStorage, record_key
from octopoda_crewai.testing import MemoryLLM, ScriptedLLM, final, hashed_words

FACT = "The deploy key rotates every Monday."


def crew(answer: str) -> tuple[Crew, Memory, ScriptedLLM]:
    llm = ScriptedLLM([final(answer)])
    agent = Agent(role="ops", goal="answer questions", backstory="an ops engineer", llm=llm)
    task = Task(description="When does the deploy key rotate?", expected_output="a day",
                agent=agent)  # fmt: skip
    memory = Memory(
        storage=OctopodaStorage(),  # the default store; OctopodaStorage("crew.db") for a file
        embedder=hashed_words,
        llm=MemoryLLM(memories=[FACT], scope="/ops", categories=["ops"]),
    )
    return Crew(agents=[agent], tasks=[task], memory=memory), memory, llm


def main() -> None:
    first, memory, _ = crew("Every Monday.")
    before = memory.list_records()
    print(f"records before this run: {len(before)}")
    print(f"first crew: {first.kickoff().raw}")
    memory.close()  # drains the background saves, closes the store: a restart

    second, memory, llm = crew("Monday, as I remember.")
    print(f"second crew: {second.kickoff().raw}")
    shown = any(FACT in json.dumps(m, default=str) for m in llm.seen)
    print(f"the second crew was shown the first one's memory: {shown}")
    memory.drain_writes()
    storage = memory._storage
    assert isinstance(storage, OctopodaStorage)
    records = storage.list_records()
    print(f"records now: {len(records)} in scopes {storage.list_scopes('/')}")
    history = storage.agent.recall_history(record_key(records[-1].id))
    print(f"versions of the oldest record: {len(history)}")
    print("audit chain:", "verified" if storage.agent.audit.verify().ok else "BROKEN")
    memory.close()


if __name__ == "__main__":
    main()
