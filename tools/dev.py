#!/usr/bin/env python3
"""Bootstrap the dev tools and run nox. Needs only Python >= 3.10 and this checkout.

    python3 tools/dev.py quickstart      run examples/quickstart.py
    python3 tools/dev.py test [ARGS]     lint, typecheck and tests on Python 3.10-3.13
    python3 tools/dev.py nox [ARGS]      any nox command, e.g. `nox -s tests-3.12 -- -k audit`

ARGS go to nox; pytest arguments follow `--`. The first run creates .tools/ (a venv with
pinned uv and nox from PyPI); later runs reuse it.

`test` without ARGS runs nox's default sessions in two lanes at once, one nox process each:
the core's sessions (printed as they run) and the framework adapters' (printed when both
lanes are done, or live with OCTOPODA_TEST_LANES=1, which runs everything in one lane), then
the sessions tagged "alone" (timing-sensitive suites) by themselves.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import venv
from pathlib import Path

PINS = ["uv==0.13.8", "nox==2026.10.20"]
PYTHONS = ["3.10", "3.11", "3.12", "3.13"]
ROOT = Path(__file__).resolve().parent.parent
TOOLS = ROOT / ".tools"
BIN = TOOLS / ("Scripts" if os.name == "nt" else "bin")
COMMANDS = {"quickstart": ["-s", "quickstart"], "test": [], "nox": []}
# The noxfile's tags: ADAPTER_LANE (the adapters' lane) and ALONE (run after both lanes).
LANE_TAG, ALONE_TAG = "adapters", "alone"


def log(message: str) -> None:
    print(f"dev.py: {message}", file=sys.stderr, flush=True)


def ensure_tools() -> None:
    """Create .tools/ with the pinned tools unless it already has exactly these pins."""
    stamp = TOOLS / "pins.txt"
    if stamp.is_file() and stamp.read_text().split() == PINS:
        return
    log(f"creating {TOOLS.name}/ with {' '.join(PINS)}")
    try:
        venv.EnvBuilder(clear=True, with_pip=True).create(TOOLS)
    except (OSError, subprocess.CalledProcessError) as exc:
        sys.exit(f"dev.py: cannot create a venv ({exc}); Debian/Ubuntu: apt install python3-venv")
    pip = [str(BIN / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    subprocess.run([*pip, *PINS], check=True, stdout=sys.stderr)
    stamp.write_text("\n".join(PINS) + "\n")


def pyenv_version(current: str) -> str:
    """PYENV_VERSION extended with the newest installed pyenv build of each missing PYTHONS entry.

    pyenv's shims export PYENV_VERSION (e.g. "3.11.7") to the Python running this script, so
    an existing value is kept first and only extended, never replaced.
    """
    out = subprocess.run(["pyenv", "versions", "--bare"], capture_output=True, text=True).stdout
    newest: dict[str, int] = {}  # "3.12" -> highest installed patch
    for name in out.split():
        match = re.fullmatch(r"(3\.\d+)\.(\d+)", name)
        if match and match[1] in PYTHONS:
            newest[match[1]] = max(newest.get(match[1], -1), int(match[2]))
    versions = [v for v in current.split(":") if v]
    have = {".".join(v.split(".")[:2]) for v in versions}
    versions += [f"{m}.{newest[m]}" for m in PYTHONS if m in newest and m not in have]
    return ":".join(versions)


def main(argv: list[str]) -> int:
    if sys.version_info < (3, 10):
        sys.exit("dev.py: Python >= 3.10 is required")
    if not argv or argv[0] not in COMMANDS:
        print(__doc__, file=sys.stderr)
        return 2
    ensure_tools()
    env = dict(os.environ)
    env.setdefault("UV_PYTHON_DOWNLOADS", "never")
    if shutil.which("pyenv") and (versions := pyenv_version(env.get("PYENV_VERSION", ""))):
        env["PYENV_VERSION"] = versions
    env["PATH"] = os.pathsep.join([str(BIN), env.get("PATH", "")])
    cmd = [str(BIN / "nox"), "-f", str(ROOT / "noxfile.py"), *COMMANDS[argv[0]], *argv[1:]]
    log(f"PYENV_VERSION={env.get('PYENV_VERSION', '')} " + " ".join(["nox", *cmd[3:]]))
    os.chdir(ROOT)
    if argv == ["test"] and env.get("OCTOPODA_TEST_LANES", "2") != "1":
        return run_in_lanes(cmd, env)
    if os.name == "nt":
        return subprocess.call(cmd, env=env)
    os.execve(cmd[0], cmd, env)


def run_in_lanes(cmd: list[str], env: dict[str, str]) -> int:
    """nox's default sessions as two nox processes at once: the core's (output live) and the
    adapters' (output kept in a file, printed after); then the sessions that need the machine
    to themselves. The first failing exit status."""
    listed = subprocess.run([*cmd, "--list", "--json"], env=env, capture_output=True, text=True)
    if listed.returncode != 0:
        sys.stderr.write(listed.stderr)
        return listed.returncode
    listing = json.loads(listed.stdout)
    adapters = [entry["session"] for entry in listing if LANE_TAG in entry["tags"]]
    alone = [entry["session"] for entry in listing if ALONE_TAG in entry["tags"]]
    core = [e["session"] for e in listing if not {LANE_TAG, ALONE_TAG} & set(e["tags"])]
    out = TOOLS / "adapters-lane.log"
    log(f"two lanes: {len(core)} core sessions here, {len(adapters)} adapter sessions -> {out}")
    with out.open("w") as sink:
        lane = subprocess.Popen(
            [*cmd, "-s", *adapters], env=env, stdin=subprocess.DEVNULL, stdout=sink, stderr=sink
        )
        try:
            status = subprocess.call([*cmd, "-s", *core], env=env) if core else 0
            lane_status = lane.wait()
        finally:
            if lane.poll() is None:
                lane.kill()
    sys.stdout.flush()
    print(f"dev.py: the adapters' lane ({len(adapters)} sessions):", flush=True)
    with out.open() as lines:
        shutil.copyfileobj(lines, sys.stdout)
    sys.stdout.flush()
    log(f"core lane exit status {status}, adapters' lane exit status {lane_status}")
    alone_status = subprocess.call([*cmd, "-s", *alone], env=env) if alone else 0
    return status or lane_status or alone_status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
