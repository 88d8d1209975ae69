"""An unmodified Agents SDK program: an agent whose scripted model keeps calling a failing
tool (a retry loop), with a user's own run hooks counting calls. It knows nothing of
Octopoda; ``init_run.py`` runs it with the integration activated, or ``octopoda-run`` does.

    python loop_script.py [HOW]   # HOW: run (default), sync or streamed; prints one JSON
                                  # line: {"outcome": ..., "model_calls": n, ...}
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from agents import Agent, AgentsException, RunHooks, Runner, function_tool
from octopoda_openai_agents.testing import ScriptedModel, function_call, usage

STEPS = 30


@function_tool
def fetch(city: str) -> str:
    """Fetch the weather of a city."""
    raise RuntimeError(f"HTTP 503 for {city}")


class CountingHooks(RunHooks[Any]):
    """The program's own hooks: they keep seeing every tool call."""

    def __init__(self) -> None:
        self.tools = 0

    async def on_tool_end(self, context: Any, agent: Any, tool: Any, result: Any) -> None:
        self.tools += 1


async def _streamed(agent: Agent[Any], hooks: CountingHooks) -> Any:
    result = Runner.run_streamed(agent, "Weather in Paris?", hooks=hooks, max_turns=STEPS)
    async for _ in result.stream_events():
        pass
    return result


def main(how: str = "run") -> dict[str, Any]:
    steps = [[function_call("fetch", {"city": "Paris"}, call_id=f"c{i}")] for i in range(STEPS)]
    model = ScriptedModel(steps, default_usage=usage(100, 20))
    agent = Agent(name="weather", instructions="Answer.", model=model, tools=[fetch])
    hooks = CountingHooks()
    try:
        if how == "sync":
            result = Runner.run_sync(agent, "Weather in Paris?", hooks=hooks, max_turns=STEPS)
        elif how == "streamed":
            result = asyncio.run(_streamed(agent, hooks))
        else:
            run = Runner.run(agent, "Weather in Paris?", hooks=hooks, max_turns=STEPS)
            result = asyncio.run(run)
        outcome = f"answer: {result.final_output}"
    except AgentsException as exc:  # what a user's script would print
        outcome = f"{type(exc).__name__}: {exc}"
    return {
        "outcome": outcome,
        "model_calls": STEPS - model.remaining_steps,
        "own_hook_tools": hooks.tools,
    }


if __name__ == "__main__":
    print(json.dumps(main(*sys.argv[1:2])))
