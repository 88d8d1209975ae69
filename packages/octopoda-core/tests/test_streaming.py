"""Reads that stream (issue 15, item 6): ``recall_history(limit=)`` reads only what it
returns, whole-namespace reads (export, verify) hold a bounded batch of values, and
``export_memories_to`` writes the bundle as it reads it. Peak memory is measured with
tracemalloc (the Python objects the reads create); ``bench/bench_stream.py`` measures it at
full size."""

from __future__ import annotations

import io
import json
import os
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from octopoda import AgentRuntime, InvalidInput
from octopoda._store.reads import VALUE_BUDGET, value_batches

MB = 1_000_000


def peak(call: Callable[[], Any]) -> int:
    """Peak bytes of Python allocations while ``call`` runs (its result dropped)."""
    tracemalloc.start()
    try:
        call()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_value_batches_fit_the_budget() -> None:
    assert list(value_batches([])) == []
    assert list(value_batches([1] * 10, budget=4)) == [4, 4, 2]
    assert list(value_batches([10, 1, 1, 10], budget=4)) == [1, 2, 1]  # a large value alone
    assert list(value_batches([None, "x", 3], budget=4)) == [3]  # damaged sizes count 0


def test_export_to_a_file_is_the_export(any_store_url: str, tmp_path: Path) -> None:
    agent = AgentRuntime("bot", store=any_store_url)
    assert json.loads(_exported(agent))["memories"] == []
    agent.remember("a", {"x": [1, "é"]}, tags=["t"])
    agent.remember("a", b"\x00\xff")
    agent.forget("a")
    agent.remember("b", "text", ttl=60)
    agent.remember("c", 1)
    agent.erase("c", reason="asked")
    bundle = json.loads(_exported(agent))
    expected = agent.export_memories()
    assert {**bundle, "exported_at": 0} == {**expected, "exported_at": 0}
    target = tmp_path / "out.json"
    assert agent.export_memories_to(target) == (3, 5)
    assert not (tmp_path / "out.json.partial").exists()
    copy = AgentRuntime("copy", store=any_store_url)
    copy.import_memories(target.read_text(encoding="utf-8"))
    assert copy.recall("b").value == "text" and not copy.recall("a").found


def _exported(agent: AgentRuntime) -> str:
    out = io.StringIO()
    agent.export_memories_to(out)
    return out.getvalue()


def test_an_unwritable_export_target_is_an_octopoda_error(tmp_path: Path) -> None:
    agent = AgentRuntime("bot", store=str(tmp_path / "s.db"))
    agent.remember("k", 1)
    with pytest.raises(InvalidInput, match="cannot write the export to"):
        agent.export_memories_to(tmp_path / "missing" / "out.json")


def test_reads_of_large_versions_stay_bounded(any_store_url: str) -> None:
    agent = AgentRuntime("big", store=any_store_url)
    size, versions = 2 * MB, 12
    for _ in range(versions):
        agent.remember("blob", os.urandom(size))
    recall = peak(lambda: agent.recall("blob").value)
    history = peak(lambda: agent.recall_history("blob", limit=1))
    assert history <= 1.5 * recall, (history, recall)
    with open(os.devnull, "w", encoding="utf-8") as sink:
        exported = peak(lambda: agent.export_memories_to(sink))
    # a batch of values (VALUE_BUDGET) and one value being encoded, not the whole history
    assert exported < VALUE_BUDGET + 5 * size < size * versions, exported
    verified = peak(agent.audit.verify)
    assert verified < VALUE_BUDGET + 3 * size, verified
