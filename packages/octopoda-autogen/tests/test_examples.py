"""The examples in examples/autogen/ run offline, each in its own process, twice on one
fresh default store (the second run continues the first)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import EXAMPLES

pytestmark = [pytest.mark.examples, pytest.mark.replay]


def run_example(name: str, home: Path, env: dict[str, str]) -> str:
    env = {**env, "OCTOPODA_HOME": str(home)}
    env.pop("OCTOPODA_DATABASE_URL", None)
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / name)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_memory_and_resume(tmp_path: Path, python_env: dict[str, str]) -> None:
    first = run_example("memory_and_resume.py", tmp_path, python_env)
    assert "messages from earlier runs: 0" in first
    assert "answer: The sum is 5, in words: five." in first
    assert "memories injected: ['Sums are answered in words']" in first
    assert (
        "after a restart: 5 messages: UserMessage, SystemMessage, AssistantMessage,"
        " FunctionExecutionResultMessage, AssistantMessage"
    ) in first
    assert "audit chain: verified" in first
    second = run_example("memory_and_resume.py", tmp_path, python_env)
    assert "messages from earlier runs: 5" in second and "after a restart: 10 messages" in second
    assert (tmp_path / "octopoda.db").is_file()


def test_loop_breaker(tmp_path: Path, python_env: dict[str, str]) -> None:
    for _ in range(2):
        out = run_example("loop_breaker.py", tmp_path, python_env)
        assert "stopped: Stopped: Octopoda paused run 'team-run-" in out
        assert "of agent 'autogen:status_checker' (retry loop (80%)" in out
        for i in range(3):
            assert f'fetch_status({{"service":"billing"}}) call_id=call-{i}' in out
        assert "tool calls before the stop: 3" in out
        assert "paused runs: [True]" in out and "after resume: paused=False" in out
        assert "audit chain: verified" in out
