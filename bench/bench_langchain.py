"""OctopodaSaver against LangGraph's own SqliteSaver, on the same checkpoint workload.

    python bench/bench_langchain.py [--quick] [--rounds N] [--checkpoints N] [--json PATH]
        [--list-sizes 10000,100000]
    nox -s bench_langchain [-- --quick]

Two workloads; both sides get exactly the same objects. ``agent``: one thread of N
checkpoints as a chat agent makes them, each with a ``messages`` channel of the last 12 chat
messages (~2.5 KB serialized) and a step counter. ``compact``: a workflow graph's small
state (a counter and a 200-character note). Both with metadata ``{source, step, parents,
run_id}`` and two pending writes per step. Each round uses fresh files in a temp dir and
alternates which side goes first; results are medians of the per-round ratios
``SqliteSaver time / OctopodaSaver time`` (>= 1.0: ours is as fast or faster).

* ``put``: N ``put`` calls (each ours is an audited Octopoda event); ``put_writes`` after
  each put is timed separately (INFO).
* ``get_tuple``: the thread's newest checkpoint (as every ``invoke`` loads it) and random
  checkpoints by id, 2N reads each round, on the savers that wrote them.

Context rows (INFO): OctopodaSaver with ``durability="full"`` (fsync per commit, what
SqliteSaver's default ``synchronous=FULL`` gives) for ``put``; OctopodaSaver without its read
cache (``cache_size=0``) for ``get_tuple``. Targets: put and get_tuple ratio >= 1.0.

``list``: ``list(None, limit=10)`` across every thread at 10,000 and 100,000 checkpoints
(2,000 and 10,000 with ``--quick``; 100 per thread), without a filter, with a filter most
checkpoints match (``source: loop``), one 1% match (``source: input``) and one only the
oldest thread matches (``run_id``, so both sides read everything). Ours is filled through
``OctopodaSaver.put``; SqliteSaver's rows are inserted as its ``put`` writes them, in one
transaction, to keep the setup short. Target: at most 2x SqliteSaver's time (ratio
``SqliteSaver time / OctopodaSaver time`` >= 0.5).
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _common import Check, line, median, section
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.base.id import uuid6
from langgraph.checkpoint.sqlite import SqliteSaver
from octopoda_langchain import OctopodaSaver

from octopoda import AgentRuntime

TARGET = 1.0
LIST_TARGET = 0.5  # within 2x of SqliteSaver
LIST_FILTERS: dict[str, dict[str, Any] | None] = {
    "no filter": None,
    "source=loop": {"source": "loop"},
    "source=input (1%)": {"source": "input"},
    "oldest run_id": {"run_id": "run-0"},
}


Step = tuple[Any, dict[str, Any], list[tuple[str, Any]]]


def workload(kind: str, n: int, seed: int) -> list[Step]:
    """``n`` (checkpoint, metadata, writes) triples, ids increasing as LangGraph makes them."""
    rng = random.Random(seed)
    messages: list[Any] = []
    steps = []
    for step in range(n):
        text = " ".join(rng.choice(["tea", "order", "ship", "refund", "status"]) for _ in range(30))
        cp = empty_checkpoint()
        cp["v"] = 4  # the format LangGraph's graphs write (empty_checkpoint() says 2)
        cp["id"] = str(uuid6(clock_seq=step))
        if kind == "agent":
            messages = [*messages, HumanMessage(text) if step % 2 else AIMessage(text)][-12:]
            cp["channel_values"] = {"messages": list(messages), "step": step}
            writes: list[tuple[str, Any]] = [("messages", [AIMessage(f"reply {step}")])]
        else:
            cp["channel_values"] = {"note": text[:200], "step": step}
            writes = [("note", f"note {step}")]
        writes.append(("step", step + 1))
        cp["channel_versions"] = {k: f"{step + 1:032}.0" for k in cp["channel_values"]}
        cp["versions_seen"] = {"agent": {"step": f"{step:032}.0"}}
        metadata = {"source": "loop", "step": step, "parents": {}, "run_id": "run-1"}
        steps.append((cp, metadata, writes))
    return steps


Config = dict[str, Any]


def fill(saver: Any, steps: list[Step]) -> tuple[float, float, list[Config]]:
    """Time the puts and the put_writes of one thread; the stored configs."""
    config: Config = {"configurable": {"thread_id": "bench", "checkpoint_ns": ""}}
    put_s = writes_s = 0.0
    configs = []
    clock = time.perf_counter
    for i, (cp, metadata, writes) in enumerate(steps):
        t0 = clock()
        config = saver.put(config, cp, metadata, {})
        t1 = clock()
        saver.put_writes(config, writes, f"task-{i}")
        writes_s += clock() - t1
        put_s += t1 - t0
        configs.append(config)
    return put_s, writes_s, configs


def reads(saver: Any, configs: list[Config], order: list[int]) -> float:
    latest: Config = {"configurable": {"thread_id": "bench", "checkpoint_ns": ""}}
    get = saver.get_tuple
    t0 = time.perf_counter()
    for i in order:
        assert get(latest) is not None
        assert get(configs[i]) is not None
    return time.perf_counter() - t0


def sqlite_saver(path: Path) -> Any:
    return SqliteSaver(sqlite3.connect(path, check_same_thread=False))


def octopoda_saver(path: Path, *, durability: str = "normal", cache_size: int = 1024) -> Any:
    agent = AgentRuntime("bench", store=str(path), durability=durability)  # type: ignore[arg-type]
    return OctopodaSaver(agent, cache_size=cache_size)


def close(saver: Any) -> None:
    if isinstance(saver, SqliteSaver):
        saver.conn.close()
    else:
        saver.agent.store.close()


SIDES: dict[str, Callable[[Path], Any]] = {
    "sqlite": sqlite_saver,
    "octopoda": octopoda_saver,
    "octopoda-full": lambda p: octopoda_saver(p, durability="full"),
    "octopoda-nocache": lambda p: octopoda_saver(p, cache_size=0),
}


def measure(kind: str, rounds: int, n: int, tmp: Path) -> dict[str, dict[str, list[float]]]:
    """Seconds per round for each side: N puts, N put_writes and 2N get_tuple calls."""
    steps = workload(kind, n, seed=7)
    timings: dict[str, dict[str, list[float]]] = {
        side: {"put": [], "writes": [], "get": []} for side in SIDES
    }
    for r in range(rounds):
        names = list(SIDES) if r % 2 == 0 else list(reversed(SIDES))
        order = [random.Random(r).randrange(n) for _ in range(n)]
        for name in names:
            saver = SIDES[name](tmp / f"{kind}-{name}-{r}.db")
            try:
                fill(saver, workload(kind, 5, seed=99 + r))  # untimed: first pages, caches
                put_s, writes_s, configs = fill(saver, steps)
                get_s = reads(saver, configs, order)
            finally:
                close(saver)
            for metric, seconds in (("put", put_s), ("writes", writes_s), ("get", get_s)):
                timings[name][metric].append(seconds)
    return timings


def report(
    kind: str, n: int, rounds: int, timings: dict[str, dict[str, list[float]]]
) -> list[Check]:
    def ratio(metric: str, ours: str) -> float:
        pairs = zip(timings["sqlite"][metric], timings[ours][metric], strict=True)
        return median(s / o for s, o in pairs)

    def per_op(name: str, metric: str, ops: int) -> str:
        return f"{median(timings[name][metric]) / ops * 1e6:8.1f} us"

    section(f"OctopodaSaver vs LangGraph SqliteSaver: {kind} workload")
    line(f"{rounds} rounds x {n} checkpoints; medians per operation:")
    line(f"{'':18} {'put':>11} {'put_writes':>11} {'get_tuple':>11}")
    for name in SIDES:
        cells = [per_op(name, "put", n), per_op(name, "writes", n), per_op(name, "get", 2 * n)]
        line(f"{name:18} {' '.join(cells)}")
    bench = f"langchain-{kind}"
    return [
        Check.at_least(bench, "put ratio (sqlite / octopoda)", ratio("put", "octopoda"), TARGET),
        Check.at_least(bench, "get_tuple ratio", ratio("get", "octopoda"), TARGET),
        Check.info(bench, "put_writes ratio", ratio("writes", "octopoda")),
        Check.info(bench, "put ratio, octopoda durability=full", ratio("put", "octopoda-full")),
        Check.info(bench, "get_tuple ratio, octopoda cache off", ratio("get", "octopoda-nocache")),
    ]


def listing_steps(n: int) -> list[tuple[Config, Any, dict[str, Any]]]:
    """``n`` checkpoints in threads of 100 (a new run each), as LangGraph writes them."""
    out = []
    for i in range(n):
        thread, step = divmod(i, 100)
        cp = empty_checkpoint()
        cp["v"] = 4
        cp["id"] = str(uuid6(clock_seq=i))
        cp["channel_values"] = {"note": f"note {i} " * 20, "step": step}
        config: Config = {"configurable": {"thread_id": f"t{thread}", "checkpoint_ns": ""}}
        metadata = {
            "source": "input" if step == 0 else "loop",
            "step": step,
            "parents": {},
            "run_id": f"run-{thread}",
        }
        out.append((config, cp, metadata))
    return out


def fill_sqlite_rows(saver: Any, steps: list[tuple[Config, Any, dict[str, Any]]]) -> None:
    """SqliteSaver's rows as its ``put`` makes them (serde, metadata JSON), in one go."""
    from langgraph.checkpoint.base import get_checkpoint_metadata

    saver.setup()
    rows = []
    parent: dict[str, str | None] = {}
    for config, cp, metadata in steps:
        thread = config["configurable"]["thread_id"]
        type_, blob = saver.serde.dumps_typed(cp)
        meta = json.dumps(get_checkpoint_metadata(config, metadata), ensure_ascii=False)
        rows.append((thread, "", cp["id"], parent.get(thread), type_, blob, meta.encode()))
        parent[thread] = cp["id"]
    with saver.conn:
        saver.conn.executemany("INSERT INTO checkpoints VALUES (?, ?, ?, ?, ?, ?, ?)", rows)


