"""``octopoda.init()``'s Agents SDK integration: an unmodified program's runs recorded,
loop-checked and stopped, and the default runner restored once deactivated.

The program runs in its own process (``procs/init_run.py`` calling ``octopoda.init``
around ``procs/loop_script.py``, or ``octopoda-run`` around the script itself), so no
activation outlives its test; the in-process test proves that deactivating restores the
SDK's default runner.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, Runner
from agents.run import get_default_agent_runner
from octopoda_openai_agents._instrument import InitAgentRunner, JoinedRunHooks
from octopoda_openai_agents._integration import integration
from octopoda_openai_agents.testing import ScriptedModel, assistant_message

from octopoda import LoopPolicy, Octopoda
from octopoda.integrations import ENTRY_POINT_GROUP, AgentRuntimes, InitContext, Integration

from .conftest import PROCS, SDK_VERSION


def run_proc(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], cwd=PROCS, env=env, capture_output=True, text=True, timeout=120
    )


def run_script(env: dict[str, str], db: Path, mode: str, how: str = "run") -> dict[str, Any]:
    done = run_proc(env, str(PROCS / "init_run.py"), str(db), "weather", mode, how)
    assert done.returncode == 0, done.stderr
    out: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    assert out["runner_restored"]  # after shutdown, the SDK's own runner again
    assert out["state"] == "active"  # what init reports for the integration
    return out


def events(db: Path, kind: str) -> list[Any]:
    with Octopoda(str(db)) as client:
        return client.agent("weather").timeline(kinds=[kind])


def test_the_entry_point_is_the_integration() -> None:
    (found,) = [e for e in entry_points(group=ENTRY_POINT_GROUP) if e.name == "openai_agents"]
    assert found.value == "octopoda_openai_agents._integration:integration"
    loaded = found.load()
    assert isinstance(loaded, Integration) and loaded is integration
    assert (loaded.modules, loaded.distribution) == (("agents",), "openai-agents")
    assert loaded.supported == ">=0.8,<0.25"


def test_loading_the_entry_point_imports_no_framework(proc_env: dict[str, str]) -> None:
    code = (
        "import sys, octopoda_openai_agents, octopoda_openai_agents._integration;"
        " print(sorted(m for m in sys.modules if m.split('.')[0] in ('agents', 'openai')))"
    )
    done = run_proc(proc_env, "-c", code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_an_unmodified_looping_agent_is_recorded_and_stopped(
    proc_env: dict[str, str], tmp_path: Path
) -> None:
    db = tmp_path / "octopoda.db"
    out = run_script(proc_env, db, "once")
    # three failing tool calls, then the fourth model call was refused: the run stopped
    assert out["outcome"].startswith("RunPaused: run 'run_")
    assert "retry loop" in out["outcome"] and "call_id=c2" in out["outcome"]
    assert out["model_calls"] == 3
    assert out["own_hook_tools"] == 3  # the program's own hooks saw every tool call
    with Octopoda(str(db)) as client:
        agent = client.agent("weather")
        tools = agent.timeline(kinds=["tool_call"])
        models = agent.timeline(kinds=["llm_call"])
        assert [(e.payload["name"], e.payload["call_id"]) for e in tools] == [
            ("fetch", "c0"),
            ("fetch", "c1"),
            ("fetch", "c2"),
        ]
        assert all("error occurred while running the tool" in e.payload["error"] for e in tools)
        assert [(e.payload["tokens_in"], e.payload["tokens_out"]) for e in models] == [
            (100, 20)
        ] * 3
        assert models[0].payload["cost_usd"] == (100 * 1.0 + 20 * 2.0) / 1e6
        (run,) = {e.payload["run_id"] for e in tools + models}
        (signal,) = agent.loop_history()
        assert signal.kind == "retry" and signal.run_id == run
        assert [ref.seq for ref in signal.events] == [e.seq for e in tools]
        assert {ref.name for ref in signal.events} == {"fetch"}
        assert [(r.id, r.status) for r in agent.runs()] == [(run, "paused")]
        assert agent.audit.verify().ok


@pytest.mark.processes
@pytest.mark.parametrize("how", ["sync", "streamed"])
def test_run_sync_and_run_streamed_are_stopped_too(
    proc_env: dict[str, str], tmp_path: Path, how: str
) -> None:
    if how == "streamed" and tuple(int(p) for p in SDK_VERSION.split(".")[:2]) < (0, 21):
        pytest.skip("the scripted stand-in of openai-agents < 0.21 does not stream")
    db = tmp_path / "octopoda.db"
    out = run_script(proc_env, db, "once", how)
    assert out["outcome"].startswith("RunPaused") and out["model_calls"] == 3
    assert len(events(db, "tool_call")) == 3 and len(events(db, "llm_call")) == 3


@pytest.mark.processes
def test_the_next_script_run_is_a_new_run(proc_env: dict[str, str], tmp_path: Path) -> None:
    db = tmp_path / "octopoda.db"
    first, second = run_script(proc_env, db, "once"), run_script(proc_env, db, "once")
    assert first["model_calls"] == second["model_calls"] == 3  # not refused from the start
    with Octopoda(str(db)) as client:
        runs = client.agent("weather").runs()
        assert len(runs) == 2 and {r.status for r in runs} == {"paused"}


@pytest.mark.processes
def test_octopoda_run_instruments_the_unmodified_script(
    proc_env: dict[str, str], tmp_path: Path
) -> None:
    db = tmp_path / "octopoda.db"
    env = dict(
        proc_env,
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
    assert out["outcome"].startswith("RunPaused") and out["model_calls"] == 3
    assert out["own_hook_tools"] == 3
    assert len(events(db, "tool_call")) == 3 and len(events(db, "llm_call")) == 3
    with Octopoda(str(db)) as client:
        (signal,) = client.agent("weather").loop_history()
        assert signal.kind == "retry" and {ref.name for ref in signal.events} == {"fetch"}


@pytest.mark.processes
def test_after_deactivate_nothing_is_recorded(proc_env: dict[str, str], tmp_path: Path) -> None:
    db = tmp_path / "octopoda.db"
    out = run_script(proc_env, db, "deactivated")
    assert out["outcome"].startswith("MaxTurnsExceeded")  # nothing stopped the loop
    assert out["model_calls"] == 30
    assert events(db, "tool_call") == [] and events(db, "llm_call") == []


@pytest.mark.processes
def test_activating_twice_records_each_call_once(proc_env: dict[str, str], tmp_path: Path) -> None:
    db = tmp_path / "octopoda.db"
    out = run_script(proc_env, db, "twice")
    assert out["model_calls"] == 3 and out["outcome"].startswith("RunPaused")
    assert len(events(db, "tool_call")) == 3
    assert len(events(db, "llm_call")) == 3


def test_deactivate_restores_the_default_runner(tmp_path: Path) -> None:
    original = get_default_agent_runner()
    policy = LoopPolicy("pause")
    runtimes = AgentRuntimes(str(tmp_path / "o.db"), policy=policy, agent_id="inproc")
    context = InitContext("inproc", runtimes, policy)
    first = integration.activate(context)
    second = integration.activate(context)
    try:
        outer = get_default_agent_runner()
        assert isinstance(outer, InitAgentRunner) and isinstance(outer.inner, InitAgentRunner)
        assert outer.inner.inner is original
        model = ScriptedModel([[assistant_message("hi")]])
        result = asyncio.run(Runner.run(Agent(name="a", model=model), "hello"))
        assert result.final_output == "hi"
        assert len(context.runtime.timeline(kinds=["llm_call"])) == 1  # once, not twice
    finally:
        first()  # out of order: the first runner goes inert, the second stays
        assert get_default_agent_runner() is outer and outer.hooks is not None
        second()
        second()
    assert get_default_agent_runner() is original
    model = ScriptedModel([[assistant_message("hi")]])
    asyncio.run(Runner.run(Agent(name="a", model=model), "hello"))
    assert len(context.runtime.timeline(kinds=["llm_call"])) == 1  # nothing more recorded
    context.runtime.store.close()


def test_joined_hooks_call_both() -> None:
    from octopoda_openai_agents import OctopodaRunHooks
    from octopoda_openai_agents._instrument import _records

    ours = OctopodaRunHooks(":memory:")
    assert _records(ours) and _records(JoinedRunHooks(ours, ours))
    assert not _records(None)
