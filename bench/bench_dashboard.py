"""Benchmark 13: server-side render time of the dashboard's pages on big stores.

The fleet page (``/``) of a store with 1,000 agents, and the agent page (``/agents/{a}``)
and a run's waterfall (``/agents/{a}/runs/{run}``) of an agent with 100,000 events, each
rendered through the ASGI app in-process (``create_app(store)``, called with a minimal ASGI
driver: no sockets, no HTTP client, only the app's own work), median of N requests after
one warm-up. Baseline: the JSON API endpoint for the same data in the same run
(``/v1/agents`` with every agent, the agent's timeline's first page, the run's timeline
page), requests alternating with the page's; the page/API ratio is INFO. Then the other
pages (the fleet sorted and paged, the agent's events, runs, a key's history, memory as of a
seq and a time, decisions) alone; the agent's totals over its whole history, a full scan
loaded on demand, are INFO. Target: each page under 300 ms. Skips when FastAPI, Jinja2 or
the dashboard (``octopoda._dashboard``) cannot be imported (the core's venv without the
``[server]`` extra).
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import time
from typing import Any

from _common import Check, Config, line, median, section

from octopoda import AgentRuntime, SqliteStore

TARGET_MS = 300.0
AGENT = "big-agent"
RUN = "run-0"
RUNS = 10  # the big agent's events spread over this many runs


def missing() -> str | None:
    """Why the dashboard cannot be benchmarked here (None: it can)."""
    for module in ("fastapi", "jinja2", "octopoda._server", "octopoda._dashboard"):
        try:
            found = importlib.util.find_spec(module) is not None
        except ImportError:
            found = False
        if not found:
            if module == "octopoda._dashboard":
                return "this octopoda has no dashboard (octopoda._dashboard)"
            return f"{module} is not importable (pip install 'octopoda-core[server]')"
    return None


class Driver:
    """GET requests straight into an ASGI app: (status, body bytes) of each."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.loop = asyncio.new_event_loop()

    def get(self, path: str) -> tuple[int, bytes]:
        return self.loop.run_until_complete(self._get(path))

    async def _get(self, target: str) -> tuple[int, bytes]:
        path, _, query = target.partition("?")
        scope = {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": "1.1",
            "method": "GET",
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "root_path": "",
            "query_string": query.encode(),
            "headers": [(b"host", b"127.0.0.1:7842"), (b"accept", b"text/html")],
            "client": ("127.0.0.1", 50000),
            "server": ("127.0.0.1", 7842),
            "state": {},
        }
        status = 0
        body = bytearray()
        sent = False

        async def receive() -> dict[str, Any]:
            nonlocal sent
            if sent:  # (a GET has no body; afterwards the client never disconnects)
                await asyncio.sleep(3600)
            sent = True
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body":
                body.extend(message.get("body", b""))

        await self.app(scope, receive, send)
        return status, bytes(body)

    def close(self) -> None:
        self.loop.close()


def _fleet(store: SqliteStore, agents: int) -> None:
    """``agents`` agents with a few actions each (one in ten paused by a retry loop)."""
    from octopoda import LoopPolicy

    for i in range(agents):
        agent = AgentRuntime(f"agent-{i:04d}", store=store, policy=LoopPolicy("pause"))
        agent.remember("state", {"step": i})
        agent.record_tool_call("search", {"q": f"query {i}"}, result=f"{i} hits", cost_usd=0.001)
        if i % 10 == 0:
            for _ in range(3):
                agent.record_tool_call("fetch", {"url": "/x"}, error="HTTP 503")


def _big_agent(store: SqliteStore, events: int) -> None:
    """One agent with ``events`` events over RUNS runs: tool calls with changing results,
    LLM calls, memory writes and decisions (no loop: every result is new)."""
    agent = AgentRuntime(AGENT, store=store)
    for i in range(events):
        run = f"run-{i % RUNS}"
        if i % 4 == 0:
            agent.record_tool_call(
                "search", {"q": f"q{i}"}, result={"hits": i}, run_id=run, duration_ms=12.5
            )
        elif i % 4 == 1:
            agent.record_llm_call(
                "gpt-4o-mini", cost_usd=0.0002, tokens_in=420, tokens_out=64, run_id=run
            )
        elif i % 4 == 2:
            agent.remember(f"note-{i % 500}", {"i": i})
        else:
            agent.record_tool_call("lookup", {"id": i}, result=f"row {i}", run_id=run)
        if i % 1000 == 999:
            agent.log_decision(f"checkpoint {i}", reasoning="enough progress")


def _timed(driver: Driver, path: str) -> float:
    t0 = time.perf_counter()
    status, body = driver.get(path)
    elapsed = time.perf_counter() - t0
    if status != 200:
        raise AssertionError(f"GET {path}: {status} {body[:300]!r}")
    return elapsed


