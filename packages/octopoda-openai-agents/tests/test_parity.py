"""The same scripted runs leave the same items in SQLiteSession and OctopodaSession: in one
process, across process restarts, and after a SIGKILL during turn 2."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import scenario
from agents import SQLiteSession
from octopoda_openai_agents import OctopodaSession
from scenario import PROCS, PYTHON


async def _play(session: Any) -> list[Any]:
    return [await scenario.PHASES[phase](session) for phase in ("one", "two", "three")]


def _same(a: Any, b: Any) -> None:
    """Equal, and equal as JSON text too (key order, int vs float, unicode)."""
    assert a == b
    assert json.dumps(a) == json.dumps(b)


def test_same_items_as_sqlite_session_in_one_process(store: Any) -> None:
    sqlite = SQLiteSession(scenario.SESSION_ID)
    ours = OctopodaSession(scenario.SESSION_ID, store)
    try:
        expected = asyncio.run(_play(sqlite))
        got = asyncio.run(_play(ours))
    finally:
        sqlite.close()
    _same(got, expected)
    # the observations cover what they should: items with tool calls, pops, a cleared session
    one, two, three = got
    assert [i.get("type", "user") for i in one[2]][:4] == [
        "user",
        "function_call",
        "function_call_output",
        "message",
    ]
    assert one[3] == one[2][-3:] and one[4] == [] and one[5] == one[2]
    assert two[0] == one[2][-1] and two[1] == one[2][-2] and two[2] == one[2][:-2]
    assert three[0] == [] and three[1] is None and three[5] == three[3][:-1]
    assert ours.runtime.audit.verify().ok


def _phases(directory: Path, phases: list[str], env: dict[str, str]) -> dict[str, Any]:
    proc = subprocess.run(
        [PYTHON, str(PROCS / "scenario.py"), str(directory), *phases],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


@pytest.mark.processes
def test_same_items_across_process_restarts(tmp_path: Path, proc_env: dict[str, str]) -> None:
    # process 1 runs two conversations; process 2 pops, runs, adds, clears and runs again
    for phases in (["one"], ["two", "three"]):
        seen = _phases(tmp_path, phases, proc_env)
        _same(seen["octopoda"], seen["sqlite"])
        assert seen["octopoda"][0]  # observed something

    async def reopened() -> tuple[list[Any], list[Any]]:
        sqlite = SQLiteSession(scenario.SESSION_ID, tmp_path / "sqlite.db")
        ours = OctopodaSession(scenario.SESSION_ID, str(tmp_path / "octopoda.db"))
        try:
            return await sqlite.get_items(), await ours.get_items()
        finally:
            sqlite.close()
            ours.close()

    expected, got = asyncio.run(reopened())
    _same(got, expected)
    assert [item["role"] for item in got] == ["user"]  # "Fresh start", its answer popped


@pytest.mark.processes
@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_a_process_killed_during_turn_two_keeps_every_completed_turn(
    tmp_path: Path, proc_env: dict[str, str]
) -> None:
    procs = {}
    for kind in ("sqlite", "octopoda"):
        flag = tmp_path / f"{kind}.flag"
        procs[kind] = (
            subprocess.Popen(
                [
                    PYTHON,
                    str(PROCS / "crash_turn.py"),
                    kind,
                    str(tmp_path / f"{kind}.db"),
                    str(flag),
                ],
                env=proc_env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            ),
            flag,
        )
    deadline = time.monotonic() + 120
    for kind, (proc, flag) in procs.items():
        while not flag.exists():
            assert proc.poll() is None, f"{kind} run ended early: {proc.stderr.read().decode()}"  # type: ignore[union-attr]
            assert time.monotonic() < deadline, f"{kind} never reached turn 2"
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait(timeout=30) == -signal.SIGKILL
        proc.stderr.close()  # type: ignore[union-attr]

    async def items() -> tuple[list[Any], list[Any]]:
        sqlite = SQLiteSession("crash", tmp_path / "sqlite.db")
        ours = OctopodaSession("crash", str(tmp_path / "octopoda.db"))
        try:
            return await sqlite.get_items(), await ours.get_items()
        finally:
            sqlite.close()
            ours.close()

    expected, got = asyncio.run(items())
    _same(got, expected)
    # turn 1 is complete: the input, the call of step(1) and its output
    assert got[0] == {"role": "user", "content": "Do both steps"} or got[0]["content"] == (
        "Do both steps"
    )
    assert [(i.get("type"), i.get("call_id")) for i in got[1:3]] == [
        ("function_call", "c1"),
        ("function_call_output", "c1"),
    ]
    assert not any(
        i.get("type") == "function_call_output" and i.get("call_id") == "c2" for i in got
    )
    ours = OctopodaSession("crash", str(tmp_path / "octopoda.db"))
    assert ours.runtime.audit.verify().ok
