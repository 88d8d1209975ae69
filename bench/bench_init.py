"""Benchmark 12: ``octopoda.init()`` in a program with no framework installed.

What a program pays for ``octopoda.init()`` (or ``octopoda-run``) where there is nothing to
instrument: fresh interpreters (this venv's, whose installed distributions it scans; with no
adapter installed, as in the core's venv), each timing ``octopoda.init()`` in-process after
``import octopoda`` (the import is benchmark 5), lazy imports included. The baseline is the
usual way to find entry points, ``importlib.metadata.entry_points(group=...)`` (its import
and the scan), timed the same way in the same runs. Target: under 5 ms.
"""

from __future__ import annotations

import subprocess
import sys

from _common import Check, Config, line, median, section
from bench_import import TIMEOUT, _env

TARGET_MS = 5.0

OURS = (
    "import time, octopoda\n"
    "t = time.perf_counter(); r = octopoda.init(); d = time.perf_counter() - t\n"
    "assert r.integrations == (), r\n"
    "print(d)\n"
)
BASELINE = (
    "import time, octopoda\n"
    "t = time.perf_counter()\n"
    "import importlib.metadata\n"
    "eps = importlib.metadata.entry_points(group='octopoda.integrations')\n"
    "d = time.perf_counter() - t\n"
    "print(d)\n"
)


def _seconds(code: str, env: dict[str, str]) -> float:
    out = subprocess.run(
        [sys.executable, "-c", code],
        check=True,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=TIMEOUT,
        env=env,
    )
    return float(out.stdout.strip().splitlines()[-1])


def bench_init(cfg: Config) -> list[Check]:
    section("12. octopoda.init() with nothing to instrument")
    runs = cfg.scale(21, 5)
    env = _env(cfg.tmp / "pycache-init")
    env.pop("OCTOPODA_DISABLED_INTEGRATIONS", None)
    for _ in range(2):  # warm-up: bytecode cache, OS file cache
        _seconds(OURS, env)
        _seconds(BASELINE, env)
    ours: list[float] = []
    base: list[float] = []
    for r in range(runs):  # alternated, so that drift in the machine's load hits both
        pair = (OURS, BASELINE) if r % 2 == 0 else (BASELINE, OURS)
        for code in pair:
            (ours if code is OURS else base).append(_seconds(code, env) * 1e3)
    mine, theirs = median(ours), median(base)
    line(
        f"{runs} fresh runs each: octopoda.init() {mine:.2f} ms; importlib.metadata entry"
        f" points alone {theirs:.2f} ms -> {theirs / mine:.1f}x faster than the baseline"
    )
    return [
        Check.at_most(
            "init",
            f"octopoda.init() with no framework installed (median of {runs} fresh runs)",
            mine,
            TARGET_MS,
            " ms",
            baseline_importlib_metadata_ms=theirs,
        ),
        Check.info(
            "init",
            "importlib.metadata.entry_points / octopoda.init() (same runs)",
            theirs / mine,
            "x",
        ),
    ]
