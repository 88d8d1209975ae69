"""Shared pieces of the benchmarks: configuration, results, statistics, the raw baseline and
a bulk loader that writes through the store's own commit."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import statistics
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from octopoda import AgentRuntime, Event, Pipeline
from octopoda.store import MemoryWrite

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent

# The literal baseline of the issue: one connection, default isolation, WAL + NORMAL.
NS = "agent:bench"
RAW_SCHEMA = (
    "CREATE TABLE t (namespace TEXT, key TEXT, version INTEGER, value TEXT,"
    " PRIMARY KEY (namespace, key, version))"
)
RAW_INSERT = "INSERT INTO t (namespace, key, version, value) VALUES (?, ?, ?, ?)"
RAW_SELECT = "SELECT value FROM t WHERE namespace=? AND key=? ORDER BY version DESC LIMIT 1"


@dataclass
class Config:
    quick: bool
    tmp: Path
    seed: int = 1234

    def scale(self, full: int, quick: int) -> int:
        return quick if self.quick else full


@dataclass
class Check:
    """One line of the summary: a measured value against its target."""

    bench: str
    metric: str
    value: float | None
    target: str  # e.g. ">= 0.33"; "" for information only
    status: str  # PASS, FAIL, INFO, SKIP or ERROR
    unit: str = ""
    details: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def at_least(
        cls, bench: str, metric: str, value: float, minimum: float, unit: str = "", **d: Any
    ) -> Check:
        return cls(bench, metric, value, f">= {minimum:g}{unit}", _ok(value >= minimum), unit, d)

    @classmethod
    def at_most(
        cls, bench: str, metric: str, value: float, maximum: float, unit: str = "", **d: Any
    ) -> Check:
        return cls(bench, metric, value, f"<= {maximum:g}{unit}", _ok(value <= maximum), unit, d)

    @classmethod
    def skip(cls, bench: str, metric: str, reason: str) -> Check:
        return cls(bench, metric, None, "", "SKIP", "", {"reason": reason})

    @classmethod
    def info(cls, bench: str, metric: str, value: float | None, unit: str = "", **d: Any) -> Check:
        return cls(bench, metric, value, "", "INFO", unit, d)


def _ok(passed: bool) -> str:
    return "PASS" if passed else "FAIL"


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def median(samples: Iterable[float]) -> float:
    return statistics.median(list(samples))


def fmt_ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3f} ms"


def open_raw(path: Path, *, create: bool = True) -> sqlite3.Connection:
    """The baseline connection: ``sqlite3.connect(path)`` with WAL and synchronous=NORMAL."""
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    if create:
        conn.execute(RAW_SCHEMA)
        conn.commit()
    return conn


def interleaved_writes(
    raw_path: Path, our_path: Path, keys: list[str], values: list[Any], warmup: int = 50
) -> tuple[float, float]:
    """``remember()`` and the raw insert + commit, one op of each in turn (which goes
    first alternates), each timed on its own: total seconds of (raw, ours).

    Both sides run in the same moment of the machine, so the ratio does not depend on which
    side a slow stretch of a shared host happens to fall on; and neither runs in a loop of
    its own that keeps its code and data in the CPU caches, as no application does."""
    conn = open_raw(raw_path)
    agent = AgentRuntime("bench", store=our_path)
    try:
        remember, execute, commit, dumps = agent.remember, conn.execute, conn.commit, json.dumps
        for i, value in enumerate(values[:warmup]):  # untimed: first pages, statement cache
            execute(RAW_INSERT, (NS, f"warm-{i}", 1, dumps(value)))
            commit()
            remember(f"warm-{i}", value)
        clock = time.perf_counter
        raw = ours = 0.0
        for i, (key, value) in enumerate(zip(keys, values, strict=True)):
            if i % 2:
                t0 = clock()
                remember(key, value)
                t1 = clock()
                execute(RAW_INSERT, (NS, key, 1, dumps(value)))
                commit()
                t2 = clock()
                ours += t1 - t0
                raw += t2 - t1
            else:
                t0 = clock()
                execute(RAW_INSERT, (NS, key, 1, dumps(value)))
                commit()
                t1 = clock()
                remember(key, value)
                t2 = clock()
                raw += t1 - t0
                ours += t2 - t1
        return raw, ours
    finally:
        conn.close()
        agent.store.close()


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def bulk_load(
    agent: AgentRuntime,
    items: Iterable[tuple[str, Any]],
    *,
    batch: int = 50_000,
) -> int:
    """Append ``(key, value)`` versions (in order) through ``agent.store.commit``, ``batch``
    writes per event, so rows, events and the audit chain stay consistent. Returns the rows
    written. Much faster than ``remember`` per version: one transaction per batch."""
    store = agent.store
    pipeline = Pipeline()
    ns = f"agent:{agent.agent_id}"
    written = 0
    for chunk in _chunks(items, batch):
        writes = []
        for key, value in chunk:
            data = _compact(value)
            sha = hashlib.sha256(data.encode("utf-8")).hexdigest()
            writes.append(MemoryWrite(ns, key, "json", data, sha))
        event = Event(agent.agent_id, "import", {"source_agent": None}, round(time.time(), 6))
        store.commit(event, writes, pipeline)
        written += len(writes)
    return written


def _chunks(items: Iterable[tuple[str, Any]], size: int) -> Iterator[list[tuple[str, Any]]]:
    chunk: list[tuple[str, Any]] = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def section(title: str) -> None:
    print(f"\n== {title} ==", flush=True)


def line(text: str) -> None:
    print(f"   {text}", flush=True)
