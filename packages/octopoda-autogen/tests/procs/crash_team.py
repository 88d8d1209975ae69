"""A child process of test_processes.py: a two-agent RoundRobinGroupChat whose state is
saved through OctopodaTeamState after every turn (the team runs one turn per ``run``, so
each save is of a stopped team, the way AutoGen says ``save_state`` is consistent).

``python crash_team.py DB first READY``: turns 1-3 (writer, critic, writer) run and are
saved; in turn 4 the critic's tool touches READY and hangs until the parent kills it.
``python crash_team.py DB resume``: builds the same team, loads the newest state and
continues (critic, then writer says DONE); prints one JSON line of what it saw.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.base import TaskResult
from autogen_agentchat.conditions import TextMentionTermination
from autogen_agentchat.teams import RoundRobinGroupChat
from autogen_core.tools import FunctionTool
from octopoda_autogen import OctopodaTeamState
from scripted import call, client

TEAM = "review-team"
TASK = "Write a haiku about tea"


def team(writer: list[Any], critic: list[Any], tool: FunctionTool) -> RoundRobinGroupChat:
    agents = [
        AssistantAgent("writer", model_client=client(*writer)),
        AssistantAgent("critic", model_client=client(*critic), tools=[tool]),
    ]
    stop = TextMentionTermination("DONE")
    return RoundRobinGroupChat(agents, termination_condition=stop, max_turns=1)  # type: ignore[arg-type]


def thread(state: Any) -> list[str]:
    """The sources of the manager's message thread in a saved team state."""
    for name, agent in state["agent_states"].items():
        if "anager" in name:
            return [str(m.get("source")) for m in agent["message_thread"]]
    raise AssertionError(f"no manager in {list(state['agent_states'])}")


def after_messages(state: Any) -> list[str]:
    """The contents of the manager's message thread in a saved team state."""
    for name, agent in state["agent_states"].items():
        if "anager" in name:
            return [str(m.get("content")) for m in agent["message_thread"]]
    raise AssertionError(f"no manager in {list(state['agent_states'])}")


async def turns(
    group: RoundRobinGroupChat, keeper: OctopodaTeamState, task: str | None
) -> list[str]:
    """Run turn after turn, saving after each, until DONE; the speakers, in order."""
    speakers: list[str] = []
    while True:
        result: TaskResult = await group.run(task=task)
        task = None
        spoke = [m.source for m in result.messages if m.source not in ("user",)]
        speakers += [s for s in spoke if s in ("writer", "critic")]
        record = await keeper.save(group)
        print(f"turn {len(speakers)} saved as version {record.version}", flush=True)
        if result.stop_reason and "DONE" in result.stop_reason:
            return speakers


async def first(db: str, ready: str) -> None:
    async def check(text: str) -> str:
        """Check a line of verse."""
        Path(ready).touch()  # turn 4: the crash happens while this runs
        while True:
            time.sleep(1)

    tool = FunctionTool(check, description="Check a line of verse.")
    group = team(
        ["Draft 1: green leaves steep", "Draft 2: steam curls, green leaves steep"],
        ["Too short, add an image.", call("check", "k1", text="steam curls")],
        tool,
    )
    await turns(group, OctopodaTeamState(TEAM, db), TASK)


async def resume(db: str) -> None:
    async def check(text: str) -> str:
        """Check a line of verse."""
        return "ok"

    group = team(
        ["Final: steam curls, green leaves steep, the cup warms. DONE"],
        ["Good, one more image please."],
        FunctionTool(check, description="Check a line of verse."),
    )
    keeper = OctopodaTeamState(TEAM, db)
    versions = [v.version for v in keeper.history()]
    loaded = await keeper.load(group)
    before = thread(await group.save_state())
    speakers = await turns(group, keeper, None)
    after = await group.save_state()
    print(
        json.dumps(
            {
                "loaded": loaded,
                "versions": versions,
                "before": before,
                "speakers": speakers,
                "after": thread(after),
                "last": after_messages(after)[-1],
                "verified": keeper.runtime.audit.verify().ok,
            }
        ),
        flush=True,
    )
    keeper.close()


if __name__ == "__main__":
    if sys.argv[2] == "first":
        asyncio.run(first(sys.argv[1], sys.argv[3]))
    else:
        asyncio.run(resume(sys.argv[1]))
