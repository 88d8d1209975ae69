"""OctopodaSaver against LangGraph's SqliteSaver on random interleavings of put, put_writes,
get_tuple and list: sync, from several OS threads, and async.

LangGraph's own graph runs with ``durability="async"`` or ``"exit"`` hand the saver a
checkpoint's pending writes before the checkpoint itself (the writes of the next step race
the background ``put``). The conformance suite always puts a checkpoint before its writes, so
the orders here are random: writes may go to a checkpoint that is put later, to an old one, or
to one that is never put; reads name the newest checkpoint, an old one, or one not put yet.
Each op goes to both savers and every read must give what SqliteSaver gives. Ours run with the
default cache, a 2-entry cache (constant eviction) and none; in the "two savers" variants every
op picks one of two OctopodaSavers on the same file at random, so each one's cache must notice
the other's writes.
"""

from __future__ import annotations

import asyncio
import random
import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.base import (
    ERROR,
    INTERRUPT,
    CheckpointTuple,
    create_checkpoint,
    empty_checkpoint,
)
from octopoda_langchain import OctopodaSaver

sqlite_saver = pytest.importorskip("langgraph.checkpoint.sqlite")
SqliteSaver = sqlite_saver.SqliteSaver

SEEDS = range(12)
OPS_PER_THREAD = 70
THREADS = ("t0", "t1", "t2")
NAMESPACES = ("", "child:1")
TASKS = ("task-a", "task-b", "task-c")


@dataclass
class Slot:
    """What the op generator knows about one (thread, namespace)."""

    thread: str
    ns: str
    put: list[dict[str, Any]] = field(default_factory=list)  # checkpoints put, oldest first
    pending: list[dict[str, Any]] = field(default_factory=list)  # made, not put yet
    parent: str | None = None


Op = tuple[str, tuple[Any, ...]]


def config(thread: str, ns: str, cid: str | None = None) -> dict[str, Any]:
    conf: dict[str, Any] = {"thread_id": thread, "checkpoint_ns": ns}
    if cid is not None:
        conf["checkpoint_id"] = cid
    return {"configurable": conf}


def make_ops(rng: random.Random, thread: str, n: int) -> list[Op]:
    """A random sequence of saver calls on one thread (both of its namespaces)."""
    slots = {ns: Slot(thread, ns) for ns in NAMESPACES}
    ops: list[Op] = []
    step = 0
    while len(ops) < n:
        slot = slots[rng.choice(NAMESPACES)]
        roll = rng.random()
        if roll < 0.2 or not (slot.put or slot.pending):
            base = (slot.pending or slot.put or [empty_checkpoint()])[-1]
            cp = create_checkpoint(base, {}, step)
            cp["channel_values"] = {"step": step, "thread": thread}
            step += 1
            slot.pending.append(cp)
        elif roll < 0.4 and slot.pending:
            cp = slot.pending.pop(0)  # the oldest not yet put: LangGraph's order
            parent = config(thread, slot.ns, slot.parent)
            ops.append(("put", (parent, cp, {"source": "loop", "step": step}, {})))
            slot.put.append(cp)
            slot.parent = cp["id"]
        elif roll < 0.7:
            # writes to a checkpoint put already or not yet put (the async race)
            cp = rng.choice(slot.put + slot.pending)
            task = rng.choice(TASKS)
            if rng.random() < 0.15:
                writes = [(rng.choice([ERROR, INTERRUPT]), f"special {len(ops)}")]
            else:
                writes = [(f"ch{i}", f"{task} {len(ops)} {i}") for i in range(rng.randint(1, 3))]
            ops.append(("put_writes", (config(thread, slot.ns, cp["id"]), writes, task)))
        elif roll < 0.92:
            choices = [None] + [cp["id"] for cp in slot.put + slot.pending]
            ops.append(("get_tuple", (config(thread, slot.ns, rng.choice(choices)),)))
        else:
            ops.append(("list", (config(thread, slot.ns), rng.choice([None, 1, 3]))))
    return ops


