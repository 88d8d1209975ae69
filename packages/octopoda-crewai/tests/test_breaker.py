"""The loop breaker on real crews: a scripted ReAct agent that keeps calling a failing tool."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import octopoda_crewai
import pytest
from crewai import Agent, Crew, Task
from crewai.tools import tool
from octopoda_crewai import CrewBreaker, CrewPaused, crew_run_id
from octopoda_crewai._breaker import ABORTS
from scripted import ScriptedLLM, action, final

from octopoda import LoopPolicy


@tool("fetch")
def fetch(url: str) -> str:
    """Fetch a URL."""
    raise RuntimeError("connection refused")


@tool("add")
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def crew_of(llm: ScriptedLLM, role: str, tools: list[Any]) -> Crew:
    agent = Agent(role=role, goal="answer", backstory="a tester", llm=llm, tools=tools, max_iter=12)
    task = Task(description="do the job", expected_output="an answer", agent=agent)
    return Crew(agents=[agent], tasks=[task])


@pytest.fixture
def breaker(tmp_path: Path) -> Iterator[CrewBreaker]:
    b = octopoda_crewai.install_breaker(str(tmp_path / "runs.db"), policy=LoopPolicy("pause"))
    yield b
    octopoda_crewai.uninstall_breaker()


def test_a_looping_crew_stops_and_says_why(breaker: CrewBreaker) -> None:
    llm = ScriptedLLM([action("fetch", {"url": "http://x"})])  # forever the same call
    crew = crew_of(llm, "researcher", [fetch])
    with pytest.raises(CrewPaused) as caught:
        breaker.kickoff(crew)
    assert breaker.stopped(crew) is caught.value.verdict
    message = str(caught.value)
    assert "fetch" in message and "http://x" in message
    assert "Stopped: Octopoda paused run" in message
    assert caught.value.verdict.run_id == crew_run_id(crew)
    assert llm.calls < 8  # stopped long before max_iter
    runtime = breaker.runtime("researcher")
    runs = {r.id: r for r in runtime.runs()}
    run = runs[crew_run_id(crew)]
    assert run.status == "paused" and "fetch" in (run.pause_reason or "")
    kinds = [e.kind for e in runtime.store.events(runtime.agent_id)]
    assert "tool_call" in kinds and "llm_call" in kinds
    assert runtime.audit.verify().ok


def test_another_crew_in_the_same_process_keeps_working(breaker: CrewBreaker) -> None:
    looping = crew_of(ScriptedLLM([action("fetch", {"url": "http://x"})]), "researcher", [fetch])
    with pytest.raises(CrewPaused):
        breaker.kickoff(looping)
    # same role, other crew: its own run, not paused
    working = crew_of(
        ScriptedLLM([action("add", {"a": 2, "b": 3}), final("The sum is 5.")]),
        "researcher",
        [add],
    )
    assert working.kickoff().raw == "The sum is 5."
    runs = {r.id: r.status for r in breaker.runtime("researcher").runs()}
    assert runs[crew_run_id(looping)] == "paused"
    assert runs[crew_run_id(working)] == "active"


def test_each_kickoff_of_one_crew_is_its_own_run(breaker: CrewBreaker) -> None:
    # one Crew object serving request after request: a loop paused in one kickoff must not
    # stop the next
    fetching = action("fetch", {"url": "http://x"})
    llm = ScriptedLLM(
        [fetching, fetching, fetching, action("add", {"a": 2, "b": 3}), final("The sum is 5.")]
    )
    crew = crew_of(llm, "researcher", [fetch, add])
    with pytest.raises(CrewPaused):
        breaker.kickoff(crew)
    first = crew_run_id(crew)
    assert first.startswith(f"crew:{crew.id}/")
    assert breaker.kickoff(crew).raw == "The sum is 5."
    second = crew_run_id(crew)
    assert second != first and breaker.stopped(crew) is None
    runs = {r.id: r.status for r in breaker.runtime("researcher").runs()}
    assert runs[first] == "paused" and runs[second] == "active"


@pytest.mark.skipif(not ABORTS, reason="crewai without hooks.dispatch swallows a hook's exception")
def test_with_hook_dispatch_kickoff_itself_raises_crew_paused(breaker: CrewBreaker) -> None:
    crew = crew_of(ScriptedLLM([action("fetch", {"url": "http://x"})]), "researcher", [fetch])
    with pytest.raises(CrewPaused, match="retry loop"):
        crew.kickoff()


def test_install_is_idempotent_and_uninstall_removes_the_hooks(tmp_path: Path) -> None:
    db = str(tmp_path / "runs.db")
    first = octopoda_crewai.install_breaker(db)
    assert octopoda_crewai.install_breaker(db) is first
    assert octopoda_crewai.uninstall_breaker() is True
    assert octopoda_crewai.uninstall_breaker() is False
    # without the breaker the same loop runs to CrewAI's own max_iter
    llm = ScriptedLLM([action("fetch", {"url": "http://x"})])
    crew = crew_of(llm, "researcher", [fetch])
    crew.agents[0].max_iter = 4
    crew.kickoff()
    assert llm.calls >= 4
