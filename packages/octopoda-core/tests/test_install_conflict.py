"""Octopoda 3.3.4 and octopoda-core installed in one throwaway venv: ``import octopoda``
raises ConfigError with the commands that fix it, and those commands do fix it.

Needs uv (``OCTOPODA_TEST_UV`` or on PATH) and the package index; runs in the nox session
``migrate`` (``OCTOPODA_LEGACY_PYTHON`` set), skips elsewhere.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

CORE = Path(__file__).resolve().parents[1]


def _uv() -> str:
    if not os.environ.get("OCTOPODA_LEGACY_PYTHON"):
        pytest.skip("runs in the nox session migrate (OCTOPODA_LEGACY_PYTHON)")
    uv = os.environ.get("OCTOPODA_TEST_UV") or shutil.which("uv")
    if not uv:
        pytest.fail("no uv to build the throwaway venv (OCTOPODA_TEST_UV)", pytrace=False)
    return uv


def _env() -> dict[str, str]:
    drop = ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def _run(*cmd: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        cmd, capture_output=True, text=True, env=_env(), stdin=subprocess.DEVNULL, timeout=300
    )
    if ok:
        assert proc.returncode == 0, f"{' '.join(cmd)}:\n{proc.stdout}\n{proc.stderr}"
    return proc


def test_both_installed_is_caught_and_the_given_commands_fix_it(tmp_path: Path) -> None:
    uv = _uv()
    venv = tmp_path / "both"
    python = str(venv / "bin" / "python")
    _run(uv, "venv", "--quiet", "--seed", "--python", "3.11", str(venv))  # --seed: pip
    _run(uv, "pip", "install", "--quiet", "--python", python, "octopoda==3.3.4")
    _run(uv, "pip", "install", "--quiet", "--python", python, str(CORE))  # over it
    probe = "from octopoda import AgentRuntime; print(AgentRuntime.__module__)"

    broken = _run(python, "-c", probe, ok=False)
    assert broken.returncode == 1
    assert "octopoda._errors.ConfigError: Octopoda 3.3.4 (the 'octopoda' distribution)" in (
        broken.stderr
    )
    commands = re.findall(r"^    (\S+ -m pip .+)$", broken.stderr, re.MULTILINE)
    assert commands == [
        f"{python} -m pip uninstall -y octopoda octopoda-core",
        f"{python} -m pip install octopoda-core",
    ]

    _run(*commands[0].split())  # exactly as given
    install = commands[1].split()  # octopoda-core from this checkout (not from the index)
    _run(*install[:-1], "--quiet", str(CORE))
    fixed = _run(python, "-c", probe)
    assert fixed.stdout.strip() == "octopoda._runtime.runtime"
    listed = _run(python, "-m", "pip", "list", "--format=freeze").stdout
    assert "octopoda-core==" in listed and "octopoda==3.3.4" not in listed
