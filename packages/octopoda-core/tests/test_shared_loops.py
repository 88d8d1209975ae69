"""Loop detection follows an agent's whole chain, whoever stored its events: two real
processes of one agent (and one run) sharing an SQLite file, a PostgreSQL database or an
``octopoda serve`` process each retry the same failing tool call, and the retry loop is
caught after as many failures in all as one process needs, recorded once, and paused for
both. Runs stay separate: two runs failing twice each are not stopped.

Each process is ``procs/loop_agent.py`` (one runtime, driven line by line); the test sends
its commands in turn, so the processes interleave deterministically."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from octopoda import AgentRuntime, SqliteStore

TESTS = Path(__file__).parent
AGENT = "weather-bot"
TOOL = {"name": "get_weather", "args": {"city": "Paris"}, "error": "TimeoutError: upstream"}
PAUSE = {"on_loop": "pause", "pause_scope": "run"}


def _load(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(f"octopoda_test_{name}", TESTS / name)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


driver = _load("procs/loop_driver.py")


@pytest.fixture(params=["sqlite", "server", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """Where the agent's processes meet: one SQLite file, an ``octopoda serve`` process
    (over its own SQLite file), one PostgreSQL database."""
    if request.param == "sqlite":
        yield str(tmp_path / "shared.db")
    elif request.param == "server":
        pytest.importorskip("fastapi")
        pytest.importorskip("requests")
        serving = _load("serving.py")
        with serving.running_server("--store", str(tmp_path / "served.db")) as url:
            yield url
    else:
        yield request.getfixturevalue("postgres_clean_url")


Processes = Callable[..., list[Any]]


@pytest.fixture
def processes(store: str) -> Iterator[Processes]:
    started: list[Any] = []

    def start(count: int, policy: dict[str, Any] | None = None) -> list[Any]:
        started.extend(driver.AgentProcess(store, AGENT, policy) for _ in range(count))
        return started[-count:]

    yield start
    for proc in started:
        proc.close()


def _retries(store: str, run: str | None = None) -> list[Any]:
    """The retry loops recorded, read here (an SQLite file through ``SqliteStore``: the
    very file whatever ``--store-backend`` says)."""
    opened = SqliteStore(store) if "://" not in store else None
    agent = AgentRuntime(AGENT, store=opened or store)
    try:
        return [s for s in agent.loop_history(run_id=run) if s.kind == "retry"]
    finally:
        agent.close()
        if opened is not None:
            opened.close()


def _kinds(answer: dict[str, Any]) -> list[str]:
    return [s["kind"] for s in answer["status"]["signals"]]


def test_two_processes_retrying_in_turn_form_one_retry_loop(
    processes: Processes, store: str
) -> None:
    a, b = processes(2, PAUSE)
    seqs = []
    for proc in (a, b):
        answer = proc.call("tool", run="thread-1", **TOOL)
        assert answer["ok"] and not answer["paused"], answer
        seqs.append(answer["result"])
    answer = a.call("tool", run="thread-1", **TOOL)  # the third failure in all: as in one
    assert answer["ok"] and answer["paused"] is True, answer
    seqs.append(answer["result"])
    assert _kinds(answer) == ["retry"]
    (signal,) = _retries(store, "thread-1")
    assert signal.seqs == tuple(seqs)  # the loop names both processes' calls
    for proc in (b, a):  # the next call is refused in either process
        refused = proc.call("guard", run="thread-1", name=TOOL["name"], args=TOOL["args"])
        assert not refused["ok"] and refused["error"]["type"] == "AgentPaused", refused
        assert "retry loop" in refused["error"]["message"]
    other = b.call("guard", run="thread-2", name=TOOL["name"], args=TOOL["args"])
    assert other["ok"], other  # (the run is paused, not the agent)


def test_a_loop_another_process_recorded_is_not_recorded_again(
    processes: Processes, store: str
) -> None:
    a, b = processes(2)
    for proc in (a, b, a, b, a):
        answer = proc.call("tool", run="thread-1", **TOOL)
        assert answer["ok"], answer
    assert _kinds(a.call("status")) == _kinds(b.call("status")) == ["retry"]
    (signal,) = _retries(store)  # recorded once, by the process that completed it
    assert len(signal.seqs) == 3
    b.call("tool", run="thread-1", name=TOOL["name"], args=TOOL["args"], result="sunny")
    assert _kinds(a.call("tool", name="other", args=1, result="x")) == []  # progress, seen
    assert len(_retries(store)) == 1


def test_runs_of_one_agent_in_two_processes_stay_separate(processes: Processes, store: str) -> None:
    a, b = processes(2, PAUSE)
    for _ in range(2):
        for proc, run in ((a, "thread-1"), (b, "thread-2")):
            answer = proc.call("tool", run=run, **TOOL)
            assert answer["ok"] and not answer["paused"], answer
            assert _kinds(answer) == []
    for proc, run in ((a, "thread-1"), (b, "thread-2")):
        assert proc.call("guard", run=run, name=TOOL["name"], args=TOOL["args"])["ok"]
    assert _retries(store) == []


def test_a_resume_in_another_process_starts_the_run_afresh_everywhere(
    processes: Processes,
) -> None:
    a, b, operator = processes(3, PAUSE)
    for proc in (a, b, a):
        answer = proc.call("tool", run="thread-1", **TOOL)
    assert answer["paused"] is True
    assert operator.call("resume", run="thread-1")["result"] is True
    for proc in (b, a):  # one failure each after the resume: no loop yet
        assert proc.call("guard", run="thread-1", name=TOOL["name"], args=TOOL["args"])["ok"]
        answer = proc.call("tool", run="thread-1", **TOOL)
        assert answer["ok"] and not answer["paused"] and _kinds(answer) == [], answer
    answer = b.call("tool", run="thread-1", **TOOL)
    assert answer["paused"] is True, answer


@pytest.fixture
def hub(request: pytest.FixtureRequest) -> str:
    """The test server of the remote suites (``conftest.py``: ``remote_hub``)."""
    pytest.importorskip("fastapi")
    pytest.importorskip("requests")
    return str(request.getfixturevalue("remote_hub"))


def test_a_commit_retried_on_a_server_is_observed_once(hub: str) -> None:
    """The pipeline runs between the server's plan and its commit; another client stores
    an event of the agent meanwhile (here: from within the pipeline), so the commit finds
    the head moved and is planned and run again. The detectors see the other client's
    event, and this one once: two failures are not yet a retry loop, three are."""
    from octopoda._store.remote.store import RemoteStore

    url = f"{hub}/t/retried_{os.getpid()}"
    here, there = RemoteStore(url), RemoteStore(url)
    other = AgentRuntime(AGENT, store=there)
    runs: list[int] = []

    def interfere(event: Any) -> Any:
        if event.kind == "tool_call":
            runs.append(event.seq)
            if len(runs) == 2:
                other.record_llm_call("gpt-test", run_id="thread-1")
        return event

    agent = AgentRuntime(AGENT, store=here, processors=[interfere])
    args, error = TOOL["args"], TOOL["error"]
    try:
        agent.record_tool_call(TOOL["name"], args, error=error, run_id="thread-1")
        second = agent.record_tool_call(TOOL["name"], args, error=error, run_id="thread-1")
        assert runs == [1, 2, 3] and second.seq == 3  # (planned again after the move)
        assert agent.loop_status("thread-1").state == "ok"
        agent.record_tool_call(TOOL["name"], args, error=error, run_id="thread-1")
        assert [s.kind for s in agent.loop_status("thread-1").signals] == ["retry"]
        assert agent.audit.verify().ok
    finally:
        agent.close()
        other.close()
        here.close()
        there.close()


def test_guard_tool_call_judges_the_loop_other_processes_formed(processes: Processes) -> None:
    """A process that only warns records the loop; one with a pause policy refuses the
    run's next call from its guard alone (it had stored nothing since)."""
    (warner,) = processes(1)
    (pauser,) = processes(1, PAUSE)
    assert pauser.call("guard", run="thread-1", name=TOOL["name"], args=TOOL["args"])["ok"]
    for _ in range(3):
        answer = warner.call("tool", run="thread-1", **TOOL)
    assert _kinds(answer) == ["retry"] and answer["paused"] is False
    refused = pauser.call("guard", run="thread-1", name=TOOL["name"], args=TOOL["args"])
    assert not refused["ok"] and refused["error"]["type"] == "AgentPaused", refused
    assert _kinds(refused) == ["retry"]


