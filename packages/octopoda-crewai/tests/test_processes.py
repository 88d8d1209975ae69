"""Crash safety with real processes: a crew killed (SIGKILL) mid-run, a new process recalls."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from octopoda_crewai import OctopodaStorage

pytestmark = pytest.mark.processes
PROCS = Path(__file__).resolve().parent / "procs"


def test_a_killed_crews_memory_is_recalled_by_a_new_process(
    tmp_path: Path,
    proc_env: dict[str, str],
    run_python: Callable[..., subprocess.CompletedProcess[str]],
) -> None:
    db, ready = str(tmp_path / "crew.db"), tmp_path / "ready"
    worker = subprocess.Popen(
        [sys.executable, str(PROCS / "crash_crew.py"), "work", db, str(ready)],
        env=proc_env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not ready.exists():
            assert worker.poll() is None, f"the crew exited early: {worker.stderr.read()}"  # type: ignore[union-attr]
            assert time.monotonic() < deadline, "the crew never reached its second task"
            time.sleep(0.1)
    finally:
        worker.kill()  # SIGKILL, mid-run: its second task's tool is still running
        worker.communicate(timeout=30)
    assert worker.returncode == -9

    with OctopodaStorage(db) as storage:
        assert [r.content for r in storage.list_records()] == [
            "The deploy key rotates every Monday."
        ]

    done = run_python(str(PROCS / "crash_crew.py"), "recall", db)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["answer"] == "Monday."
    assert report["shown"] is True  # the new crew's model was given the first crew's memory
    assert report["verified"] is True
