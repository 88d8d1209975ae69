"""Fixtures of the dashboard's browser tests: a store filled by real agent runs, the server
on a loopback port, and Debian's Chromium driven by pip playwright.

The store is written through the runtime, as agents write it: a support agent whose second
run fails the same tool call three times (a retry loop: the agent is paused), memory keys
with several versions, decisions, a shared space with a conflict (a stale write over
another agent's version), messages and goals. The server (``create_app`` under uvicorn, in
a daemon thread, on 127.0.0.1 and a free port) opens its own store on the same file, as
``octopoda serve`` in another process would; the tests write through their own runtimes.

Chromium is ``/usr/bin/chromium`` (Debian's; .ci/run installs it), launched by playwright
without ``playwright install``. Without chromium or playwright the tests skip, and fail
instead when the environment variable ``CI`` is set. Every page of a test goes through a
route that aborts, and records, any request to a host other than 127.0.0.1: the ``page``
fixture fails the test if there was one. Screenshots go to ``OCTOPODA_SCREENSHOTS`` (default
``artifacts/screenshots/`` at the repository root).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from octopoda import AgentPaused, AgentRuntime, LoopPolicy, SqliteStore

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    "--disable-dev-shm-usage",
]
ROOT = Path(__file__).resolve().parents[4]
LOOPBACK = "127.0.0.1"

SUPPORT = "support-bot"  # paused by a retry loop in its second run
RESEARCHER = "researcher"
CODER = "coder"
GOOD_RUN = "thread-1"
LOOP_RUN = "thread-2"
SPACE = "team"
CONFLICT_KEY = "plan"  # resolved in the tests by "keep theirs"
CONFLICT_KEY_MINE = "budget"  # and this one by "keep mine"
LOOP_TOOL = "get_weather"
LOOP_ARGS = {"city": "Lisbon"}
LOOP_ERROR = "TimeoutError: weather API timed out after 30000 ms"


def _unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"the browser tests must run when CI is set: {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def shots() -> Path:
    """Where the screenshots go: OCTOPODA_SCREENSHOTS, else artifacts/screenshots/."""
    path = Path(os.environ.get("OCTOPODA_SCREENSHOTS") or ROOT / "artifacts" / "screenshots")
    path.mkdir(parents=True, exist_ok=True)
    return path


@dataclass
class Fleet:
    """What the store holds, as the tests need to find it again."""

    path: Path
    support: str = SUPPORT
    researcher: str = RESEARCHER
    coder: str = CODER
    good_run: str = GOOD_RUN
    loop_run: str = LOOP_RUN
    space: str = SPACE
    conflict_key: str = CONFLICT_KEY
    conflict_key_mine: str = CONFLICT_KEY_MINE
    loop_seqs: tuple[int, ...] = ()  # the loop's events, as loop_status() named them
    conflicts: dict[str, int] = field(default_factory=dict)  # key -> open conflict id
    memory_keys: dict[str, int] = field(default_factory=dict)  # key -> versions

    def runtime(self, agent: str, **kwargs: Any) -> AgentRuntime:
        """A runtime of ``agent`` on its own store of the file (closed by the caller)."""
        return AgentRuntime(agent, store=str(self.path), **kwargs)


def fill(path: Path) -> Fleet:
    """Write the fleet through real runtimes (see the module docstring)."""
    fleet = Fleet(path)
    store = SqliteStore(str(path))
    try:
        support = AgentRuntime(
            SUPPORT, store=store, policy=LoopPolicy("pause", pause_scope="agent")
        )
        # memory with history: three versions of the user's profile, two of the plan
        support.remember("user_name", "Alice", tags=["profile"])
        support.remember(
            "user_profile", {"name": "Alice", "plan": "free", "city": "Porto"}, tags=["profile"]
        )
        support.remember(
            "user_profile", {"name": "Alice", "plan": "pro", "city": "Porto"}, tags=["profile"]
        )
        support.remember(
            "user_profile",
            {"name": "Alice", "plan": "pro", "city": "Lisbon", "diet": "vegetarian"},
            tags=["profile"],
        )
        support.remember("preferred_language", "Portuguese", tags=["preference"])
        support.remember("preferred_language", "English", tags=["preference"])
        fleet.memory_keys = {"user_name": 1, "user_profile": 3, "preferred_language": 2}

        # run 1: a good turn (tool calls with new results, an LLM call, a decision)
        support.guard_tool_call("lookup_order", {"order": 1042}, run_id=GOOD_RUN)
        support.record_tool_call(
            "lookup_order",
            {"order": 1042},
            result={"status": "shipped"},
            run_id=GOOD_RUN,
            duration_ms=41.0,
        )
        support.record_llm_call(
            "gpt-4o-mini",
            cost_usd=0.0021,
            tokens_in=812,
            tokens_out=96,
            duration_ms=930.0,
            run_id=GOOD_RUN,
        )
        support.log_decision(
            "Tell the user the order has shipped",
            reasoning="lookup_order says shipped",
            context={"order": 1042},
        )
        # run 2: the weather API times out the same way three times: a retry loop
        seqs = []
        for _ in range(3):
            support.guard_tool_call(LOOP_TOOL, LOOP_ARGS, run_id=LOOP_RUN)
            seqs.append(
                support.record_tool_call(
                    LOOP_TOOL, LOOP_ARGS, error=LOOP_ERROR, run_id=LOOP_RUN, duration_ms=30000.0
                ).seq
            )
        (signal,) = support.loop_status(run_id=LOOP_RUN).signals
        fleet.loop_seqs = tuple(e.seq for e in signal.events)
        assert fleet.loop_seqs == tuple(seqs), (fleet.loop_seqs, seqs)
        try:
            support.guard_tool_call(LOOP_TOOL, LOOP_ARGS, run_id=LOOP_RUN)
        except AgentPaused:
            pass
        else:  # pragma: no cover - the runtime's own tests cover this
            raise AssertionError("the retry loop did not pause the agent")
        assert support.paused
        support.set_goal("Answer Alice's weather question", ["look up weather", "reply"])
        support.update_progress(milestone_index=0, note="weather API down")

        # a shared space: the coder writes over the researcher's version it never saw
        researcher = AgentRuntime(RESEARCHER, store=store)
        coder = AgentRuntime(CODER, store=store)
        researcher.create_space(SPACE)
        for key in (CONFLICT_KEY, CONFLICT_KEY_MINE):
            researcher.share(key, f"{key} v1 by researcher", space=SPACE)
            coder.read_shared(key, space=SPACE)
            researcher.share(key, f"{key} v2 by researcher: cache the weather", space=SPACE)
            written = coder.share(key, f"{key} v2 by coder: retry with backoff", space=SPACE)
            assert written.conflict_id is not None
            fleet.conflicts[key] = written.conflict_id
        researcher.share("sources", ["open-meteo", "met.no"], space=SPACE)
        researcher.record_tool_call(
            "search_papers", {"q": "retry storms"}, result=["a", "b"], run_id="research-1"
        )
        researcher.log_decision("Recommend a cache", reasoning="the API rate-limits")
        researcher.send_message(CODER, "please add a cache in front of the weather API", "task")
        coder.send_message(RESEARCHER, "on it", "reply")
        coder.set_goal("Ship the weather cache", ["design", "implement", "test"])
        coder.update_progress(milestone_index=0)
        for agent in (support, researcher, coder):
            assert agent.audit.verify().ok
    finally:
        store.close()
    return fleet


@pytest.fixture(scope="session")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Fleet:
    return fill(tmp_path_factory.mktemp("dashboard") / "fleet.db")


@dataclass
class Server:
    url: str
    store: SqliteStore


@pytest.fixture(scope="session")
def server(fleet: Fleet) -> Iterator[Server]:
    """``create_app`` over the fleet's file under uvicorn, in a daemon thread."""
    for module in ("fastapi", "uvicorn", "jinja2"):
        if importlib.util.find_spec(module) is None:
            _unavailable(f"{module} is not installed (pip install 'octopoda-core[server]')")
    import uvicorn

    from octopoda._server.app import create_app

    store = SqliteStore(str(fleet.path))
    config = uvicorn.Config(
        create_app(store),
        host=LOOPBACK,
        port=0,
        log_level="warning",
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=1,
    )
    uv = uvicorn.Server(config)
    thread = threading.Thread(target=uv.run, name="dashboard-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not uv.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise AssertionError("the dashboard server did not start")
        time.sleep(0.02)
    port = uv.servers[0].sockets[0].getsockname()[1]
    try:
        yield Server(f"http://{LOOPBACK}:{port}", store)
    finally:
        uv.should_exit = True
        thread.join(10)
        store.close()


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """Headless Debian Chromium under pip playwright (no ``playwright install``)."""
    if importlib.util.find_spec("playwright") is None:
        _unavailable("playwright is not installed (pip install playwright)")
    if not (os.access(CHROMIUM, os.X_OK) or shutil.which("chromium")):
        _unavailable(f"no {CHROMIUM} (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    executable = CHROMIUM if os.access(CHROMIUM, os.X_OK) else shutil.which("chromium")
    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def offsite() -> list[str]:
    """The URLs of requests a page tried to send anywhere but 127.0.0.1."""
    return []


@pytest.fixture
def page(browser: Any, server: Server, offsite: list[str]) -> Iterator[Any]:
    """A fresh page (1280x900) whose every request is checked: one to another host is
    aborted and recorded, and fails the test at teardown."""
    context = browser.new_context(viewport={"width": 1280, "height": 900}, base_url=server.url)

    def check(route: Any) -> None:
        url = route.request.url
        parts = urlsplit(url)
        if parts.scheme in ("data", "blob", "about") or parts.hostname == LOOPBACK:
            route.continue_()
        else:
            offsite.append(url)
            route.abort()

    context.route("**/*", check)
    opened = context.new_page()
    opened.set_default_timeout(10_000)
    try:
        yield opened
    finally:
        context.close()
    assert offsite == [], f"requests left 127.0.0.1: {offsite}"
