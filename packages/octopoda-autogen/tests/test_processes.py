"""Crash resume with real processes: an AssistantAgent with a tool, OctopodaMemory and
OctopodaChatCompletionContext is killed with SIGKILL mid-run (inside a tool call); a new
process sees the conversation exactly as it was written and finishes it. A team whose state
is saved after every turn is killed the same way; a new process loads the newest state and
the team continues from the turn it was in."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import PROCS

pytestmark = [
    pytest.mark.replay,
    pytest.mark.skipif(os.name == "nt", reason="SIGKILL is POSIX"),
]


def test_sigkill_mid_run_then_a_new_process_resumes_and_finishes(
    tmp_path: Path, python_env: dict[str, str]
) -> None:
    db, ready = str(tmp_path / "agent.db"), tmp_path / "ready"
    script = str(PROCS / "crash_agent.py")
    child = subprocess.Popen(
        [sys.executable, script, db, "first", str(ready)],
        env=python_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not ready.exists():
            assert child.poll() is None, child.communicate()
            assert time.monotonic() < deadline, "the child never reached the second tool call"
            time.sleep(0.05)
        child.send_signal(signal.SIGKILL)
        out, _ = child.communicate(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    assert child.returncode == -signal.SIGKILL
    assert "turn 1: The sum is 5." in out

    done = subprocess.run(
        [sys.executable, script, db, "resume"],
        env=python_env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    found = [json.loads(line) for line in lines if line.startswith("{")]
    # everything process 1 added, in order, up to the tool call it died in
    assert [m["type"] for m in found] == [
        "UserMessage",
        "SystemMessage",  # the memory OctopodaMemory.update_context injected
        "AssistantMessage",
        "FunctionExecutionResultMessage",
        "AssistantMessage",
        "UserMessage",
        "SystemMessage",
        "AssistantMessage",
    ]
    assert found[0]["content"] == "What is the sum of 2 + 3?"
    assert "Sums are answered in words" in found[1]["content"]
    assert found[3]["content"][0]["content"] == "5"
    assert found[4]["content"] == "The sum is 5."
    assert found[5]["content"] == "Now add the sums 4 and 5"
    assert found[7]["content"][0]["arguments"] == '{"a": 4, "b": 5}'
    assert "final: The sum is 9. TERMINATE" in lines
    events = next(line for line in lines if line.startswith("events:"))
    assert "MemoryQueryEvent" in events and "ToolCallExecutionEvent" in events
    assert "messages: 13" in lines  # 8 found + user, memory, call, result, answer


def test_team_state_saved_each_turn_restores_after_sigkill_and_the_team_continues(
    tmp_path: Path, python_env: dict[str, str]
) -> None:
    db, ready = str(tmp_path / "team.db"), tmp_path / "ready"
    script = str(PROCS / "crash_team.py")
    child = subprocess.Popen(
        [sys.executable, script, db, "first", str(ready)],
        env=python_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not ready.exists():  # turn 4 is inside the critic's tool call
            assert child.poll() is None, child.communicate()
            assert time.monotonic() < deadline, "the child never reached turn 4"
            time.sleep(0.05)
        child.send_signal(signal.SIGKILL)
        out, _ = child.communicate(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    assert child.returncode == -signal.SIGKILL
    assert out.splitlines() == [f"turn {n} saved as version {n}" for n in (1, 2, 3)]

    done = subprocess.run(
        [sys.executable, script, db, "resume"],
        env=python_env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["loaded"] and report["versions"] == [3, 2, 1]
    # the restored team is where the killed one was: three turns done, the critic next
    assert report["before"] == ["user", "writer", "critic", "writer"]
    assert report["speakers"] == ["critic", "writer"]
    assert report["after"] == ["user", "writer", "critic", "writer", "critic", "writer"]
    assert report["last"].endswith("the cup warms. DONE")
    assert report["verified"]

    from octopoda_autogen import OctopodaTeamState

    keeper = OctopodaTeamState("review-team", db)
    try:
        assert [v.version for v in keeper.history()] == [5, 4, 3, 2, 1]
        assert keeper.runtime.audit.verify().ok
    finally:
        keeper.close()
