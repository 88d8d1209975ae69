"""An ordinary AutoGen script, with no Octopoda in it: an AssistantAgent whose scripted
model keeps calling a tool that fails (a retry loop). ``python loop_team.py team``: in a
RoundRobinGroupChat; ``logged``: the same with a model client that logs its calls
(``LLMCallEvent``), as autogen-ext's API clients do; ``agent``: the agent alone, run again
and again. Prints one line, ``REPORT <json>``: how the run ended, how many times the tool
ran, how many model calls. Run by test_init.py, after ``octopoda.init()`` (with_init.py)
or under ``octopoda-run``."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.teams import RoundRobinGroupChat
from autogen_core.tools import FunctionTool
from autogen_ext.models.replay import ReplayChatCompletionClient as Replay
from scripted import LoggingClient, call, client

fetches = 0


async def fetch(url: str) -> str:
    """Fetch a URL (this one always fails)."""
    global fetches
    fetches += 1
    raise RuntimeError(f"HTTP 503 from {url}")


async def main(mode: str) -> None:
    answers: list[Any] = [call("fetch", f"c{i}", url="https://x.test") for i in range(8)]
    model = client(*answers, "TERMINATE", cls=LoggingClient if mode == "logged" else Replay)
    worker = AssistantAgent(
        "worker", model_client=model, tools=[FunctionTool(fetch, description="Fetch a URL.")]
    )
    report: dict[str, Any] = {"error_type": None, "error": None, "stop_reason": None}
    try:
        if mode == "agent":
            for _ in range(8):
                await worker.run(task="Fetch https://x.test")
        else:
            result = await RoundRobinGroupChat([worker], max_turns=8).run(task="Fetch it")
            report["stop_reason"] = result.stop_reason
    except Exception as exc:
        report.update(error_type=type(exc).__name__, error=str(exc))
    report.update(fetches=fetches, model_calls=model._current_index)
    print("REPORT", json.dumps(report))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "team"))
