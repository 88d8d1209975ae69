"""Benchmark 7: what loop detection costs per recorded action, and remember() still within
its ratio of raw sqlite3.

Two runtimes on two files in the temp dir replay the same long stream of mixed actions
(50,000; 5,000 with ``--quick``): memory writes and reads, tool calls (some failing, some
repeating), LLM calls, decisions and handoffs. One is a default ``AgentRuntime`` (the five
detectors on); on the other the detectors are taken out right after construction: the
first processor of ``agent.pipeline`` is the loop guard's novelty tracker, which counts
the action and runs the five detectors, and reads go through
``agent._guard.observe_read``. The stream is replayed in blocks of 500 actions,
alternating which runtime goes first; every call is timed on its own. The result is the
difference of the medians per action kind (``remember`` and ``record_tool_call`` are the
target; the other kinds are information), plus the median of the per-block differences
as a check on drift.

Then ``remember()`` with detection is run beside the raw sqlite3 baseline of ``_common``
(one connection, WAL, ``synchronous=NORMAL``, insert + commit per op), fresh files per round
and alternating order as in benchmark 1, to confirm the foundation's ratio still holds.
"""

from __future__ import annotations

import json
import logging
import random
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _common import NS, RAW_INSERT, Check, Config, line, median, open_raw, section
from _workload import make_value

from octopoda import AgentRuntime

TARGET_US = 10.0  # detection may add at most this much per recorded action (median)
RATIO_TARGET = 0.33  # benchmark 1's target: raw time / our time per remember
BLOCK = 500
KINDS = ("remember", "tool_call", "recall", "llm_call", "decision", "handoff")
TOOLS = [f"tool_{i}" for i in range(12)]
DETECTION_PROCESSORS = 1  # the novelty tracker: it counts actions and runs the detectors

Action = tuple[str, tuple[Any, ...]]


def make_stream(n: int, seed: int) -> list[Action]:
    """``n`` mixed actions, mostly progress, with the repeats real agents make: the same
    call with the same arguments now and then, short failure runs, read-and-write-back."""
    rng = random.Random(seed)
    out: list[Action] = []
    keys = [f"mem-{k}" for k in range(400)]
    for i in range(n):
        r = rng.random()
        if r < 0.35:
            out.append(("remember", (rng.choice(keys), make_value(i))))
        elif r < 0.70:
            tool = rng.choice(TOOLS)
            args = {"q": rng.randrange(40), "page": rng.randrange(3)}
            if rng.random() < 0.1:
                out.append(("tool_call", (tool, args, None, f"HTTP 503 after {i % 900} ms")))
            else:
                result = {"items": [i % 17, i % 5]} if rng.random() < 0.3 else {"n": i}
                out.append(("tool_call", (tool, args, result, None)))
        elif r < 0.80:
            out.append(("recall", (rng.choice(keys),)))
        elif r < 0.90:
            out.append(("llm_call", ("gpt-4o-mini", rng.randrange(50, 900))))
        elif r < 0.98:
            topic = rng.randrange(30)
            out.append(("decision", (f"use approach {rng.randrange(4)} for topic {topic}", topic)))
        else:
            out.append(("handoff", (rng.choice(["reviewer", "planner"]), {"task": i % 50})))
    return out


def _runner(agent: AgentRuntime) -> dict[str, Callable[..., Any]]:
    def tool(name: str, args: Any, result: Any, error: str | None) -> Any:
        return agent.record_tool_call(name, args, result=result, error=error, cost_usd=0.0001)

    return {
        "remember": agent.remember,
        "tool_call": tool,
        "recall": agent.recall,
        "llm_call": lambda model, tokens: agent.record_llm_call(model, tokens_in=tokens),
        "decision": lambda text, topic: agent.log_decision(text, context={"subject": topic}),
        "handoff": agent.record_handoff,
    }


def strip_detection(agent: AgentRuntime) -> None:
    """Take the loop guard's processor (the novelty tracker and the five detectors) and
    its read observer out."""
    guard = agent._guard
    processors = agent.pipeline.processors
    expected = guard.processors()  # the counter, the novelty tracker and the detectors
    if processors[:DETECTION_PROCESSORS] != expected or len(expected) != DETECTION_PROCESSORS:
        raise RuntimeError(
            "the agent pipeline no longer starts with the loop guard's processors"
            f"  ({processors[:DETECTION_PROCESSORS]!r}); update bench_loops.py"
        )
    del processors[:DETECTION_PROCESSORS]
    guard.observe_read = lambda *args: None  # type: ignore[method-assign]


def _replay(
    calls: dict[str, Callable[..., Any]], block: list[Action], into: dict[str, list[float]]
) -> None:
    clock = time.perf_counter
    for kind, args in block:
        call = calls[kind]
        t0 = clock()
        call(*args)
        into[kind].append(clock() - t0)


