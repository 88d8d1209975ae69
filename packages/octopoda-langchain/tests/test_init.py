"""``octopoda.init()``'s LangChain integration: an unmodified program's runs recorded,
loop-checked and stopped, and nothing left behind once deactivated.

The program runs in its own process (``procs/init_run.py`` calling ``octopoda.init``
around ``procs/loop_script.py``, or ``octopoda-run`` around the script itself), so no
activation outlives its test; the in-process tests prove that deactivating restores.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest
from langchain_core.callbacks import CallbackManager
from octopoda_langchain._instrument import DISPATCHER, active_handler
from octopoda_langchain._integration import integration

from octopoda import AgentPaused, LoopPolicy, Octopoda
from octopoda.integrations import ENTRY_POINT_GROUP, AgentRuntimes, InitContext, Integration

PROCS = Path(__file__).resolve().parent / "procs"


def run_proc(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(PROCS), os.environ.get("PYTHONPATH", "")])
    )
    return subprocess.run(
        [sys.executable, *args], cwd=PROCS, env=env, capture_output=True, text=True, timeout=120
    )


def run_script(db: Path, agent: str, mode: str, how: str = "invoke") -> dict[str, Any]:
    done = run_proc(str(PROCS / "init_run.py"), str(db), agent, mode, how)
    assert done.returncode == 0, done.stderr
    out: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    assert out["state"] == "active"  # what init reports for the integration
    return out


def events(db: Path, agent: str, kind: str) -> list[Any]:
    with Octopoda(str(db)) as client:
        return client.agent(agent).timeline(kinds=[kind])


def test_the_entry_point_is_the_integration() -> None:
    (found,) = [e for e in entry_points(group=ENTRY_POINT_GROUP) if e.name == "langchain"]
    assert found.value == "octopoda_langchain._integration:integration"
    loaded = found.load()
    assert isinstance(loaded, Integration) and loaded is integration
    assert (loaded.modules, loaded.distribution) == (("langchain_core",), "langchain-core")
    assert loaded.supported == ">=0.3.70,<2"


def test_loading_the_entry_point_imports_no_framework() -> None:
    code = (
        "import sys, octopoda_langchain, octopoda_langchain._integration;"
        " print(sorted(m for m in sys.modules if m.split('.')[0] in"
        " ('langchain_core', 'langchain', 'langgraph')))"
    )
    done = run_proc("-c", code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_an_unmodified_looping_agent_is_recorded_and_stopped(tmp_path: Path) -> None:
    db = tmp_path / "octopoda.db"
    out = run_script(db, "weather", "once")
    # the failing tool ran three times, the fourth model call was refused: the run stopped
    assert out["outcome"].startswith("AgentPaused: run 'lc-")
    assert "retry loop" in out["outcome"] and "fetch" in out["outcome"]
    assert out["model_calls"] == 3
    with Octopoda(str(db)) as client:
        agent = client.agent("weather")
        tools = agent.timeline(kinds=["tool_call"])
        models = agent.timeline(kinds=["llm_call"])
        assert [e.payload["name"] for e in tools] == ["fetch"] * 3
        assert all(e.payload["error"] == "HTTP 503 for Paris" for e in tools)
        assert len(models) == 3 and models[0].payload["model"] == "scripted"
        assert models[0].payload["tokens_in"] > 0 and models[0].payload["cost_usd"] > 0
        (run,) = {e.payload["run_id"] for e in tools + models}
        assert run is not None and run.startswith("lc-")  # the invocation's root run
        (signal,) = agent.loop_history()
        assert signal.kind == "retry" and signal.run_id == run
        assert {ref.name for ref in signal.events} == {"fetch"}
        assert [ref.seq for ref in signal.events] == [e.seq for e in tools]
        assert [(r.id, r.status) for r in agent.runs()] == [(run, "paused")]
        assert agent.audit.verify().ok


@pytest.mark.processes
def test_an_async_streamed_run_is_stopped_too(tmp_path: Path) -> None:
    db = tmp_path / "octopoda.db"
    out = run_script(db, "weather", "once", "astream")
    # (Python 3.10: an async run's model callback does not see the run the tool calls paused
    # (as in test_runs.py), so the model is asked once more and the next tool call stops it)
    calls = 3 if sys.version_info >= (3, 11) else 4
    assert out["outcome"].startswith("AgentPaused") and out["model_calls"] == calls
    assert len(events(db, "weather", "tool_call")) == 3
    assert len(events(db, "weather", "llm_call")) == calls


@pytest.mark.processes
def test_a_loop_in_a_thread_pauses_that_thread(tmp_path: Path) -> None:
    db = tmp_path / "octopoda.db"
    done = run_proc("-c", _THREADED.format(db=str(db)))
    assert done.returncode == 0, done.stderr
    with Octopoda(str(db)) as client:
        agent = client.agent("weather")
        assert [(r.id, r.status) for r in agent.runs()] == [("user-1", "paused")]


_THREADED = """
import octopoda
octopoda.init("weather", store={db!r}, policy="pause")
import loop_script
print(loop_script.main("user-1"))
"""


@pytest.mark.processes
def test_runs_in_bare_threads_and_pool_workers_are_recorded(tmp_path: Path) -> None:
    db = tmp_path / "octopoda.db"
    done = run_proc("-c", _IN_THREADS.format(db=str(db)))
    assert done.returncode == 0, done.stderr
    with Octopoda(str(db)) as client:
        agent = client.agent("weather")
        assert sorted((r.id, r.status) for r in agent.runs()) == [
            ("pool-1", "paused"),
            ("thread-1", "paused"),
        ]
        assert len(agent.timeline(kinds=["tool_call"])) == 6


_IN_THREADS = """
import octopoda, threading
from concurrent.futures import ThreadPoolExecutor
octopoda.init("weather", store={db!r}, policy="pause")
import loop_script
worker = threading.Thread(target=loop_script.main, args=("thread-1",))
worker.start()
worker.join()
with ThreadPoolExecutor(1) as pool:
    print(pool.submit(loop_script.main, "pool-1").result())
