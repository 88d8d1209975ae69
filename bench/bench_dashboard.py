"""Benchmark: the dashboard's pages rendered server-side on big stores: the fleet with 1,000
agents and an agent with 100,000 events.

    python bench/bench_dashboard.py [--quick] [--agents 1000] [--events 100000]

It fills a temporary SQLite file through the runtime (each agent: a memory write and an LLM
call; the big agent: memory writes, tool and LLM calls in runs of 1,000, a decision every
5,000 events), then times each page through the ASGI app in process (FastAPI's TestClient:
no network), the median of 5 requests after one warm-up, and checks each against the
issue's budget of 300 ms. The agent's totals over its whole history are a full scan
(loaded on demand by the agent page): timed and reported, not held to the budget. Needs
the server extra: ``pip install 'octopoda-core[server]'``. Timings on a loaded machine
are noisy: report them as measured under load.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import tempfile
import time
from pathlib import Path

BUDGET_S = 0.3


def fill(path: str, agents: int, events: int) -> None:
    from octopoda import AgentRuntime
    from octopoda._store.config import open_store

    store = open_store(path, durability="normal")
    for i in range(agents):
        agent = AgentRuntime(f"agent-{i:04d}", store=store)
        agent.remember("k", i)
        agent.record_llm_call("m", cost_usd=0.001, tokens_in=3, tokens_out=1)
    big = AgentRuntime("big", store=store)
    for i in range(events):
        run = f"r{i // 1000}"
        if i % 3 == 0:
            big.remember(f"k{i % 500}", i)
        elif i % 3 == 1:
            big.record_tool_call("search", {"q": i}, result=i, run_id=run, duration_ms=5)
        else:
            big.record_llm_call("m", cost_usd=0.001, tokens_in=10, run_id=run)
        if i % 5000 == 0 and i:
            big.log_decision(f"decision {i}", reasoning="bench")


def time_pages(path: str, events: int) -> list[tuple[str, float, bool]]:
    from fastapi.testclient import TestClient

    from octopoda._server.app import create_app
    from octopoda._store.config import open_store

    middle = max(1, events // 2)
    pages = [
        ("/", True),
        ("/?sort=last_active", True),
        ("/?page=10", True),
        ("/agents/big", True),
        ("/agents/big/events", True),
        (f"/agents/big/events?page={max(1, events // 100)}", True),
        ("/agents/big/runs", True),
        (f"/agents/big/runs/r{events // 2000}", True),
        ("/agents/big/memory/k7", True),
        (f"/agents/big/as-of?seq={middle}", True),
        ("/agents/big/as-of?time=2999-01-01T00:00:00Z", True),
        ("/agents/big/decisions", True),
        ("/agents/big/totals", False),
    ]
    out = []
    with TestClient(create_app(open_store(path)), base_url="http://127.0.0.1") as client:
        for url, budgeted in pages:
            assert client.get(url).status_code == 200, url
            took = []
            for _ in range(5):
                start = time.perf_counter()
                client.get(url)
                took.append(time.perf_counter() - start)
            out.append((url, statistics.median(took), budgeted))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100 agents, 10,000 events")
    parser.add_argument("--agents", type=int, default=1000)
    parser.add_argument("--events", type=int, default=100_000)
    args = parser.parse_args()
    agents, events = (100, 10_000) if args.quick else (args.agents, args.events)
    logging.disable(logging.WARNING)
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "dashboard.db")
        start = time.perf_counter()
        fill(path, agents, events)
        took = time.perf_counter() - start
        print(f"filled {agents} agents + one of {events} events in {took:.1f} s")
        failed = 0
        for url, seconds, budgeted in time_pages(path, events):
            verdict = ("ok" if seconds < BUDGET_S else "OVER") if budgeted else "info"
            failed += verdict == "OVER"
            print(f"{url:48s} {seconds * 1000:8.1f} ms  {verdict}")
    print("all pages within 300 ms" if not failed else f"{failed} page(s) over 300 ms")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
