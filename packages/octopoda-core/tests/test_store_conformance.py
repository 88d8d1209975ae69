"""Every store backend passes the same conformance suite (octopoda.testing)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from octopoda import SqliteStore
from octopoda.testing import StoreConformance


class TestSqliteStore(StoreConformance):
    @pytest.fixture(params=["file", "memory"])
    def store(self, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SqliteStore]:
        path = str(tmp_path / "store.db") if request.param == "file" else ":memory:"
        store = SqliteStore(path)
        yield store
        store.close()


def test_sqlite_limited_current_is_the_full_answer_sliced_and_walks_the_index(
    tmp_path: Path,
) -> None:
    """With a limit, SqliteStore.current walks the key index and stops early (no grouping or
    sorting of the whole range); its answer is still the full answer's slice."""
    import sqlite3
    from contextlib import closing

    from octopoda import AgentRuntime
    from octopoda._store import agent_namespace
    from octopoda._store.sqlite.schema import READS
    from octopoda.testing import FrozenClock

    clock = FrozenClock()
    path = tmp_path / "s.db"
    store = SqliteStore(str(path))
    rt = AgentRuntime("a", store=store, clock=clock)
    for i in range(40):
        tags = ["even"] if i % 2 == 0 else None
        rt.remember(f"k/{i:02d}", i, tags=tags, ttl=5 if i % 7 == 0 else None)
    for i in range(0, 40, 3):
        rt.remember(f"k/{i:02d}", -i, tags=["even"] if i % 4 == 0 else None)
    rt.forget_many([f"k/{i:02d}" for i in range(0, 40, 5)])
    mid = rt.audit.head().seq
    rt.remember_many([(f"k/{i:02d}", "late") for i in range(35, 50)])
    rt.remember("other", 1)
    clock.advance(10)
    ns = agent_namespace("a")
    variants: list[dict[str, object]] = [
        {},
        {"prefix": "k/1"},
        {"tags": ["even"]},
        {"as_of_seq": mid},
        {"as_of_seq": mid, "tags": ["even"], "prefix": "k/"},
        {"include_dead": True},
        {"now": clock()},
        {"now": clock(), "as_of_seq": mid},
    ]
    for kw in variants:
        full = store.current(ns, **kw)  # type: ignore[arg-type]
        assert full, kw
        for limit, offset in ((1, 0), (3, 2), (10, 5), (100, 0), (0, 0), (5, len(full) - 2)):
            got = store.current(ns, limit=limit, offset=offset, **kw)  # type: ignore[arg-type]
            assert got == full[offset : offset + limit], (kw, limit, offset)
    sql, params = READS.current(
        ns,
        prefix="k/",
        tags=("even",),
        as_of_seq=mid,
        now=clock(),
        limit=5,
        offset=0,
        include_dead=False,
    )
    with closing(sqlite3.connect(path)) as conn:  # (a Connection's own with does not close it)
        plan = " ".join(str(row) for row in conn.execute("EXPLAIN QUERY PLAN " + sql, params))
    assert "TEMP B-TREE" not in plan and "MATERIALIZE" not in plan, plan
    store.close()


def test_sqlite_tag_filter_matches_exactly_with_tricky_tags(tmp_path: Path) -> None:
    """The tag filter tests the stored JSON text with instr() before json_each(): a tag that
    is a substring of another, or holds quotes, backslashes or non-ASCII text, must still
    match exactly the rows that carry it."""
    from octopoda import AgentRuntime
    from octopoda._store import agent_namespace

    store = SqliteStore(str(tmp_path / "t.db"))
    rt = AgentRuntime("a", store=store)
    tags = ["a", "ab", 'say "hi"', "back\\slash", "Ünïcødé ✓", 'x"a', "\\u00dc", "m:k=1"]
    for i, tag in enumerate(tags):
        rt.remember(f"k{i}", i, tags=[tag])
    rt.remember("all", 0, tags=tags)
    rt.remember("none", 0)
    ns = agent_namespace("a")
    for i, tag in enumerate(tags):
        for limit in (None, 5):
            found = [r.key for r in store.current(ns, tags=[tag], limit=limit)]
            assert found == ["all", f"k{i}"], (tag, found)
    assert [r.key for r in store.current(ns, tags=["a", "ab"])] == ["all"]
    assert store.current(ns, tags=['"a"']) == []
    store.close()
