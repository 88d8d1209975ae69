"""The labelled trace suite: realistic agent traces, each labelled with the loop signals it
must raise (or none: a hard negative), played through real runtimes on one store.

The traces are data, in ``loop_traces/*.py`` (one module per class of loop, each a list
``TRACES`` of dicts). A trace names its agents, the kinds it expects (``expect``, the empty
set for a hard negative), its ``twin`` (the trace of the same shape on the other side of
the line: a loop and the same work with real progress) and its ``steps``. A step is a
tuple ``(verb, *arguments)``; the verb may name the acting agent (``"reviewer:handoff"``,
else the trace's first agent) and end with ``*`` when the step is part of the loop the
trace is labelled with:

``("llm", model)``, ``("tool", name, args, result)``, ``("fail", name, args, error)``,
``("remember", key, value)``, ``("recall", key)``, ``("forget", key)``,
``("decide", text, subject)``, ``("handoff", to, content)``, ``("send", to, body)``,
``("read",)`` (mark every unread message read), ``("wait", seconds)``.

Each step takes one second of a frozen clock (an LLM call three), ``wait`` more. A trace
passes when the kinds its agents detected (``loop_history`` and the active signals) are
exactly ``expect``, and every event a detection names is a step marked ``*`` (noise
around a loop is never reported as the loop).
"""

from __future__ import annotations

import importlib.util
import logging
from pathlib import Path
from typing import Any

import pytest

from octopoda import AgentRuntime, LoopSignal, Octopoda
from octopoda.testing import FrozenClock

TRACES_DIR = Path(__file__).with_name("loop_traces")
CLASSES = ("reworded", "volatile", "handbacks", "reflection", "resubmission")


def _load() -> list[dict[str, Any]]:
    traces = []
    for path in sorted(TRACES_DIR.glob("*.py")):
        spec = importlib.util.spec_from_file_location(f"loop_traces_{path.stem}", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        for trace in module.TRACES:
            traces.append({"class": path.stem, **trace})
    return traces


TRACES = _load()
BY_NAME = {t["name"]: t for t in TRACES}


@pytest.fixture(autouse=True)
def _quiet_octopoda_logger(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.CRITICAL + 1, logger="octopoda")


def _split(verb: str, default: str) -> tuple[str, str, bool]:
    marked = verb.endswith("*")
    verb = verb.rstrip("*")
    agent, _, verb = verb.rpartition(":")
    return agent or default, verb, marked


def _step(agent: AgentRuntime, verb: str, args: tuple[Any, ...], clock: FrozenClock) -> int:
    """Run one step; the seq of the event it recorded (0 for none)."""
    if verb == "llm":
        return agent.record_llm_call(args[0], tokens_in=900, tokens_out=150, cost_usd=0.002).seq
    if verb == "tool":
        return agent.record_tool_call(args[0], args[1], result=args[2]).seq
    if verb == "fail":
        return agent.record_tool_call(args[0], args[1], error=args[2]).seq
    if verb == "remember":
        return agent.remember(args[0], args[1]).seq
    if verb == "recall":
        agent.recall(args[0])
        return 0
    if verb == "forget":
        agent.forget(args[0])
        return 0
    if verb == "decide":
        subject = args[1] if len(args) > 1 else ""
        return agent.log_decision(args[0], context={"subject": subject} if subject else None).seq
    if verb == "handoff":
        return agent.record_handoff(args[0], args[1]).seq
    if verb == "send":
        agent.send_message(args[0], args[1])
        return agent.timeline(kinds=("message_sent",))[-1].seq
    if verb == "read":
        for message in agent.read_messages():
            agent.mark_read(message.id)
        return 0
    if verb == "wait":
        clock.advance(args[0])
        return 0
    raise AssertionError(f"unknown verb {verb!r}")


def play(trace: dict[str, Any]) -> tuple[dict[str, AgentRuntime], set[tuple[str, int]]]:
    """Run a trace: its agents on one store, and the (agent, seq) of its marked steps."""
    clock = FrozenClock()
    team = Octopoda(store=":memory:", clock=clock)
    agents = {name: team.agent(name) for name in trace["agents"]}
    marked: set[tuple[str, int]] = set()
    for verb, *args in trace["steps"]:
        name, verb, loop = _split(verb, trace["agents"][0])
        seq = _step(agents[name], verb, tuple(args), clock)
        if loop and seq:
            marked.add((name, seq))
        clock.advance(3 if verb == "llm" else 1)
    return agents, marked


def detections(agent: AgentRuntime) -> list[LoopSignal]:
    return [*agent.loop_history(), *agent.loop_status().signals]


@pytest.mark.parametrize("trace", TRACES, ids=[t["name"] for t in TRACES])
def test_trace(trace: dict[str, Any]) -> None:
    agents, marked = play(trace)
    found = {name: detections(agent) for name, agent in agents.items()}
    kinds = {s.kind for signals in found.values() for s in signals}
    assert kinds == set(trace["expect"]), {
        name: [(s.kind, s.explanation) for s in signals] for name, signals in found.items()
    }
    for name, signals in found.items():
        for signal in signals:
            named = {(e.agent or name, e.seq) for e in signal.events if e.seq}
            assert named <= marked, (signal.kind, sorted(named - marked), signal.explanation)


def test_the_suite_pairs_every_loop_with_a_hard_negative() -> None:
    """Every class of loop has positives and hard negatives, and every trace's twin is a
    trace of the same class on the other side of the line (its twin names it back, or is
    a negative shared by several loops)."""
    assert len(BY_NAME) == len(TRACES), "trace names must be unique"
    assert {t["class"] for t in TRACES} == set(CLASSES)
    for cls in CLASSES:
        ours = [t for t in TRACES if t["class"] == cls]
        assert any(t["expect"] for t in ours) and any(not t["expect"] for t in ours), cls
    for trace in TRACES:
        twin = BY_NAME[trace["twin"]]
        assert twin["class"] == trace["class"], trace["name"]
        assert bool(twin["expect"]) != bool(trace["expect"]), trace["name"]
        assert trace["story"].strip(), trace["name"]
        if trace["expect"]:
            assert any(verb.endswith("*") for verb, *_ in trace["steps"]), trace["name"]
