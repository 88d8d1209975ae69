"""OctopodaTracingProcessor: function spans become tool calls; nothing is exported."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import agents
import pytest
from agents import Agent, RunConfig, Runner, function_tool
from octopoda_openai_agents import OctopodaTracingProcessor
from octopoda_openai_agents.testing import ScriptedModel, assistant_message, function_call

from octopoda import SqliteStore


@pytest.fixture
def processor(store: SqliteStore) -> Iterator[OctopodaTracingProcessor]:
    proc = OctopodaTracingProcessor(store)
    agents.set_trace_processors([proc])  # replaces the exporter: nothing leaves the process
    agents.set_tracing_disabled(False)
    yield proc
    agents.set_tracing_disabled(True)
    agents.set_trace_processors([])


@function_tool
def add(a: int, b: int) -> int:
    """Add."""
    return a + b


@function_tool
def broken(x: int) -> int:
    """Always fails."""
    raise ValueError(f"cannot handle {x}")


def test_function_spans_are_recorded_as_tool_calls(processor: OctopodaTracingProcessor) -> None:
    model = ScriptedModel(
        [
            [function_call("add", {"a": 2, "b": 3}, call_id="c1")],
            [function_call("broken", {"x": 1}, call_id="c2")],
            [assistant_message("The sum is 5.")],
        ]
    )
    agent = Agent(name="calc", model=model, tools=[add, broken])
    result = asyncio.run(Runner.run(agent, "2+3?", run_config=RunConfig(tracing_disabled=False)))
    assert result.final_output == "The sum is 5."
    runtime = processor.runtime("calc")
    calls: list[dict[str, Any]] = [e.payload for e in runtime.timeline(kinds=["tool_call"])]
    assert [c["name"] for c in calls] == ["add", "broken"]
    assert calls[0]["args_preview"] == '{"a":2,"b":3}'
    assert calls[0]["result_preview"] in ('"5"', "5")
    assert "error" in calls[1] and "result_preview" not in calls[1]
    assert all(c["duration_ms"] >= 0 for c in calls)
    assert runtime.audit.verify().ok


def test_a_span_outside_an_agent_goes_to_the_default_agent(
    processor: OctopodaTracingProcessor,
) -> None:
    with agents.trace("manual"), agents.function_span("lookup", input='{"q": "x"}') as span:
        span.span_data.output = "found"
    runtime = processor.runtime("openai-agents")
    (event,) = runtime.timeline(kinds=["tool_call"])
    assert event.payload["name"] == "lookup" and event.payload["result_preview"] == '"found"'
