"""Benchmarks 1 and 2: ``remember()`` and ``recall()`` beside the raw sqlite3 baseline.

Both sides get the same keys and values, on files in the same temp dir; the result is the
median of the per-round ratios ``raw time / our time`` (1.0 = as fast as raw sqlite3).

``remember`` is checked with the two sides interleaved op by op (``interleaved_writes``):
on a shared host whose speed drifts by 10-20% from one second to the next, the ratio of
two separate loops depends on which loop the slow stretch falls on, while interleaved ops
see the same machine. The ratio of separate loops (rounds alternate which side goes
first) is printed too, as information. ``recall`` runs separate loops.
"""

from __future__ import annotations

import json
import random
import time
from pathlib import Path
from typing import Any

from _common import (
    NS,
    RAW_INSERT,
    RAW_SELECT,
    Check,
    Config,
    interleaved_writes,
    line,
    median,
    open_raw,
    section,
)
from _workload import make_value

from octopoda import AgentRuntime

TARGET = 0.33
WARMUP = 50


def _raw_writes(path: Path, keys: list[str], values: list[Any]) -> float:
    conn = open_raw(path)
    try:
        for i, value in enumerate(values[:WARMUP]):  # untimed: first pages, statement cache
            conn.execute(RAW_INSERT, (NS, f"warm-{i}", 1, json.dumps(value)))
            conn.commit()
        clock = time.perf_counter
        t0 = clock()
        for key, value in zip(keys, values, strict=True):
            conn.execute(RAW_INSERT, (NS, key, 1, json.dumps(value)))
            conn.commit()
        return clock() - t0
    finally:
        conn.close()


def _our_writes(path: Path, keys: list[str], values: list[Any]) -> float:
    agent = AgentRuntime("bench", store=path)
    try:
        remember = agent.remember
        for i, value in enumerate(values[:WARMUP]):  # untimed: the agent's first event
            remember(f"warm-{i}", value)
        clock = time.perf_counter
        t0 = clock()
        for key, value in zip(keys, values, strict=True):
            remember(key, value)
        return clock() - t0
    finally:
        agent.store.close()


WRITERS = {"raw": _raw_writes, "ours": _our_writes}


def bench_remember(cfg: Config) -> list[Check]:
    section("1. remember() vs raw sqlite3 insert + commit")
    rounds, ops = cfg.scale(7, 2), cfg.scale(3000, 1000)
    values = [make_value(i) for i in range(ops)]
    ratios: list[float] = []
    raw_us: list[float] = []
    our_us: list[float] = []
    for r in range(rounds):
        keys = [f"r{r}-key-{i:06d}" for i in range(ops)]
        raw, ours = interleaved_writes(
            cfg.tmp / f"i-raw-{r}.db", cfg.tmp / f"i-ours-{r}.db", keys, values, WARMUP
        )
        ratios.append(raw / ours)
        raw_us.append(raw / ops * 1e6)
        our_us.append(ours / ops * 1e6)
        line(
            f"interleaved round {r + 1}/{rounds}: raw {raw_us[-1]:7.1f} us/op,"
            f" ours {our_us[-1]:7.1f} us/op, ratio {ratios[-1]:.3f}"
        )
    ratio = median(ratios)
    line(
        f"median: raw {median(raw_us):.1f} us/op ({1e6 / median(raw_us):,.0f}/s),"
        f" ours {median(our_us):.1f} us/op ({1e6 / median(our_us):,.0f}/s); ratio {ratio:.3f}"
    )
    loop_ratios: list[float] = []
    for r in range(rounds):
        keys = [f"s{r}-key-{i:06d}" for i in range(ops)]
        order = ["raw", "ours"] if r % 2 == 0 else ["ours", "raw"]
        took = {name: WRITERS[name](cfg.tmp / f"w-{name}-{r}.db", keys, values) for name in order}
        loop_ratios.append(took["raw"] / took["ours"])
    line(
        "separate loops, per round: "
        + ", ".join(f"{x:.3f}" for x in loop_ratios)
        + f"; median {median(loop_ratios):.3f}"
    )
    return [
        Check.at_least(
            "remember",
            f"raw/ours time per op, interleaved ({rounds}x{ops} ops)",
            ratio,
            TARGET,
            "x",
            rounds=ratios,
            raw_us_per_op=median(raw_us),
            ours_us_per_op=median(our_us),
        ),
        Check.info(
            "remember",
            f"raw/ours time per op, separate loops ({rounds}x{ops} ops)",
            median(loop_ratios),
            "x",
            rounds=loop_ratios,
        ),
    ]


