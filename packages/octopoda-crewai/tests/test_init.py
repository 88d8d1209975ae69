"""``octopoda.init``'s CrewAI integration on real crews, each scenario in its own process
(CrewAI's hooks and factory are process-wide): an ordinary CrewAI script, with no Octopoda
in it (procs/loop_crew.py), whose scripted agent keeps calling a failing tool, run after
``octopoda.init()`` (procs/with_init.py) and under ``octopoda-run``."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from octopoda_crewai._integration import integration

import octopoda
from octopoda.integrations import ENTRY_POINT_GROUP, Integration

PROCS = Path(__file__).resolve().parent / "procs"
AGENT = "nightly-research"
Run = Callable[..., subprocess.CompletedProcess[str]]


def run_with_init(run_python: Run, db: Path, mode: str) -> dict[str, Any]:
    done = run_python(
        str(PROCS / "with_init.py"), str(db), AGENT, mode, str(PROCS / "loop_crew.py")
    )
    return report_of(done)


def report_of(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert done.returncode == 0, done.stderr
    (line,) = [x for x in done.stdout.splitlines() if x.startswith("REPORT ")]
    report: dict[str, Any] = json.loads(line.removeprefix("REPORT "))
    report["stderr"] = done.stderr
    return report


def kinds(db: Path) -> list[str]:
    with octopoda.Octopoda(str(db)) as client:
        runtime = client.agent(AGENT)
        return [e.kind for e in runtime.store.events(AGENT)]


def test_the_entry_point_names_the_integration_without_importing_crewai() -> None:
    from importlib.metadata import entry_points

    (point,) = [p for p in entry_points(group=ENTRY_POINT_GROUP) if p.name == "crewai"]
    assert point.value == "octopoda_crewai._integration:integration"
    assert point.load() is integration
    assert isinstance(integration, Integration)
    assert integration.modules == ("crewai",) and integration.distribution == "crewai"
    assert integration.supported == ">=1.10.1,<1.16"
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, octopoda_crewai._integration; print('crewai' in sys.modules)",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == "False"


def test_a_looping_crew_is_recorded_and_stopped(tmp_path: Path, run_python: Run) -> None:
    db = tmp_path / "agent.db"
    report = run_with_init(run_python, db, "init")
    check_stopped_and_recorded(db, report, priced=True)


@pytest.mark.processes  # (the newest cell on 3.11 runs it)
def test_the_unmodified_script_under_octopoda_run(tmp_path: Path, proc_env: dict[str, str]) -> None:
    db = tmp_path / "agent.db"
    env = {**proc_env, "OCTOPODA_AGENT_ID": AGENT, "OCTOPODA_DATABASE_URL": str(db),
           "OCTOPODA_POLICY": "pause"}  # fmt: skip
    launcher = str(Path(sys.executable).with_name("octopoda-run"))
    done = subprocess.run(
        [launcher, sys.executable, str(PROCS / "loop_crew.py")],
        env=env, capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip
    check_stopped_and_recorded(db, report_of(done), priced=False)


def check_stopped_and_recorded(db: Path, report: dict[str, Any], *, priced: bool) -> None:
    # the pause policy stopped the crew: three failures, then the next model call refused
    assert report["error_type"] is not None
    assert report["calls"] <= 4, report
    if report["error_type"] == "CrewPaused":  # crewai 1.15: the exception names the loop
        assert "fetch" in report["error"] and "http://x" in report["error"]
    else:  # older crewai raises its own error; the loop is named on stderr
        assert "fetch" in report["stderr"] and "retry loop" in report["stderr"]

    with octopoda.Octopoda(str(db)) as client:
        runtime = client.agent(AGENT)
        events = list(runtime.store.events(AGENT))
        tools = [e for e in events if e.kind == "tool_call"]
        llms = [e for e in events if e.kind == "llm_call"]
        assert len(tools) == 3 and {e.payload.get("name") for e in tools} == {"fetch"}
        assert len(llms) == report["calls"]  # every model call made, once
        first = llms[0].payload
        assert first.get("tokens_in") == 100 and first.get("tokens_out") == 20
        cost = (100 * 1.0 + 20 * 2.0) / 1e6 if priced else 0.0
        assert first.get("cost_usd", 0.0) == pytest.approx(cost)
        (run_id,) = [r.id for r in runtime.runs() if r.id.startswith(f"crew:{report['crew_id']}/")]
        assert {e.payload["run_id"] for e in tools} == {run_id}
        runs = {r.id: r for r in runtime.runs()}
        assert runs[run_id].status == "paused" and "fetch" in (runs[run_id].pause_reason or "")
        status = runtime.loop_status(run_id)
        assert status.state == "looping"
        named = {ref.name for signal in status.signals for ref in signal.events}
        assert "fetch" in named
        assert runtime.audit.verify().ok


@pytest.mark.processes  # (the newest cell on 3.11 runs it)
def test_deactivate_removes_everything(tmp_path: Path, run_python: Run) -> None:
    db = tmp_path / "agent.db"
    report = run_with_init(run_python, db, "shutdown")
    assert report["calls"] >= 5  # nothing stopped it: CrewAI ran to its own limits
    assert kinds(db) == []


@pytest.mark.processes  # (the newest cell on 3.11 runs it)
@pytest.mark.parametrize("mode", ["init-twice", "activate-twice"])
def test_twice_records_once(tmp_path: Path, run_python: Run, mode: str) -> None:
    once, twice = tmp_path / "once.db", tmp_path / "twice.db"
    a, b = run_with_init(run_python, once, "init"), run_with_init(run_python, twice, mode)
    assert a["calls"] == b["calls"]
    assert sorted(kinds(once)) == sorted(kinds(twice))
    assert kinds(twice).count("tool_call") == 3
    assert kinds(twice).count("llm_call") == b["calls"]


def test_the_raise_policy_stops_the_crew_at_its_next_model_call(
    tmp_path: Path, proc_env: dict[str, str]
) -> None:
    # CrewAI swallows what a tool hook raises: the LoopDetected of the tool call that
    # completed the loop is raised from the crew's next model call instead
    db = tmp_path / "agent.db"
    env = {**proc_env, "OCTOPODA_AGENT_ID": AGENT, "OCTOPODA_DATABASE_URL": str(db),
           "OCTOPODA_POLICY": "raise"}  # fmt: skip
    launcher = str(Path(sys.executable).with_name("octopoda-run"))
    done = subprocess.run(
        [launcher, sys.executable, str(PROCS / "loop_crew.py")],
        env=env, capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip
    report = report_of(done)
    assert report["error_type"] is not None and report["calls"] <= 4, report
    if report["error_type"] == "CrewLoopDetected":  # crewai 1.15: kickoff raises it
        assert "retry loop" in report["error"] and "fetch" in report["error"]
    else:  # older crewai raises its own error; the loop is named on stderr
        assert "retry loop" in report["stderr"] and "fetch" in report["stderr"]
    assert kinds(db).count("tool_call") == 3
    with octopoda.Octopoda(str(db)) as client:
        runtime = client.agent(AGENT)
        (run_id,) = [r.id for r in runtime.runs() if r.id.startswith(f"crew:{report['crew_id']}/")]
        assert runtime.loop_status(run_id).state == "looping"
        assert not [r for r in runtime.runs() if r.status == "paused"]  # raise never pauses
