"""Benchmark 7: what loop detection costs per recorded action, and remember() still within
its ratio of raw sqlite3.

One agent on one file replays a long stream of mixed actions (50,000; 5,000 with
``--quick``): memory writes and reads, tool calls (some failing, some repeating), LLM
calls, decisions and handoffs. Every action runs twice in turn, once with the agent's loop
detection on and once with it switched off (``Detection``: the first processor of
``agent.pipeline`` is the loop guard's novelty tracker, which counts the action and runs
the five detectors; reads go through ``agent._guard.observe_read``); which goes first
alternates, and each call is timed on its own. Both calls of a pair run on the same file,
connection and caches, at the same moment of the machine, so their difference is what
detection adds; detection sees each action of the stream once. The result is the
difference of the medians per action kind; the median of the pairs' differences is
printed beside it. ``remember`` and ``record_tool_call`` must stay within 10 us,
``log_decision`` within 15 us and ``record_handoff`` within 30 us; recalls and LLM calls
are information. Handoffs answered by a partner agent (which each handoff then reads)
are measured the same way, for information.

The paraphrase path (texts compared as paraphrases, only once a cheap check found a
candidate: ``octopoda._loops.paraphrase``) is measured the same way on a stream made of
candidates, for information: searches reworded with the same echoed hits, a call whose
short answers come back reworded, a plan rewritten in other words, thoughts restated,
and a talk-only exchange of new texts (each pass compared with the contents kept). The
main stream prints how often it compared texts (it should be never), and the result
gists computed at record time (outside the detectors) are timed beside the plain digest.

Then ``remember()`` with detection is run beside the raw sqlite3 baseline of ``_common``
(one connection, WAL, ``synchronous=NORMAL``, insert + commit per op), interleaved op by op
on fresh files per round as in benchmark 1, to confirm the foundation's ratio still holds.
"""

from __future__ import annotations

import hashlib
import logging
import random
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from _common import Check, Config, interleaved_writes, line, median, section
from _workload import make_value

from octopoda import AgentRuntime
from octopoda._canonical import canonical_text
from octopoda._loops.gists import volatile_gist

TARGET_US = 10.0  # detection may add at most this much per recorded action (median)
HANDOFF_TARGET_US = 30.0  # ... per handoff (median): the pass log, not a read of 48 passes
DECISION_TARGET_US = 15.0  # ... per decision (median)
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


class Detection:
    """Switches an agent's loop detection off and on: its pipeline processor (the novelty
    tracker, which counts the action and runs the five detectors) and its read observer."""

    def __init__(self, agent: AgentRuntime) -> None:
        guard = agent._guard
        self.guard = guard
        self.processors = agent.pipeline.processors
        expected = guard.processors()
        if self.processors[:DETECTION_PROCESSORS] != expected or len(expected) != (
            DETECTION_PROCESSORS
        ):
            raise RuntimeError(
                "the agent pipeline no longer starts with the loop guard's processors"
                f"  ({self.processors[:DETECTION_PROCESSORS]!r}); update bench_loops.py"
            )
        self.detect = expected
        self.observe_read = guard.observe_read

    def off(self) -> None:
        del self.processors[:DETECTION_PROCESSORS]
        self.guard.observe_read = lambda *args: None  # type: ignore[method-assign]

    def on(self) -> None:
        self.processors[:0] = self.detect
        self.guard.observe_read = self.observe_read  # type: ignore[method-assign]


