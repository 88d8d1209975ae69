"""OctopodaStorage beside CrewAI's default LanceDB storage: save and search, in one run.

    python bench/bench_crewai.py [--quick] [--records N] [--dim D]
    nox -s bench_crewai [-- --quick]

Needs octopoda-crewai (and so crewai, with LanceDB) installed. Both storages get the same
records and embeddings (seeded random unit vectors, ``--dim`` 384 by default, scopes
``/team/<k>``), on files in one temp dir:

* ``bulk save``: ``--records`` (10,000) records, 500 per ``save`` call;
* ``save, one record``: 200 more ``save([record])`` calls on the full store, as
  ``Memory.remember`` saves;
* ``search``: 200 queries, ``limit=10``, all scopes, and again with a ``scope_prefix``.

Each metric is the ratio ``LanceDB time / Octopoda time`` (1.0 = as fast, higher = faster),
the median of ``--rounds`` alternating runs. The targets are on the calls CrewAI's ``Memory``
makes (a ``save`` per remembered item, a ``search`` per recall); ``bulk save`` is INFO
(LanceDB appends one Arrow batch, Octopoda writes one version per record in one event).
Octopoda's writes are durable when ``save`` returns (SQLite WAL, ``synchronous=NORMAL``)
and each is an audited event. Exit status 1 when a target (>= 1.0) is missed, except
with ``--quick``.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import warnings
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any

os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("OTEL_SDK_DISABLED", "true")
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")

import numpy as np
from _common import line, median, section

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from crewai.memory.storage.lancedb_storage import LanceDBStorage
    from crewai.memory.types import MemoryRecord
    from octopoda_crewai import OctopodaStorage

TARGET = 1.0
BATCH = 500
SINGLE_SAVES = 200
QUERIES = 200


def records(n: int, dim: int, seed: int) -> list[MemoryRecord]:
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((n, dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return [
        MemoryRecord(
            content=f"memory {seed}-{i}: the deploy key of service {i % 97} rotates weekly",
            scope=f"/team/{i % 10}",
            categories=[f"c{i % 5}"],
            embedding=vectors[i].tolist(),
        )
        for i in range(n)
    ]


def queries(n: int, dim: int) -> list[list[float]]:
    rng = np.random.default_rng(7)
    return [v.tolist() for v in rng.standard_normal((n, dim)).astype(np.float32)]


def timed(func: Callable[[], Any]) -> float:
    start = time.perf_counter()
    func()
    return time.perf_counter() - start


def run(make: Callable[[], Any], data: list[MemoryRecord], extra: list[MemoryRecord],
        probes: list[list[float]]) -> dict[str, float]:  # fmt: skip
    storage = make()
    out: dict[str, float] = {}
    out["bulk save"] = timed(
        lambda: [storage.save(data[i : i + BATCH]) for i in range(0, len(data), BATCH)]
    )
    out["save, one record"] = timed(lambda: [storage.save([r]) for r in extra]) / len(extra)
    storage.search(probes[0], limit=10)  # warm
    out["search"] = timed(lambda: [storage.search(q, limit=10) for q in probes]) / len(probes)
    out["search, scope_prefix"] = timed(
        lambda: [storage.search(q, scope_prefix="/team/3", limit=10) for q in probes]
    ) / len(probes)
    found = storage.search(probes[0], limit=10)
    assert len(found) == 10, found
    if hasattr(storage, "close"):
        storage.close()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small N, never fails")
    parser.add_argument("--records", type=int, default=None)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--rounds", type=int, default=None)
    args = parser.parse_args(argv)
    n = args.records or (1000 if args.quick else 10_000)
    rounds = args.rounds or (1 if args.quick else 3)
    section(
        f"OctopodaStorage vs LanceDBStorage (crewai {version('crewai')}, lancedb"
        f" {version('lancedb')}, {n} records x {args.dim} dims, {rounds} rounds)"
    )
    line("durability: Octopoda durability='normal' (WAL + synchronous=NORMAL), every save audited")
    probes = queries(QUERIES, args.dim)
    ratios: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="octopoda-bench-crewai-") as tmp_dir:
        tmp = Path(tmp_dir)
        for r in range(rounds):
            data = records(n, args.dim, seed=r)
            extra = records(SINGLE_SAVES, args.dim, seed=1000 + r)
            ours_db, lance_dir = str(tmp / f"octopoda-{r}.db"), str(tmp / f"lance-{r}")
            sides: list[tuple[str, Callable[[], Any]]] = [
                ("ours", lambda db=ours_db: OctopodaStorage(db)),  # type: ignore[misc]
                ("lance", lambda d=lance_dir: LanceDBStorage(path=d)),  # type: ignore[misc]
            ]
            if r % 2:
                sides.reverse()
            results = {name: run(make, data, extra, probes) for name, make in sides}
            for metric, ours in results["ours"].items():
                ratios.setdefault(metric, []).append(results["lance"][metric] / ours)
                line(
                    f"round {r}: {metric:<22} octopoda {ours * 1000:9.3f} ms"
                    f"  lancedb {results['lance'][metric] * 1000:9.3f} ms"
                )
    print()
    failed = False
    for metric, values in ratios.items():
        value = median(values)
        status = "PASS" if value >= TARGET else "FAIL"
        if metric == "bulk save":
            status = "INFO"
        failed |= status == "FAIL"
        print(f"crewai  {metric:<22} {value:6.2f}x  >= {TARGET:g}  {status}")
    return 1 if failed and not args.quick else 0


if __name__ == "__main__":
    raise SystemExit(main())
