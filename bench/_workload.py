"""The remember/recall workload shared by our library and the predecessor (octopoda 3.3.4).

Standard library only: this file also runs in the predecessor's own virtualenv, where our
``octopoda`` package is not importable (3.3.4 installs a top-level ``octopoda`` of its own).

As a script it runs one workload in this process and writes a JSON report::

    python _workload.py --impl ours|predecessor --ops N --out report.json [--store PATH]

``predecessor`` expects ``OCTOPODA_LOCAL_MODE=1`` and ``SYNRIX_DATA_DIR`` in the environment.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from typing import Any


def make_value(i: int) -> dict[str, Any]:
    """A small JSON dict (about 90 bytes), distinct for every ``i``."""
    return {
        "id": i,
        "name": f"user-{i}",
        "score": (i % 97) / 8,
        "active": i % 2 == 0,
        "tags": ["alpha", "beta"],
    }


def workload_key(i: int) -> str:
    """Unpadded on purpose: ``key-1`` is a prefix of ``key-10``..``key-19``, ``key-100``..."""
    return f"key-{i}"


# (write these, in order) -> (recall this key, expected value; None means "not found")
PREFIX_PROBES: list[tuple[list[tuple[str, str]], str, str | None]] = [
    ([("user", "Alice"), ("user_name", "Bob")], "user", "Alice"),
    ([], "USER", None),  # case: never written
    ([], "use", None),  # prefix of written keys, never written itself
    ([("goal", "ship"), ("goal_history", "draft")], "goal", "ship"),
]


def _percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def run(agent: Any, ops: int) -> dict[str, Any]:
    """Time ``ops`` remembers then ``ops`` recalls; count recalls of a wrong key's value."""
    values = [make_value(i) for i in range(ops)]
    keys = [workload_key(i) for i in range(ops)]
    clock = time.perf_counter
    write_lat: list[float] = []
    t0 = clock()
    for key, value in zip(keys, values, strict=True):
        t = clock()
        agent.remember(key, value)
        write_lat.append(clock() - t)
    write_total = clock() - t0

    read_lat: list[float] = []
    got: list[Any] = []
    t0 = clock()
    for key in keys:
        t = clock()
        got.append(agent.recall(key))
        read_lat.append(clock() - t)
    read_total = clock() - t0

    wrong = 0
    for i, result in enumerate(got):
        value = result.value if getattr(result, "found", True) else None
        # 3.3.4 adds bookkeeping fields (_tags, _stored_at...) to dicts: compare the id only.
        if not (isinstance(value, dict) and value.get("id") == i):
            wrong += 1

    probe_wrong: list[str] = []
    for writes, key, expected in PREFIX_PROBES:
        for k, v in writes:
            agent.remember(k, v)
        result = agent.recall(key)
        value = result.value if result.found else None
        if isinstance(value, dict) and "value" in value:  # 3.3.4 may wrap scalars
            value = value["value"]
        if value != expected:
            probe_wrong.append(f"recall({key!r}) -> {value!r}, expected {expected!r}")

    return {
        "ops": ops,
        "remember_ops_s": ops / write_total,
        "remember_p50_ms": statistics.median(write_lat) * 1e3,
        "remember_p99_ms": _percentile(write_lat, 0.99) * 1e3,
        "recall_ops_s": ops / read_total,
        "recall_p50_ms": statistics.median(read_lat) * 1e3,
        "recall_p99_ms": _percentile(read_lat, 0.99) * 1e3,
        "wrong_key_recalls": wrong,
        "probe_wrong": probe_wrong,
        "probes": len(PREFIX_PROBES),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--impl", choices=["ours", "predecessor"], required=True)
    parser.add_argument("--ops", type=int, default=1000)
    parser.add_argument("--out", required=True)
    parser.add_argument("--store", help="store file (ours only)")
    args = parser.parse_args(argv)

    t0 = time.perf_counter()
    from octopoda import AgentRuntime

    import_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    if args.impl == "ours":
        agent = AgentRuntime("bench-agent", store=args.store)
    else:
        agent = AgentRuntime("bench-agent")
    ctor_s = time.perf_counter() - t0
    report = run(agent, args.ops)
    report.update(impl=args.impl, import_ms=import_s * 1e3, ctor_ms=ctor_s * 1e3)
    try:
        import importlib.metadata

        report["version"] = importlib.metadata.version(
            "octopoda-core" if args.impl == "ours" else "octopoda"
        )
    except Exception as exc:  # version lookup is informative only
        report["version"] = f"unknown ({exc})"
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(report, f)
    sys.stdout.flush()
    sys.stderr.flush()
    # 3.3.4 runs background daemon threads that may keep the process alive; the report is
    # written, so leave without waiting for them.
    os._exit(0)


if __name__ == "__main__":
    raise SystemExit(main())
