"""Read snapshots across requests, for a remote store's ``read_snapshot`` (``audit.verify``
through a server reads the chain, the head and the memory rows in one snapshot, as it
does on a local store, so a writer meanwhile cannot make an intact chain look broken).

``POST /v1/store/snapshot/open`` starts a session: one thread of its own that enters
``read_snapshot()`` (a SQLite read transaction, a PostgreSQL ``REPEATABLE READ, READ ONLY``
one; both are bound to the thread that opened them) and then runs, one at a time, the store
reads the client sends with ``"snapshot": <id>``. On a SQLite file the session reads on a
connection of its own (WAL: the server's writers go on; the server store's connection and
lock are never held for it); on PostgreSQL, on a pooled connection of its own.
``.../close`` ends it; a session idle for :data:`IDLE_SECONDS` ends by itself (a client
that died holds nothing for long), and at most :data:`MAX_SESSIONS` are open at once
(more: ``StorageError``, and the client may retry). The threads exist only while a
snapshot is open.
"""

from __future__ import annotations

import contextlib
import queue
import secrets
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, Final

from .._errors import NotFound, StorageError
from .._store.protocol import Store

__all__ = ["IDLE_SECONDS", "MAX_SESSIONS", "SnapshotSessions"]

IDLE_SECONDS: Final = 30.0
MAX_SESSIONS: Final = 16
_OPEN_TIMEOUT: Final = 30.0


class _Session(threading.Thread):
    def __init__(self, store: Store, on_end: Callable[[_Session], None], idle: float) -> None:
        super().__init__(name="octopoda-read-snapshot", daemon=True)
        self.id = secrets.token_urlsafe(18)
        self.calls: queue.Queue[tuple[Callable[[Store], Any], Future[Any]] | None] = queue.Queue()
        self.ready = threading.Event()
        self.error: BaseException | None = None
        self._store, self._on_end, self._idle = store, on_end, idle

    def run(self) -> None:
        try:
            with contextlib.ExitStack() as stack:
                view = _own_view(self._store, stack)
                snapshot = getattr(view, "read_snapshot", None)
                if snapshot is not None:
                    stack.enter_context(snapshot())
                self.ready.set()
                self._serve(view)
        except BaseException as exc:  # (opening failed: the opener re-raises it)
            self.error = exc
        finally:
            self._on_end(self)
            self.ready.set()
            self._drain()

    def _serve(self, view: Store) -> None:
        while True:
            try:
                item = self.calls.get(timeout=self._idle)
            except queue.Empty:
                return  # idle: the client is gone
            if item is None:
                return  # closed
            func, future = item
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(func(view))
                except BaseException as exc:
                    future.set_exception(exc)

    def _drain(self) -> None:
        """Calls queued after the end: refused (the snapshot is gone)."""
        while True:
            try:
                item = self.calls.get_nowait()
            except queue.Empty:
                return
            if item is not None:
                item[1].set_exception(_gone(self.id))


def _own_view(store: Store, stack: contextlib.ExitStack) -> Store:
    """What a session reads: an independent reader of the store where it offers one
    (``open_reader``: a SQLite file through a connection of its own, closed with the
    session), else the store itself (PostgreSQL's snapshot takes a connection of its own)."""
    opener = getattr(store, "open_reader", None)
    reader: Store | None = opener() if opener is not None else None
    if reader is None:
        return store
    stack.callback(reader.close)
    return reader


def _gone(session: str) -> NotFound:
    return NotFound(
        f"read snapshot {session!r} is not open (closed, or idle for over"
        f" {IDLE_SECONDS:.0f} s); open another"
    )


class SnapshotSessions:
    """The open read snapshots of one server's store (module docstring)."""

    def __init__(
        self, store: Store, *, limit: int = MAX_SESSIONS, idle: float = IDLE_SECONDS
    ) -> None:
        self._store, self._limit, self._idle = store, limit, idle
        self._lock = threading.Lock()
        self._open: dict[str, _Session] = {}

    def _ended(self, session: _Session) -> None:
        with self._lock:
            self._open.pop(session.id, None)

    def open(self) -> str:
        """Start a session; its id once its snapshot is taken."""
        session = _Session(self._store, self._ended, self._idle)
        with self._lock:
            if len(self._open) >= self._limit:
                raise StorageError(
                    f"{self._limit} read snapshots are open on this server already; retry"
                    " when one closes"
                )
            self._open[session.id] = session
        session.start()
        if not session.ready.wait(_OPEN_TIMEOUT):
            self.close(session.id)
            raise StorageError("the server's store took too long to open a read snapshot")
        if session.error is not None:
            raise session.error
        return session.id

    def call(self, session_id: str, func: Callable[[Store], Any]) -> Any:
        """``func(store)`` run in the session's snapshot (blocks this worker thread)."""
        with self._lock:
            session = self._open.get(session_id)
        if session is None:
            raise _gone(session_id)
        future: Future[Any] = Future()
        session.calls.put((func, future))
        return future.result()

    def close(self, session_id: str) -> bool:
        """End the session (False: it was not open)."""
        with self._lock:
            session = self._open.pop(session_id, None)
        if session is None:
            return False
        session.calls.put(None)
        return True

    def close_all(self) -> None:
        with self._lock:
            sessions = list(self._open.values())
            self._open.clear()
        for session in sessions:
            session.calls.put(None)
        for session in sessions:
            session.join(timeout=5)
