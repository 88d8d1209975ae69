"""OctopodaSession beside the SDK's SQLiteSession: add_items and get_items, in one run.

    python bench/bench_openai_agents.py [--quick] [--rounds N]
    nox -s bench_openai_agents [-- --quick]

Needs octopoda-openai-agents (and so openai-agents) installed. Both sessions are used as the
SDK uses them (awaited, each call in a worker thread), on files in one temp dir, fresh per
round. Rounds alternate which side goes first; each metric is the median of the per-round
ratios ``SQLiteSession time / OctopodaSession time`` (1.0 = as fast, higher = faster).

* ``add_items``: one conversation turn per call (a function call, its output and an
  assistant message, about 400 bytes), after 20 untimed calls.
* ``get_items``: the whole history of a 60-item session, and ``get_items(limit=10)``.

Durability differs by default and is printed: SQLiteSession leaves SQLite's default
(``synchronous=FULL`` in WAL: an fsync per commit), Octopoda's default is ``normal``
(``synchronous=NORMAL``: a returned write survives a process crash; ``full`` also survives
power loss). The ``full`` comparison is printed beside it (INFO). Exit status 1 when a target
(>= 1.0) is missed, except with ``--quick``.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from collections.abc import Awaitable, Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any

from _common import line, median, section
from agents import SQLiteSession
from octopoda_openai_agents import OctopodaSession

TARGET = 1.0
WARMUP = 20


def turn(i: int) -> list[dict[str, Any]]:
    """The items one tool-using turn adds to a session."""
    call_id = f"call_{i:06d}"
    return [
        {
            "arguments": f'{{"city":"Lisbon","day":{i}}}',
            "call_id": call_id,
            "name": "get_weather",
            "type": "function_call",
            "id": f"fc_{i:06d}",
        },
        {
            "call_id": call_id,
            "output": f"Sunny, {18 + i % 10} degrees",
            "type": "function_call_output",
        },
        {
            "id": f"msg_{i:06d}",
            "content": [
                {"annotations": [], "text": f"Day {i}: sunny in Lisbon.", "type": "output_text"}
            ],
            "role": "assistant",
            "status": "completed",
            "type": "message",
        },
    ]


Factory = Callable[[Path], Any]


def sqlite_session(path: Path) -> Any:
    return SQLiteSession("bench", path)


def octopoda_session(path: Path, durability: str = "normal") -> Any:
    return OctopodaSession("bench", str(path), durability=durability)  # type: ignore[arg-type]


async def _timed(calls: int, op: Callable[[int], Awaitable[Any]]) -> float:
    clock = time.perf_counter
    t0 = clock()
    for i in range(calls):
        await op(i)
    return clock() - t0


async def time_add(factory: Factory, path: Path, calls: int) -> float:
    session = factory(path)
    try:
        for i in range(WARMUP):
            await session.add_items(turn(-1 - i))
        return await _timed(calls, lambda i: session.add_items(turn(i)))
    finally:
        session.close()


async def time_get(factory: Factory, path: Path, calls: int, limit: int | None) -> float:
    session = factory(path)
    try:
        for i in range(20):  # a 60-item session
            await session.add_items(turn(i))
        got = await session.get_items(limit)
        assert len(got) == (60 if limit is None else limit), len(got)
        return await _timed(calls, lambda i: session.get_items(limit))
    finally:
        session.close()


def compare(
    name: str,
    rounds: int,
    tmp: Path,
    run: Callable[[Factory, Path], Awaitable[float]],
    ours: Factory = octopoda_session,
) -> float:
    ratios: list[float] = []
    times: dict[str, list[float]] = {"sqlite": [], "octopoda": []}
    for r in range(rounds):
        sides: list[tuple[str, Factory]] = [("sqlite", sqlite_session), ("octopoda", ours)]
        if r % 2:
            sides.reverse()
        took = {}
        for side, factory in sides:
            took[side] = asyncio.run(run(factory, tmp / f"{name}-{side}-{r}.db"))
            times[side].append(took[side])
        ratios.append(took["sqlite"] / took["octopoda"])
    result = median(ratios)
    line(
        f"{name:<22} SQLiteSession {median(times['sqlite']) * 1e3:8.1f} ms"
        f"  Octopoda {median(times['octopoda']) * 1e3:8.1f} ms  ratio {result:5.2f}x"
        f"  (rounds: {', '.join(f'{x:.2f}' for x in ratios)})"
    )
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small N, never fails")
    parser.add_argument("--rounds", type=int, default=None)
    args = parser.parse_args(argv)
    rounds = args.rounds or (3 if args.quick else 7)
    adds, gets = (50, 100) if args.quick else (300, 1000)
    section(
        f"OctopodaSession vs SQLiteSession (openai-agents {version('openai-agents')},"
        f" {rounds} rounds, {adds} add_items / {gets} get_items per round)"
    )
    line("durability: SQLiteSession WAL + synchronous=FULL (SQLite default);")
    line("            Octopoda durability='normal' (WAL + synchronous=NORMAL), default")
    results: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="octopoda-bench-oa-") as tmp_dir:
        tmp = Path(tmp_dir)
        results["add_items"] = compare("add_items", rounds, tmp, lambda f, p: time_add(f, p, adds))
        results["get_items (60 items)"] = compare(
            "get_items", rounds, tmp, lambda f, p: time_get(f, p, gets, None)
        )
        results["get_items(limit=10)"] = compare(
            "get_items_limit", rounds, tmp, lambda f, p: time_get(f, p, gets, 10)
        )
        info = compare(
            "add_items_full",
            rounds,
            tmp,
            lambda f, p: time_add(f, p, adds),
            ours=lambda p: octopoda_session(p, "full"),
        )
    print()
    failed = False
    for metric, value in results.items():
        status = "PASS" if value >= TARGET else "FAIL"
        failed |= status == "FAIL"
        print(f"openai_agents  {metric:<22} {value:5.2f}x  >= {TARGET:g}  {status}")
    print(f"openai_agents  {'add_items, both FULL':<22} {info:5.2f}x          INFO")
    return 1 if failed and not args.quick else 0


if __name__ == "__main__":
    raise SystemExit(main())
