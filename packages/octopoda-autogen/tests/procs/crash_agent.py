"""A child process of test_processes.py: an AssistantAgent with a tool, OctopodaMemory and
OctopodaChatCompletionContext on one SQLite file.

``python crash_agent.py DB first READY``: turn 1 (2 + 3) completes; turn 2 calls ``add``
again, whose call touches READY and then hangs until the parent kills the process.
``python crash_agent.py DB resume``: prints the conversation it found (JSON lines), then
finishes turn 2 and prints the final answer.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

from autogen_agentchat.agents import AssistantAgent
from autogen_core.memory import MemoryContent, MemoryMimeType
from autogen_core.tools import FunctionTool
from octopoda_autogen import OctopodaChatCompletionContext, OctopodaMemory
from scripted import call, client

CONTEXT_ID = "crash-conversation"


def agent(db: str, tool: FunctionTool, *answers: object) -> AssistantAgent:
    return AssistantAgent(
        "calculator",
        model_client=client(*answers),  # type: ignore[arg-type]
        tools=[tool],
        memory=[OctopodaMemory("calculator-notes", db)],
        model_context=OctopodaChatCompletionContext(CONTEXT_ID, db),
        reflect_on_tool_use=True,
    )


async def first(db: str, ready: str) -> None:
    calls = 0

    async def add(a: int, b: int) -> int:
        """Add two numbers."""
        nonlocal calls
        calls += 1
        if calls == 2:  # turn 2: the crash happens while this tool runs
            Path(ready).touch()
            while True:
                time.sleep(1)
        return a + b

    memory = OctopodaMemory("calculator-notes", db)
    await memory.add(
        MemoryContent(content="Sums are answered in words", mime_type=MemoryMimeType.TEXT)
    )
    tool = FunctionTool(add, description="Add two numbers.")
    worker = agent(
        db, tool, call("add", "t1", a=2, b=3), "The sum is 5.", call("add", "t2", a=4, b=5)
    )
    result = await worker.run(task="What is the sum of 2 + 3?")
    print("turn 1:", result.messages[-1].content, flush=True)
    await worker.run(task="Now add the sums 4 and 5")


async def resume(db: str) -> None:
    context = OctopodaChatCompletionContext(CONTEXT_ID, db)
    for message in await context.get_messages():
        print(json.dumps(message.model_dump(mode="json")), flush=True)

    async def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    tool = FunctionTool(add, description="Add two numbers.")
    worker = agent(db, tool, call("add", "t3", a=4, b=5), "The sum is 9. TERMINATE")
    result = await worker.run(task="Please finish: add the sums 4 and 5")
    kinds = [type(m).__name__ for m in result.messages]
    print("final:", result.messages[-1].content, flush=True)
    print("events:", " ".join(kinds), flush=True)
    await context.reload()  # the agent's own context object added the rest
    print("messages:", len(await context.all_messages()), flush=True)


if __name__ == "__main__":
    if sys.argv[2] == "first":
        asyncio.run(first(sys.argv[1], sys.argv[3]))
    else:
        asyncio.run(resume(sys.argv[1]))
