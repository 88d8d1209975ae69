"""OctopodaSession where SQLiteSession draws a line: after close(), under cancellation, and
with session settings it does not know (the Agents SDK's own tests found all three)."""

from __future__ import annotations

import asyncio
import subprocess
import threading
from collections.abc import Callable, Iterator
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
from agents import SQLiteSession
from octopoda_openai_agents import InvalidSessionSettings, OctopodaSession, SessionClosed
from scenario import PROCS, PYTHON

from octopoda import Event, InvalidInput, OctopodaError, StorageError

BIG = 20_000  # items in the large write
SDK = tuple(int(p) for p in version("openai-agents").split(".")[:2])
# SQLiteSession refuses calls after close() and checks session_settings in the tested 0.20
# and 0.24; 0.8.x reopens its connection and keeps whatever settings it is given.
SDK_CHECKS = pytest.mark.skipif(SDK < (0, 20), reason="SQLiteSession checks this from 0.20")


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


class Gate:
    """A pipeline processor that holds the first write inside its transaction until
    released (then lets it commit, or fails it so that it rolls back)."""

    def __init__(self, *, fail: bool = False) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self.fail = fail
        self.armed = True

    def __call__(self, event: Event) -> Event:
        if self.armed:
            self.armed = False
            self.entered.set()
            assert self.release.wait(60)
            if self.fail:
                raise RuntimeError("synthetic failure inside the write")
        return event


# -- session_settings --------------------------------------------------------------------------


def test_an_unknown_session_setting_is_a_type_error(store: Any) -> None:
    with pytest.raises(TypeError, match="Unknown session settings: limitt") as caught:
        OctopodaSession("s", store, session_settings={"limitt": 1, "limit": 2})
    assert isinstance(caught.value, InvalidSessionSettings)
    assert isinstance(caught.value, InvalidInput)  # an OctopodaError too
    assert "SessionSettings takes limit" in str(caught.value)  # what to write instead
    assert store.agents() == []  # nothing was written


@pytest.mark.parametrize("bad", [5, "limit=3", [("limit", 3)]])
def test_session_settings_of_another_type_are_a_type_error(store: Any, bad: Any) -> None:
    with pytest.raises(InvalidSessionSettings, match="must be a SessionSettings, a dict or None"):
        OctopodaSession("s", store, session_settings=bad)


@SDK_CHECKS
@pytest.mark.parametrize("bad", [{"limitt": 1}, 5])
def test_bad_session_settings_raise_what_sqlite_session_raises(store: Any, bad: Any) -> None:
    with pytest.raises(TypeError) as sdk:
        SQLiteSession("s", session_settings=bad)
    with pytest.raises(TypeError) as ours:
        OctopodaSession("s", store, session_settings=bad)
    if isinstance(bad, dict):  # the same words, then what to write instead
        assert str(ours.value).startswith(f"{sdk.value};")


def test_a_known_setting_with_a_bad_value_stays_a_value_error(store: Any) -> None:
    with pytest.raises(InvalidInput, match="is not valid") as caught:
        OctopodaSession("s", store, session_settings={"limit": "many"})
    assert isinstance(caught.value, ValueError)
    assert not isinstance(caught.value, TypeError)


# -- cancellation ------------------------------------------------------------------------------


