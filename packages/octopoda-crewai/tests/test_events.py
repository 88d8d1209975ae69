"""Crew, task and agent start and finish on the chain (CrewAI's event bus), and the tokens
and cost of each model call, on real crews with the scripted model."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import octopoda_crewai
import pytest
from crewai import Agent, Crew, Task
from crewai.events import crewai_event_bus
from crewai.tools import tool
from octopoda_crewai import CrewBreaker, crew_run_id
from scripted import ScriptedLLM, action, final

from octopoda import Event, LoopPolicy


@tool("add")
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool("explode")
def explode(x: int) -> int:
    """Always fails."""
    raise RuntimeError("boom")


PRICES = {"scripted-pro": (2.0, 8.0)}


def crew_of(llm: ScriptedLLM, role: str, *, tasks: int = 1) -> Crew:
    agent = Agent(role=role, goal="answer", backstory="a tester", llm=llm, tools=[add], max_iter=6)
    jobs = [
        Task(description=f"job {i}", expected_output="an answer", agent=agent) for i in range(tasks)
    ]
    return Crew(agents=[agent], tasks=jobs)


@pytest.fixture(autouse=True)
def crewai_storage(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """CrewAI's own task-output log of a crew with several tasks goes to this test's
    directory (else one per project name under the user's data directory, shared by the
    crewai lines, which read each other's rows as broken JSON)."""
    monkeypatch.setenv("CREWAI_STORAGE_DIR", str(tmp_path / "crewai-storage"))


@pytest.fixture
def breaker(tmp_path: Path) -> Iterator[CrewBreaker]:
    b = octopoda_crewai.install_breaker(
        str(tmp_path / "runs.db"), policy=LoopPolicy("pause"), prices=PRICES
    )
    yield b
    octopoda_crewai.uninstall_breaker()


def story(breaker: CrewBreaker, role: str, crew: Crew) -> list[str]:
    """The run's events in chain order: lifecycle kinds, and tool/llm calls."""
    crewai_event_bus.flush()
    runtime = breaker.runtime(role)
    out = []
    for event in runtime.timeline(run_id=crew_run_id(crew)):
        if event.kind == "decision":
            out.append(event.payload["context"]["crewai"])
        else:
            out.append(event.kind)
    return out


def lifecycle(breaker: CrewBreaker, role: str, crew: Crew) -> list[Event]:
    crewai_event_bus.flush()
    runtime = breaker.runtime(role)
    return [e for e in runtime.timeline(run_id=crew_run_id(crew)) if e.kind == "decision"]


def test_a_crew_run_reads_from_start_to_end_on_the_chain(breaker: CrewBreaker) -> None:
    llm = ScriptedLLM([action("add", {"a": 2, "b": 3}), final("The sum is 5.")])
    crew = crew_of(llm, "adder")
    assert crew.kickoff().raw == "The sum is 5."
    assert story(breaker, "adder", crew) == [
        "crew_started",
        "task_started",
        "agent_started",
        "llm_call",
        "tool_call",
        "llm_call",
        "agent_completed",
        "task_completed",
        "crew_completed",
    ]
    events = lifecycle(breaker, "adder", crew)
    assert all(e.payload["run_id"] == crew_run_id(crew) for e in events)
    done = {e.payload["context"]["crewai"]: e.payload["context"] for e in events}
    assert done["task_completed"]["output"] == "The sum is 5."
    assert done["task_started"]["task_id"] == str(crew.tasks[0].id)
    assert done["crew_completed"]["crew_id"] == str(crew.id)
    assert done["agent_started"]["agent"] == "adder"
    assert breaker.runtime("adder").audit.verify().ok


def test_two_tasks_in_order(breaker: CrewBreaker) -> None:
    llm = ScriptedLLM([final("done")])
    crew = crew_of(llm, "worker", tasks=2)
    crew.kickoff()
    events = lifecycle(breaker, "worker", crew)
    pairs = [(e.payload["context"]["crewai"], e.payload["context"].get("task")) for e in events]
    assert pairs == [
        ("crew_started", None),
        ("task_started", "job 0"),
        ("agent_started", "job 0"),
        ("agent_completed", "job 0"),
        ("task_completed", "job 0"),
        ("task_started", "job 1"),
        ("agent_started", "job 1"),
        ("agent_completed", "job 1"),
        ("task_completed", "job 1"),
        ("crew_completed", None),
    ]
    runs = {r.id: r.status for r in breaker.runtime("worker").runs()}
    assert runs[crew_run_id(crew)] == "active"  # lifecycle events never look like a loop


def test_two_crews_events_go_to_their_own_runs(breaker: CrewBreaker) -> None:
    first = crew_of(ScriptedLLM([final("one")]), "worker")
    second = crew_of(ScriptedLLM([final("two")]), "worker")
    first.kickoff()
    second.kickoff()
    a, b = lifecycle(breaker, "worker", first), lifecycle(breaker, "worker", second)
    assert len(a) == len(b) == 6
    assert {e.payload["context"].get("crew_id") for e in a} - {None} == {str(first.id)}
    assert {e.payload["context"].get("crew_id") for e in b} - {None} == {str(second.id)}
    assert a[-2].payload["context"]["output"] == "one"
    assert b[-2].payload["context"]["output"] == "two"


def test_a_failed_crew_is_on_the_chain(breaker: CrewBreaker) -> None:
    class Broken(ScriptedLLM):
        def call(self, messages: Any, *args: Any, **kwargs: Any) -> str:
            raise RuntimeError("the model is down")

    crew = crew_of(Broken([final("never")]), "fragile")
    with pytest.raises(RuntimeError, match="the model is down"):
        crew.kickoff()
    kinds = [e.payload["context"]["crewai"] for e in lifecycle(breaker, "fragile", crew)]
    assert kinds[:3] == ["crew_started", "task_started", "agent_started"]
    assert "agent_failed" in kinds and "task_failed" in kinds
    assert kinds[-1] == "crew_failed"
    failed = lifecycle(breaker, "fragile", crew)[-1].payload["context"]
    assert "the model is down" in failed["error"]


def test_model_calls_record_tokens_and_cost(breaker: CrewBreaker) -> None:
    llm = ScriptedLLM(
        [action("add", {"a": 1, "b": 1}), final("2")], model="scripted-pro", usage=(1000, 250)
    )
    crew = crew_of(llm, "counter")
    crew.kickoff()
    runtime = breaker.runtime("counter")
    calls = runtime.timeline(kinds=["llm_call"], run_id=crew_run_id(crew))
    assert len(calls) == 2
    for call in calls:
        assert call.payload["model"] == "scripted-pro"
        assert call.payload["tokens_in"] == 1000 and call.payload["tokens_out"] == 250
        assert call.payload["cost_usd"] == pytest.approx((1000 * 2.0 + 250 * 8.0) / 1e6)


def test_a_model_without_usage_records_zero_tokens(breaker: CrewBreaker) -> None:
    crew = crew_of(ScriptedLLM([final("x")]), "plain")
    crew.kickoff()
    (call,) = breaker.runtime("plain").timeline(kinds=["llm_call"], run_id=crew_run_id(crew))
    assert call.payload.get("tokens_in", 0) == 0 and call.payload.get("cost_usd", 0) == 0


def test_installing_twice_records_once_and_uninstall_stops_recording(tmp_path: Path) -> None:
    db = str(tmp_path / "runs.db")
    first = octopoda_crewai.install_breaker(db)
    try:
        assert octopoda_crewai.install_breaker(db) is first  # idempotent
        crew = crew_of(ScriptedLLM([final("x")]), "once")
        crew.kickoff()
        assert len(lifecycle(first, "once", crew)) == 6
        # other arguments replace the breaker: the old handlers are gone
        second = octopoda_crewai.install_breaker(db, agent_prefix="other-")
        crew2 = crew_of(ScriptedLLM([final("y")]), "once")
        crew2.kickoff()
        assert len(lifecycle(second, "once", crew2)) == 6
    finally:
        assert octopoda_crewai.uninstall_breaker()
    # nothing is listening now: a crew runs and leaves no events
    third = octopoda_crewai.install_breaker(db, agent_prefix="check-")
    try:
        octopoda_crewai.uninstall_breaker()
        quiet = crew_of(ScriptedLLM([final("z")]), "once")
        quiet.kickoff()
        crewai_event_bus.flush()
        check = octopoda_crewai.install_breaker(db)  # crewai-once: the first breaker's agent
        assert len(lifecycle(check, "once", crew)) == 6
        assert lifecycle(check, "once", quiet) == []
        assert lifecycle(check, "once", crew2) == []  # crew2 went to other-once only
    finally:
        octopoda_crewai.uninstall_breaker()
        del third


def test_bad_prices_are_refused(tmp_path: Path) -> None:
    from octopoda import OctopodaError

    with pytest.raises(OctopodaError, match="prices"):
        octopoda_crewai.install_breaker(str(tmp_path / "x.db"), prices={"m": (1.0,)})  # type: ignore[dict-item]