def _detection_overhead(cfg: Config) -> list[Check]:
    n = cfg.scale(50_000, 5_000)
    stream = make_stream(n, cfg.seed)
    agent = AgentRuntime("bench-loops", store=cfg.tmp / "loops.db")
    detection = Detection(agent)
    calls = _runner(agent)
    for kind, args in make_stream(200, cfg.seed + 1):  # untimed: first pages, caches
        calls[kind](*args)
    samples: dict[str, dict[str, list[float]]] = {"on": defaultdict(list), "off": defaultdict(list)}
    paired: dict[str, list[float]] = defaultdict(list)
    clock = time.perf_counter
    detection.off()
    t0 = clock()
    try:
        for i, (kind, args) in enumerate(stream):
            call = calls[kind]
            took = {}
            for side in ("on", "off") if i % 2 == 0 else ("off", "on"):
                if side == "on":
                    detection.on()
                start = clock()
                call(*args)
                took[side] = clock() - start
                if side == "on":
                    detection.off()
            samples["on"][kind].append(took["on"])
            samples["off"][kind].append(took["off"])
            paired[kind].append(took["on"] - took["off"])
    finally:
        detection.on()
        loops = agent.stats().loops_detected
        compared = _comparisons(agent)
        agent.store.close()
    took_all = clock() - t0
    line(
        f"{n:,} actions, each run twice in turn on one agent, with and without detection"
        f" (which goes first alternates; {took_all:.1f} s)"
    )
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
            "median_paired_difference_us": round(median(paired[kind]) * 1e6, 2),
        }
        line(
            f"{kind:<9} x{len(samples['on'][kind]):>6,}: with detection {med_on:7.1f} us,"
            f" without {med_off:7.1f} us, added {added[kind]:+6.2f} us"
            f" (median of the pairs' differences {median(paired[kind]) * 1e6:+6.2f} us)"
        )
    recorded = samples["on"]["remember"] + samples["on"]["tool_call"]
    recorded_off = samples["off"]["remember"] + samples["off"]["tool_call"]
    overall = (median(recorded) - median(recorded_off)) * 1e6
    line(
        f"remember + record_tool_call: added {overall:+.2f} us per action (median);"
        f" {loops} loop(s) detected in the stream"
    )
    return [
        Check.at_most(
            "loops",
            f"detection added per recorded action (median, {n:,} actions)",
            overall,
            TARGET_US,
            " us",
            kinds=details,
            loops_detected=loops,
            paraphrase_comparisons=compared,
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
        Check.at_most(
            "loops",
            "detection added per decision (median)",
            added["decision"],
            DECISION_TARGET_US,
            " us",
        ),
        Check.at_most(
            "loops",
            "detection added per handoff (median)",
            added["handoff"],
            HANDOFF_TARGET_US,
            " us",
        ),
        Check.info("loops", "detection added per recall (median)", added["recall"], " us"),
    ]


def _exchange_overhead(cfg: Config) -> list[Check]:
    """Handoffs between two agents that answer each other (the partner's answer is stored
    between the agent's handoffs, so each of them reads it): what detection adds, as in
    the stream, with and without detection in turn."""
    n = cfg.scale(3000, 500)
    agent = AgentRuntime("bench-exchange", store=cfg.tmp / "exchange.db")
    partner = AgentRuntime("bench-partner", store=agent.store)
    detection = Detection(agent)
    took: dict[str, list[float]] = {"on": [], "off": []}
    clock = time.perf_counter
    detection.off()
    try:
        for i in range(n):
            partner.record_handoff("bench-exchange", {"done": i, "notes": make_value(i)})
            for side in ("on", "off") if i % 2 == 0 else ("off", "on"):
                if side == "on":
                    detection.on()
                start = clock()
                agent.record_handoff("bench-partner", {"task": i, "side": side})
                took[side].append(clock() - start)
                if side == "on":
                    detection.off()
    finally:
        detection.on()
        agent.store.close()
    added = (median(took["on"]) - median(took["off"])) * 1e6
    line(f"{n:,} handoffs each answered by the partner: detection added {added:+.2f} us")
    return [
        Check.info("loops", "detection added per handoff answered by the partner", added, " us")
    ]


def _comparisons(agent: AgentRuntime) -> int:
    """How many texts the agent's detectors compared as paraphrases."""
    total = 0
    for state in agent._guard.runs:  # (each run has its own novelty tracker and detectors)
        found = [getattr(d, "paraphrases", 0) for d in state.detectors]
        total += state.novelty.paraphrases + sum(found)
    return int(total)


PARAPHRASE_KINDS = ("reworded", "restated", "rewrite", "thought", "talk")


def make_paraphrase_stream(n: int, seed: int) -> list[Action]:
    """``n`` actions that take the paraphrase path, in small groups that stay below the
    thresholds (no loop is reported: its recording would be timed too)."""
    rng = random.Random(seed)
    out: list[Action] = []
    wordings = ["{} pricing plans", "pricing plans for {}", "{} plans and pricing", "{} pricing"]
    answers = ["The {} job failed: the disk is full.", "{} failed because the disk is full."]
    plans = [
        "Plan: search {} flights, compare the prices, book the cheapest one",
        "Plan: first search the {} flights, then compare prices and book the cheapest",
    ]
    thoughts = [
        "I should check the {} schema before writing the migration.",
        "Before writing the migration I need to check the {} schema.",
    ]
    while len(out) < n:
        g = f"item{rng.randrange(10**6)}"
        kind = rng.choice(PARAPHRASE_KINDS)
        if kind == "reworded":
            hits = {"hits": [f"https://example.org/{g}/{i}" for i in range(3)]}
            for w in wordings:
                out.append(
                    (kind, ("web_search", {"query": w.format(g)}, {"q": w.format(g), **hits}))
                )
        elif kind == "restated":
            out.extend((kind, ("job_status", {"job": g}, a.format(g))) for a in answers)
        elif kind == "rewrite":
            out.extend((kind, (f"plan/{g}", p.format(g))) for p in plans)
        elif kind == "thought":
            out.extend((kind, ("think", {"thought": t.format(g)}, None)) for t in thoughts)
        else:
            out.append((kind, (f"Could you look at {g} next and tell me what you find?",)))
    return out[:n]


def _paraphrase_overhead(cfg: Config, main_stream_checks: int) -> list[Check]:
    """The paraphrase path, with and without detection in turn, as in the main stream."""
    n = cfg.scale(5000, 1000)
    agent = AgentRuntime("bench-paraphrase", store=cfg.tmp / "paraphrase.db")
    partner = AgentRuntime("bench-talker", store=agent.store)
    detection = Detection(agent)
    tool = agent.record_tool_call
    calls: dict[str, Callable[..., Any]] = {
        "reworded": lambda name, args, result: tool(name, args, result=result),
        "restated": lambda name, args, result: tool(name, args, result=result),
        "rewrite": agent.remember,
        "thought": lambda name, args, result: tool(name, args, result=result),
        "talk": lambda text: agent.record_handoff("bench-talker", text),
    }
    took: dict[str, dict[str, list[float]]] = {"on": defaultdict(list), "off": defaultdict(list)}
    clock = time.perf_counter
    detection.off()
    try:
        for i, (kind, args) in enumerate(make_paraphrase_stream(n, cfg.seed)):
            if kind == "talk":
                partner.record_handoff("bench-paraphrase", f"Looked at it: finding {i} is new.")
            for side in ("on", "off") if i % 2 == 0 else ("off", "on"):
                if side == "on":
                    detection.on()
                start = clock()
                calls[kind](*args)
                took[side][kind].append(clock() - start)
                if side == "on":
                    detection.off()
    finally:
        detection.on()
        compared = _comparisons(agent)
        agent.store.close()
    checks = [
        Check.info("loops", "texts compared as paraphrases in the main stream", main_stream_checks)
    ]
    for kind in PARAPHRASE_KINDS:
        added = (median(took["on"][kind]) - median(took["off"][kind])) * 1e6
        line(f"paraphrase path, {kind:<8} x{len(took['on'][kind]):>5,}: added {added:+6.2f} us")
        checks.append(
            Check.info("loops", f"detection added on the paraphrase path: {kind}", added, " us")
        )
    line(f"{compared:,} paraphrase comparisons in {n:,} candidate actions")
    return checks


def _gist_cost(cfg: Config) -> list[Check]:
    """What the result gist (volatile parts and echoes masked) costs at record time, beside
    the SHA-256 every result gets anyway: outside the detectors, in every tool call."""
    texts = [
        (canonical_text(args[2]), args[1])
        for kind, args in make_stream(cfg.scale(5000, 1000), cfg.seed)
        if kind == "tool_call" and args[3] is None
    ]
    texts += [
        (canonical_text(args[2]), args[1])
        for kind, args in make_paraphrase_stream(2000, cfg.seed)
        if kind in ("reworded", "restated")
    ]
    clock = time.perf_counter
    gist: list[float] = []
    sha: list[float] = []
    for text, args in texts:
        start = clock()
        volatile_gist(text, echoes=args)
        gist.append(clock() - start)
        start = clock()
        hashlib.sha256(text.encode()).hexdigest()
        sha.append(clock() - start)
    g, h = median(gist) * 1e6, median(sha) * 1e6
    line(f"result gist at record time: {g:.2f} us (median), beside {h:.2f} us for its SHA-256")
    return [Check.info("loops", "result gist at record time (median, outside detection)", g, " us")]


def _remember_ratio(cfg: Config) -> list[Check]:
    rounds, ops = cfg.scale(5, 2), cfg.scale(3000, 1000)
    values = [make_value(i) for i in range(ops)]
    ratios: list[float] = []
    for r in range(rounds):
        keys = [f"key-{r}-{i}" for i in range(ops)]
        raw, ours = interleaved_writes(  # remember() with detection on (the default)
            cfg.tmp / f"loops-ratio-raw-{r}.db", cfg.tmp / f"loops-ratio-ours-{r}.db", keys, values
        )
        ratios.append(raw / ours)
        line(
            f"round {r + 1}/{rounds}: raw {raw / ops * 1e6:6.1f} us/op,"
            f" remember {ours / ops * 1e6:6.1f} us/op, ratio {ratios[-1]:.3f}"
        )
    ratio = median(ratios)
    line(f"remember with detection: raw/ours {ratio:.3f} (target >= {RATIO_TARGET})")
    return [
        Check.at_least(
            "loops",
            f"remember with detection: raw/ours, interleaved ({rounds}x{ops} ops)",
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
        checks = _detection_overhead(cfg)
        compared = int(checks[0].details["paraphrase_comparisons"])
        checks += _exchange_overhead(cfg) + _paraphrase_overhead(cfg, compared)
        return checks + _gist_cost(cfg) + _remember_ratio(cfg)
    finally:
        logger.setLevel(level)
