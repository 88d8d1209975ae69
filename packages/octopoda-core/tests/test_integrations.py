"""octopoda.integrations, the adapter kit, with no framework installed: target resolution,
the runtime registry, prices, offloading, the action recorder and the breaker's texts."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

import octopoda.integrations as kit
from octopoda import (
    AgentPaused,
    AgentRuntime,
    ConfigError,
    InvalidInput,
    LoopPolicy,
    Octopoda,
    SqliteStore,
)
from octopoda.integrations import (
    ActionRecorder,
    AgentRuntimes,
    FrameworkCall,
    blocked_tool_text,
    check_prices,
    cost_of,
    parse_arguments,
    paused_note,
    resolve_runtime,
    run_blocking,
    run_settled,
    stopped_text,
)
from octopoda.testing import memory_store

ARGS = {"city": "Paris"}
ERROR = "TimeoutError: weather service timed out after 3000 ms"


def test_the_kit_names_what_it_exports_and_imports_only_the_standard_library() -> None:
    assert len(set(kit.__all__)) == len(kit.__all__)  # ruff keeps it sorted (RUF022)
    for name in kit.__all__:
        assert getattr(kit, name) is not None
    code = (
        "import json, sys; before = set(sys.modules); from octopoda.integrations import *;"
        " print(json.dumps(sorted({m.split('.')[0] for m in set(sys.modules) - before})))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(json.loads(out.stdout)) - set(sys.stdlib_module_names) - {"octopoda"}
    assert loaded == set()


# ============================================================================== targets


def test_resolve_runtime_takes_every_kind_of_target(tmp_path: Path) -> None:
    runtime = AgentRuntime("a", store=":memory:")
    assert resolve_runtime(runtime, "ignored") == (runtime, False)
    with pytest.raises(InvalidInput, match="pass policy to the AgentRuntime"):
        resolve_runtime(runtime, "a", LoopPolicy("pause"))
    client = Octopoda(store=":memory:")
    from_client, owned = resolve_runtime(client, "b", LoopPolicy("pause"))
    assert (from_client.agent_id, owned, from_client.policy.on_loop) == ("b", False, "pause")
    assert from_client.store is client.store
    store = memory_store()
    on_store, owned = resolve_runtime(store, "c")
    assert on_store.store is store and owned
    for target in (tmp_path / "x.db", str(tmp_path / "y.db"), f"sqlite:///{tmp_path}/z.db"):
        opened, owned = resolve_runtime(target, "d")
        assert owned and isinstance(opened.store, SqliteStore)
        assert Path(opened.store.path).parent == tmp_path
    with pytest.raises(ConfigError, match="got int"):
        resolve_runtime(42, "e")


def test_the_registry_keeps_one_runtime_per_framework_agent_on_one_store() -> None:
    runtimes = AgentRuntimes(
        ":memory:", policy=LoopPolicy("pause"), agent_prefix="app/", agent_ids={"x": "the-x"}
    )
    triage = runtimes.runtime("triage")
    assert triage.agent_id == "app/triage" and runtimes.agent_id("x") == "the-x"
    assert runtimes.runtime("triage") is triage
    assert runtimes.runtime("x").store is triage.store  # ":memory:" opened once, shared
    assert runtimes.runtime("x").policy.on_loop == "pause"
    assert runtimes.call("triage", lambda r: r.agent_id) == "app/triage"
    client = Octopoda(store=":memory:")
    on_client = AgentRuntimes(client)
    assert on_client.runtime("a").store is client.store
    with pytest.raises(ConfigError, match="one agent"):
        AgentRuntimes(triage)
    with pytest.raises(InvalidInput, match="agent_prefix"):
        AgentRuntimes(agent_prefix=3)  # type: ignore[arg-type]


def test_the_registry_serialises_one_runtime_across_threads() -> None:
    runtimes = AgentRuntimes(":memory:")
    inside: list[int] = []
    overlaps: list[int] = []

    def work(runtime: AgentRuntime) -> None:
        inside.append(1)
        overlaps.append(len(inside))
        runtime.record_llm_call("m")
        inside.pop()

    threads = [
        threading.Thread(target=lambda: [runtimes.call("a", work) for _ in range(20)])
        for _ in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert max(overlaps) == 1
    assert runtimes.runtime("a").stats().llm_calls == 80


# ============================================================================== prices


def test_prices_are_checked_once_and_priced_per_million_tokens() -> None:
    assert check_prices(None) == {}
    prices = check_prices({"gpt-4.1": (2, 8.0), "mini": [0.15, 0.6]})
    assert prices == {"gpt-4.1": (2.0, 8.0), "mini": (0.15, 0.6)}
    assert cost_of(prices, "gpt-4.1", 1000, 500) == pytest.approx(0.006)
    assert cost_of(prices, "unknown", 1000, 500) == 0.0
    assert cost_of({}, "gpt-4.1", 1, 1) == 0.0
    bad: list[Any] = [
        {"m": (1.0,)},
        {"m": (-1.0, 1.0)},
        {"m": (1.0, float("nan"))},
        {"m": (True, 1.0)},
        {"m": ("1", "2")},
        {"m": 3.0},
        {5: (1.0, 1.0)},
    ]
    for prices_in in bad:
        with pytest.raises(InvalidInput, match="per million tokens"):
            check_prices(prices_in)
    with pytest.raises(InvalidInput, match="map model names"):
        check_prices([("m", (1.0, 1.0))])  # type: ignore[arg-type]


# ============================================================================== offloading


def test_parse_arguments_reads_json_as_sent() -> None:
    assert parse_arguments('{"a": 1}') == {"a": 1}
    assert parse_arguments("not json") == "not json"
    assert parse_arguments({"a": 1}) == {"a": 1}
    assert parse_arguments(None) is None


def test_run_blocking_runs_off_the_event_loop() -> None:
    async def main() -> tuple[int, bool]:
        loop_thread = threading.get_ident()
        thread = await run_blocking(threading.get_ident)
        total = await run_blocking(lambda a, b=0: a + b, 2, b=3)
        return total, thread != loop_thread

    assert asyncio.run(main()) == (5, True)


def test_run_settled_raises_a_cancel_only_once_the_write_settled() -> None:
    started, release = threading.Event(), threading.Event()
    written: list[str] = []

    def write(value: str) -> str:
        started.set()
        release.wait(5)
        written.append(value)
        return value

    async def main() -> None:
        task = asyncio.ensure_future(run_settled(write, "item"))
        await asyncio.to_thread(started.wait, 5)
        task.cancel()
        await asyncio.sleep(0.05)
        assert not task.done()  # the write is still running: the cancel waits for it
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert written == ["item"]
        assert await run_settled(write, "next") == "next"

    asyncio.run(main())


# ============================================================================== the recorder


def failing_turns(recorder: ActionRecorder, runtime: AgentRuntime, run: str | None, n: int) -> None:
    for i in range(n):
        assert recorder.guard(runtime, "get_weather", ARGS, run_id=run) is None
        recorder.start((run, i))
        recorder.tool_call(
            runtime,
            "get_weather",
            ARGS,
            error=ERROR,
            duration_ms=recorder.elapsed_ms((run, i)),
            run_id=run,
            call_id=f"{run}-c{i}",
            arguments='{"city":"Paris"}',
        )


def test_the_verdict_names_the_framework_calls_of_the_loop() -> None:
    recorder = ActionRecorder()
    runtime = AgentRuntime("weather", store=":memory:", policy=LoopPolicy("pause"))
    for run in ("s1", "s2", "s3"):  # three conversations failing once: nobody stopped
        failing_turns(recorder, runtime, run, 1)
    failing_turns(recorder, runtime, "s1", 2)  # s1's third failure pauses s1
    verdict = recorder.guard(runtime, "get_weather", ARGS, run_id="s1")
    assert verdict is not None
    assert (verdict.agent_id, verdict.run_id) == ("weather", "s1")
    assert [c.call_id for c in verdict.calls] == ["s1-c0", "s1-c0", "s1-c1"]
    assert all(
        c == FrameworkCall("get_weather", c.call_id, '{"city":"Paris"}') for c in verdict.calls
    )
    assert verdict.signal is not None and verdict.signal["kind"] == "retry"
    assert "retry loop" in verdict.reason and isinstance(verdict.error, AgentPaused)
    assert verdict.message.startswith("run 's1' of agent 'weather' is paused: retry loop")
    assert verdict.message.endswith(
        'The calls: get_weather({"city":"Paris"}) call_id=s1-c0;'
        ' get_weather({"city":"Paris"}) call_id=s1-c0; get_weather({"city":"Paris"}) call_id=s1-c1.'
    )
    assert recorder.guard(runtime, "get_weather", ARGS, run_id="s2") is None
    events = runtime.timeline(run_id="s1", kinds=["tool_call"])
    assert [e.payload["call_id"] for e in events] == ["s1-c0", "s1-c0", "s1-c1"]
    assert all(e.payload["duration_ms"] >= 0 for e in events)


def test_texts_a_framework_shows_for_an_agent_and_for_a_run() -> None:
    recorder = ActionRecorder()
    runtime = AgentRuntime("bot", store=":memory:")
    runtime.pause("maintenance window")
    verdict = recorder.guard(runtime, "add")
    assert verdict is not None and verdict.calls == () and verdict.signal is None
    assert verdict.message == str(verdict.error)
    assert verdict.blocked_tool_text("add") == (
        "[octopoda] The tool 'add' was not run: agent 'bot' is paused: maintenance window. Fix"
        " the cause, then call agent.resume(). Do not call tools again; tell the user what"
        " happened."
    )
    assert verdict.stopped_text() == (
        "Stopped: Octopoda paused agent 'bot' (maintenance window). No more model or tool calls"
        " were made. Fix the cause, then call agent.resume() and run the agent again."
    )
    assert stopped_text("bot", None, "paused").startswith("Stopped: Octopoda paused agent 'bot'")
    assert paused_note("bot", "retry loop") == (
        "[octopoda] Agent 'bot' is now paused: retry loop. Further tool calls are blocked until"
        " the agent is resumed (agent.resume())."
    )
    runtime.resume()
    runtime.pause("this thread only", run_id="t1")
    verdict = recorder.guard(runtime, "add", run_id="t1")
    assert verdict is not None and verdict.run_id == "t1"
    assert "Stopped: Octopoda paused run 't1' of agent 'bot' (this thread only)" in (
        verdict.stopped_text()
    )
    assert "agent.resume(run_id='t1')" in verdict.stopped_text()
    assert blocked_tool_text("add", verdict.error).startswith(
        "[octopoda] The tool 'add' was not run: run 't1' of agent 'bot' is paused"
    )
    assert "Run 't1' of agent 'bot' is now paused" in paused_note("bot", "x", "t1")


def test_llm_calls_and_handoffs_carry_runs_and_call_ids() -> None:
    recorder = ActionRecorder()
    runtimes = AgentRuntimes(":memory:", policy=LoopPolicy("pause"))
    prices = check_prices({"gpt-4.1": (2.0, 8.0)})
    llm = recorder.llm_call(
        runtimes.runtime("triage"),
        "gpt-4.1",
        tokens_in=1000,
        tokens_out=500,
        cost_usd=cost_of(prices, "gpt-4.1", 1000, 500),
        run_id="conv-1",
        call_id="resp_1",
    )
    assert llm.payload["cost_usd"] == pytest.approx(0.006)
    assert (llm.payload["run_id"], llm.payload["call_id"]) == ("conv-1", "resp_1")
    triage, billing = runtimes.runtime("triage"), runtimes.runtime("billing")
    verdict = None
    for i in range(6):  # one conversation bouncing between two agents
        for me, to in ((triage, "billing"), (billing, "triage")):
            label = FrameworkCall(f"handoff to {to}", f"h{i}", "{}")
            recorder.handoff(me, to, {"to": to}, run_id="conv-1", call=label)
            verdict = verdict or recorder.guard(me, f"handoff:{to}", run_id="conv-1")
        if verdict is not None:
            break
    assert verdict is not None and verdict.signal is not None
    assert verdict.signal["kind"] == "ping_pong" and verdict.run_id == "conv-1"
    named = {c.name for c in verdict.calls}
    assert named == {"handoff to billing", "handoff to triage"}  # both agents' calls
    plain = recorder.handoff(triage, "billing", "again", run_id="conv-2")
    assert plain.payload["run_id"] == "conv-2"


def test_the_recorder_forgets_the_oldest_calls_and_unstarted_timers() -> None:
    recorder = ActionRecorder(keep_calls=2)
    runtime = AgentRuntime("a", store=":memory:", policy=LoopPolicy("pause"))
    failing_turns(recorder, runtime, None, 3)
    verdict = recorder.guard(runtime, "get_weather", ARGS)
    assert verdict is not None
    # the first call was forgotten: it is named as the signal names it, without a call id
    assert [c.call_id for c in verdict.calls] == ["", "None-c1", "None-c2"]
    assert verdict.calls[0] == FrameworkCall("get_weather", "", '{"city":"Paris"}')
    assert recorder.elapsed_ms("never started") is None


@pytest.mark.parametrize("scope", ["run", "agent"])
def test_paused_by_says_which_recorded_call_paused(scope: str) -> None:
    recorder = ActionRecorder()
    runtime = AgentRuntime("a", store=":memory:", policy=LoopPolicy("pause", pause_scope=scope))
    events = [
        recorder.tool_call(runtime, "get_weather", ARGS, error=ERROR, run_id="t1") for _ in range(3)
    ]
    reasons = [recorder.paused_by(runtime, e) for e in events]
    assert reasons[:2] == [None, None]
    assert reasons[2] is not None and reasons[2].startswith("retry loop")
    verdict = recorder.guard(runtime, "get_weather", ARGS, run_id="t1")
    assert verdict is not None and verdict.run_id == ("t1" if scope == "run" else None)
    assert paused_note("a", reasons[2], verdict.run_id).endswith(
        "(agent.resume(run_id='t1'))." if scope == "run" else "(agent.resume())."
    )
    runtime.resume()
    again = recorder.tool_call(runtime, "get_weather", ARGS, error=ERROR, run_id="t1")
    assert (
        recorder.paused_by(runtime, again) is None
        and recorder.paused_by(runtime, events[2]) is None
    )


# ============================================================================== activation


def test_one_activation_reuses_replaces_and_undoes_once() -> None:
    log: list[str] = []

    def install(context: kit.InitContext) -> kit.Deactivate:
        log.append(f"install {context.agent_id}")
        return lambda: log.append(f"remove {context.agent_id}")

    activate = kit.OneActivation(install)
    runtimes = kit.AgentRuntimes(memory_store())
    first = kit.InitContext("a", runtimes)
    second = kit.InitContext("b", runtimes)
    undo_a = activate(first)
    assert activate(first) is undo_a  # the same context again: nothing new
    assert log == ["install a"]
    undo_b = activate(second)  # another context replaces the first
    assert log == ["install a", "remove a", "install b"]
    undo_a()  # already undone: nothing happens, and b stays current
    assert activate(second) is undo_b
    undo_b()
    undo_b()
    assert log == ["install a", "remove a", "install b", "remove b"]
    undo_again = activate(second)  # after the undo, the same context installs anew
    assert undo_again is not undo_b
    assert log[-1] == "install b"
    undo_again()


def test_changed_keys_names_what_the_agents_events_changed(tmp_path: Path) -> None:
    db = tmp_path / "agent.db"
    with AgentRuntime("bot", store=db) as agent, AgentRuntime("bot", store=db) as other:
        agent.remember_many([("a", 1), ("b", 2), ("c", 3)])
        start = agent.audit.head().seq
        assert kit.changed_keys(agent, start, start) == set()
        other.remember("a", 10)  # another runtime (as another process would)
        other.forget("b")
        other.record_tool_call("search", {"q": "x"}, result="hits")  # no memory change
        other.create_space("team")
        other.share("shared-key", "not the agent's memory", space="team")
        other.erase("c")
        head = agent.audit.head().seq
        assert kit.changed_keys(agent, start, head) == {"a", "b", "c"}
        assert kit.changed_keys(agent, head - 1, head) == {"c"}
        assert kit.changed_keys(other, 0, start) == {"a", "b", "c"}
        # past the limit (or a range the store cannot give whole): None, read it all
        assert kit.changed_keys(agent, start, head, limit=head - start - 1) is None
        assert kit.changed_keys(agent, start, head + 5) is None
        assert kit.changed_keys(agent, head, start) is None
