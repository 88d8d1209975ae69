"""Every script in examples/ runs, offline, on a fresh default store, and runs again.

Each ``examples/*.py`` (including ones added later) is run twice in a subprocess with
``OCTOPODA_HOME`` (and ``HOME``) set to a temp dir and network sockets refused: both runs
must exit 0 without a traceback and print the example's key line. Examples listed in
``KEY_LINES`` name that line; any other example must at least print something.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))
TIMEOUT = 120.0

# The line that shows an example did its job (a substring of its stdout, on every run).
KEY_LINES = {
    "quickstart.py": "audit chain: verified",
    "loop_breaker.py": "breaker stopped the agent",
}


# Runs the example as __main__ with internet sockets refused (examples must work offline).
OFFLINE = """
import runpy, socket, sys

def refuse(*args, **kwargs):
    raise OSError("examples run offline: network access refused")

_connect = socket.socket.connect

def connect(self, address):
    if self.family in (socket.AF_INET, socket.AF_INET6):
        refuse()
    return _connect(self, address)

socket.socket.connect = connect
socket.getaddrinfo = refuse
socket.create_connection = refuse
script = sys.argv[1]
sys.argv = sys.argv[1:]
runpy.run_path(script, run_name="__main__")
"""


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OCTOPODA_")}
    env["OCTOPODA_HOME"] = str(tmp_path / "octopoda-home")
    env["HOME"] = str(tmp_path / "home")
    env["USERPROFILE"] = env["HOME"]
    return env


def _run(script: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            [sys.executable, "-c", OFFLINE, str(script)],
            env=_env(tmp_path),
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{script.name} ran over {TIMEOUT:g}s\n{exc.stdout}\n{exc.stderr}")


def test_there_are_examples() -> None:
    names = {p.name for p in EXAMPLES}
    assert {"quickstart.py", "loop_breaker.py"} <= names, names


@pytest.mark.parametrize("script", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_runs_twice_on_a_fresh_default_store(script: Path, tmp_path: Path) -> None:
    (tmp_path / "home").mkdir()
    for run in (1, 2):
        done = _run(script, tmp_path)
        detail = f"{script.name} run {run}: exit {done.returncode}\n--- stdout\n{done.stdout}"
        detail += f"\n--- stderr\n{done.stderr}"
        assert done.returncode == 0, detail
        assert "Traceback" not in done.stderr, detail
        assert done.stdout.strip(), detail
        key_line = KEY_LINES.get(script.name)
        if key_line is not None:
            assert key_line in done.stdout, detail
    # the default store is the one under OCTOPODA_HOME, never the user's home
    assert not any((tmp_path / "home").iterdir())


def test_loop_breaker_prints_the_loop_report(tmp_path: Path) -> None:
    (tmp_path / "home").mkdir()
    done = _run(ROOT / "examples" / "loop_breaker.py", tmp_path)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.count("get_weather failed") == 3
    assert "step 4: breaker stopped the agent" in out
    assert "retry loop, confidence 80%" in out
    assert "events: #1, #2, #3" in out
    assert "why: get_weather was called 3 times" in out
    assert "fix: " in out
    assert "paused=True" in out and "after resume(): paused=False, status ok" in out
    assert "audit chain: verified" in out
    assert "the breaker never tripped" not in out
    assert "retry loop" in done.stderr  # the warning goes to the log, on stderr
    assert (tmp_path / "octopoda-home" / "octopoda.db").is_file()
