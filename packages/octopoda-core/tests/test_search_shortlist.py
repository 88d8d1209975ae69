"""A page of a search on SQLite is read from a shortlist: the namespace's best matches by
(score, key), ranked before any memory is read (``SearchSql.shortlist``). It must return
exactly what the search over every match returns: the same rows, scores and order, ties in
score decided by the key, whatever the filters leave of the shortlist (then the search
over every match answers)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from octopoda import AgentRuntime, SqliteStore
from octopoda.testing import FrozenClock

N = 300  # more matches than any shortlist below (a page of 10: 56)


def _load(agent: AgentRuntime, clock: FrozenClock) -> None:
    # Equal texts but for the key: most scores tie, and the key decides between them (the
    # keys written out of their order: the index's order is not the keys').
    order = [j * 37 % N for j in range(N)]
    agent.remember_many({f"note/{i:03d}": f"green tea number {i % 7}" for i in order})
    for i in range(0, N, 3):  # higher scores; a few tagged (some in any shortlist)
        tags = ["spread"] if i % 45 == 0 else None
        agent.remember(f"note/{i:03d}", f"green tea tea number {i % 7}", tags=tags)
    for i in range(N - 12, N):
        agent.remember(f"late/{i:03d}", "green tea", tags=["late"], kind="fact")
    agent.remember("short/ttl", "green tea", ttl=5)
    agent.forget("note/001")
    clock.advance(10)  # (short/ttl has expired)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteStore]:
    clock = FrozenClock()
    with AgentRuntime("other", store=tmp_path / "s.db") as other:  # matches elsewhere too
        other.remember_many({f"o{i}": "green tea" for i in range(200)})
    with (
        SqliteStore(tmp_path / "s.db") as sqlite,
        AgentRuntime("bot", store=sqlite, clock=clock) as agent,
    ):
        _load(agent, clock)
        yield sqlite


NOW = FrozenClock().now + 10  # (the clock of the fixture's writes, after them)


def _search(store: SqliteStore, **kw: Any) -> list[tuple[str, int, float]]:
    found = store.search("agent:bot", ["tea"], now=NOW, **kw)
    return [(row.key, row.version, score) for row, score in found]


@pytest.mark.parametrize(("limit", "offset"), [(1, 0), (10, 0), (40, 0), (10, 95), (7, 290)])
def test_a_page_is_the_slice_of_the_whole_ranking(
    store: SqliteStore, limit: int, offset: int
) -> None:
    whole = _search(store)
    assert len(whole) == N - 1 + 12  # (not the forgotten key nor the expired one)
    assert len({score for *_, score in whole}) < 20  # (ties: the key decides)
    assert _search(store, limit=limit, offset=offset) == whole[offset : offset + limit]


@pytest.mark.parametrize(
    "filters",
    [
        {"tags": ("late",)},
        {"tags": ("spread",)},
        {"kinds": ("fact",)},
        {"prefix": "late/"},
        {"prefix": "note/2"},
    ],
    ids=["tags", "tags-spread", "kinds", "prefix-few", "prefix-many"],
)
def test_filters_that_leave_little_of_the_shortlist(
    store: SqliteStore, filters: dict[str, Any]
) -> None:
    whole = _search(store, **filters)
    assert whole
    for limit in (5, 10, 200):
        assert _search(store, limit=limit, **filters) == whole[:limit]


def test_a_page_the_shortlist_holds_is_one_statement(tmp_path: Path) -> None:
    statements: list[str] = []
    store = SqliteStore(tmp_path / "s.db", tracer=statements.append)
    with store, AgentRuntime("bot", store=store) as agent:
        agent.remember_many({f"k{i}": f"green tea {i}" for i in range(100)})
        agent.remember("rare", "green tea", tags=["rare"])
        agent.search(query="tea", limit=1)  # (indexes them)
        statements.clear()
        assert len(agent.search(query="tea", limit=10)) == 10
        assert len([s for s in statements if "bm25" in s]) == 1
        statements.clear()  # a filter that leaves less than a page: the whole ranking too
        assert [i.key for i in agent.search(query="tea", tags=["rare"], limit=10)] == ["rare"]
        assert len([s for s in statements if "bm25" in s]) == 2
        statements.clear()  # fewer matches than the shortlist's size: it holds them all
        assert [i.key for i in agent.search(query="k7 k8", limit=10)] == ["k7", "k8"]
        assert len([s for s in statements if "bm25" in s]) == 1
