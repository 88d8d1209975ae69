"""The examples in examples/openai_agents/ run offline, on a fresh default store, twice."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "openai_agents"


@pytest.fixture
def octopoda_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("OCTOPODA_HOME", str(tmp_path))
    monkeypatch.delenv("OCTOPODA_DATABASE_URL", raising=False)
    return tmp_path


def run_example(name: str, capsys: pytest.CaptureFixture[str]) -> str:
    runpy.run_path(str(EXAMPLES / name), run_name="__main__")
    return capsys.readouterr().out


def test_session_example(octopoda_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first = run_example("session_example.py", capsys)
    assert "items from earlier runs: 0" in first
    assert "answer: The sum is 5." in first
    assert "after a restart: 4 items" in first
    assert "popped the last item: message" in first and "items now: 3" in first
    assert "history of item/000000000003: ['tombstone', 'value']" in first
    assert "sessions in this store: ['example-user']" in first
    assert "audit chain: verified" in first
    second = run_example("session_example.py", capsys)  # the session goes on
    assert "items from earlier runs: 3" in second and "after a restart: 7 items" in second
    assert "history of item/000000000007: ['tombstone', 'value']" in second
    assert (octopoda_home / "octopoda.db").is_file()


def test_loop_breaker_example(octopoda_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for _ in range(2):
        out = run_example("loop_breaker_example.py", capsys)
        assert "the breaker stopped the run after 3 tool calls" in out
        assert "retry loop (80%)" in out
        for i in range(3):
            assert f"call call-{i}: get_weather" in out
        assert "paused=True" in out and "after resume(): paused=False" in out
        assert "loops: [('retry', (2, 4, 6))]" in out
        assert "the conversation kept 7 items" in out
        assert "audit chain: verified" in out
