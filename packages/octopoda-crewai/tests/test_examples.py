"""The examples in examples/crewai/ run offline, on a fresh default store, twice."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "crewai"


@pytest.fixture
def octopoda_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("OCTOPODA_HOME", str(tmp_path))
    monkeypatch.delenv("OCTOPODA_DATABASE_URL", raising=False)
    return tmp_path


def run_example(name: str, capsys: pytest.CaptureFixture[str]) -> str:
    runpy.run_path(str(EXAMPLES / name), run_name="__main__")
    return capsys.readouterr().out


def test_memory_across_restarts(octopoda_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first = run_example("memory_across_restarts.py", capsys)
    assert "records before this run: 0" in first
    assert "the second crew was shown the first one's memory: True" in first
    assert "records now: 2 in scopes ['/ops']" in first
    assert "audit chain: verified" in first
    second = run_example("memory_across_restarts.py", capsys)  # the store goes on
    assert "records before this run: 2" in second and "records now: 4" in second
    assert (octopoda_home / "octopoda.db").is_file()


def test_loop_breaker(octopoda_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = run_example("loop_breaker.py", capsys)
    assert "the breaker stopped the crew after 3 identical failing calls" in out
    assert "why: retry loop (80%)" in out
    assert out.count('call: fetch({"url":"https://status.example"})') == 3
    assert "another crew in this process: The sum is 5." in out
    assert "looping run: paused, other run: active" in out
    assert "audit chain: verified" in out
