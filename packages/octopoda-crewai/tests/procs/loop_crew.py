"""An ordinary CrewAI script, with no Octopoda in it: a scripted ReAct agent that keeps
calling a tool that fails (a retry loop). Prints one JSON line: how many model calls the
crew made, and how kickoff ended. Run by test_init.py, activated from outside
(activated.py, or octopoda-run)."""

from __future__ import annotations

import json
import os
import warnings

os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("OTEL_SDK_DISABLED", "true")
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from crewai import Agent, Crew, Task
    from crewai.tools import tool

from scripted import ScriptedLLM, action


@tool("fetch")
def fetch(url: str) -> str:
    """Fetch a URL."""
    raise RuntimeError("connection refused")


llm = ScriptedLLM([action("fetch", {"url": "http://x"})], model="scripted-gpt", usage=(100, 20))
agent = Agent(role="researcher", goal="answer", backstory="a tester", llm=llm, tools=[fetch],
              max_iter=8)  # fmt: skip
task = Task(description="fetch it", expected_output="text", agent=agent)
crew = Crew(agents=[agent], tasks=[task])
report: dict[str, object] = {"crew_id": str(crew.id), "error_type": None, "error": None}
try:
    crew.kickoff()
except Exception as exc:
    report.update(error_type=type(exc).__name__, error=str(exc))
report["calls"] = llm.calls
print("REPORT", json.dumps(report))  # crewai may print more (its first-run prompt)
