"""Scripted conversations, run the same way on SQLiteSession and OctopodaSession.

Imported by the tests and run as a script in subprocesses (restart and crash tests):

    python scenario.py DIR PHASE...   # runs the PHASEs on DIR/sqlite.db and DIR/octopoda.db
                                      # and prints {"sqlite": [...], "octopoda": [...]}
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from agents import Agent, RunConfig, Runner, SQLiteSession, function_tool
from octopoda_openai_agents import OctopodaSession
from octopoda_openai_agents.testing import ScriptedModel, assistant_message, function_call

SESSION_ID = "parity"
PROCS = Path(__file__).resolve().parent
PYTHON = sys.executable


@function_tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def make_session(kind: str, db: str, session_id: str = SESSION_ID) -> Any:
    if kind == "sqlite":
        return SQLiteSession(session_id, db)
    if kind == "octopoda":
        return OctopodaSession(session_id, db)
    raise SystemExit(f"unknown session kind {kind!r}")


async def run(session: Any, text: str, steps: list[Any]) -> str:
    model = ScriptedModel(steps)
    agent = Agent(name="calc", instructions="Add numbers.", model=model, tools=[add])
    result = await Runner.run(
        agent, text, session=session, run_config=RunConfig(tracing_disabled=True)
    )
    return str(result.final_output)


async def phase_one(session: Any) -> list[Any]:
    seen: list[Any] = []
    seen.append(
        await run(
            session,
            "What is 2 + 3?",
            [
                [function_call("add", {"a": 2, "b": 3}, call_id="c1")],
                [assistant_message("The sum is 5.", item_id="m1")],
            ],
        )
    )
    seen.append(
        await run(
            session,
            "And 4 + 4, and 10 + 1?",
            [
                [
                    function_call("add", {"a": 4, "b": 4}, call_id="c2"),
                    function_call("add", {"a": 10, "b": 1}, call_id="c3"),
                ],
                [assistant_message("8 and 11.", item_id="m2")],
            ],
        )
    )
    seen.append(await session.get_items())
    seen.append(await session.get_items(limit=3))
    seen.append(await session.get_items(limit=0))
    seen.append(await session.get_items(limit=100))
    return seen


async def phase_two(session: Any) -> list[Any]:
    seen: list[Any] = [await session.pop_item(), await session.pop_item()]
    seen.append(await session.get_items())
    seen.append(
        await run(
            session, "Say hi", [[assistant_message("Hi! \u00e9\u00e8 \U0001f419", item_id="m3")]]
        )
    )
    await session.add_items(
        [
            {"role": "user", "content": 'caf\u00e9 \u2603 "quoted" \\ back'},
            {"role": "user", "content": [{"type": "input_text", "text": "nested 1.5e-7"}]},
        ]
    )
    seen.append(await session.get_items())
    seen.append(await session.get_items(limit=1))
    return seen


async def phase_three(session: Any) -> list[Any]:
    await session.clear_session()
    seen: list[Any] = [await session.get_items(), await session.pop_item()]
    seen.append(await run(session, "Fresh start", [[assistant_message("Ok.", item_id="m4")]]))
    seen.append(await session.get_items())
    seen.append(await session.pop_item())
    seen.append(await session.get_items())
    return seen


PHASES = {"one": phase_one, "two": phase_two, "three": phase_three}


async def main(directory: str, phases: list[str]) -> None:
    out = {}
    for kind in ("sqlite", "octopoda"):
        session = make_session(kind, f"{directory}/{kind}.db")
        try:
            out[kind] = [await PHASES[phase](session) for phase in phases]
        finally:
            session.close()
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2:]))
