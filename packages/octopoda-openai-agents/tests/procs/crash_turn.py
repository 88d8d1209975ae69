"""A run that is killed during its second turn (the parent sends SIGKILL).

    python crash_turn.py KIND DB SIGNAL_FILE

Turn 1: the model calls ``step(1)``, which returns. Turn 2: the model calls ``step(2)``,
which creates SIGNAL_FILE and then waits to be killed.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

from agents import Agent, RunConfig, Runner, function_tool
from octopoda_openai_agents.testing import ScriptedModel, assistant_message, function_call
from scenario import make_session


@function_tool
def step(n: int) -> str:
    """Do step n."""
    if n == 2:
        Path(sys.argv[3]).write_text("in turn 2")
        time.sleep(120)  # killed here
    return f"step {n} done"


async def main(kind: str, db: str) -> None:
    session = make_session(kind, db, "crash")
    model = ScriptedModel(
        [
            [function_call("step", {"n": 1}, call_id="c1")],
            [function_call("step", {"n": 2}, call_id="c2")],
            [assistant_message("done", item_id="m1")],
        ]
    )
    agent = Agent(name="worker", model=model, tools=[step])
    await Runner.run(
        agent, "Do both steps", session=session, run_config=RunConfig(tracing_disabled=True)
    )


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
