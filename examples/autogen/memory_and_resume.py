"""AutoGen with Octopoda: long-term memory and a conversation that survives a restart.

Offline: AutoGen's ReplayChatCompletionClient plays the model. Run it twice; the second run
continues the same conversation and finds the memory from the first.

    pip install octopoda-autogen autogen-ext
    python examples/autogen/memory_and_resume.py
"""

from __future__ import annotations

import asyncio
import json

from autogen_agentchat.agents import AssistantAgent
from autogen_core import FunctionCall
from autogen_core.memory import MemoryContent, MemoryMimeType
from autogen_core.models import CreateResult, RequestUsage
from autogen_core.tools import FunctionTool
from autogen_ext.models.replay import ReplayChatCompletionClient
from octopoda_autogen import OctopodaChatCompletionContext, OctopodaMemory

MODEL_INFO = {
    "vision": False,
    "function_calling": True,
    "json_output": False,
    "family": "unknown",
    "structured_output": False,
}


async def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def scripted_model() -> ReplayChatCompletionClient:
    call = FunctionCall(id="call-1", name="add", arguments=json.dumps({"a": 2, "b": 3}))
    return ReplayChatCompletionClient(
        [
            CreateResult(
                finish_reason="function_calls",
                content=[call],
                usage=RequestUsage(prompt_tokens=10, completion_tokens=5),
                cached=False,
            ),
            "The sum is 5, in words: five.",
        ],
        model_info=MODEL_INFO,  # type: ignore[arg-type]
    )


async def main() -> None:
    # store=None: Octopoda's default store ($OCTOPODA_HOME/octopoda.db or ~/.octopoda)
    memory = OctopodaMemory("calculator-notes", k=3)
    context = OctopodaChatCompletionContext("example-conversation")
    earlier = len(await context.get_messages())
    print(f"messages from earlier runs: {earlier}")
    if not (await memory.query("sums words")).results:
        note = MemoryContent(content="Sums are answered in words", mime_type=MemoryMimeType.TEXT)
        await memory.add(note)

    agent = AssistantAgent(
        "calculator",
        model_client=scripted_model(),
        tools=[FunctionTool(add, description="Add two numbers.")],
        memory=[memory],
        model_context=context,
        reflect_on_tool_use=True,
    )
    result = await agent.run(task="What is the sum of 2 + 3?")
    print(f"answer: {result.messages[-1].content}")
    recalled = [m for m in result.messages if type(m).__name__ == "MemoryQueryEvent"]
    print(f"memories injected: {[str(c.content) for c in recalled[0].content]}")

    # What a new process sees: the same id on the same store, every message written through.
    restarted = OctopodaChatCompletionContext("example-conversation")
    kinds = [type(m).__name__ for m in await restarted.get_messages()]
    print(f"after a restart: {len(kinds)} messages: {', '.join(kinds[earlier:])}")
    print(f"audit chain: {'verified' if context.runtime.audit.verify().ok else 'BROKEN'}")
    await memory.close()


if __name__ == "__main__":
    asyncio.run(main())
