"""Benchmark 5: ``import octopoda`` time (and ``from octopoda import AgentRuntime``, and that import
with a first runtime and its first remember, INFO).

Fresh interpreters (this venv's ``sys.executable``), alternating ``-c "import octopoda"`` and
``-c "pass"``; the result is median(import) - median(pass): the cost of the import alone.
Bytecode is cached (in a temp ``PYTHONPYCACHEPREFIX``) as it is for an installed wheel, even
where the environment sets ``PYTHONDONTWRITEBYTECODE`` (without a cache every module would be
compiled on every start, roughly doubling the time).
One extra ``-X importtime`` run lists the slowest modules it pulls in, for diagnosis.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _common import Check, Config, line, median, section

TARGET_MS = 50.0
RUNTIME_TARGET_MS = 25.0  # issue 14: `from octopoda import AgentRuntime`
TIMEOUT = 60.0


def _env(pycache: Path) -> dict[str, str]:
    """A clean environment that caches bytecode in ``pycache`` (as an installed wheel has it,
    even where the calling environment sets ``PYTHONDONTWRITEBYTECODE``)."""
    drop = ("PYTHONSTARTUP", "PYTHONPROFILEIMPORTTIME", "PYTHONVERBOSE", "PYTHONDONTWRITEBYTECODE")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env["PYTHONPYCACHEPREFIX"] = str(pycache)
    return env


def _time(code: str, env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", code],
        check=True,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        timeout=TIMEOUT,
        env=env,
    )
    return time.perf_counter() - t0


def _importtime(code: str, env: dict[str, str]) -> dict[str, tuple[int, int]]:
    """module -> (self us, cumulative us) from ``-X importtime``."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code],
        check=True,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=env,
    )
    out: dict[str, tuple[int, int]] = {}
    for text in proc.stderr.splitlines():
        if not text.startswith("import time:") or "self [us]" in text:
            continue
        self_us, cum_us, name = text[len("import time:") :].split("|", 2)
        out[name.strip()] = (int(self_us), int(cum_us))
    return out


def _first_remember(path: Path) -> str:
    return (
        "from octopoda import AgentRuntime\n"
        f"AgentRuntime('a', store={str(path)!r}).remember('k', 1)"
    )


def _measure(env: dict[str, str], runs: int) -> tuple[float, float, float]:
    """Median import and pass times and the median paired difference, in ms."""
    for _ in range(2):  # warm-up: bytecode cache, OS file cache
        _time("import octopoda", env)
        _time("pass", env)
    imports: list[float] = []
    passes: list[float] = []
    for r in range(runs):
        if r % 2 == 0:
            imports.append(_time("import octopoda", env))
            passes.append(_time("pass", env))
        else:
            passes.append(_time("pass", env))
            imports.append(_time("import octopoda", env))
    paired = median(i - p for i, p in zip(imports, passes, strict=True))
    return median(imports) * 1e3, median(passes) * 1e3, paired * 1e3


def bench_import(cfg: Config) -> list[Check]:
    section("5. import octopoda")
    runs = cfg.scale(21, 5)
    env = _env(cfg.tmp / "pycache")
    imp, bare, paired = _measure(env, runs)
    cost = imp - bare
    line(
        f"{runs} runs each: import {imp:.1f} ms, pass {bare:.1f} ms -> import octopoda costs"
        f" {cost:.1f} ms (median of paired differences {paired:.1f} ms)"
    )

    base = _importtime("pass", env)
    ours = {k: v for k, v in _importtime("import octopoda", env).items() if k not in base}
    slowest = sorted(ours.items(), key=lambda kv: -kv[1][0])[:8]
    total_us = sum(v[0] for v in ours.values())
    line(
        f"-X importtime: {len(ours)} modules beyond a bare interpreter, {total_us / 1e3:.1f} ms;"
        " slowest (self, ms): " + ", ".join(f"{name} {v[0] / 1e3:.1f}" for name, v in slowest)
    )
    # `import octopoda` loads its public names lazily; what a program pays before its first
    # remember is the import of the runtime, reported beside it.
    full = [_time("from octopoda import AgentRuntime", env) for _ in range(runs)]
    runtime_cost = statistics.median(full) * 1000 - bare
    line(f"from octopoda import AgentRuntime costs {runtime_cost:.1f} ms")
    # What a user waits for before the first write: the import, then the first runtime
    # (which loads the store and the loop detectors) and its first remember, on a new file.
    first = [_time(_first_remember(cfg.tmp / f"first-{n}.db"), env) for n in range(runs)]
    first_cost = statistics.median(first) * 1000 - bare
    line(f"import + AgentRuntime(...).remember() on a new file costs {first_cost:.1f} ms")
    return [
        Check.at_most(
            "import",
            f"from octopoda import AgentRuntime (median of {runs}, minus bare python)",
            runtime_cost,
            RUNTIME_TARGET_MS,
            " ms",
        ),
        Check.info(
            "import",
            f"import + first remember on a new file (median of {runs}, minus bare python)",
            first_cost,
            " ms",
        ),
        Check.at_most(
            "import",
            f"import octopoda (median of {runs} fresh runs, minus bare python)",
            cost,
            TARGET_MS,
            " ms",
            import_ms=imp,
            pass_ms=bare,
            paired_ms=paired,
            modules=len(ours),
            slowest_self_ms={name: v[0] / 1e3 for name, v in slowest},
        ),
    ]