def _detection_overhead(cfg: Config) -> list[Check]:
    n = cfg.scale(50_000, 5_000)
    stream = make_stream(n, cfg.seed)
    on = AgentRuntime("bench-loops", store=cfg.tmp / "loops-on.db")
    off = AgentRuntime("bench-loops", store=cfg.tmp / "loops-off.db")
    strip_detection(off)
    sides = {"on": _runner(on), "off": _runner(off)}
    warm = make_stream(200, cfg.seed + 1)  # untimed: first pages, caches
    for calls in sides.values():
        _replay(calls, warm, defaultdict(list))
    samples: dict[str, dict[str, list[float]]] = {"on": defaultdict(list), "off": defaultdict(list)}
    block_deltas: dict[str, list[float]] = defaultdict(list)
    t0 = time.perf_counter()
    try:
        for b, start in enumerate(range(0, n, BLOCK)):
            block = stream[start : start + BLOCK]
            per_block: dict[str, dict[str, list[float]]] = {}
            for side in ("on", "off") if b % 2 == 0 else ("off", "on"):
                per_block[side] = defaultdict(list)
                _replay(sides[side], block, per_block[side])
                for kind, times in per_block[side].items():
                    samples[side][kind].extend(times)
            for kind in ("remember", "tool_call"):
                if per_block["on"][kind] and per_block["off"][kind]:
                    block_deltas[kind].append(
                        median(per_block["on"][kind]) - median(per_block["off"][kind])
                    )
    finally:
        loops = on.stats().loops_detected
        on.store.close()
        off.store.close()
    took = time.perf_counter() - t0
    line(f"{n:,} actions per side in blocks of {BLOCK}, alternating order ({took:.1f} s)")
    added: dict[str, float] = {}
    details: dict[str, Any] = {}
    for kind in KINDS:
        med_on = median(samples["on"][kind]) * 1e6
        med_off = median(samples["off"][kind]) * 1e6
        added[kind] = med_on - med_off
        details[kind] = {
            "count": len(samples["on"][kind]),
            "median_on_us": round(med_on, 2),
            "median_off_us": round(med_off, 2),
            "added_us": round(added[kind], 2),
        }
        line(
            f"{kind:<9} x{len(samples['on'][kind]):>6,}: with detection {med_on:7.1f} us,"
            f" without {med_off:7.1f} us, added {added[kind]:+6.2f} us"
        )
    recorded = samples["on"]["remember"] + samples["on"]["tool_call"]
    recorded_off = samples["off"]["remember"] + samples["off"]["tool_call"]
    overall = (median(recorded) - median(recorded_off)) * 1e6
    blockwise = {k: median(v) * 1e6 for k, v in block_deltas.items()}
    line(
        f"remember + record_tool_call: added {overall:+.2f} us per action (median);"
        f" per-block medians: remember {blockwise['remember']:+.2f} us,"
        f" tool_call {blockwise['tool_call']:+.2f} us; {loops} loop(s) detected in the stream"
    )
    return [
        Check.at_most(
            "loops",
            f"detection added per recorded action (median, {n:,} actions)",
            overall,
            TARGET_US,
            " us",
            kinds=details,
            blockwise_us=blockwise,
            loops_detected=loops,
        ),
        Check.at_most(
            "loops", "detection added per remember (median)", added["remember"], TARGET_US, " us"
        ),
        Check.at_most(
            "loops",
            "detection added per record_tool_call (median)",
            added["tool_call"],
            TARGET_US,
            " us",
        ),
        Check.info("loops", "detection added per decision (median)", added["decision"], " us"),
        Check.info("loops", "detection added per handoff (median)", added["handoff"], " us"),
        Check.info("loops", "detection added per recall (median)", added["recall"], " us"),
    ]


def _raw_writes(path: Path, values: list[Any]) -> float:
    conn = open_raw(path)
    try:
        for i, value in enumerate(values[:50]):  # untimed warm-up, as in benchmark 1
            conn.execute(RAW_INSERT, (NS, f"warm-{i}", 1, json.dumps(value)))
            conn.commit()
        t0 = time.perf_counter()
        for i, value in enumerate(values):
            conn.execute(RAW_INSERT, (NS, f"key-{i}", 1, json.dumps(value)))
            conn.commit()
        return time.perf_counter() - t0
    finally:
        conn.close()


def _our_writes(path: Path, values: list[Any]) -> float:
    agent = AgentRuntime("bench", store=path)  # the default: detection on
    try:
        remember = agent.remember
        for i, value in enumerate(values[:50]):
            remember(f"warm-{i}", value)
        t0 = time.perf_counter()
        for i, value in enumerate(values):
            remember(f"key-{i}", value)
        return time.perf_counter() - t0
    finally:
        agent.store.close()


def _remember_ratio(cfg: Config) -> list[Check]:
    rounds, ops = cfg.scale(5, 2), cfg.scale(3000, 1000)
    values = [make_value(i) for i in range(ops)]
    writers = {"raw": _raw_writes, "ours": _our_writes}
    ratios: list[float] = []
    for r in range(rounds):
        order = ["raw", "ours"] if r % 2 == 0 else ["ours", "raw"]
        took = {
            name: writers[name](cfg.tmp / f"loops-ratio-{name}-{r}.db", values) for name in order
        }
        ratios.append(took["raw"] / took["ours"])
        line(
            f"round {r + 1}/{rounds}: raw {took['raw'] / ops * 1e6:6.1f} us/op,"
            f" remember {took['ours'] / ops * 1e6:6.1f} us/op, ratio {ratios[-1]:.3f}"
        )
    ratio = median(ratios)
    line(f"remember with detection: raw/ours {ratio:.3f} (target >= {RATIO_TARGET})")
    return [
        Check.at_least(
            "loops",
            f"remember with detection: raw/ours ({rounds}x{ops} ops)",
            ratio,
            RATIO_TARGET,
            "x",
            rounds=ratios,
        )
    ]


def bench_loops(cfg: Config) -> list[Check]:
    section("7. loop detection: added time per recorded action, remember vs raw sqlite3")
    logger = logging.getLogger("octopoda")
    level = logger.level
    logger.setLevel(logging.ERROR)  # the stream's loops are logged at WARNING: not here
    try:
        return _detection_overhead(cfg) + _remember_ratio(cfg)
    finally:
        logger.setLevel(level)
