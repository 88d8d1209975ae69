"""Octopoda session for the OpenAI Agents SDK: history that survives restarts, with an audit
trail.

Offline: the model is scripted (``octopoda_openai_agents.testing.ScriptedModel``: the SDK's
own on openai-agents 0.21+, a stand-in before), so no API key is needed. Runs on the default
store ($OCTOPODA_HOME/octopoda.db, else ~/.octopoda/octopoda.db); run it again and the
session continues where it stopped.

    pip install octopoda-openai-agents
    python examples/openai_agents/session_example.py
"""

from __future__ import annotations

import asyncio

from agents import Agent, RunConfig, Runner, function_tool
from octopoda_openai_agents import OctopodaSession, session_ids
from octopoda_openai_agents.testing import ScriptedModel, assistant_message, function_call


@function_tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def main() -> None:
    session = OctopodaSession("example-user")  # the agent "openai-session:example-user"
    print(f"session {session.session_id!r} on {session.runtime.store.url}")
    earlier = await session.get_items()
    print(f"items from earlier runs: {len(earlier)}")

    model = ScriptedModel(
        [
            [function_call("add", {"a": 2, "b": 3}, call_id="call-1")],
            [assistant_message("The sum is 5.")],
        ]
    )
    agent = Agent(name="calculator", instructions="Add numbers.", model=model, tools=[add])
    result = await Runner.run(
        agent, "What is 2 + 3?", session=session, run_config=RunConfig(tracing_disabled=True)
    )
    print(f"answer: {result.final_output}")

    # A new object on the same store is a "restart": the history is read back from the store.
    reopened = OctopodaSession("example-user")
    items = await reopened.get_items()
    print(f"after a restart: {len(items)} items; the last run added:")
    for item in items[-4:]:
        print(f"  {item.get('type', item.get('role'))}: {str(item)[:70]}")

    runtime = reopened.runtime
    last_key = runtime.keys("item/")[-1]  # item n is the key item/<n, 12 digits>
    popped = await reopened.pop_item()  # a tombstone: the item leaves, its history stays
    print(f"popped the last item: {popped and popped.get('type', popped.get('role'))}")
    print(f"items now: {len(await reopened.get_items())}")

    kinds = [event.kind for event in runtime.timeline()]
    print(f"timeline: {kinds.count('remember')} add_items events, {kinds.count('forget')} pops")
    history = runtime.recall_history(last_key)
    print(f"history of {last_key}: {['tombstone' if v.tombstone else 'value' for v in history]}")
    print(f"sessions in this store: {session_ids(runtime.store)}")
    report = runtime.audit.verify()
    print(f"audit chain: {'verified' if report.ok else 'BROKEN'} ({report.checked} events)")
    print(f"inspect it: octopoda memory list --agent {runtime.agent_id}")


if __name__ == "__main__":
    asyncio.run(main())