@pytest.fixture
def reader(tmp_path: Path, proc_env: dict[str, str]) -> Iterator[Callable[[], int]]:
    """Counts the items of session "big" in tmp_path/chat.db, from another process."""
    proc = subprocess.Popen(
        [PYTHON, str(PROCS / "count_items.py"), str(tmp_path / "chat.db"), "big"],
        env=proc_env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"

    def count() -> int:
        proc.stdin.write("count\n")  # type: ignore[union-attr]
        proc.stdin.flush()  # type: ignore[union-attr]
        return int(proc.stdout.readline())  # type: ignore[union-attr]

    yield count
    proc.stdin.close()
    assert proc.wait(timeout=60) == 0
    proc.stdout.close()


async def _cancel_while_gated(
    session: OctopodaSession, gate: Gate, write: Callable[[], Any], reader: Callable[[], int]
) -> tuple[bool, int, int]:
    """Start ``write``, cancel it twice while the gate holds it, and report whether it was
    already done then, and what the second reader saw then and once it raised."""
    task = asyncio.ensure_future(write())
    assert await asyncio.to_thread(gate.entered.wait, 60)
    for _ in range(2):
        task.cancel()
        for _ in range(5):
            await asyncio.sleep(0)
    done_at_cancel = task.done()
    seen_at_cancel = await asyncio.to_thread(reader)
    gate.release.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    return done_at_cancel, seen_at_cancel, await asyncio.to_thread(reader)


@pytest.mark.processes
def test_a_cancelled_large_add_raises_only_after_it_committed(
    tmp_path: Path, reader: Callable[[], int]
) -> None:
    session = OctopodaSession("big", str(tmp_path / "chat.db"))
    gate = Gate()
    session.runtime.pipeline.processors.append(gate)
    items = [user(f"item {i}") for i in range(BIG)]
    done_at_cancel, at_cancel, after = asyncio.run(
        _cancel_while_gated(session, gate, lambda: session.add_items(items), reader)
    )
    assert not done_at_cancel  # the caller waits for the worker's write
    assert at_cancel == 0  # (it had not committed yet)
    assert after == BIG  # when CancelledError arrives, the write is durable
    assert asyncio.run(session.get_items()) == items  # and this object knows it
    assert session.runtime.audit.verify().ok


@pytest.mark.processes
def test_a_cancelled_add_that_fails_raises_after_its_rollback(
    tmp_path: Path, reader: Callable[[], int]
) -> None:
    session = OctopodaSession("big", str(tmp_path / "chat.db"))
    gate = Gate(fail=True)
    session.runtime.pipeline.processors.append(gate)
    items = [user(f"item {i}") for i in range(BIG)]
    done_at_cancel, at_cancel, after = asyncio.run(
        _cancel_while_gated(session, gate, lambda: session.add_items(items), reader)
    )
    assert (done_at_cancel, at_cancel, after) == (False, 0, 0)  # settled: rolled back
    asyncio.run(session.add_items([user("retried")]))  # so the caller retries, once
    assert asyncio.run(session.get_items()) == [user("retried")]
    assert reader() == 1


@pytest.mark.processes
@pytest.mark.parametrize("operation", ["pop_item", "clear_session"])
def test_cancelled_pop_and_clear_raise_only_after_they_committed(
    tmp_path: Path, reader: Callable[[], int], operation: str
) -> None:
    session = OctopodaSession("big", str(tmp_path / "chat.db"))
    asyncio.run(session.add_items([user("a"), user("b")]))
    gate = Gate()
    session.runtime.pipeline.processors.append(gate)
    done_at_cancel, at_cancel, after = asyncio.run(
        _cancel_while_gated(session, gate, getattr(session, operation), reader)
    )
    expected = 1 if operation == "pop_item" else 0
    assert (done_at_cancel, at_cancel, after) == (False, 2, expected)
    assert len(asyncio.run(session.get_items())) == expected


def test_a_failed_write_after_cancellation_leaves_no_loop_error(store: Any) -> None:
    """The failure is the cancelled caller's to drop: nothing reaches the loop's handler."""
    session = OctopodaSession("s", store)
    gate = Gate(fail=True)
    session.runtime.pipeline.processors.append(gate)
    loop_errors: list[dict[str, Any]] = []

    async def play() -> None:
        asyncio.get_running_loop().set_exception_handler(lambda _, ctx: loop_errors.append(ctx))
        task = asyncio.ensure_future(session.add_items([user("x")]))
        assert await asyncio.to_thread(gate.entered.wait, 60)
        task.cancel()
        gate.release.set()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.sleep(0)

    asyncio.run(play())
    assert loop_errors == []
    assert asyncio.run(session.get_items()) == []


# -- close() -----------------------------------------------------------------------------------

CALLS: dict[str, Callable[[Any], Any]] = {
    "get_items": lambda s: s.get_items(),
    "get_items(limit)": lambda s: s.get_items(limit=1),
    "add_items": lambda s: s.add_items([user("late")]),
    "add_items([])": lambda s: s.add_items([]),
    "pop_item": lambda s: s.pop_item(),
    "clear_session": lambda s: s.clear_session(),
}


def _open(kind: str, db: Path) -> Any:
    if kind == "sqlite":
        return SQLiteSession("s", db)
    return OctopodaSession("s", str(db))


@pytest.mark.parametrize("call", list(CALLS))
@pytest.mark.parametrize("kind", [pytest.param("sqlite", marks=SDK_CHECKS), "octopoda"])
def test_every_call_after_close_raises_runtime_error(tmp_path: Path, kind: str, call: str) -> None:
    db = tmp_path / f"{kind}.db"
    session = _open(kind, db)
    asyncio.run(session.add_items([user("kept")]))
    session.close()
    with pytest.raises(RuntimeError, match="is closed"):
        asyncio.run(CALLS[call](session))
    session.close()  # closing again is harmless
    reopened = _open(kind, db)
    assert asyncio.run(reopened.get_items()) == [user("kept")]  # the call changed nothing
    reopened.close()


def test_the_closed_error_is_also_an_octopoda_error(store: Any) -> None:
    session = OctopodaSession("abc", store)
    session.close()
    with pytest.raises(SessionClosed) as caught:
        asyncio.run(session.get_items())
    assert isinstance(caught.value, OctopodaError) and isinstance(caught.value, RuntimeError)
    assert "OctopodaSession is closed (session 'abc')" in str(caught.value)
    assert "new session object" in str(caught.value)  # and what to do


def test_a_private_memory_store_closes_with_its_session_a_shared_file_stays_open(
    tmp_path: Path,
) -> None:
    private = OctopodaSession("m", ":memory:")
    asyncio.run(private.add_items([user("x")]))
    private.close()
    with pytest.raises(StorageError, match="closed"):
        private.runtime.recall("meta")
    db = str(tmp_path / "chat.db")
    first, second = OctopodaSession("a", db), OctopodaSession("b", db)
    assert first.runtime.store is second.runtime.store
    first.close()
    asyncio.run(second.add_items([user("still open")]))
    assert asyncio.run(OctopodaSession("b", db).get_items()) == [user("still open")]


def test_close_waits_for_a_write_in_progress_and_refuses_what_comes_after(
    tmp_path: Path,
) -> None:
    db = str(tmp_path / "chat.db")
    session = OctopodaSession("s", db)
    gate = Gate()
    session.runtime.pipeline.processors.append(gate)
    writer = threading.Thread(target=lambda: asyncio.run(session.add_items([user("in flight")])))
    writer.start()
    assert gate.entered.wait(30)
    closer = threading.Thread(target=session.close)
    closer.start()
    closer.join(0.2)
    assert closer.is_alive()  # close() waits for the write
    gate.release.set()
    writer.join(30)
    closer.join(30)
    assert not writer.is_alive() and not closer.is_alive()
    assert asyncio.run(OctopodaSession("s", db).get_items()) == [user("in flight")]
    with pytest.raises(SessionClosed):
        asyncio.run(session.add_items([user("after close")]))
