"""Opening and closing a saver or store the way LangGraph's own backends are opened.

LangGraph's documentation opens its SQLite and PostgreSQL backends as ``with
SqliteSaver.from_conn_string(...) as saver:``, ``async with
AsyncPostgresSaver.from_conn_string(...) as saver: await saver.setup()``, and the same for
their stores. :class:`Opening` is what our ``from_conn_string`` returns, a context manager for
both ``with`` and ``async with``; :class:`Lifecycle` gives the object itself ``with``, ``async
with`` and ``setup()``, so each of those patterns works unchanged with ours.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any, Generic, Protocol, TypeVar

from octopoda.integrations import run_blocking

__all__ = ["Lifecycle", "Opening", "Ready"]


class _Closeable(Protocol):
    def close(self) -> None: ...


C = TypeVar("C", bound=_Closeable)
L = TypeVar("L", bound="Lifecycle")


class Opening(Generic[C]):
    """Opens ``C`` on entry (``with`` or ``async with``; async opens in a worker thread, as
    opening a PostgreSQL pool blocks) and closes it on exit."""

    def __init__(self, open_: Callable[[], C]) -> None:
        self._open = open_
        self._opened: C | None = None

    def __enter__(self) -> C:
        self._opened = self._open()
        return self._opened

    def __exit__(self, *exc: object) -> None:
        opened, self._opened = self._opened, None
        if opened is not None:
            opened.close()

    async def __aenter__(self) -> C:
        self._opened = await run_blocking(self._open)
        return self._opened

    async def __aexit__(self, *exc: object) -> None:
        opened, self._opened = self._opened, None
        if opened is not None:
            await run_blocking(opened.close)


class Ready:
    """What ``setup()`` returns. Octopoda creates and migrates its schema when a store opens,
    so there is nothing left to do; it is awaitable, so ``await saver.setup()`` (the form
    LangGraph's async backends document) works as well as ``saver.setup()``."""

    def __await__(self) -> Generator[Any, None, None]:
        return
        yield  # a generator with nothing to wait for

    def __repr__(self) -> str:
        return "Ready()"


class Lifecycle:
    """``with`` and ``async with`` (closing on exit) and ``setup()`` for a saver or store."""

    def close(self) -> None:
        raise NotImplementedError

    def setup(self) -> Ready:
        """Nothing to set up (the schema exists once the store is open): a no-op, idempotent,
        for code written for LangGraph's backends (``saver.setup()`` or ``await
        saver.setup()``)."""
        return Ready()

    def __enter__(self: L) -> L:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self: L) -> L:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await run_blocking(self.close)