class CountingStore(SqliteStore):
    """An SQLite store that counts the events it reads back."""

    read = 0

    def events(self, agent: str, **kwargs: Any) -> Iterator[Any]:
        for event in super().events(agent, **kwargs):
            self.read += 1
            yield event


def test_the_catch_up_is_bounded_and_a_single_writer_reads_nothing(tmp_path: Path) -> None:
    from octopoda._loops.guard import CATCH_UP_EVENTS

    store = CountingStore(tmp_path / "counted.db")
    here, there = AgentRuntime(AGENT, store=store), AgentRuntime(AGENT, store=store)
    try:
        here.record_tool_call("lookup", 0, result="first")
        for i in range(CATCH_UP_EVENTS + 100):  # another runtime of the agent writes a lot
            there.record_tool_call("lookup", i, result=f"page {i}")
        store.read = 0
        here.record_tool_call("lookup", "next", result="more")
        assert store.read == CATCH_UP_EVENTS  # the last 256, not the whole history
        store.read = 0
        for i in range(20):  # the only writer now: no reads at all
            here.record_tool_call("lookup", ("again", i), result=f"again {i}")
            here.guard_tool_call("lookup", ("again", i + 1))
        assert store.read == 0
    finally:
        here.close()
        there.close()
        store.close()


def test_loop_status_of_a_process_that_did_nothing_shows_the_others_loop(
    processes: Processes,
) -> None:
    watcher, worker = processes(2)
    assert _kinds(watcher.call("status")) == []
    for _ in range(3):
        answer = worker.call("tool", run="thread-1", **TOOL)
    assert _kinds(answer) == ["retry"]
    assert _kinds(watcher.call("status")) == ["retry"]  # the same state, without acting
    worker.call("tool", run="thread-1", name=TOOL["name"], args=TOOL["args"], result="sunny")
    assert _kinds(watcher.call("status")) == []  # and the progress that ended it
