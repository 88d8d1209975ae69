"""PostgreSQL store benchmark: concurrent writer processes, and latency against SQLite.

    python bench/postgres_bench.py [--clients 1,4,16] [--writes N] [--ops N] [--quick]

1. **writers.** For each client count P: P processes start together, each writes N
   ``remember`` calls as its own agent and, every 4th write, one version of a key shared by
   all (agent ``team``: contention on one chain head and one key). Then every acknowledged
   write is looked up (lost = acknowledged but not stored), the shared key's versions must be
   1..M without gaps and every agent's audit chain must verify. Rate = acknowledged writes /
   wall time from the common start to the last finish.
2. **latency.** The same ``remember`` (small dicts, unique keys) and ``recall`` (random keys)
   workload on a SQLite file and on PostgreSQL, alternating rounds; medians and p99 per
   operation, and the PostgreSQL / SQLite ratios.

The server is ``OCTOPODA_BENCH_POSTGRES_URL``, else ``OCTOPODA_TEST_POSTGRES_URL``, else
``postgresql://postgres@127.0.0.1:5432/postgres`` (an administrative URL: the benchmark
creates a database ``octopoda_bench_<random>`` and drops it). ``N`` also comes from
``OCTOPODA_BENCH_PG_WRITES``. Without a server or the ``postgres`` extra it says why and
exits 0.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

DEFAULT_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
SHARED_EVERY = 4
TIMEOUT = 600.0


def admin_url() -> str:
    return (
        os.environ.get("OCTOPODA_BENCH_POSTGRES_URL")
        or os.environ.get("OCTOPODA_TEST_POSTGRES_URL")
        or DEFAULT_ADMIN_URL
    )


def with_database(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, parts.fragment))


def server_problem(url: str) -> str | None:
    """Why the benchmark cannot run, or None."""
    try:
        import psycopg
    except ImportError:
        return "psycopg is not installed: pip install 'octopoda-core[postgres]'"
    try:
        with psycopg.connect(url, autocommit=True, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        return f"no PostgreSQL server at {urlsplit(url).hostname}: {first}"
    return None


def run_sql(url: str, *statements: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        for statement in statements:
            conn.execute(statement)


# -- 1. concurrent writers -------------------------------------------------------------------


def worker(url: str, agent_id: str, writes: int, start_at: float) -> None:
    """One writer process: prints its acknowledged writes and errors as JSON."""
    from octopoda import AgentRuntime

    own = AgentRuntime(agent_id, store=url)
    team = AgentRuntime("team", store=url)
    acks: list[tuple[str, str, int]] = []
    errors: list[str] = []
    while time.time() < start_at:
        time.sleep(0.0005)
    started = time.time()
    for i in range(writes):
        try:
            acks.append(("own", f"k{i}", own.remember(f"k{i}", {"i": i}).version))
            if (i + 1) % SHARED_EVERY == 0:
                acks.append(("team", "shared", team.remember("shared", {"a": agent_id}).version))
        except Exception as exc:  # counted and reported, never fatal
            errors.append(f"{type(exc).__name__}: {exc}")
    ended = time.time()
    report = {"agent": agent_id, "started": started, "ended": ended, "acks": acks}
    print(json.dumps({**report, "errors": errors}))


def run_writers(url: str, clients: int, writes: int) -> dict[str, Any]:
    from octopoda import AgentRuntime
    from octopoda._postgres import PostgresStore
    from octopoda._postgres_schema import TABLES

    PostgresStore(url).close()  # the schema first, outside the timed part
    run_sql(url, f"TRUNCATE {', '.join(TABLES)} RESTART IDENTITY")
    start_at = time.time() + 1.0 + 0.1 * clients
    procs = [
        subprocess.Popen(
            [sys.executable, __file__, "--worker", url, f"c{c}", str(writes), str(start_at)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for c in range(clients)
    ]
    results: list[dict[str, Any]] = []
    crashed: list[str] = []
    for proc in procs:
        out, err = proc.communicate(timeout=TIMEOUT)
        if proc.returncode != 0:
            crashed.append(err.strip().splitlines()[-1] if err.strip() else str(proc.returncode))
            continue
        results.append(json.loads(out))
    store = PostgresStore(url)
    try:
        lost = 0
        for r in results:
            stored = {(row.key, row.version) for row in store.all_versions("agent:" + r["agent"])}
            lost += sum(1 for where, k, v in r["acks"] if where == "own" and (k, v) not in stored)
        shared = {row.version for row in store.all_versions("agent:team")}
        team_acks = [v for r in results for where, _, v in r["acks"] if where == "team"]
        lost += sum(1 for v in team_acks if v not in shared)
        gapless = sorted(shared) == list(range(1, len(shared) + 1)) == sorted(team_acks)
        agents = [r["agent"] for r in results] + ["team"]
        broken = [a for a in agents if not AgentRuntime(a, store=store).audit.verify().ok]
    finally:
        store.close()
    acked = sum(len(r["acks"]) for r in results)
    wall = max(r["ended"] for r in results) - min(r["started"] for r in results)
    return {
        "clients": clients,
        "writes": acked,
        "errors": sum(len(r["errors"]) for r in results) + len(crashed),
        "lost": lost,
        "shared_gapless": gapless,
        "broken_chains": broken,
        "seconds": wall,
        "rate": acked / wall if wall > 0 else 0.0,
        "first_errors": [e for r in results for e in r["errors"]][:3] + crashed[:3],
    }


# -- 2. latency against SQLite ---------------------------------------------------------------


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def time_ops(store: Any, ops: int, rounds: int, seed: int) -> dict[str, list[float]]:
    from octopoda import AgentRuntime

    agent = AgentRuntime(f"lat{seed}", store=store)
    agent.remember("warm-up", 0)
    remember: list[float] = []
    recall: list[float] = []
    rng = random.Random(seed)
    clock = time.perf_counter
    for r in range(rounds):
        for i in range(ops):
            t = clock()
            agent.remember(f"r{r}-k{i}", {"user": "alice", "n": i, "tags": ["a", "b"]})
            remember.append(clock() - t)
        keys = [f"r{r}-k{rng.randrange(ops)}" for _ in range(ops)]
        for key in keys:
            t = clock()
            agent.recall(key)
            recall.append(clock() - t)
    return {"remember": remember, "recall": recall}


def run_latency(url: str, ops: int, rounds: int, tmp: Path) -> dict[str, dict[str, float]]:
    from octopoda import SqliteStore
    from octopoda._postgres import PostgresStore

    sqlite = SqliteStore(str(tmp / "bench.db"))
    pg = PostgresStore(url)
    samples: dict[str, dict[str, list[float]]] = {"sqlite": {}, "postgresql": {}}
    try:
        for r in range(rounds):  # alternate which side goes first
            order = [("sqlite", sqlite), ("postgresql", pg)]
            for name, store in order if r % 2 == 0 else order[::-1]:
                got = time_ops(store, ops, 1, seed=r)
                for op, values in got.items():
                    samples[name].setdefault(op, []).extend(values)
    finally:
        sqlite.close()
        pg.close()
    return {
        f"{backend}.{op}": {"p50": percentile(v, 0.5), "p99": percentile(v, 0.99), "n": len(v)}
        for backend, ops_ in samples.items()
        for op, v in ops_.items()
    }


# -- main --------------------------------------------------------------------------------------


def main(argv: list[str]) -> int:
    if argv[:1] == ["--worker"]:
        worker(argv[1], argv[2], int(argv[3]), float(argv[4]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", default="1,4,16", help="client process counts")
    default_writes = int(os.environ.get("OCTOPODA_BENCH_PG_WRITES", "1000"))
    parser.add_argument("--writes", type=int, default=default_writes, help="writes per client")
    parser.add_argument("--ops", type=int, default=1000, help="latency ops per round")
    parser.add_argument("--rounds", type=int, default=4, help="latency rounds")
    parser.add_argument("--quick", action="store_true", help="small N, for a smoke run")
    parser.add_argument(
        "--synchronous-commit",
        choices=["on", "off"],
        default="on",
        help="the bench database's synchronous_commit: 'off' shows what the WAL fsync per"
        " commit costs (a server crash may then lose the last commits)",
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.writes, args.ops, args.rounds = 100, 200, 2
    admin = admin_url()
    problem = server_problem(admin)
    if problem is not None:
        print(f"postgres_bench: skipped: {problem}")
        return 0
    name = f"octopoda_bench_{secrets.token_hex(4)}"
    run_sql(admin, f"CREATE DATABASE {name} ENCODING 'UTF8' TEMPLATE template0")
    run_sql(admin, f"ALTER DATABASE {name} SET synchronous_commit = {args.synchronous_commit}")
    url = with_database(admin, name)
    failed = False
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"database {name}: synchronous_commit={args.synchronous_commit}, load average {load:.1f}")
    try:
        print(f"== PostgreSQL: concurrent writer processes ({args.writes} writes each) ==")
        print("   clients   acked  errors  lost  gapless  chains    seconds   writes/s  vs 1")
        base: float | None = None
        for clients in [int(c) for c in args.clients.split(",")]:
            r = run_writers(url, clients, args.writes)
            base = base or r["rate"]
            chains = "ok" if not r["broken_chains"] else f"{len(r['broken_chains'])} bad"
            print(
                f"   {clients:>7} {r['writes']:>7} {r['errors']:>7} {r['lost']:>5}"
                f"  {'yes' if r['shared_gapless'] else 'NO':>7}  {chains:>6} {r['seconds']:>10.2f}"
                f" {r['rate']:>10.0f}  {r['rate'] / base:>4.1f}x",
                flush=True,
            )
            for error in r["first_errors"]:
                print(f"      error: {error}")
            failed |= bool(
                r["errors"] or r["lost"] or r["broken_chains"] or not r["shared_gapless"]
            )
        print(
            f"\n== remember / recall latency: PostgreSQL vs SQLite ({args.rounds} x {args.ops}) =="
        )
        with tempfile.TemporaryDirectory() as tmp:
            lat = run_latency(url, args.ops, args.rounds, Path(tmp))
        for op in ("remember", "recall"):
            s, p = lat[f"sqlite.{op}"], lat[f"postgresql.{op}"]
            print(
                f"   {op:<8}  sqlite p50 {s['p50'] * 1e3:7.3f} ms  p99 {s['p99'] * 1e3:7.3f} ms"
                f"   postgresql p50 {p['p50'] * 1e3:7.3f} ms  p99 {p['p99'] * 1e3:7.3f} ms"
                f"   ratio p50 {p['p50'] / s['p50']:5.1f}x  p99 {p['p99'] / s['p99']:5.1f}x"
            )
    finally:
        run_sql(
            admin,
            f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}'",
            f"DROP DATABASE IF EXISTS {name} WITH (FORCE)",
        )
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
