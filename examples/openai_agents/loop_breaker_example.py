"""Octopoda loop breaker for the OpenAI Agents SDK: a model that keeps calling a failing tool
is stopped inside the run.

Offline: a scripted model calls ``get_weather("Lisbon")`` again and again; the tool always
times out. ``OctopodaRunHooks`` with ``LoopPolicy("pause")`` records every call; the third
identical failure pauses the agent and the next step ends the run with ``AgentPaused``
naming the calls. Runs on the default store with a new agent name each run.

    python examples/openai_agents/loop_breaker_example.py
"""

from __future__ import annotations

import asyncio
import logging
import sys
import uuid

from agents import Agent, RunConfig, Runner, function_tool
from octopoda_openai_agents import OctopodaRunHooks, OctopodaSession
from octopoda_openai_agents.testing import ScriptedModel, assistant_message, function_call

from octopoda import AgentPaused, LoopPolicy

# Detections are logged to the "octopoda" logger at WARNING; show them on stderr.
logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(levelname)s %(message)s")

attempts: list[str] = []


@function_tool
def get_weather(city: str) -> str:
    """The weather in a city. Its upstream is down: every call times out."""
    attempts.append(city)
    raise TimeoutError(f"weather API timed out after 30000 ms (request {uuid.uuid4().hex})")


async def main() -> None:
    name = f"weather-bot-{uuid.uuid4().hex[:8]}"
    model = ScriptedModel(
        [[function_call("get_weather", {"city": "Lisbon"}, call_id=f"call-{i}")] for i in range(10)]
        + [[assistant_message("Sorry, no forecast today.")]]
    )
    agent = Agent(name=name, model=model, tools=[get_weather])
    hooks = OctopodaRunHooks(policy=LoopPolicy("pause"), prices={"gpt-4.1": (2.0, 8.0)})
    session = OctopodaSession(f"chat-{name}")
    try:
        await Runner.run(
            agent,
            "Weather in Lisbon?",
            hooks=hooks,
            session=session,
            run_config=RunConfig(tracing_disabled=True),
        )
    except AgentPaused as stop:
        print(f"the breaker stopped the run after {len(attempts)} tool calls:")
        print(f"  {stop}")
        for tool, call_id, arguments in getattr(stop, "calls", ()):
            print(f"  call {call_id}: {tool}({arguments})")
    else:
        print("the breaker never tripped")
        raise SystemExit(1)

    runtime = hooks.runtime(agent)
    stats = runtime.stats()
    print(
        f"recorded: {stats.tool_calls} tool calls, {stats.llm_calls} LLM calls,"
        f" paused={stats.paused}"
    )
    print(f"loops: {[(s.kind, s.seqs) for s in runtime.loop_history()]}")
    print(f"the conversation kept {len(await session.get_items())} items")
    runtime.resume()
    print(f"after resume(): paused={runtime.paused}")
    report = runtime.audit.verify()
    print(f"audit chain: {'verified' if report.ok else 'BROKEN'} ({report.checked} events)")


if __name__ == "__main__":
    asyncio.run(main())
