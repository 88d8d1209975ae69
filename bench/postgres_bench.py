"""PostgreSQL store benchmark: ours beside raw psycopg on the same server, in the same run.

    python bench/postgres_bench.py [--clients 1,4,16] [--writes N] [--ops N] [--quick]
    python bench/run_all.py --only postgres        (the same, as one benchmark of the suite)

1. **remember vs raw.** In one process, ``remember`` (small dicts, unique keys) and the raw
   baseline, psycopg's ``INSERT`` of the same row + ``commit()`` on its own connection, are
   interleaved op by op (which goes first alternates), each op timed on its own. Printed:
   the p50 of each side per round and overall, and the ratio raw p50 / our p50 (target
   >= 0.5: a commit of ours, two round trips, costs at most twice a bare insert + commit).
2. **writers.** For each client count P: P processes of ours start together, each writes N
   ``remember`` calls as its own agent and, every 4th write, one version of a key shared by
   all (agent ``team``: contention on one chain head and one key). Then every acknowledged
   write is looked up (lost = acknowledged but not stored), the shared key's versions must be
   1..M without gaps and every agent's audit chain must verify. Beside it, P raw processes
   insert + commit the same number of rows each. Rate = writes / wall time from the common
   start to the last finish; ratio = our rate / raw rate (information).
3. **latency.** The same ``remember`` and ``recall`` (random keys) workload on a SQLite file
   and on PostgreSQL, alternating rounds; medians and p99 per operation, and the PostgreSQL /
   SQLite ratios (information).

The server is ``OCTOPODA_BENCH_POSTGRES_URL``, else ``OCTOPODA_TEST_POSTGRES_URL``, else
``postgresql://postgres@127.0.0.1:5432/postgres`` (an administrative URL: the benchmark
creates a database ``octopoda_bench_<random>`` and drops it). ``N`` also comes from
``OCTOPODA_BENCH_PG_WRITES``. Without a server or the ``postgres`` extra it says why and
exits 0 (as part of run_all.py: a SKIP row).
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
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

DEFAULT_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
SHARED_EVERY = 4
TIMEOUT = 600.0
TARGET = 0.5  # raw p50 / our p50 of remember, interleaved
WARMUP = 50
RAW_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS raw_bench (namespace text, key text, version integer,"
    " value text, PRIMARY KEY (namespace, key, version))"
)
RAW_INSERT = "INSERT INTO raw_bench (namespace, key, version, value) VALUES (%s, %s, %s, %s)"


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


@contextmanager
def bench_database(synchronous_commit: str = "on") -> Iterator[str]:
    """A fresh database on the server (dropped afterwards); yields its URL."""
    admin = admin_url()
    name = f"octopoda_bench_{secrets.token_hex(4)}"
    run_sql(admin, f"CREATE DATABASE {name} ENCODING 'UTF8' TEMPLATE template0")
    run_sql(admin, f"ALTER DATABASE {name} SET synchronous_commit = {synchronous_commit}")
    url = with_database(admin, name)
    run_sql(url, RAW_SCHEMA)
    try:
        yield url
    finally:
        run_sql(
            admin,
            f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}'",
            f"DROP DATABASE IF EXISTS {name} WITH (FORCE)",
        )


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def value_of(i: int) -> dict[str, Any]:
    return {"user": "alice", "n": i, "tags": ["a", "b"]}


# -- 1. remember vs raw psycopg, interleaved ---------------------------------------------------


def interleaved_round(remember: Any, raw: Any, r: int, ops: int) -> tuple[list[float], list[float]]:
    """One round: ``ops`` pairs of our remember and the raw insert + commit (which goes
    first alternates), each timed on its own; (raw, ours) seconds per op."""
    execute, commit, dumps, clock = raw.execute, raw.commit, json.dumps, time.perf_counter
    raw_s: list[float] = []
    our_s: list[float] = []
    for i in range(ops):
        key, value = f"r{r}-k{i}", value_of(i)
        if i % 2:
            t0 = clock()
            remember(key, value)
            t1 = clock()
            execute(RAW_INSERT, ("agent:raw", key, 1, dumps(value)))
            commit()
            t2 = clock()
            our_s.append(t1 - t0)
            raw_s.append(t2 - t1)
        else:
            t0 = clock()
            execute(RAW_INSERT, ("agent:raw", key, 1, dumps(value)))
            commit()
            t1 = clock()
            remember(key, value)
            t2 = clock()
            raw_s.append(t1 - t0)
            our_s.append(t2 - t1)
    return raw_s, our_s


def interleaved_remember(url: str, ops: int, rounds: int) -> dict[str, Any]:
    """``remember`` and raw INSERT + commit in one process, one op of each in turn."""
    import psycopg

    from octopoda import AgentRuntime, PostgresStore

    store = PostgresStore(url)
    raw = psycopg.connect(url)
    agent = AgentRuntime("interleaved", store=store)
    try:
        for i in range(WARMUP):  # untimed: connections, statement caches, first pages
            raw.execute(RAW_INSERT, ("agent:raw", f"warm-{i}", 1, json.dumps(value_of(i))))
            raw.commit()
            agent.remember(f"warm-{i}", value_of(i))
        per_round = [interleaved_round(agent.remember, raw, r, ops) for r in range(rounds)]
    finally:
        raw.close()
        store.close()
    raw_all = [s for raw_s, _ in per_round for s in raw_s]
    our_all = [s for _, our_s in per_round for s in our_s]
    return {
        "rounds": [
            {"raw_p50": percentile(a, 0.5), "ours_p50": percentile(b, 0.5)} for a, b in per_round
        ],
        "raw_p50": percentile(raw_all, 0.5),
        "ours_p50": percentile(our_all, 0.5),
        "raw_p99": percentile(raw_all, 0.99),
        "ours_p99": percentile(our_all, 0.99),
        "n": len(our_all),
    }


def print_interleaved(result: dict[str, Any]) -> float:
    for n, r in enumerate(result["rounds"], start=1):
        print(
            f"   round {n}/{len(result['rounds'])}: raw p50 {r['raw_p50'] * 1e6:6.0f} us,"
            f" ours p50 {r['ours_p50'] * 1e6:6.0f} us, ratio {r['raw_p50'] / r['ours_p50']:.2f}",
            flush=True,
        )
    ratio: float = result["raw_p50"] / result["ours_p50"]
    print(
        f"   all {result['n']} ops: raw p50 {result['raw_p50'] * 1e6:.0f} us"
        f" (p99 {result['raw_p99'] * 1e6:.0f}), ours p50 {result['ours_p50'] * 1e6:.0f} us"
        f" (p99 {result['ours_p99'] * 1e6:.0f}); raw/ours {ratio:.2f}"
        f" (target >= {TARGET}): {'PASS' if ratio >= TARGET else 'FAIL'}",
        flush=True,
    )
    return ratio


# -- 2. concurrent writers, ours and raw -------------------------------------------------------


def wait_until(start_at: float) -> None:
    while time.time() < start_at:
        time.sleep(0.0005)


def worker(url: str, agent_id: str, writes: int, start_at: float) -> None:
    """One writer process of ours: prints its acknowledged writes and errors as JSON."""
    from octopoda import AgentRuntime

    own = AgentRuntime(agent_id, store=url)
    team = AgentRuntime("team", store=url)
    acks: list[tuple[str, str, int]] = []
    errors: list[str] = []
    wait_until(start_at)
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


def raw_worker(url: str, agent_id: str, writes: int, start_at: float) -> None:
    """One raw writer process: as many INSERT + commit as ``worker`` makes writes."""
    import psycopg

    conn = psycopg.connect(url)
    dumps = json.dumps
    count = 0
    wait_until(start_at)
    started = time.time()
    for i in range(writes):
        conn.execute(RAW_INSERT, (f"agent:{agent_id}", f"k{i}", 1, dumps({"i": i})))
        conn.commit()
        count += 1
        if (i + 1) % SHARED_EVERY == 0:
            conn.execute(RAW_INSERT, ("agent:team", f"{agent_id}-{i}", 1, dumps({"a": agent_id})))
            conn.commit()
            count += 1
    ended = time.time()
    conn.close()
    print(json.dumps({"agent": agent_id, "started": started, "ended": ended, "count": count}))


def start_processes(mode: str, url: str, clients: int, writes: int) -> list[dict[str, Any]]:
    """Run ``clients`` processes of ``--worker`` or ``--raw-worker`` from one start time."""
    start_at = time.time() + 1.0 + 0.1 * clients
    procs = [
        subprocess.Popen(
            [sys.executable, __file__, mode, url, f"c{c}", str(writes), str(start_at)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for c in range(clients)
    ]
    results: list[dict[str, Any]] = []
    for proc in procs:
        out, err = proc.communicate(timeout=TIMEOUT)
        if proc.returncode != 0:
            last = err.strip().splitlines()[-1] if err.strip() else str(proc.returncode)
            results.append({"crashed": last})
        else:
            results.append(json.loads(out))
    return results


def wall(results: list[dict[str, Any]]) -> float:
    return max(r["ended"] for r in results) - min(r["started"] for r in results)


def check_writers(url: str, results: list[dict[str, Any]]) -> dict[str, Any]:
    """Every acknowledged write stored, the shared key gapless, every chain intact."""
    from octopoda import AgentRuntime, PostgresStore

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
    return {"lost": lost, "shared_gapless": gapless, "broken_chains": broken}


def truncate(url: str) -> None:
    from octopoda import PostgresStore
    from octopoda._store.postgres.schema import TABLES

    PostgresStore(url).close()  # the schema first, outside the timed part
    run_sql(url, f"TRUNCATE {', '.join(TABLES)}, raw_bench RESTART IDENTITY")


def run_writers(url: str, clients: int, writes: int, raw_first: bool) -> dict[str, Any]:
    """Ours and raw at one client count (``raw_first``: which runs first)."""
    outcome: dict[str, Any] = {"clients": clients}
    for mode in ("--raw-worker", "--worker") if raw_first else ("--worker", "--raw-worker"):
        truncate(url)
        results = start_processes(mode, url, clients, writes)
        crashed = [r["crashed"] for r in results if "crashed" in r]
        done = [r for r in results if "crashed" not in r]
        if mode == "--raw-worker":
            count = sum(r["count"] for r in done)
            outcome["raw"] = {"writes": count, "rate": count / wall(done) if done else 0.0}
            outcome["raw_crashed"] = crashed
            continue
        acked = sum(len(r["acks"]) for r in done)
        seconds = wall(done) if done else 0.0
        outcome.update(check_writers(url, done))
        outcome.update(
            writes=acked,
            seconds=seconds,
            rate=acked / seconds if seconds > 0 else 0.0,
            errors=sum(len(r["errors"]) for r in done) + len(crashed),
            first_errors=[e for r in done for e in r["errors"]][:3] + crashed[:3],
        )
    return outcome


def writers_failed(r: dict[str, Any]) -> bool:
    return bool(
        r["errors"]
        or r["lost"]
        or r["broken_chains"]
        or not r["shared_gapless"]
        or r["raw_crashed"]
    )


def print_writers(rows: list[dict[str, Any]]) -> None:
    print("   clients   acked  errors  lost  gapless  chains   ours w/s    raw w/s  ours/raw")
    for r in rows:
        chains = "ok" if not r["broken_chains"] else f"{len(r['broken_chains'])} bad"
        raw_rate = r["raw"]["rate"]
        print(
            f"   {r['clients']:>7} {r['writes']:>7} {r['errors']:>7} {r['lost']:>5}"
            f"  {'yes' if r['shared_gapless'] else 'NO':>7}  {chains:>6} {r['rate']:>10.0f}"
            f" {raw_rate:>10.0f}  {r['rate'] / raw_rate if raw_rate else 0.0:>8.2f}",
            flush=True,
        )
        for error in r["first_errors"] + r["raw_crashed"][:3]:
            print(f"      error: {error}")


# -- 3. latency against SQLite -----------------------------------------------------------------


def time_ops(store: Any, ops: int, seed: int) -> dict[str, list[float]]:
    from octopoda import AgentRuntime

    agent = AgentRuntime(f"lat{seed}", store=store)
    agent.remember("warm-up", 0)
    remember: list[float] = []
    recall: list[float] = []
    rng = random.Random(seed)
    clock = time.perf_counter
    for i in range(ops):
        t = clock()
        agent.remember(f"k{i}", value_of(i))
        remember.append(clock() - t)
    for key in [f"k{rng.randrange(ops)}" for _ in range(ops)]:
        t = clock()
        agent.recall(key)
        recall.append(clock() - t)
    return {"remember": remember, "recall": recall}


def run_latency(url: str, ops: int, rounds: int, tmp: Path) -> dict[str, dict[str, float]]:
    from octopoda import PostgresStore, SqliteStore

    sqlite = SqliteStore(str(tmp / "bench.db"))
    pg = PostgresStore(url)
    samples: dict[str, dict[str, list[float]]] = {"sqlite": {}, "postgresql": {}}
    try:
        for r in range(rounds):  # alternate which side goes first
            order = [("sqlite", sqlite), ("postgresql", pg)]
            for name, store in order if r % 2 == 0 else order[::-1]:
                for op, values in time_ops(store, ops, seed=r).items():
                    samples[name].setdefault(op, []).extend(values)
    finally:
        sqlite.close()
        pg.close()
    return {
        f"{backend}.{op}": {"p50": percentile(v, 0.5), "p99": percentile(v, 0.99), "n": len(v)}
        for backend, ops_ in samples.items()
        for op, v in ops_.items()
    }


def print_latency(lat: dict[str, dict[str, float]]) -> None:
    for op in ("remember", "recall"):
        s, p = lat[f"sqlite.{op}"], lat[f"postgresql.{op}"]
        print(
            f"   {op:<8}  sqlite p50 {s['p50'] * 1e3:7.3f} ms  p99 {s['p99'] * 1e3:7.3f} ms"
            f"   postgresql p50 {p['p50'] * 1e3:7.3f} ms  p99 {p['p99'] * 1e3:7.3f} ms"
            f"   ratio p50 {p['p50'] / s['p50']:5.1f}x  p99 {p['p99'] / s['p99']:5.1f}x"
        )


# -- the suite's entry point (run_all.py) ------------------------------------------------------


def postgres_checks(
    result: dict[str, Any], ratio: float, rounds: int, ops: int, rows: list[dict[str, Any]]
) -> list[Any]:
    """The summary rows of benchmark 9: the target, the writer rates, any writer failure."""
    from _common import Check

    checks = [
        Check.at_least(
            "postgres",
            f"raw/ours remember p50, interleaved ({rounds}x{ops} ops)",
            ratio,
            TARGET,
            "x",
            raw_p50_us=result["raw_p50"] * 1e6,
            ours_p50_us=result["ours_p50"] * 1e6,
            rounds=result["rounds"],
        )
    ]
    for r in rows:
        raw_rate = r["raw"]["rate"]
        checks.append(
            Check.info(
                "postgres",
                f"{r['clients']} writer processes: ours/raw writes per second",
                r["rate"] / raw_rate if raw_rate else None,
                "x",
                ours_rate=r["rate"],
                raw_rate=raw_rate,
                errors=r["errors"],
                lost=r["lost"],
            )
        )
        if writers_failed(r):
            checks.append(
                Check(
                    "postgres",
                    f"{r['clients']} writers: errors, lost writes, gaps or broken chains",
                    float(r["errors"] + r["lost"] + len(r["broken_chains"])),
                    "0",
                    "FAIL",
                    details={"first_errors": r["first_errors"] + r["raw_crashed"][:3]},
                )
            )
    return checks


def bench_postgres(cfg: Any) -> list[Any]:
    """Benchmark 9 of run_all.py: the interleaved ratio (target) and the writers (INFO)."""
    from _common import Check, section

    section("9. PostgreSQL: remember vs raw psycopg INSERT + commit, interleaved op by op")
    problem = server_problem(admin_url())
    if problem is not None:
        print(f"   skipped: {problem}")
        return [Check.skip("postgres", "raw/ours remember p50, interleaved", problem)]
    rounds, ops, writes = cfg.scale(4, 2), cfg.scale(1000, 200), cfg.scale(300, 50)
    with bench_database() as url:
        result = interleaved_remember(url, ops, rounds)
        ratio = print_interleaved(result)
        print(f"   writer processes, ours then raw psycopg ({writes} writes each):", flush=True)
        rows = [run_writers(url, c, writes, raw_first=n % 2 == 1) for n, c in enumerate([1, 4, 16])]
        print_writers(rows)
    return postgres_checks(result, ratio, rounds, ops, rows)


# -- main --------------------------------------------------------------------------------------


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", default="1,4,16", help="client process counts")
    default_writes = int(os.environ.get("OCTOPODA_BENCH_PG_WRITES", "1000"))
    parser.add_argument("--writes", type=int, default=default_writes, help="writes per client")
    parser.add_argument("--ops", type=int, default=1000, help="ops per round (1 and 3)")
    parser.add_argument("--rounds", type=int, default=4, help="rounds (1 and 3)")
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
    return args


def main(argv: list[str]) -> int:
    if argv[:1] in (["--worker"], ["--raw-worker"]):
        run = worker if argv[0] == "--worker" else raw_worker
        run(argv[1], argv[2], int(argv[3]), float(argv[4]))
        return 0
    args = parse_args(argv)
    problem = server_problem(admin_url())
    if problem is not None:
        print(f"postgres_bench: skipped: {problem}")
        return 0
    failed = False
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    with bench_database(args.synchronous_commit) as url:
        print(f"synchronous_commit={args.synchronous_commit}, load average {load:.1f}")
        print(
            f"== remember vs raw psycopg INSERT + commit, interleaved op by op"
            f" ({args.rounds} x {args.ops}) =="
        )
        ratio = print_interleaved(interleaved_remember(url, args.ops, args.rounds))
        failed |= ratio < TARGET and not args.quick
        print(f"\n== concurrent writer processes, ours and raw ({args.writes} writes each) ==")
        counts = [int(c) for c in args.clients.split(",")]
        rows = [
            run_writers(url, c, args.writes, raw_first=n % 2 == 1) for n, c in enumerate(counts)
        ]
        print_writers(rows)
        failed |= any(writers_failed(r) for r in rows)
        print(
            f"\n== remember / recall latency: PostgreSQL vs SQLite ({args.rounds} x {args.ops}) =="
        )
        with tempfile.TemporaryDirectory() as tmp:
            print_latency(run_latency(url, args.ops, args.rounds, Path(tmp)))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
