"""An ordinary AutoGen script, with no Octopoda in it: a Swarm whose first agent hands the
task to the second (a handoff tool call), which answers. Prints ``REPORT <json>``."""

from __future__ import annotations

import asyncio
import json

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.conditions import TextMentionTermination
from autogen_agentchat.teams import Swarm
from scripted import call, client


async def main() -> None:
    alice = AssistantAgent("alice", model_client=client(call("transfer_to_bob", "h1")),
                           handoffs=["bob"])  # fmt: skip
    bob = AssistantAgent("bob", model_client=client("Done. TERMINATE"))
    result = await Swarm([alice, bob], termination_condition=TextMentionTermination("TERMINATE"),
                         max_turns=4).run(task="Hand this to bob")  # fmt: skip
    print("REPORT", json.dumps({"stop_reason": result.stop_reason,
                                "speakers": [m.source for m in result.messages]}))  # fmt: skip


if __name__ == "__main__":
    asyncio.run(main())
