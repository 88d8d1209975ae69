"""Run every Octopoda benchmark, each beside its baseline, and print a summary.

    python bench/run_all.py [--quick] [--json PATH] [--only NAME,...] [--no-predecessor]

(``nox -s bench -- --quick`` passes the flags through.) Benchmarks: remember, recall,
scale, multiproc, import, predecessor, loops, audit, postgres, search, stream, dashboard; see
bench/README.md. Exit
status 1 if a target is missed (except with ``--quick``, a smoke run whose small samples
prove little) or a benchmark crashed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sqlite3
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

# Run as a script: this file's directory (bench/) is on sys.path, so its modules import.
from _common import Check, Config
from bench_audit import bench_audit
from bench_dashboard import bench_dashboard
from bench_import import bench_import
from bench_init import bench_init
from bench_loops import bench_loops
from bench_memory import bench_recall, bench_remember
from bench_multiproc import bench_multiproc
from bench_predecessor import bench_predecessor
from bench_scale import bench_scale
from bench_search import bench_search
from bench_stream import bench_stream
from postgres_bench import bench_postgres

import octopoda

NAMES = [
    "remember",
    "recall",
    "scale",
    "multiproc",
    "import",
    "init",
    "predecessor",
    "loops",
    "audit",
    "postgres",
    "search",
    "stream",
    "dashboard",
]


def _format(check: Check) -> str:
    v = check.value
    if v is None:
        return "-"
    if check.unit == "x":
        return f"{v:.2f}x"
    if check.unit == " ops/s":
        return f"{v:,.0f} ops/s"
    if isinstance(v, int):
        return f"{int(v):,}"
    return f"{v:.1f}{check.unit}"


def summary(checks: list[Check]) -> str:
    rows = [("benchmark", "metric", "value", "target", "status")]
    rows += [(c.bench, c.metric, _format(c), c.target, c.status) for c in checks]
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    out = []
    for n, r in enumerate(rows):
        out.append(
            "  ".join(
                cell.rjust(widths[i]) if i == 2 else cell.ljust(widths[i])
                for i, cell in enumerate(r)
            ).rstrip()
        )
        if n == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, float) and obj != obj:
        return None
    if obj is None or isinstance(obj, (str, int, float, bool)):
        return obj
    return str(obj)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small N: a smoke run")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    parser.add_argument("--only", metavar="NAMES", help=f"comma-separated subset of {NAMES}")
    parser.add_argument(
        "--no-predecessor", action="store_true", help="do not install or run octopoda 3.3.4"
    )
    parser.add_argument(
        "--predecessor-venv",
        metavar="DIR",
        type=Path,
        help="virtualenv for octopoda 3.3.4 (default .nox/bench-predecessor)",
    )
    parser.add_argument("--tmp", metavar="DIR", help="where the temp dir goes (default: system)")
    parser.add_argument("--seed", type=int, default=1234)
    args = parser.parse_args(argv)

    only = NAMES if not args.only else [n.strip() for n in args.only.split(",") if n.strip()]
    unknown = sorted(set(only) - set(NAMES))
    if unknown:
        parser.error(f"unknown benchmark(s) {unknown}; choose from {NAMES}")

    started = time.time()
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    print(
        f"octopoda {octopoda.__version__} ({Path(octopoda.__file__).parent}); Python"
        f" {platform.python_version()}; SQLite {sqlite3.sqlite_version}; {os.cpu_count()} CPUs"
        + (f"; load average {load[0]:.2f}" if load else "")
        + ("; QUICK (smoke run)" if args.quick else ""),
        flush=True,
    )
    checks: list[Check] = []
    with tempfile.TemporaryDirectory(prefix="octopoda-bench-", dir=args.tmp) as tmp:
        cfg = Config(quick=args.quick, tmp=Path(tmp), seed=args.seed)
        runners: dict[str, Callable[[], list[Check]]] = {
            "remember": lambda: bench_remember(cfg),
            "recall": lambda: bench_recall(cfg),
            "scale": lambda: bench_scale(cfg),
            "multiproc": lambda: bench_multiproc(cfg),
            "import": lambda: bench_import(cfg),
            "init": lambda: bench_init(cfg),
            "predecessor": lambda: bench_predecessor(
                cfg, args.predecessor_venv, enabled=not args.no_predecessor
            ),
            "loops": lambda: bench_loops(cfg),
            "audit": lambda: bench_audit(cfg),
            "postgres": lambda: bench_postgres(cfg),
            "search": lambda: bench_search(cfg),
            "stream": lambda: bench_stream(cfg),
            "dashboard": lambda: bench_dashboard(cfg),
        }
        for name in only:
            t0 = time.perf_counter()
            try:
                checks += runners[name]()
            except Exception as exc:
                traceback.print_exc()
                error = {"error": f"{type(exc).__name__}: {exc}"}
                checks.append(Check(name, "benchmark crashed", None, "", "ERROR", "", error))
            print(f"   ({name}: {time.perf_counter() - t0:.1f} s)", flush=True)

    took = time.time() - started
    print(f"\n== summary ({took:.0f} s{', quick' if args.quick else ''}) ==")
    print(summary(checks))
    failed = [c for c in checks if c.status == "FAIL"]
    crashed = [c for c in checks if c.status == "ERROR"]
    verdict = (
        "all targets met"
        if not failed and not crashed
        else (f"{len(failed)} target(s) missed, {len(crashed)} benchmark(s) crashed")
    )
    print(verdict)

    if args.json:
        path = Path(args.json)
        path.parent.mkdir(parents=True, exist_ok=True)
        doc = {
            "octopoda_version": octopoda.__version__,
            "python": platform.python_version(),
            "sqlite": sqlite3.sqlite_version,
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "load_avg_at_start": load,
            "quick": args.quick,
            "started": started,
            "duration_s": took,
            "all_passed": not failed and not crashed,
            "checks": [
                {
                    "bench": c.bench,
                    "metric": c.metric,
                    "value": c.value,
                    "unit": c.unit.strip(),
                    "target": c.target,
                    "status": c.status,
                    "details": c.details,
                }
                for c in checks
            ],
        }
        path.write_text(json.dumps(_jsonable(doc), indent=2) + "\n", encoding="utf-8")
        print(f"results written to {path}")
    if crashed or (failed and not args.quick):
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
