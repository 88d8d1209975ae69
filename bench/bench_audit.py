"""Audit-chain verification speed: events verified per second on a 100,000-event chain.

``verify(check_memories=False)`` recomputes every hash and link and compares the head (the
chain check the target is about); the default ``verify()`` also checks every memory row
against the write its event recorded, and is reported beside it.
"""

from __future__ import annotations

import hashlib
import time

from _common import Check, Config, line, section

from octopoda import AgentRuntime, Event
from octopoda.store import MemoryWrite

TARGET_EVENTS_PER_S = 200_000
EVERY_NTH_WRITES = 10  # one event in ten also writes a memory row, like a real agent's mix


def _build(agent: AgentRuntime, events: int) -> None:
    store, pipeline = agent.store, agent.pipeline
    for i in range(events):
        writes = []
        if i % EVERY_NTH_WRITES == 0:
            data = f'{{"n":{i}}}'
            sha = hashlib.sha256(data.encode()).hexdigest()
            writes = [MemoryWrite("agent:bench", f"k{i % 1000}", "json", data, sha)]
        store.commit(Event("bench", "note", {"i": i}, 1_750_000_000.0 + i / 1000), writes, pipeline)


def bench_audit(cfg: Config) -> list[Check]:
    section("8. audit chain verification")
    events = cfg.scale(100_000, 10_000)
    agent = AgentRuntime("bench", store=str(cfg.tmp / "audit.db"))
    started = time.perf_counter()
    _build(agent, events)
    line(f"built a {events:,}-event chain in {time.perf_counter() - started:.1f} s")
    rates = {}
    for memories in (False, True):
        best = 0.0
        for _ in range(3):
            t0 = time.perf_counter()
            report = agent.audit.verify(check_memories=memories)
            elapsed = time.perf_counter() - t0
            assert report.ok and report.checked == events, report
            best = max(best, events / elapsed)
        rates[memories] = best
        line(f"verify(check_memories={memories}): {best:,.0f} events/s (best of 3)")
    return [
        Check.at_least(
            "audit",
            f"verify the chain of {events:,} events (events/s, best of 3)",
            rates[False],
            TARGET_EVENTS_PER_S,
        ),
        Check.info("audit", "verify with the memory-row check (events/s)", rates[True]),
    ]