"""


@pytest.mark.processes
def test_the_next_script_run_is_a_new_run(tmp_path: Path) -> None:
    db = tmp_path / "octopoda.db"
    first, second = run_script(db, "weather", "once"), run_script(db, "weather", "once")
    assert first["model_calls"] == second["model_calls"] == 3  # not refused from the start
    with Octopoda(str(db)) as client:
        runs = client.agent("weather").runs()
        assert len(runs) == 2 and {r.status for r in runs} == {"paused"}


@pytest.mark.processes
def test_octopoda_run_instruments_the_unmodified_script(tmp_path: Path) -> None:
    db = tmp_path / "octopoda.db"
    env = dict(
        os.environ,
        OCTOPODA_AGENT_ID="weather",
        OCTOPODA_DATABASE_URL=str(db),
        OCTOPODA_POLICY="pause",
    )
    launcher = Path(sys.executable).with_name("octopoda-run")
    done = subprocess.run(
        [str(launcher), sys.executable, "loop_script.py"],
        cwd=PROCS,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.splitlines()[-1])
    assert out["outcome"].startswith("AgentPaused") and out["model_calls"] == 3
    assert len(events(db, "weather", "tool_call")) == 3
    assert len(events(db, "weather", "llm_call")) == 3
    with Octopoda(str(db)) as client:
        (signal,) = client.agent("weather").loop_history()
        assert signal.kind == "retry" and {ref.name for ref in signal.events} == {"fetch"}


@pytest.mark.processes
def test_after_deactivate_nothing_is_recorded(tmp_path: Path) -> None:
    db = tmp_path / "octopoda.db"
    out = run_script(db, "weather", "deactivated")
    # nothing stopped the loop: it ran to the recursion limit (LangGraph 0.6's prebuilt
    # agent answers "need more steps" there, LangChain 1.x's create_agent raises)
    assert not out["outcome"].startswith("AgentPaused")
    assert out["model_calls"] >= 10
    assert events(db, "weather", "tool_call") == []
    assert events(db, "weather", "llm_call") == []


@pytest.mark.processes
def test_activating_twice_records_each_call_once(tmp_path: Path) -> None:
    db = tmp_path / "octopoda.db"
    out = run_script(db, "weather", "twice")
    assert out["model_calls"] == 3
    assert len(events(db, "weather", "tool_call")) == 3
    assert len(events(db, "weather", "llm_call")) == 3


def _live_handlers() -> list[Any]:
    """The handlers of ours a run's callback manager would call (LangChain skips a handler
    whose ``ignore_*`` flag is set)."""
    handlers = CallbackManager.configure().handlers
    return [h for h in handlers if h is DISPATCHER and not h.ignore_chat_model]


def test_deactivate_restores_every_run_to_no_handler(tmp_path: Path) -> None:
    policy = LoopPolicy("pause")
    context = InitContext(
        "inproc", AgentRuntimes(str(tmp_path / "o.db"), policy=policy, agent_id="inproc"), policy
    )
    assert active_handler() is None and _live_handlers() == []
    first = integration.activate(context)
    second = integration.activate(context)
    try:
        assert _live_handlers() == [DISPATCHER]  # one handler, not one per activation
        handler = active_handler()
        assert handler is not None and handler.raise_error
    finally:
        first()
        assert active_handler() is handler  # the second activation's, still active
        second()
        second()
    assert active_handler() is None and _live_handlers() == []
    flags = ("ignore_llm", "ignore_chain", "ignore_agent", "ignore_chat_model")
    assert all(getattr(DISPATCHER, flag) for flag in flags)  # LangChain skips it
    context.runtime.store.close()


def test_a_paused_agent_refuses_the_next_model_call(tmp_path: Path) -> None:
    from octopoda_langchain.testing import ScriptedChatModel

    policy = LoopPolicy("pause")
    context = InitContext(
        "inproc", AgentRuntimes(str(tmp_path / "o.db"), policy=policy, agent_id="inproc"), policy
    )
    undo = integration.activate(context)
    try:
        model = ScriptedChatModel(script=["hello"])
        assert model.invoke("hi").content == "hello"
        context.runtime.pause("by hand")
        with pytest.raises(AgentPaused):
            model.invoke("hi again")
    finally:
        undo()
    assert model.invoke("after").content == "hello"  # deactivated: nothing refuses it
    assert len(context.runtime.timeline(kinds=["llm_call"])) == 1
    context.runtime.store.close()
