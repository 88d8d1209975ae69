"""OctopodaSession: the Agents SDK ``Session`` on Octopoda's versioned, audited memory.

Layout in the store (what ``octopoda agents`` and ``octopoda memory ...`` show):

* each session is its own Octopoda agent, ``"openai-session:" + session_id`` (the prefix
  is ``agent_prefix``), so it has its own audit chain and timeline;
* item ``n`` (0, 1, 2, ... in the order added) is the key ``item/000000000042``, its value
  the item exactly as the SDK gave it (JSON);
* the key ``meta`` holds ``{"session_id": ..., "next_index": ...}``.

``add_items`` is one ``remember_many`` (one transaction, one audit event, whatever the
number of items). ``pop_item`` and ``clear_session`` write tombstones (``forget`` /
``forget_many``): the item leaves the session, its history and the audit chain stay whole.
Indexes are never reused, so a popped item's key keeps exactly one value and one tombstone.
As with ``SQLiteSession``, a write whose caller is cancelled commits or rolls back before
the caller sees ``CancelledError``, and a closed session refuses every call with
:class:`SessionClosed`, a ``RuntimeError``.

Every operation reads the session's chain head first (one primary-key lookup); while it is
unchanged the items this object already holds are current, so reads do not rescan the
session. A write states the head it expects: a pipeline processor refuses the transaction
if another process or object changed the session in between, and the write is redone on
fresh state, so concurrent writers never overwrite each other's items.
"""

from __future__ import annotations

import dataclasses
import json
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from agents import SessionABC, SessionSettings

from octopoda import AgentRuntime, Event, InvalidInput, OctopodaError, StorageError
from octopoda.integrations import run_blocking, run_settled

from ._common import StoreArg
from ._runs import CONVERSATIONS

if TYPE_CHECKING:
    from agents import RunContextWrapper, TResponseInputItem

__all__ = [
    "SESSION_AGENT_PREFIX",
    "InvalidSessionSettings",
    "OctopodaSession",
    "SessionClosed",
    "session_ids",
]

T = TypeVar("T")

SESSION_AGENT_PREFIX = "openai-session:"
"""The default agent-id prefix of sessions: session ``abc`` is agent ``openai-session:abc``."""

ITEM_PREFIX = "item/"
META_KEY = "meta"
_INDEX_DIGITS = 12
_MAX_ATTEMPTS = 50


def item_key(index: int) -> str:
    return f"{ITEM_PREFIX}{index:0{_INDEX_DIGITS}d}"


class SessionClosed(OctopodaError, RuntimeError):
    """The session was closed; open a new :class:`OctopodaSession` to go on.

    A ``RuntimeError``, as ``SQLiteSession`` raises after ``close()`` (code written for the
    SDK's sessions catches it unchanged), and an :class:`octopoda.OctopodaError`, as
    everything Octopoda raises.
    """


class InvalidSessionSettings(InvalidInput, TypeError):
    """``session_settings`` has an unknown field or is not a ``SessionSettings``, a dict or
    None. A ``TypeError``, as the SDK raises for the same (``SQLiteSession``'s
    ``session_settings={"limitt": 1}``), and an :class:`octopoda.InvalidInput`."""


class _Stale(Exception):
    """The session's chain head moved since this object last read it."""


class _ExpectHead:
    """A pipeline processor: refuse the next event unless it gets the expected seq.

    The store assigns ``event.seq`` (head + 1) inside the write transaction, so this is a
    compare-and-set on the whole session. It checks one event and then disarms, so the
    bookkeeping events the core may append after a write (``loop_detected``) pass.
    """

    __slots__ = ("seq",)

    def __init__(self) -> None:
        self.seq: int | None = None

    def __call__(self, event: Event) -> Event:
        expected, self.seq = self.seq, None
        if expected is not None and event.seq != expected:
            raise _Stale
        return event


def _resolve_settings(settings: Any) -> SessionSettings:
    if settings is None:
        return SessionSettings()
    if isinstance(settings, SessionSettings):
        return settings
    if isinstance(settings, dict):
        known = [f.name for f in dataclasses.fields(SessionSettings) if f.init]
        unknown = sorted(str(name) for name in settings if name not in known)
        if unknown:  # the SDK's own words, so code matching them keeps working
            raise InvalidSessionSettings(
                f"Unknown session settings: {', '.join(unknown)}; SessionSettings takes"
                f" {', '.join(known)}"
            )
        try:
            return SessionSettings(**settings)
        except ValueError as exc:  # pydantic's ValidationError
            raise InvalidInput(f"session_settings {settings!r} is not valid: {exc}") from None
    raise InvalidSessionSettings(
        f"session_settings must be a SessionSettings, a dict or None, not {type(settings).__name__}"
    )


