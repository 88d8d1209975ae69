"""langgraph-checkpoint-conformance: OctopodaSaver passes every base and extended capability,
on SQLite (with and without its read cache) and on PostgreSQL."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import (
    BASE_CAPABILITIES,
    EXTENDED_CAPABILITIES,
)
from octopoda_langchain import OctopodaSaver

from octopoda import AgentRuntime


def _run(target: Any, name: str, **options: Any) -> Any:
    @checkpointer_test(name=name)
    async def factory() -> AsyncIterator[OctopodaSaver]:
        saver = OctopodaSaver(target, **options)
        yield saver
        saver.close()

    report = asyncio.run(validate(factory))
    report.print_report()
    failures = {cap: r.failures for cap, r in report.results.items() if r.failures}
    assert not failures, failures
    assert report.passed_all_base()
    assert report.passed_all(), report.to_dict()
    # Every capability was detected and run, extended ones included (none skipped).
    for cap in BASE_CAPABILITIES | EXTENDED_CAPABILITIES:
        result = report.results[cap.value]
        assert result.detected and result.passed, (cap, result)
    return report


@pytest.mark.parametrize("cache_size", [1024, 2, 0], ids=["cached", "tiny-cache", "uncached"])
def test_conformance_sqlite(db_path: str, cache_size: int) -> None:
    report = _run(db_path, f"OctopodaSaver[sqlite, cache={cache_size}]", cache_size=cache_size)
    assert report.conformance_level() == "FULL"


def test_conformance_on_a_shared_agent_runtime(db_path: str) -> None:
    """The saver on an agent that also has its own memory: both stay separate and audited."""
    agent = AgentRuntime("support-bot", store=db_path)
    agent.remember("user_name", "Alice")
    _run(agent, "OctopodaSaver[AgentRuntime]")
    assert agent.recall("user_name").value == "Alice"
    assert agent.audit.verify().ok


def test_conformance_postgres(postgres_url: str) -> None:
    report = _run(postgres_url, "OctopodaSaver[postgresql]")
    assert report.conformance_level() == "FULL"
    assert OctopodaSaver(postgres_url).agent.audit.verify().ok
