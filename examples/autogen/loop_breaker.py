"""AutoGen with Octopoda: a team whose agent keeps calling a failing tool is stopped.

Offline: ReplayChatCompletionClient plays a model that retries the same failing call.
OctopodaGuard records each tool call of the team run; with a pause policy the retry loop
pauses the run, and OctopodaTermination stops the team with a message naming the calls.

    pip install octopoda-autogen autogen-ext
    python examples/autogen/loop_breaker.py
"""

from __future__ import annotations

import asyncio
import json

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.conditions import TextMentionTermination
from autogen_agentchat.teams import RoundRobinGroupChat
from autogen_core import FunctionCall
from autogen_core.models import CreateResult, RequestUsage
from autogen_core.tools import FunctionTool
from autogen_ext.models.replay import ReplayChatCompletionClient
from octopoda_autogen import OctopodaGuard

from octopoda import LoopPolicy

MODEL_INFO = {
    "vision": False,
    "function_calling": True,
    "json_output": False,
    "family": "unknown",
    "structured_output": False,
}


async def fetch_status(service: str) -> str:
    """Fetch a service's status page (it is down)."""
    raise RuntimeError(f"503 Service Unavailable: {service}")


def retrying_model(times: int) -> ReplayChatCompletionClient:
    answers: list[str | CreateResult] = [
        CreateResult(
            finish_reason="function_calls",
            content=[
                FunctionCall(
                    id=f"call-{i}",
                    name="fetch_status",
                    arguments=json.dumps({"service": "billing"}),
                )
            ],
            usage=RequestUsage(prompt_tokens=12, completion_tokens=6),
            cached=False,
        )
        for i in range(times)
    ]
    return ReplayChatCompletionClient(answers, model_info=MODEL_INFO)  # type: ignore[arg-type]


async def main() -> None:
    guard = OctopodaGuard(policy=LoopPolicy("pause"))  # the default store
    worker = AssistantAgent(
        "status_checker",
        model_client=guard.model_client("status_checker", retrying_model(6)),
        tools=guard.tools("status_checker", [FunctionTool(fetch_status, description="Status.")]),
    )
    team = RoundRobinGroupChat(
        [worker],
        termination_condition=guard.termination() | TextMentionTermination("TERMINATE"),
    )
    run_id = guard.run_id
    result = await team.run(task="Is billing up?")
    print(f"stopped: {result.stop_reason}")
    runtime = guard.runtime("status_checker")
    tool_calls = [
        e for e in runtime.timeline() if e.kind == "tool_call" and e.payload.get("run_id") == run_id
    ]
    print(f"tool calls before the stop: {len(tool_calls)}")
    print(f"paused runs: {[r.id == run_id for r in runtime.runs(status='paused')]}")
    runtime.resume(run_id=run_id)
    print(f"after resume: paused={runtime.paused}")
    print(f"audit chain: {'verified' if runtime.audit.verify().ok else 'BROKEN'}")


if __name__ == "__main__":
    asyncio.run(main())
