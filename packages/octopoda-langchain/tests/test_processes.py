"""Real processes: SIGKILL mid-run and resume in a new process; the store across runs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from octopoda_langchain import OctopodaSaver

PROCS = Path(__file__).resolve().parent / "procs"

pytestmark = pytest.mark.processes  # (not in the newest line on 3.10 and 3.13)


def start(args: list[str], env: dict[str, str], output: Path) -> subprocess.Popen[bytes]:
    """A worker process; its output goes to a file (read on failure)."""
    with output.open("wb") as sink:
        return subprocess.Popen(
            [sys.executable, *args], env=env, stdout=sink, stderr=subprocess.STDOUT
        )


def wait_for(
    condition: Any, what: str, proc: subprocess.Popen[bytes], output: Path, timeout: float = 60.0
) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if proc.poll() is not None:
            tail = output.read_text(errors="replace")[-3000:]
            pytest.fail(f"the worker exited ({proc.returncode}) before {what}:\n{tail}")
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.05)


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def kill(proc: subprocess.Popen[bytes]) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL


@pytest.mark.agents
def test_create_agent_killed_mid_tool_resumes_in_a_new_process(
    tmp_path: Path, python_env: dict[str, str], run_python: Any
) -> None:
    db, log = str(tmp_path / "agent.db"), tmp_path / "calls.log"
    script = str(PROCS / "crash_agent.py")
    output = tmp_path / "worker.out"
    worker = start([script, db, "t1", str(log), "first"], python_env, output)
    wait_for(lambda: "slow-start first" in lines(log), "the slow tool started", worker, output)

    def fast_result_saved() -> bool:  # the finished tool's result is a pending write
        with OctopodaSaver.from_conn_string(db, agent_id="crash-agent") as saver:
            got = saver.get_tuple({"configurable": {"thread_id": "t1"}})
            return bool(got and got.pending_writes)

    wait_for(fast_result_saved, "the fast tool's write", worker, output)
    kill(worker)

    resumed = run_python(script, db, "t1", str(log), "resume")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    out = json.loads(resumed.stdout.strip().splitlines()[-1])
    assert out["next_before"] == ["tools"]
    assert out["final"] == "Sunny in Oslo, and your table is booked."
    assert out["tool_results"] == ["sunny in Oslo", "table booked in Oslo"]
    assert out["kinds"] == ["HumanMessage", "AIMessage", "ToolMessage", "ToolMessage", "AIMessage"]
    assert out["verify_ok"]
    # Only the unfinished step ran again: the fast tool and the first model call did not.
    calls = lines(log)
    assert calls[0] == "model first"
    assert sorted(calls[1:3]) == ["fast first", "slow-start first"]  # in parallel
    assert calls[3:] == ["slow-start resume", "slow-done resume", "model resume"]


@pytest.mark.graph
def test_state_graph_killed_mid_node_resumes_in_a_new_process(
    tmp_path: Path, python_env: dict[str, str], run_python: Any
) -> None:
    db, log = str(tmp_path / "graph.db"), tmp_path / "nodes.log"
    script = str(PROCS / "crash_graph.py")
    output = tmp_path / "worker.out"
    worker = start([script, db, str(log), "first"], python_env, output)
    wait_for(lambda: "work-start first" in lines(log), "the work node started", worker, output)
    kill(worker)
    resumed = run_python(script, db, str(log), "resume")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    out = json.loads(resumed.stdout.strip().splitlines()[-1])
    assert out == {"next_before": ["work"], "result": {"steps": ["plan", "work"]}, "ok": True}
    assert lines(log) == ["plan first", "work-start first", "work-start resume", "work-done resume"]


@pytest.mark.graph
def test_a_memory_saved_by_a_tool_is_found_by_a_later_process(
    tmp_path: Path, run_python: Any
) -> None:
    db = str(tmp_path / "assistant.db")
    script = str(PROCS / "store_agent.py")
    wrote = run_python(script, db, "write")
    assert wrote.returncode == 0, wrote.stderr[-3000:]
    assert json.loads(wrote.stdout.strip().splitlines()[-1]) == {
        "tools": ["saved"],
        "final": "Noted.",
    }
    read = run_python(script, db, "read")
    assert read.returncode == 0, read.stderr[-3000:]
    out = json.loads(read.stdout.strip().splitlines()[-1])
    assert json.loads(out["tools"][0]) == ["Ana drinks green tea, no sugar"]
    assert out["final"] == "Green tea."
