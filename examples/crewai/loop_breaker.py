"""The Octopoda loop breaker for CrewAI: a crew whose agent keeps calling a failing tool is
stopped, and another crew in the same process keeps working.

Offline: a scripted ReAct model calls ``fetch("https://status.example")`` again and again;
the tool always fails. ``install_breaker`` registers CrewAI hooks that record every tool and
model call in the crew's run; the third identical failure pauses that run, and its next model
call ends ``kickoff()`` with ``CrewPaused`` (through ``breaker.kickoff(crew)`` on crewai
1.13 and older), naming the loop and its calls. Runs on the default store (``OCTOPODA_HOME``).

    python examples/crewai/loop_breaker.py
"""

from __future__ import annotations

import logging
import os
import sys

os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("OTEL_SDK_DISABLED", "true")
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")

from crewai import Agent, Crew, Task
from crewai.tools import tool
from octopoda_crewai import CrewPaused, crew_run_id, install_breaker, uninstall_breaker
from octopoda_crewai.testing import ScriptedLLM, action, final

from octopoda import LoopPolicy

# Detections are logged to the "octopoda" logger at WARNING; show them on stderr.
logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(levelname)s %(message)s")

attempts: list[str] = []


@tool("fetch")
def fetch(url: str) -> str:
    """Fetch a URL. Its upstream is down: every call fails."""
    attempts.append(url)
    raise ConnectionError(f"{url}: connection refused")


@tool("add")
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def one_task_crew(llm: ScriptedLLM, tools: list[object]) -> Crew:
    agent = Agent(role="researcher", goal="answer", backstory="a researcher", llm=llm,
                  tools=tools, max_iter=20)  # fmt: skip
    task = Task(description="Is the status page up?", expected_output="yes or no", agent=agent)
    return Crew(agents=[agent], tasks=[task])


def main() -> None:
    breaker = install_breaker(policy=LoopPolicy("pause"))  # idempotent; process-wide
    try:
        looping = one_task_crew(
            ScriptedLLM([action("fetch", {"url": "https://status.example"})]), [fetch]
        )
        try:
            breaker.kickoff(looping)  # looping.kickoff() raises it too, on crewai 1.15
        except CrewPaused as stopped:
            calls = stopped.verdict.calls
            print(f"the breaker stopped the crew after {len(calls)} identical failing calls")
            print(f"(fetch ran {len(attempts)} times: CrewAI retries a failing tool within a call)")
            print(f"why: {stopped.verdict.reason.split(':')[0]}")
            for call in calls:
                print(f"call: {call.text()}")
        working = one_task_crew(
            ScriptedLLM([action("add", {"a": 2, "b": 3}), final("The sum is 5.")]), [add]
        )
        print(f"another crew in this process: {working.kickoff().raw}")
        runtime = breaker.runtime("researcher")
        runs = {r.id: r.status for r in runtime.runs()}
        print(f"looping run: {runs[crew_run_id(looping)]}, other run: {runs[crew_run_id(working)]}")
        print("audit chain:", "verified" if runtime.audit.verify().ok else "BROKEN")
    finally:
        uninstall_breaker()


if __name__ == "__main__":
    main()