def bench_recall(cfg: Config) -> list[Check]:
    section("2. recall() vs raw indexed select + json.loads")
    n_keys, rounds, ops = cfg.scale(5000, 500), cfg.scale(7, 2), cfg.scale(20_000, 2000)
    keys = [f"key-{i:06d}" for i in range(n_keys)]
    values = [make_value(i) for i in range(n_keys)]

    raw = open_raw(cfg.tmp / "r-raw.db")
    rows = [(NS, k, 1, json.dumps(v)) for k, v in zip(keys, values, strict=True)]
    raw.executemany(RAW_INSERT, rows)
    raw.commit()
    agent = AgentRuntime("bench", store=cfg.tmp / "r-ours.db")
    for k, v in zip(keys, values, strict=True):
        agent.remember(k, v)

    rng = random.Random(cfg.seed)
    wrong = {"raw": 0, "ours": 0}
    ratios: list[float] = []
    raw_us: list[float] = []
    our_us: list[float] = []

    def raw_reads(order: list[int]) -> tuple[float, list[Any]]:
        execute, loads, out = raw.execute, json.loads, []
        t0 = time.perf_counter()
        for i in order:
            out.append(loads(execute(RAW_SELECT, (NS, keys[i])).fetchone()[0]))
        return time.perf_counter() - t0, out

    def our_reads(order: list[int]) -> tuple[float, list[Any]]:
        recall, out = agent.recall, []
        t0 = time.perf_counter()
        for i in order:
            out.append(recall(keys[i]).value)
        return time.perf_counter() - t0, out

    try:
        raw_reads(list(range(n_keys)))  # warm both page caches
        our_reads(list(range(n_keys)))
        for r in range(rounds):
            order = [rng.randrange(n_keys) for _ in range(ops)]
            runs = {"raw": raw_reads, "ours": our_reads}
            names = ["raw", "ours"] if r % 2 == 0 else ["ours", "raw"]
            took: dict[str, float] = {}
            for name in names:
                took[name], got = runs[name](order)
                wrong[name] += sum(1 for i, v in zip(order, got, strict=True) if v != values[i])
            ratios.append(took["raw"] / took["ours"])
            raw_us.append(took["raw"] / ops * 1e6)
            our_us.append(took["ours"] / ops * 1e6)
            line(
                f"round {r + 1}/{rounds}: raw {raw_us[-1]:6.2f} us/op,"
                f" ours {our_us[-1]:6.2f} us/op, ratio {ratios[-1]:.3f}"
            )
    finally:
        raw.close()
        agent.store.close()
    ratio = median(ratios)
    line(
        f"median: raw {median(raw_us):.2f} us/op ({1e6 / median(raw_us):,.0f}/s),"
        f" ours {median(our_us):.2f} us/op ({1e6 / median(our_us):,.0f}/s); ratio {ratio:.3f};"
        f" wrong values: raw {wrong['raw']}, ours {wrong['ours']}"
    )
    return [
        Check.at_least(
            "recall",
            f"raw/ours time per op ({rounds}x{ops} ops, {n_keys} keys)",
            ratio,
            TARGET,
            "x",
            rounds=ratios,
            raw_us_per_op=median(raw_us),
            ours_us_per_op=median(our_us),
        ),
        Check.at_most("recall", "wrong or missing values returned", wrong["ours"], 0),
    ]
