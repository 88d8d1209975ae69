"""docs/loops.md's table of signals names real detector arguments with their defaults, its
report example reads as a real report does, and its map of the code names every module."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

import octopoda._loops
from octopoda import AgentRuntime
from octopoda._loops import (
    OscillationDetector,
    PingPongDetector,
    RecallWriteDetector,
    ReflectionDetector,
    RetryDetector,
    describe,
)

DOC = (Path(__file__).resolve().parent.parent / "docs" / "loops.md").read_text(encoding="utf-8")
DETECTORS = {
    "retry": RetryDetector,
    "oscillation": OscillationDetector,
    "ping_pong": PingPongDetector,
    "reflection": ReflectionDetector,
    "recall_write": RecallWriteDetector,
}


def row(kind: str) -> tuple[str, str]:
    """The 'fires when' and 'defaults' cells of a signal's row."""
    (line,) = [x for x in DOC.splitlines() if x.startswith(f"| `{kind}` |")]
    cells = [c.strip() for c in line.strip("|").split("|")]
    return cells[1], cells[2]


def shown(value: object) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value)


@pytest.mark.parametrize("kind", DETECTORS)
def test_each_documented_threshold_is_an_argument_with_its_default(kind: str) -> None:
    text, defaults = row(kind)
    parameters = inspect.signature(DETECTORS[kind]).parameters
    named = [n for n in re.findall(r"`([a-z_]+)`", text) if "_" in n and n in parameters]
    assert named, f"the {kind} row names no argument"
    listed = re.findall(r"\d+(?:\.\d+)?", defaults)
    for name in named:
        assert shown(parameters[name].default) in listed, (kind, name, parameters[name].default)


def test_every_signal_has_a_row() -> None:
    kinds = re.findall(r"^\| `([a-z_]+)` \|", DOC, flags=re.MULTILINE)
    assert kinds == list(DETECTORS)


def test_the_report_example_is_what_a_retry_reads() -> None:
    agent = AgentRuntime("docs", store=":memory:")
    for _ in range(3):
        agent.record_tool_call("fetch", {"url": "https://api.example.com/v1"}, error="HTTP 503")
    (signal,) = agent.loop_status().signals
    text = describe(signal, agent.agent_id)
    (example,) = re.findall(r"```text\n(.*?)```", DOC, flags=re.DOTALL)
    start, rest = " ".join(example.split()).split(" (events ")
    assert text.startswith(start + " (events ")
    assert rest.split(");")[1].strip() == "suggestion: ..."


def test_the_map_of_the_code_names_every_module() -> None:
    section = DOC.split("## In the code", 1)[1]
    named = set(re.findall(r"`([a-z_]+)\.py`", section))
    package = Path(octopoda._loops.__file__).parent
    assert named == {p.stem for p in package.glob("*.py")} - {"__init__"}


def test_the_runs_section_states_the_defaults_of_the_code() -> None:
    from octopoda import LoopPolicy
    from octopoda._loops import WARM_UP_EVENTS
    from octopoda._loops.runs import MAX_RUN_STATES

    section = DOC.split("## Runs: one agent, many conversations", 1)[1].split("\n## ", 1)[0]
    policy = LoopPolicy()
    assert policy.pause_scope == "run" and 'pause_scope="run")`, the default' in section
    assert f"`outage_runs` ({policy.outage_runs})" in section
    assert f"`outage_window_seconds` ({policy.outage_window_seconds:g})" in section
    assert f"its {MAX_RUN_STATES} most recently active runs" in section
    assert f"the last {WARM_UP_EVENTS} events" in section
