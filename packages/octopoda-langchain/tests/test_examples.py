"""The examples under examples/langchain run offline and do what they say."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "langchain"

pytestmark = [pytest.mark.agents, pytest.mark.examples]


def test_crash_resume_example(tmp_path: Path, run_python: Any) -> None:
    done = run_python(str(EXAMPLES / "crash_resume.py"), str(tmp_path / "agent.db"))
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert "worker killed (exit -9) while book_table was running" in out
    assert "next step: ('tools',)" in out
    assert "It is sunny in Oslo and your table is booked for 19:30." in out
    assert "audit chain verifies: True" in out
    assert (
        "tool runs across both processes: ['book_table started', 'weather ran',"
        " 'book_table started', 'book_table finished']"
        in out
        or "['weather ran', 'book_table started', 'book_table started', 'book_table finished']"
        in out
    )


def test_loop_breaker_example(tmp_path: Path, run_python: Any) -> None:
    done = run_python(str(EXAMPLES / "loop_breaker.py"), str(tmp_path / "agent.db"))
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert out.count("ToolMessage   HTTP 503 Service Unavailable for invoice INV-42") == 3
    # the loop pauses its thread (LoopPolicy's pause_scope="run"), not the agent
    assert (
        "AIMessage     Stopped: Octopoda paused run 'billing-1' of agent 'billing-bot' (retry loop"
        in out
    )
    assert "paused threads: ['billing-1']" in out
    assert "billing-2: Hello! How can I help?" in out
    assert "paused: True; tool calls: 3; model calls: 3" in out
    assert "detected: retry loop, confidence 80%" in out
    assert "audit chain verifies: True" in out
