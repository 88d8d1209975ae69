"""``octopoda.init``'s AutoGen integration on real agents and teams, each scenario in its
own process (the loggers are process-wide): an ordinary AutoGen script, with no Octopoda in
it (procs/loop_team.py), whose scripted agent keeps calling a failing tool, run after
``octopoda.init()`` (procs/with_init.py) and under ``octopoda-run``."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from octopoda_autogen._integration import integration

import octopoda
from octopoda.integrations import ENTRY_POINT_GROUP, AgentRuntimes, InitContext, Integration

from .conftest import PROCS

pytestmark = pytest.mark.replay

AGENT = "nightly-research"


def run_with_init(env: dict[str, str], db: Path, mode: str, how: str) -> dict[str, Any]:
    script = [str(PROCS / "with_init.py"), str(db), AGENT, mode, str(PROCS / "loop_team.py")]
    done = subprocess.run(
        [sys.executable, *script, how], env=env, capture_output=True, text=True, timeout=120
    )
    return report_of(done)


def report_of(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert done.returncode == 0, done.stderr
    (line,) = [x for x in done.stdout.splitlines() if x.startswith("REPORT ")]
    report: dict[str, Any] = json.loads(line.removeprefix("REPORT "))
    return report


def events(db: Path) -> list[Any]:
    with octopoda.Octopoda(str(db)) as client:
        return list(client.agent(AGENT).store.events(AGENT))


def test_the_entry_point_names_the_integration_without_importing_autogen() -> None:
    from importlib.metadata import entry_points

    (point,) = [p for p in entry_points(group=ENTRY_POINT_GROUP) if p.name == "autogen"]
    assert point.value == "octopoda_autogen._integration:integration"
    assert point.load() is integration
    assert isinstance(integration, Integration)
    assert integration.modules == ("autogen_agentchat",)
    assert integration.distribution == "autogen-agentchat"
    code = "import sys, octopoda_autogen._integration; print('autogen_agentchat' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


@pytest.mark.parametrize("how", ["team", "agent"])
def test_a_looping_agent_is_recorded_and_stopped(
    tmp_path: Path, python_env: dict[str, str], how: str
) -> None:
    db = tmp_path / "agent.db"
    check_stopped_and_recorded(db, run_with_init(python_env, db, "init", how), how, priced=True)


@pytest.mark.parametrize("how", ["team", "agent"])
def test_the_unmodified_script_under_octopoda_run(
    tmp_path: Path, python_env: dict[str, str], how: str
) -> None:
    db = tmp_path / "agent.db"
    env = {**python_env, "OCTOPODA_AGENT_ID": AGENT, "OCTOPODA_DATABASE_URL": str(db),
           "OCTOPODA_POLICY": "pause"}  # fmt: skip
    launcher = str(Path(sys.executable).with_name("octopoda-run"))
    done = subprocess.run(
        [launcher, sys.executable, str(PROCS / "loop_team.py"), how],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    check_stopped_and_recorded(db, report_of(done), how, priced=False)


def check_stopped_and_recorded(db: Path, report: dict[str, Any], how: str, *, priced: bool) -> None:
    assert report["fetches"] == 3, report  # the third failure paused the run
    assert report["model_calls"] == 3
    if report["error"] is not None:  # a standalone agent, and a 0.7 team: the error says why
        assert "retry loop" in report["error"]
        assert 'fetch({"url": "https://x.test"})' in report["error"]
    else:  # autogen-agentchat 0.4's team ends its run without a stop reason
        assert how == "team" and report["stop_reason"] is None

    with octopoda.Octopoda(str(db)) as client:
        runtime = client.agent(AGENT)
        chain = list(runtime.store.events(AGENT))
        tools = [e for e in chain if e.kind == "tool_call"]
        llms = [e for e in chain if e.kind == "llm_call"]
        assert len(tools) == 3 and {e.payload["name"] for e in tools} == {"fetch"}
        assert [e.payload.get("call_id") for e in tools] == ["c0", "c1", "c2"]
        assert all("HTTP 503" in str(e.payload.get("error")) for e in tools)
        assert len(llms) == 3
        assert llms[0].payload["tokens_in"] == 10 and llms[0].payload["tokens_out"] == 5
        cost = (10 * 1.0 + 5 * 2.0) / 1e6 if priced else 0.0
        assert llms[0].payload.get("cost_usd", 0.0) == pytest.approx(cost)
        (run_id,) = {e.payload["run_id"] for e in tools}
        assert run_id.startswith("team:" if how == "team" else "autogen-run-")
        runs = {r.id: r for r in runtime.runs()}
        assert runs[run_id].status == "paused" and "fetch" in (runs[run_id].pause_reason or "")
        status = runtime.loop_status(run_id)
        assert status.state == "looping"
        assert "fetch" in {ref.name for signal in status.signals for ref in signal.events}
        assert runtime.audit.verify().ok


def test_deactivate_removes_everything(tmp_path: Path, python_env: dict[str, str]) -> None:
    db = tmp_path / "agent.db"
    report = run_with_init(python_env, db, "shutdown", "team")
    assert report["fetches"] == 8 and report["error"] is None  # nothing stopped it
    assert events(db) == []


@pytest.mark.parametrize("mode", ["init-twice", "activate-twice"])
def test_twice_records_once(tmp_path: Path, python_env: dict[str, str], mode: str) -> None:
    db = tmp_path / "agent.db"
    report = run_with_init(python_env, db, mode, "team")
    assert report["fetches"] == 3
    kinds = [e.kind for e in events(db)]
    assert kinds.count("tool_call") == 3 and kinds.count("llm_call") == 3


def test_the_loggers_are_restored(tmp_path: Path) -> None:
    names = ("autogen_agentchat.events", "autogen_core.events")
    loggers = [logging.getLogger(name) for name in names]
    before = [(lg.level, list(lg.handlers), list(lg.filters)) for lg in loggers]
    lowered = loggers[0].getEffectiveLevel() > logging.DEBUG
    runtimes = AgentRuntimes(str(tmp_path / "a.db"), agent_id=AGENT)
    undo = integration.activate(InitContext(agent_id=AGENT, runtimes=runtimes))
    try:
        assert all(lg.isEnabledFor(logging.DEBUG) for lg in loggers)
        assert all(len(lg.handlers) == len(b[1]) + 1 for lg, b in zip(loggers, before, strict=True))
        # a record below the level the logger had reaches no other handler
        seen: list[logging.LogRecord] = []
        other = logging.Handler()
        other.emit = seen.append  # type: ignore[method-assign]
        loggers[0].addHandler(other)
        try:
            loggers[0].debug("not for the program's handlers")
        finally:
            loggers[0].removeHandler(other)
        assert seen == [] if lowered else len(seen) == 1
    finally:
        undo()
        undo()
        runtimes.runtime(AGENT).close()
    assert [(lg.level, list(lg.handlers), list(lg.filters)) for lg in loggers] == before


def test_a_handoff_is_recorded(tmp_path: Path, python_env: dict[str, str]) -> None:
    db = tmp_path / "agent.db"
    script = [str(PROCS / "with_init.py"), str(db), AGENT, "init", str(PROCS / "handoff_team.py")]
    done = subprocess.run(
        [sys.executable, *script], env=python_env, capture_output=True, text=True, timeout=120
    )
    report = report_of(done)
    assert "bob" in report["speakers"]
    (handoff,) = [e for e in events(db) if e.kind == "handoff"]
    assert handoff.payload.get("call_id") == "h1"
    assert str(handoff.payload.get("run_id", "")).startswith("team:")
    assert "bob" in json.dumps(handoff.payload)
    assert [e.kind for e in events(db)].count("tool_call") == 0


@pytest.mark.parametrize("how", ["team", "agent"])
def test_the_next_program_with_the_agent_id_starts_a_run_of_its_own(
    tmp_path: Path, python_env: dict[str, str], how: str
) -> None:
    db = tmp_path / "agent.db"
    first = run_with_init(python_env, db, "init", how)
    second = run_with_init(python_env, db, "init", how)  # not stopped by the first one's pause
    assert first["fetches"] == second["fetches"] == 3
    with octopoda.Octopoda(str(db)) as client:
        runs = client.agent(AGENT).runs(status="paused")
        assert len(runs) == 2


def test_a_client_that_logs_its_calls_is_counted_once(
    tmp_path: Path, python_env: dict[str, str]
) -> None:
    db = tmp_path / "agent.db"
    report = run_with_init(python_env, db, "init", "logged")
    assert report["fetches"] == 3
    llms = [e for e in events(db) if e.kind == "llm_call"]
    assert len(llms) == report["model_calls"] == 3  # the LLMCallEvent, not also the request
    assert {
        (e.payload["model"], e.payload["tokens_in"], e.payload["tokens_out"]) for e in llms
    } == {("gpt-test", 200, 30)}
    assert all(str(e.payload["run_id"]).startswith("team:") for e in llms)


def test_the_raise_policy_raises_loop_detected(tmp_path: Path, python_env: dict[str, str]) -> None:
    db = tmp_path / "agent.db"
    env = {**python_env, "OCTOPODA_AGENT_ID": AGENT, "OCTOPODA_DATABASE_URL": str(db),
           "OCTOPODA_POLICY": "raise"}  # fmt: skip
    launcher = str(Path(sys.executable).with_name("octopoda-run"))
    done = subprocess.run(
        [launcher, sys.executable, str(PROCS / "loop_team.py"), "agent"],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    report = report_of(done)
    assert report["error_type"] == "LoopDetected" and report["fetches"] == 3, report
    assert "fetch" in report["error"]