def _compare(driver: Driver, page: str, api: str, rounds: int) -> tuple[float, float]:
    """Median seconds of (page, api), one warm-up each, then alternating which goes first."""
    _timed(driver, page)
    _timed(driver, api)
    pages: list[float] = []
    apis: list[float] = []
    for r in range(rounds):
        order: list[tuple[str, list[float]]] = [(page, pages), (api, apis)]
        for path, samples in order if r % 2 == 0 else order[::-1]:
            samples.append(_timed(driver, path))
    return median(pages), median(apis)


def bench_dashboard(cfg: Config) -> list[Check]:
    section("13. dashboard render time")
    why = missing()
    if why:
        line(f"skipped: {why}")
        return [Check.skip("dashboard", "page render time", why)]
    from octopoda._server.app import create_app

    agents = cfg.scale(1_000, 100)
    events = cfg.scale(100_000, 5_000)
    rounds = cfg.scale(21, 3)
    store = SqliteStore(str(cfg.tmp / "dashboard.db"))
    try:
        quiet = logging.getLogger("octopoda")
        level = quiet.level
        quiet.setLevel(logging.ERROR)  # (the fleet's loops would each print a warning)
        t0 = time.perf_counter()
        _fleet(store, agents - 1)  # (and the big agent: `agents` in all)
        line(f"{agents - 1:,} agents written in {time.perf_counter() - t0:.1f} s")
        t0 = time.perf_counter()
        _big_agent(store, events)
        line(f"{events:,} events of {AGENT!r} written in {time.perf_counter() - t0:.1f} s")
        quiet.setLevel(level)
        driver = Driver(create_app(store))
        cases: list[tuple[str, str, str]] = [
            (f"fleet page, {agents:,} agents", "/", f"/v1/agents?limit={agents}"),
            (
                f"agent page, {events:,} events",
                f"/agents/{AGENT}",
                f"/v1/agents/{AGENT}/timeline?limit=100",
            ),
            (
                f"run waterfall, {events // RUNS:,} of {events:,} events",
                f"/agents/{AGENT}/runs/{RUN}",
                f"/v1/agents/{AGENT}/timeline?run_id={RUN}&limit=100",
            ),
        ]
        # the other pages, held to the same budget without a baseline; the agent's totals
        # over its whole history are a full scan (loaded on demand): INFO
        others = [
            ("fleet sorted by last activity", "/?sort=last_active", True),
            (f"fleet page {max(1, agents // 100)}", f"/?page={max(1, agents // 100)}", True),
            ("agent's events, page 1", f"/agents/{AGENT}/events", True),
            ("agent's events, a middle page", f"/agents/{AGENT}/events?page={events // 200}", True),
            (f"runs list, {RUNS} runs", f"/agents/{AGENT}/runs", True),
            ("a key's history", f"/agents/{AGENT}/memory/note-2", True),
            ("memory as of a middle seq", f"/agents/{AGENT}/as-of?seq={events // 2}", True),
            ("memory as of a time", f"/agents/{AGENT}/as-of?time=2999-01-01T00:00:00Z", True),
            ("decisions", f"/agents/{AGENT}/decisions", True),
            ("totals over the whole history", f"/agents/{AGENT}/totals", False),
        ]
        checks: list[Check] = []
        for label, page, api in cases:
            ours, base = _compare(driver, page, api, rounds)
            line(
                f"{label}: GET {page} {ours * 1e3:.1f} ms, GET {api} {base * 1e3:.1f} ms"
                f" (page/API {ours / base:.2f}x, median of {rounds})"
            )
            checks.append(
                Check.at_most(
                    "dashboard", f"{label}: render (ms, median)", ours * 1e3, TARGET_MS, " ms"
                )
            )
            checks.append(
                Check.info("dashboard", f"{label}: page / JSON API time", ours / base, "x")
            )
        for label, page, budgeted in others:
            _timed(driver, page)
            ours = median(_timed(driver, page) for _ in range(rounds))
            line(f"{label}: GET {page} {ours * 1e3:.1f} ms (median of {rounds})")
            size = f"{events:,} events" if page.startswith("/agents/") else f"{agents:,} agents"
            metric = f"{label}, {size}: render (ms, median)"
            if budgeted:
                checks.append(Check.at_most("dashboard", metric, ours * 1e3, TARGET_MS, " ms"))
            else:
                checks.append(Check.info("dashboard", metric, ours * 1e3, " ms"))
        driver.close()
        return checks
    finally:
        store.close()


if __name__ == "__main__":
    import argparse
    import tempfile
    from pathlib import Path

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    quick = parser.parse_args().quick
    with tempfile.TemporaryDirectory(prefix="octopoda-bench-") as tmp:
        for check in bench_dashboard(Config(quick=quick, tmp=Path(tmp))):
            print(check.status, check.metric, check.value)
