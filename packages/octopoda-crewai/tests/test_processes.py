"""Crash safety with real processes: a crew killed (SIGKILL) mid-run, a new process recalls."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

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


WRITER = """
import sys
from crewai.memory.types import MemoryRecord
from octopoda_crewai import OctopodaStorage

db, first = sys.argv[1], sys.argv[2]
with OctopodaStorage(db) as storage:
    records = [
        MemoryRecord(content=f"from the writer {i}", scope="/w", embedding=[1.0, 0.0, float(i)])
        for i in range(3)
    ]
    storage.save(records)
    storage.delete(record_ids=[first])
"""


def test_a_storage_catches_up_on_another_processs_writes(
    tmp_path: Path, run_python: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    db = str(tmp_path / "crew.db")
    with OctopodaStorage(db) as reader:
        reader.save([rec := _record("kept"), gone := _record("deleted by the writer")])
        assert reader.count() == 2
        reloads: list[int] = []
        reload = reader._reload
        reader._reload = lambda: (reloads.append(1), reload())[1]  # type: ignore[method-assign]
        script = tmp_path / "writer.py"
        script.write_text(WRITER)
        done = run_python(str(script), db, gone.id)
        assert done.returncode == 0, done.stderr
        assert sorted(r.content for r in reader.list_records()) == [
            "from the writer 0",
            "from the writer 1",
            "from the writer 2",
            "kept",
        ]
        assert reader.get_record(rec.id) is not None and reader.get_record(gone.id) is None
        assert reader.search([1.0, 0.0, 2.0], scope_prefix="/w", limit=1)[0][0].content == (
            "from the writer 2"
        )
        assert reloads == []  # read from the writer's events, not the whole memory again


def _record(content: str) -> Any:
    from crewai.memory.types import MemoryRecord

    return MemoryRecord(content=content, scope="/r", embedding=[0.0, 1.0, 0.0])