class OctopodaSession(SessionABC):
    """Conversation history for ``Runner.run(..., session=...)``, kept in Octopoda.

    ``store``: a path, ``sqlite:///`` URL, an open :class:`octopoda.SqliteStore`, or None for
    the default store (``$OCTOPODA_DATABASE_URL``, ``$OCTOPODA_HOME/octopoda.db``, else
    ``~/.octopoda/octopoda.db``). ``session_settings``: as for ``SQLiteSession`` (its
    ``limit`` applies when ``get_items`` gets none). ``agent_prefix``: the session's agent
    id is ``agent_prefix + session_id``. ``item_tags``: with SDK versions that hand sessions
    the run context (0.20+), a callable ``(RunContextWrapper) -> tags`` whose tags are put on
    the items a run adds (``session.runtime.search("item/", tags=[...])`` finds them).

    Items come back exactly as written (JSON values), in the order added. ``runtime`` is the
    session's :class:`octopoda.AgentRuntime`: ``timeline()``, ``recall_history(key)``,
    ``audit.verify()``.
    """

    session_settings: SessionSettings | None

    def __init__(
        self,
        session_id: str,
        store: StoreArg = None,
        *,
        session_settings: SessionSettings | dict[str, Any] | None = None,
        agent_prefix: str = SESSION_AGENT_PREFIX,
        item_tags: Callable[[RunContextWrapper[Any]], Iterable[str]] | None = None,
        durability: Literal["normal", "full"] | None = None,
    ) -> None:
        if not isinstance(session_id, str) or not session_id:
            raise InvalidInput(f"session_id must be a non-empty str, not {session_id!r}")
        if not isinstance(agent_prefix, str):
            raise InvalidInput(f"agent_prefix must be a str, not {type(agent_prefix).__name__}")
        if item_tags is not None and not callable(item_tags):
            raise InvalidInput("item_tags must be a callable taking the run context, or None")
        self.session_id = session_id
        self.session_settings = _resolve_settings(session_settings)
        self._item_tags = item_tags
        self._expect = _ExpectHead()
        self.runtime = AgentRuntime(
            agent_prefix + session_id,
            store=store,
            durability=durability,
            processors=[self._expect],
        )
        """The session's :class:`octopoda.AgentRuntime` (its memory, timeline and audit)."""
        self._lock = threading.Lock()
        self._closed = False
        # A ":memory:" store opened here is this session's alone: it closes with it.
        self._owns_store = isinstance(store, (str, os.PathLike)) and (
            self.runtime.store.url == "sqlite:///:memory:"
        )
        self._head = -1  # the chain head our cache reflects; -1: not read yet
        self._keys: list[str] = []  # live item keys, in order
        self._texts: list[str] = []  # their JSON texts (decoded afresh for every read)
        self._next = 0  # the next item index; indexes are never reused

    @property
    def agent_id(self) -> str:
        """The Octopoda agent holding this session."""
        return self.runtime.agent_id

    def __repr__(self) -> str:
        return f"OctopodaSession({self.session_id!r}, store={self.runtime.store.url!r})"

    # -- the SDK's Session interface ------------------------------------------------------------
    # Every method takes ``wrapper`` by keyword: the SDK (0.20+) then passes the run context,
    # which tells the run hooks that this run is this session's conversation.

    def _in_run(self, wrapper: RunContextWrapper[Any] | None) -> None:
        if wrapper is not None:
            CONVERSATIONS.note(wrapper, self.session_id)

    async def get_items(
        self, limit: int | None = None, *, wrapper: RunContextWrapper[Any] | None = None
    ) -> list[TResponseInputItem]:
        """The session's items in order; with ``limit`` (else ``session_settings.limit``) the
        latest ``limit`` of them. ``limit=0`` gives none, a negative limit all (as
        ``SQLiteSession``)."""
        self._check_open()
        self._in_run(wrapper)
        if limit is None and self.session_settings is not None:
            limit = self.session_settings.limit
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)):
            raise InvalidInput(f"limit must be an int or None, not {limit!r}")
        return await run_blocking(lambda: self._get(limit))

    async def add_items(
        self,
        items: list[TResponseInputItem],
        *,
        wrapper: RunContextWrapper[Any] | None = None,
    ) -> None:
        """Append ``items``: one transaction and one audit event for the whole list.

        Cancelled, it raises ``CancelledError`` once the write has committed or rolled
        back, so a caller that retries knows which."""
        self._check_open()  # before the empty-list shortcut, as SQLiteSession
        self._in_run(wrapper)
        if not items:
            return
        tags: tuple[str, ...] = ()
        if self._item_tags is not None and wrapper is not None:
            tags = tuple(self._item_tags(wrapper))
        await run_settled(lambda: self._add(list(items), tags))

    async def pop_item(
        self, *, wrapper: RunContextWrapper[Any] | None = None
    ) -> TResponseInputItem | None:
        """Remove the most recent item (a tombstone: its history stays) and return it, or
        None when the session is empty. Cancelled: as ``add_items``."""
        self._check_open()
        text = await run_settled(self._pop)
        return None if text is None else json.loads(text)

    async def clear_session(self, *, wrapper: RunContextWrapper[Any] | None = None) -> None:
        """Remove every item (tombstones in one audited event; history stays). Cancelled: as
        ``add_items``."""
        self._check_open()
        await run_settled(self._clear)

    def close(self) -> None:
        """Close the session: every later call raises :class:`SessionClosed`. An operation
        in progress finishes first. A private ``":memory:"`` store closes with the session;
        a file store shared with other runtimes stays open. Closing twice is harmless."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self.runtime.close()
            if self._owns_store:
                self.runtime.store.close()

    def _check_open(self) -> None:
        if self._closed:
            raise SessionClosed(
                f"{type(self).__name__} is closed (session {self.session_id!r}); create a new"
                " session object to use this history again"
            )

    @contextmanager
    def _locked(self) -> Iterator[None]:
        """The session's lock, refusing a call that waited for it while close() ran."""
        with self._lock:
            self._check_open()
            yield

    # -- blocking parts (run in a worker thread) ------------------------------------------------

    def _refresh(self) -> None:
        """Make the cache current: one head lookup, and a reread only when it moved."""
        row = self.runtime.store.agent(self.runtime.agent_id)
        head = 0 if row is None else row.head_seq
        if head == self._head:
            return
        keys: list[str] = []
        texts: list[str] = []
        next_index = 0
        for item in self.runtime.search("", limit=None):
            if item.key.startswith(ITEM_PREFIX):
                keys.append(item.key)
                texts.append(json.dumps(item.value, ensure_ascii=False, separators=(",", ":")))
            elif item.key == META_KEY and isinstance(item.value, dict):
                next_index = int(item.value.get("next_index", 0))
        if keys:
            next_index = max(next_index, int(keys[-1][len(ITEM_PREFIX) :]) + 1)
        self._keys, self._texts, self._next, self._head = keys, texts, next_index, head

    def _get(self, limit: int | None) -> list[Any]:
        with self._locked():
            self._refresh()
            texts = self._texts
            if limit is not None and limit >= 0:
                texts = texts[-limit:] if limit else []
            joined = ",".join(texts)
        # One decode of the joined texts: new objects for the caller, at less than half the
        # cost of decoding item by item.
        return json.loads(f"[{joined}]")  # type: ignore[no-any-return]

    def _write(self, action: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run ``action`` (one audited write) expecting the head we read; a refused write
        raises _Stale (after forgetting our view) for the caller's loop to redo it."""
        self._expect.seq = self._head + 1
        try:
            return action(*args, **kwargs)
        except _Stale:
            self._head = -1
            raise
        finally:
            self._expect.seq = None

    def _add(self, values: list[Any], tags: tuple[str, ...]) -> None:
        # The texts a later read decodes; the core validates and stores the values themselves
        # (refusing what JSON would change), so both hold the same data.
        texts = [json.dumps(value, ensure_ascii=False, separators=(",", ":")) for value in values]
        with self._locked():
            for _ in range(_MAX_ATTEMPTS):
                self._refresh()
                first = self._next
                keys = [item_key(first + i) for i in range(len(values))]
                meta = {"session_id": self.session_id, "next_index": first + len(values)}
                pairs: list[tuple[str, Any]] = [*zip(keys, values, strict=True), (META_KEY, meta)]
                try:
                    records = self._write(self.runtime.remember_many, pairs, tags=tags)
                except _Stale:
                    continue
                self._keys.extend(keys)
                self._texts.extend(texts)
                self._next = first + len(values)
                self._head = records[0].seq
                return
        raise self._busy()

    def _pop(self) -> str | None:
        with self._locked():
            for _ in range(_MAX_ATTEMPTS):
                self._refresh()
                if not self._keys:
                    return None
                key = self._keys[-1]
                try:
                    record = self._write(self.runtime.forget, key)
                except _Stale:
                    continue
                if record is None:  # nothing was written: our view was old
                    self._head = -1
                    continue
                self._keys.pop()
                self._head = record.seq
                return self._texts.pop()
        raise self._busy()

    def _clear(self) -> None:
        with self._locked():
            for _ in range(_MAX_ATTEMPTS):
                self._refresh()
                if not self._keys:
                    return
                keys = list(self._keys)
                try:
                    records = self._write(self.runtime.forget_many, keys)
                except _Stale:
                    continue
                if len(records) != len(keys):
                    self._head = -1
                    continue
                self._keys, self._texts = [], []
                self._head = records[0].seq
                return
        raise self._busy()

    def _busy(self) -> StorageError:
        return StorageError(
            f"session {self.session_id!r} changed under this write {_MAX_ATTEMPTS} times in a"
            " row; other writers keep changing it. Retry later or give each writer its own"
            " session id."
        )


def session_ids(store: StoreArg = None, *, agent_prefix: str = SESSION_AGENT_PREFIX) -> list[str]:
    """The ids of the sessions kept in ``store`` (agents named ``agent_prefix + id``), sorted.

    The CLI shows the same: ``octopoda agents`` lists ``openai-session:<id>``, and
    ``octopoda memory list --agent openai-session:<id>`` its items.
    """
    probe = AgentRuntime("openai-session-lister", store=store)  # opens the store, writes nothing
    rows = probe.store.agents()
    return sorted(r.id[len(agent_prefix) :] for r in rows if r.id.startswith(agent_prefix))