def fill_octopoda(saver: Any, steps: list[tuple[Config, Any, dict[str, Any]]]) -> None:
    parent: dict[str, Config] = {}
    for config, cp, metadata in steps:
        thread = config["configurable"]["thread_id"]
        parent[thread] = saver.put(parent.get(thread, config), cp, metadata, {})


def measure_listing(n: int, reps: int, tmp: Path) -> dict[str, dict[str, list[float]]]:
    """Seconds of ``list(None, limit=10)`` per filter for both sides, interleaved."""
    steps = listing_steps(n)
    sqlite = sqlite_saver(tmp / f"list-sqlite-{n}.db")
    ours = octopoda_saver(tmp / f"list-octopoda-{n}.db")
    fill_sqlite_rows(sqlite, steps)
    fill_octopoda(ours, steps)
    timings: dict[str, dict[str, list[float]]] = {
        name: {"sqlite": [], "octopoda": []} for name in LIST_FILTERS
    }
    try:
        for rep in range(reps + 1):
            sides = [("sqlite", sqlite), ("octopoda", ours)]
            for name, wanted in LIST_FILTERS.items():
                counts = []
                for side, saver in sides if rep % 2 else reversed(sides):
                    t0 = time.perf_counter()
                    found = list(saver.list(None, filter=wanted, limit=10))
                    seconds = time.perf_counter() - t0
                    counts.append(len(found))
                    if rep:  # the first round warms both up
                        timings[name][side].append(seconds)
                assert counts[0] == counts[1], (name, counts)
    finally:
        close(sqlite)
        close(ours)
    return timings