def summary(found: CheckpointTuple | None) -> Any:
    if found is None:
        return None
    return (
        found.config,
        found.checkpoint,
        dict(found.metadata),
        found.parent_config,
        list(found.pending_writes or ()),
    )


def apply(saver: Any, op: Op) -> Any:
    name, args = op
    if name == "put":
        return saver.put(*args)
    if name == "put_writes":
        return saver.put_writes(*args)
    if name == "get_tuple":
        return summary(saver.get_tuple(*args))
    conf, limit = args
    return [summary(t) for t in saver.list(conf, limit=limit)]


async def aapply(saver: Any, op: Op) -> Any:
    name, args = op
    if name == "put":
        return await saver.aput(*args)
    if name == "put_writes":
        return await saver.aput_writes(*args)
    if name == "get_tuple":
        return summary(await saver.aget_tuple(*args))
    conf, limit = args
    return [summary(t) async for t in saver.alist(conf, limit=limit)]


VARIANTS = {
    "cached": {"cache_size": 1024, "savers": 1},
    "tiny-cache": {"cache_size": 2, "savers": 1},
    "uncached": {"cache_size": 0, "savers": 1},
    "two-savers": {"cache_size": 1024, "savers": 2},
    "two-tiny-caches": {"cache_size": 2, "savers": 2},
}


def ours(path: Path, variant: str) -> list[OctopodaSaver]:
    options = VARIANTS[variant]
    return [
        OctopodaSaver(str(path), cache_size=options["cache_size"]) for _ in range(options["savers"])
    ]


def check(seed: int, thread: str, index: int, op: Op, expected: Any, got: Any) -> None:
    assert got == expected, (
        f"seed {seed}, {thread}, op {index} {op[0]}{op[1]!r}:\n"
        f"  SqliteSaver:   {expected!r}\n  OctopodaSaver: {got!r}"
    )


def run_thread(
    seed: int, thread: str, oracle: Any, savers: list[OctopodaSaver], rng: random.Random
) -> None:
    for index, op in enumerate(make_ops(random.Random(f"{seed}-{thread}"), thread, OPS_PER_THREAD)):
        expected = apply(oracle, op)
        got = apply(rng.choice(savers), op)
        if op[0] != "put_writes":
            check(seed, thread, index, op, expected, got)


