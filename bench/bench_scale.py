"""Benchmark 3: recall latency does not grow with the file (O(log n) reads).

Two files: a small one with 10,000 versions (agent ``bench``: 1,000 keys x 10 versions) and
a big one with 1,000,000 (``bench``: 1,000 keys x 500 versions, plus 5 other agents with
1,000 keys x 100 versions each, since other agents' rows must not slow ``bench`` down either).
Both are built through the store's own commit, 50,000 versions per event (see
``_common.bulk_load``), so rows, events and the audit chain are what real use would leave.
Then ``recall`` of random ``bench`` keys, alternating blocks between the files; the target
compares the medians.
"""

from __future__ import annotations

import random
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from _common import Check, Config, bulk_load, line, median, percentile, section
from _workload import make_value

from octopoda import AgentRuntime

TARGET = 1.5
KEYS = 1000


def _versions(keys: int, versions: int) -> Iterator[tuple[str, Any]]:
    """Key-major (key order, then version order), as an import would write them."""
    for k in range(keys):
        key = f"key-{k:05d}"
        base = make_value(k)
        for v in range(versions):
            yield key, {**base, "v": v}


def _build(path: Path, layout: list[tuple[str, int]]) -> tuple[float, int]:
    """Write ``(agent, versions per key)`` for each agent; return seconds and rows."""
    t0 = time.perf_counter()
    rows = 0
    for agent_id, versions in layout:
        agent = AgentRuntime(agent_id, store=path)
        rows += bulk_load(agent, _versions(KEYS, versions))
    took = time.perf_counter() - t0
    return took, rows


def _counts(path: Path) -> tuple[int, int]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0]
        events = conn.execute("SELECT COUNT(*) FROM events").fetchone()[0]
        return rows, events
    finally:
        conn.close()


def bench_scale(cfg: Config) -> list[Check]:
    section("3. recall p50: 1,000,000 versions vs 10,000")
    big_bench = cfg.scale(500, 50)
    others = cfg.scale(100, 10)
    layouts = {
        "small": [("bench", 10)],
        "big": [("bench", big_bench)] + [(f"other-{j}", others) for j in range(5)],
    }
    expected_version = {"small": 10, "big": big_bench}
    agents: dict[str, AgentRuntime] = {}
    info: dict[str, Any] = {}
    for name, layout in layouts.items():
        path = cfg.tmp / f"scale-{name}.db"
        took, written = _build(path, layout)
        rows, events = _counts(path)
        size_mb = sum(p.stat().st_size for p in path.parent.glob(path.name + "*")) / 1e6
        info[name] = {"rows": rows, "events": events, "build_s": took, "size_mb": size_mb}
        line(
            f"{name}: {rows:,} versions ({written:,} written), {events} events,"
            f" {size_mb:,.0f} MB, built in {took:.1f} s ({written / took:,.0f} versions/s)"
        )
        agents[name] = AgentRuntime("bench", store=path)

    rng = random.Random(cfg.seed)
    blocks, per_block = cfg.scale(20, 4), cfg.scale(1000, 500)
    samples: dict[str, list[float]] = {"small": [], "big": []}
    wrong = 0
    clock = time.perf_counter
    try:
        for agent in agents.values():  # warm-up: every key once
            for k in range(KEYS):
                agent.recall(f"key-{k:05d}")
        for b in range(blocks):
            names = ["small", "big"] if b % 2 == 0 else ["big", "small"]
            keys = [f"key-{rng.randrange(KEYS):05d}" for _ in range(per_block)]
            for name in names:
                recall, out = agents[name].recall, samples[name]
                for key in keys:
                    t = clock()
                    result = recall(key)
                    out.append(clock() - t)
                    if result.version != expected_version[name] or result.value["id"] != int(
                        key[4:]
                    ):
                        wrong += 1
    finally:
        for agent in agents.values():
            agent.store.close()
    p50 = {name: median(s) for name, s in samples.items()}
    p99 = {name: percentile(s, 0.99) for name, s in samples.items()}
    ratio = p50["big"] / p50["small"]
    line(
        f"recall p50: small {p50['small'] * 1e6:.1f} us, big {p50['big'] * 1e6:.1f} us"
        f" (ratio {ratio:.2f}); p99: small {p99['small'] * 1e6:.1f} us,"
        f" big {p99['big'] * 1e6:.1f} us; {len(samples['big'])} recalls each; wrong {wrong}"
    )
    big_rows = info["big"]["rows"]
    return [
        Check.at_most(
            "scale",
            f"recall p50 at {big_rows:,} / at {info['small']['rows']:,} versions",
            ratio,
            TARGET,
            "x",
            p50_small_us=p50["small"] * 1e6,
            p50_big_us=p50["big"] * 1e6,
            p99_small_us=p99["small"] * 1e6,
            p99_big_us=p99["big"] * 1e6,
            files=info,
        ),
        Check.info(
            "scale",
            f"build time of the {big_rows:,}-version file",
            info["big"]["build_s"],
            " s",
            versions_per_s=big_rows / info["big"]["build_s"],
        ),
        Check.at_most("scale", "wrong values returned", wrong, 0),
    ]