def report_listing(n: int, timings: dict[str, dict[str, list[float]]]) -> list[Check]:
    section(f"list(None, limit=10) across every thread: {n:,} checkpoints")
    line(f"{'':20} {'SqliteSaver':>12} {'OctopodaSaver':>14} {'ratio':>7}")
    checks = []
    for name, sides in timings.items():
        ratio = median(s / o for s, o in zip(sides["sqlite"], sides["octopoda"], strict=True))
        cells = (
            f"{median(sides['sqlite']) * 1e3:9.2f} ms {median(sides['octopoda']) * 1e3:11.2f} ms"
        )
        line(f"{name:20} {cells} {ratio:7.2f}")
        checks.append(Check.at_least(f"langchain-list-{n // 1000}k", name, ratio, LIST_TARGET))
    return checks


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small smoke run; never fails")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--checkpoints", type=int, default=None)
    parser.add_argument("--json", type=Path, default=None, help="also write results as JSON")
    parser.add_argument(
        "--list-sizes",
        default=None,
        help="checkpoint counts of the list measurement, comma-separated (0: skip it)",
    )
    args = parser.parse_args(argv)
    rounds = args.rounds or (2 if args.quick else 7)
    n = args.checkpoints or (60 if args.quick else 300)
    checks: list[Check] = []
    timings: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="octopoda-bench-lc-") as tmp:
        for kind in ("agent", "compact"):
            timings[kind] = measure(kind, rounds, n, Path(tmp))
            checks += report(kind, n, rounds, timings[kind])
        sizes = [2_000, 10_000] if args.quick else [10_000, 100_000]
        if args.list_sizes is not None:
            sizes = [int(x) for x in args.list_sizes.split(",") if int(x) > 0]
        for size in sizes:
            timings[f"list-{size}"] = measure_listing(size, rounds, Path(tmp))
            checks += report_listing(size, timings[f"list-{size}"])
    print()
    for c in checks:
        value = "-" if c.value is None else f"{c.value:.2f}"
        print(f"   {c.status:5} {c.bench:18} {c.metric:38} {value:>6}  {c.target}")
    if args.json:
        args.json.write_text(
            json.dumps({"checks": [c.__dict__ for c in checks], "timings": timings}, indent=2)
        )
    failed = any(c.status == "FAIL" for c in checks)
    return 0 if args.quick or not failed else 1


if __name__ == "__main__":
    sys.exit(main())