@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("seed", SEEDS)
def test_sync_interleavings_match_sqlite_saver(tmp_path: Path, seed: int, variant: str) -> None:
    """All threads' ops shuffled into one sequence, run from one OS thread."""
    rng = random.Random(seed)
    per_thread = {t: make_ops(random.Random(f"{seed}-{t}"), t, OPS_PER_THREAD) for t in THREADS}
    order = [t for t in THREADS for _ in per_thread[t]]
    rng.shuffle(order)
    savers = ours(tmp_path / "ours.db", variant)
    with SqliteSaver.from_conn_string(str(tmp_path / "sqlite.db")) as oracle:
        cursors = dict.fromkeys(THREADS, 0)
        for thread in order:
            index = cursors[thread]
            cursors[thread] += 1
            op = per_thread[thread][index]
            expected = apply(oracle, op)
            got = apply(rng.choice(savers), op)
            if op[0] != "put_writes":
                check(seed, thread, index, op, expected, got)
        # at the end, every thread reads the same from every saver, and so do all threads
        for thread in THREADS:
            for ns in NAMESPACES:
                everything = [summary(t) for t in oracle.list(config(thread, ns))]
                for saver in savers:
                    assert [summary(t) for t in saver.list(config(thread, ns))] == everything
        newest = [t.config for t in oracle.list(None)]
        listings: list[dict[str, Any]] = [
            {},
            {"limit": 5},
            {"limit": 0},
            {"filter": {"source": "loop"}, "limit": 7},
            {"filter": {"step": 5}},
            {"filter": {"step": 5.0, "source": "loop"}},
            {"filter": {"source": "input"}},
            {"before": newest[len(newest) // 2], "limit": 3},
            {"before": newest[-1]},
        ]
        for kw in listings:
            expected_all = [summary(t) for t in oracle.list(None, **kw)]
            for saver in savers:
                assert [summary(t) for t in saver.list(None, **kw)] == expected_all, kw


@pytest.mark.parametrize("variant", ["cached", "tiny-cache", "two-savers"])
@pytest.mark.parametrize("seed", SEEDS[:6])
def test_os_threads_interleavings_match_sqlite_saver(
    tmp_path: Path, seed: int, variant: str
) -> None:
    """One OS thread per LangGraph thread, all at once, on shared savers."""
    savers = ours(tmp_path / "ours.db", variant)
    conn = sqlite3.connect(str(tmp_path / "sqlite.db"), check_same_thread=False)
    oracle = SqliteSaver(conn)
    errors: list[BaseException] = []

    def work(thread: str) -> None:
        try:
            run_thread(seed, thread, oracle, savers, random.Random(f"pick-{seed}-{thread}"))
        except BaseException as exc:  # reported below, in the test's thread
            errors.append(exc)

    workers = [threading.Thread(target=work, args=(t,)) for t in THREADS]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=120)
    conn.close()
    assert not any(w.is_alive() for w in workers)
    if errors:
        raise errors[0]


@pytest.mark.parametrize("variant", ["cached", "tiny-cache", "two-savers"])
@pytest.mark.parametrize("seed", SEEDS[:6])
def test_async_interleavings_match_async_sqlite_saver(
    tmp_path: Path, seed: int, variant: str
) -> None:
    """One asyncio task per LangGraph thread, gathered: aput, aput_writes, aget_tuple, alist."""
    aio = pytest.importorskip("langgraph.checkpoint.sqlite.aio")
    savers = ours(tmp_path / "ours.db", variant)

    async def work(thread: str, oracle: Any) -> None:
        pick = random.Random(f"pick-{seed}-{thread}")
        ops = make_ops(random.Random(f"{seed}-{thread}"), thread, OPS_PER_THREAD)
        for index, op in enumerate(ops):
            expected = await aapply(oracle, op)
            got = await aapply(pick.choice(savers), op)
            if op[0] != "put_writes":
                check(seed, thread, index, op, expected, got)

    async def main() -> None:
        async with aio.AsyncSqliteSaver.from_conn_string(str(tmp_path / "sqlite.db")) as oracle:
            await asyncio.gather(*(work(t, oracle) for t in THREADS))

    asyncio.run(main())


def test_the_issue_repro_writes_before_their_checkpoint(tmp_path: Path) -> None:
    """The sequence from the bug report, on both savers: writes, then their checkpoint."""
    results: list[Any] = []
    conn = sqlite3.connect(":memory:", check_same_thread=False)
    savers: list[Callable[[], Any]] = [
        lambda: SqliteSaver(conn),
        lambda: OctopodaSaver(":memory:"),
    ]
    for make in savers:
        s = make()
        base = config("t", "")
        c1 = empty_checkpoint()
        cfg1 = s.put(base, c1, {"step": -1}, {})
        s.get_tuple(base)
        c2 = create_checkpoint(c1, {}, 1)
        cfg2 = config("t", "", c2["id"])
        s.put_writes(cfg2, [(INTERRUPT, "ask")], "task-1")
        s.put(cfg1, c2, {"step": 0}, {})
        found = s.get_tuple(cfg2)
        assert found is not None
        results.append(found.pending_writes)
        latest = s.get_tuple(base)
        assert latest is not None and latest.pending_writes == found.pending_writes
    conn.close()
    assert results[0] == [("task-1", INTERRUPT, "ask")]
    assert results[1] == results[0]
