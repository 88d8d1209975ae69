"""Benchmark: 16 client processes writing and reading through `octopoda serve`, beside the
same work on the library directly (16 processes on one SQLite file).

    python bench/bench_server.py [--quick] [--clients 16] [--ops 200]

Each client process is one agent: it writes ``ops`` versions of its keys (``remember``)
and reads each back (``recall``), timing every call. Afterwards the parent checks, on the
store file itself: 0 errors, 0 lost writes (every acknowledged version is stored with its
value), every agent's chain verifies. It prints throughput and p50/p99 latency of each
mode and the ratio server/library. Needs the server and remote extras:
``pip install 'octopoda-core[server,remote]'``. Loopback only. Timings on a loaded machine
are noisy: report them as measured under load.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def _client(args: tuple[str, str, int, Any]) -> dict[str, Any]:
    store, agent, ops, start = args
    from octopoda import AgentRuntime

    runtime = AgentRuntime(agent, store=store)
    writes: list[float] = []
    reads: list[float] = []
    errors = 0
    acked: list[tuple[str, int, int]] = []
    start.wait()
    began = time.perf_counter()
    for i in range(ops):
        key = f"k{i % 20}"
        t = time.perf_counter()
        try:
            record = runtime.remember(key, {"i": i, "agent": agent})
            acked.append((key, record.version, i))
        except Exception:
            errors += 1
        writes.append(time.perf_counter() - t)
        t = time.perf_counter()
        try:
            if runtime.recall(key).value != {"i": i, "agent": agent}:
                errors += 1
        except Exception:
            errors += 1
        reads.append(time.perf_counter() - t)
    elapsed = time.perf_counter() - began
    runtime.store.close()
    return {"writes": writes, "reads": reads, "errors": errors, "acked": acked, "s": elapsed}


def _run(store: str, clients: int, ops: int) -> list[dict[str, Any]]:
    ctx = multiprocessing.get_context("spawn")
    manager = ctx.Manager()
    start = manager.Event()
    with ctx.Pool(clients) as pool:
        pending = pool.map_async(_client, [(store, f"w{n}", ops, start) for n in range(clients)])
        time.sleep(1.0)  # (let every process import and open its store)
        start.set()
        results = pending.get(timeout=1800)
    manager.shutdown()
    return results


def _check(db: Path, results: list[dict[str, Any]]) -> dict[str, int]:
    from octopoda import AgentRuntime, SqliteStore

    store = SqliteStore(str(db))
    lost = broken = 0
    for n, result in enumerate(results):
        agent = AgentRuntime(f"w{n}", store=store)
        for key, version, i in result["acked"]:
            got = agent.recall(key, version=version)
            if not got.found or got.value != {"i": i, "agent": f"w{n}"}:
                lost += 1
        if not agent.audit.verify().ok:
            broken += 1
    store.close()
    return {"errors": sum(r["errors"] for r in results), "lost": lost, "broken_chains": broken}


def _summary(results: list[dict[str, Any]]) -> dict[str, float]:
    writes = sorted(x for r in results for x in r["writes"])
    reads = sorted(x for r in results for x in r["reads"])
    wall = max(r["s"] for r in results)
    ops = len(writes) + len(reads)

    def pct(xs: list[float], q: float) -> float:
        return xs[min(len(xs) - 1, int(q * len(xs)))] * 1000

    return {
        "ops_per_s": ops / wall,
        "write_p50_ms": pct(writes, 0.50),
        "write_p99_ms": pct(writes, 0.99),
        "read_p50_ms": pct(reads, 0.50),
        "read_p99_ms": pct(reads, 0.99),
        "mean_ms": statistics.fmean(writes + reads) * 1000,
    }


def _serve(db: Path) -> tuple[subprocess.Popen[str], str]:
    cmd = [sys.executable, "-m", "octopoda", "serve", "--store", str(db), "--port", "0"]
    proc = subprocess.Popen([*cmd, "--json"], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    return proc, json.loads(proc.stdout.readline())["url"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--ops", type=int, default=200)
    parser.add_argument("--quick", action="store_true", help="4 clients x 20 ops (a smoke run)")
    parser.add_argument("--json", dest="json_path", help="also write the figures here")
    ns = parser.parse_args()
    clients, ops = (4, 20) if ns.quick else (ns.clients, ns.ops)
    report: dict[str, Any] = {"clients": clients, "ops_per_client": ops}
    with tempfile.TemporaryDirectory() as tmp:
        lib_db = Path(tmp) / "library.db"
        results = _run(str(lib_db), clients, ops)
        report["library"] = {**_summary(results), **_check(lib_db, results)}
        srv_db = Path(tmp) / "served.db"
        proc, url = _serve(srv_db)
        try:
            os.environ.pop("OCTOPODA_SERVER_TOKEN", None)
            results = _run(url, clients, ops)
        finally:
            proc.terminate()
            proc.wait(30)
            assert proc.stdout is not None
            proc.stdout.close()
        report["server"] = {**_summary(results), **_check(srv_db, results)}
    lib, srv = report["library"], report["server"]
    report["throughput_ratio_server_vs_library"] = srv["ops_per_s"] / lib["ops_per_s"]
    print(f"{clients} processes x {ops} writes + {ops} reads each (loopback)")
    for name in ("library", "server"):
        r = report[name]
        print(
            f"  {name:<8} {r['ops_per_s']:8.0f} ops/s  write p50 {r['write_p50_ms']:6.2f} ms"
            f" p99 {r['write_p99_ms']:7.2f} ms  read p50 {r['read_p50_ms']:6.2f} ms"
            f" p99 {r['read_p99_ms']:7.2f} ms  errors {r['errors']} lost {r['lost']}"
            f" broken chains {r['broken_chains']}"
        )
    print(f"  server / library throughput: {report['throughput_ratio_server_vs_library']:.2f}x")
    if ns.json_path:
        Path(ns.json_path).write_text(json.dumps(report, indent=2))
    bad = any(
        report[m][k] for m in ("library", "server") for k in ("errors", "lost", "broken_chains")
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
