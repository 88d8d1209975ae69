"""Benchmark 4: several processes writing one file, as one agent.

Each writer process (``_mp_writer.py``) writes 2,000 unique keys plus one version of the
shared key ``shared`` after every 4th (500 more), all as the same agent, so every write
contends for the file's write lock and for the agent's audit-chain head. Afterwards the
parent checks every acknowledged write: is that version stored, with that value? Are the
shared key's versions distinct and gapless, and the agent's events one unbroken chain?
Run with 4 processes (the target) and with 1 (for scale).
"""

from __future__ import annotations

import json
import selectors
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _common import BENCH_DIR, Check, Config, line, section

from octopoda import AgentRuntime

AGENT = "team"
SHARED_EVERY = 4
TIMEOUT = 240.0


def _wait_ready(procs: list[subprocess.Popen[str]], deadline: float) -> None:
    sel = selectors.DefaultSelector()
    for p in procs:
        assert p.stdout is not None
        sel.register(p.stdout, selectors.EVENT_READ, p)
    waiting = set(range(len(procs)))
    while waiting:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("writer processes did not start in time")
        for key, _ in sel.select(timeout=left):
            proc = key.data
            text = proc.stdout.readline()
            if not text:
                raise RuntimeError(f"a writer exited before it was ready (rc {proc.wait()})")
            if text.strip() == "ready":
                waiting.discard(procs.index(proc))
                sel.unregister(proc.stdout)
    sel.close()


def _run(cfg: Config, procs_n: int, unique: int, tag: str) -> dict[str, Any]:
    store = cfg.tmp / f"mp-{tag}.db"
    AgentRuntime(AGENT, store=store).store.close()  # create the schema first
    outs = [cfg.tmp / f"mp-{tag}-{w}.json" for w in range(procs_n)]
    cmd = [sys.executable, str(BENCH_DIR / "_mp_writer.py"), str(store), AGENT]
    procs = [
        subprocess.Popen(
            [*cmd, str(w), str(unique), str(SHARED_EVERY), str(outs[w])],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for w in range(procs_n)
    ]
    deadline = time.monotonic() + TIMEOUT
    exit_errors: list[str] = []
    try:
        _wait_ready(procs, deadline)
        for p in procs:
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()
        for w, p in enumerate(procs):
            rc = p.wait(timeout=max(1.0, deadline - time.monotonic()))
            if rc != 0:
                exit_errors.append(f"writer {w} exited with {rc}")
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    reports = []
    for w, out in enumerate(outs):
        if out.exists():
            reports.append(json.loads(out.read_text(encoding="utf-8")))
        else:
            exit_errors.append(f"writer {w} wrote no report")
    return _verify(store, reports, exit_errors, procs_n * unique * (1 + 1 / SHARED_EVERY))


def _verify(
    store: Path, reports: list[dict[str, Any]], errors: list[str], attempted: float
) -> dict[str, Any]:
    errors = errors + [e for r in reports for e in r["errors"]]
    acks = [(r["worker"], key, version, i) for r in reports for key, version, i in r["acks"]]
    agent = AgentRuntime(AGENT, store=store)
    lost: list[str] = []
    try:
        for w, key, version, i in acks:
            got = agent.recall(key, version=version)
            if not got.found or got.value != {"w": w, "i": i}:
                lost.append(f"{key} v{version}: {got.value!r}")
        shared = sorted(version for _, key, version, _ in acks if key == "shared")
        if shared != list(range(1, len(shared) + 1)):
            lost.append(f"shared versions not 1..{len(shared)} (duplicates or gaps)")
        seqs, prev, broken = 0, "0" * 64, 0
        for event in agent.store.events(AGENT):
            seqs += 1
            if event.seq != seqs or event.prev_hash != prev:
                broken += 1
            prev = event.hash
        current = agent.recall("shared")
    finally:
        agent.store.close()
    # One event per write, plus none other: the count must match the acknowledged writes.
    if seqs != len(acks):
        lost.append(f"{seqs} events for {len(acks)} acknowledged writes")
    started = min((r["started"] for r in reports), default=0.0)
    ended = max((r["ended"] for r in reports), default=0.0)
    wall = max(ended - started, 1e-9)
    return {
        "attempted": int(attempted),
        "acknowledged": len(acks),
        "errors": len(errors),
        "error_samples": errors[:5],
        "lost": len(lost),
        "lost_samples": lost[:5],
        "chain_breaks": broken,
        "events": seqs,
        "shared_versions": len(shared),
        "shared_current_version": current.version,
        "wall_s": wall,
        "ops_s": len(acks) / wall,
    }


def bench_multiproc(cfg: Config) -> list[Check]:
    section("4. several processes writing one file")
    unique = cfg.scale(2000, 200)
    results: dict[int, dict[str, Any]] = {}
    for n in (1, 4):
        res = _run(cfg, n, unique, f"p{n}")
        results[n] = res
        line(
            f"{n} process(es): {res['acknowledged']:,}/{res['attempted']:,} acknowledged,"
            f" {res['errors']} errors, {res['lost']} lost, {res['chain_breaks']} chain breaks,"
            f" shared key {res['shared_versions']} versions; {res['wall_s']:.2f} s,"
            f" {res['ops_s']:,.0f} ops/s"
        )
        for sample in res["error_samples"] + res["lost_samples"]:
            line(f"  {sample}")
    four, one = results[4], results[1]
    one_bad = one["errors"] + one["lost"] + one["chain_breaks"]
    line(f"4-process aggregate / 1 process: {four['ops_s'] / one['ops_s']:.2f}x")
    return [
        Check.at_most("multiproc", "4 processes: errors", four["errors"], 0, **four),
        Check.at_most("multiproc", "4 processes: lost writes (acked, missing)", four["lost"], 0),
        Check.at_most("multiproc", "4 processes: audit chain breaks", four["chain_breaks"], 0),
        Check.info("multiproc", "4 processes: aggregate rate", four["ops_s"], " ops/s"),
        Check.at_most("multiproc", "1 process: errors + lost + chain breaks", one_bad, 0, **one),
        Check.info("multiproc", "1 process: rate", one["ops_s"], " ops/s"),
    ]
