"""docs/loops.md's table of signals names real detector arguments with their defaults, its
report example reads as a real report does, its map of the code names every module, its
list of volatile keys is what is masked, and its paraphrase examples and thresholds are
what the code gives."""

from __future__ import annotations

import inspect
import json
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
from octopoda._loops.paraphrase import paraphrase_similarity
from octopoda._loops.volatile import _RESULT_METADATA, value_gist, volatile_gist

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


def _section(title: str) -> str:
    return DOC.split(title, 1)[1].split("\n#", 1)[0]


def _json(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w.title() for w in rest)


def test_every_volatile_key_the_guide_lists_is_masked_and_no_other() -> None:
    """The first row of "Masked as volatile" lists the metadata keys exactly: each is
    masked in a result and in a memory value, and the code masks only those (and their
    camelCase forms)."""
    masked = _section("### Masked as volatile")
    (row,) = [x for x in masked.splitlines() if x.startswith("| tool results (`result_gist`)")]
    listed = re.findall(r"`([A-Za-z0-9_-]+)`", row.split("|")[2].split("UUIDs")[0])
    assert len(listed) > 40
    for name in listed:
        one = volatile_gist(_json({"orders": [1, 2], name: "2025-06-15T15:06:41Z"}))
        two = volatile_gist(_json({"orders": [1, 2], name: "2025-06-15T15:09:02Z"}))
        assert one is not None and one == two, name
        first = value_gist(_json({"state": "waiting", name: 1}), 0.0)[0]
        assert first == value_gist(_json({"state": "waiting", name: 2}), 0.0)[0], name
    in_code = set(_RESULT_METADATA.split("|"))
    assert set(listed) <= in_code
    assert in_code - set(listed) <= {_camel(n) for n in listed} | {"X-Request-Id", "ETag"}


def test_the_paraphrase_examples_score_what_the_guide_says() -> None:
    examples = re.findall(
        r'"([^"]+)" and "([^"]+)"\s+score\s+(\d(?:\.\d+)?)', " ".join(DOC.split())
    )
    assert len(examples) >= 3
    for a, b, score in examples:
        assert round(paraphrase_similarity(a, b), 2) == float(score), (a, b)


def test_the_paraphrase_thresholds_are_arguments_with_their_defaults() -> None:
    table = _section("### In other words")
    rows = [r for r in table.splitlines() if r.startswith("| ") and "`" in r]
    assert len(rows) >= 4
    for line in rows:
        cells = [c.strip() for c in line.strip("|").split("|")]
        argument, default = cells[2], cells[3]
        if not argument:
            continue
        kind, name = re.fullmatch(r"(\w+) `(\w+)`", argument).groups()  # type: ignore[union-attr]
        parameters = inspect.signature(DETECTORS[kind]).parameters
        assert shown(parameters[name].default) == default, (kind, name)
