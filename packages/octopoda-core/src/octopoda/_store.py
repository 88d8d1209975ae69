"""The store protocol: the few primitives every backend implements.

Memory rows are append-only versions ``(namespace, key, version)``; each records the
``seq`` of the event that wrote it. Every change commits together with exactly one event
of the acting agent (:meth:`Store.commit`). Reads never write. Convenience (TTL, snapshots,
restore, export, health) lives in the runtime above this protocol.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple, Protocol, runtime_checkable

from ._errors import InvalidInput, NotFound, VersionConflict
from ._records import Event
from ._signing import SignedHead

__all__ = [
    "AgentRow",
    "ConflictRow",
    "CreateSpace",
    "EraseKey",
    "MarkRead",
    "MemoryWrite",
    "MessageRow",
    "Op",
    "ResolveConflict",
    "SendMessage",
    "SnapshotRow",
    "SpaceRow",
    "Store",
    "StoredRow",
    "agent_namespace",
    "check_erase",
    "check_shared_write",
    "erase_entry",
    "prefix_upper_bound",
    "space_namespace",
    "stored_sha256",
    "write_entry",
]


def agent_namespace(agent: str) -> str:
    """The namespace holding an agent's private memory."""
    return "agent:" + agent


def space_namespace(space: str) -> str:
    """The namespace of a shared space. Stores check membership of writes to it."""
    return "space:" + space


class MemoryWrite(NamedTuple):
    """One new version to append. ``encoding`` is ``json``, ``bytes`` or ``tombstone``.

    ``expected_version`` makes the write a compare-and-set: the key's current version must
    be exactly that (0: the key must not exist) or the whole commit raises
    ``VersionConflict``. With ``check_stale``, a write whose author had not seen the current
    head (``seen_version``) while another agent wrote it still succeeds, and a conflict is
    recorded (its id in the event's write entry).
    """

    namespace: str
    key: str
    encoding: str
    data: str | bytes | None
    sha256: str | None
    tags: tuple[str, ...] = ()
    expires_at: float | None = None
    created_at: float | None = None  # None: the event's time
    expected_version: int | None = None
    seen_version: int | None = None
    check_stale: bool = False


class CreateSpace(NamedTuple):
    """Create a shared space; ``members`` None means open to every agent."""

    name: str
    members: tuple[str, ...] | None


class ResolveConflict(NamedTuple):
    """Mark an open conflict resolved (``resolution`` says how)."""

    conflict_id: int
    resolution: str


class SendMessage(NamedTuple):
    """A message to one agent (``recipient``) or a broadcast to a ``space``.
    ``body`` is JSON text."""

    recipient: str | None
    space: str | None
    message_type: str
    body: str
    body_sha256: str


class MarkRead(NamedTuple):
    """The acting agent read message ``message_id`` (addressed to it)."""

    message_id: int


class EraseKey(NamedTuple):
    """Erase the content of ``key``: every version that still holds a value keeps its row
    (version, times, tags, seq) but loses its value and is marked ``erased``.

    Only the acting agent's own memory can be erased (``namespace`` is
    ``agent_namespace(agent)``). The store records ``{"key", "versions"}`` in the event's
    ``payload["erased"]`` list and raises ``NotFound`` when no version holds a value, so a
    commit never records an erasure that did not happen.
    """

    namespace: str
    key: str


Op = CreateSpace | ResolveConflict | SendMessage | MarkRead | EraseKey


class SpaceRow(NamedTuple):
    name: str
    created_at: float
    created_by: str
    members: tuple[str, ...] | None


class ConflictRow(NamedTuple):
    """A shared write made without having seen the head it replaced."""

    id: int
    namespace: str
    key: str
    version: int
    author: str
    head_version: int
    head_author: str | None
    seen_version: int | None
    created_at: float
    seq: int
    status: str
    resolution: str | None
    resolved_by: str | None
    resolved_at: float | None


class MessageRow(NamedTuple):
    id: int
    sender: str
    recipient: str | None
    space: str | None
    message_type: str
    body: str
    created_at: float
    read_at: float | None
    seq: int
    body_sha256: str = ""


class StoredRow(NamedTuple):
    """One stored version as the store returns it (value still encoded)."""

    key: str
    version: int
    encoding: str
    data: Any
    tags: tuple[str, ...]
    created_at: float
    expires_at: float | None
    seq: int
    author: str | None
    erased: bool = False

    @property
    def tombstone(self) -> bool:
        return self.encoding == "tombstone"


def stored_sha256(row: StoredRow) -> str | None:
    """SHA-256 of a row's stored bytes (what audit events record), None for no value
    (a tombstone or an erased version)."""
    if row.data is None:
        return None
    if row.encoding == "json":
        return hashlib.sha256(row.data.encode("utf-8")).hexdigest()
    if row.encoding == "bytes":
        return hashlib.sha256(bytes(row.data)).hexdigest()
    return None


class SnapshotRow(NamedTuple):
    agent: str
    name: str
    seq: int
    created_at: float


class AgentRow(NamedTuple):
    id: str
    created_at: float
    status: str
    head_seq: int
    head_hash: str
    last_active: float | None
    status_reason: str | None = None


@runtime_checkable
class Store(Protocol):
    """What a backend provides. See ``octopoda.testing.StoreConformance`` for the contract."""

    @property
    def url(self) -> str: ...

    def commit(
        self,
        event: Event,
        writes: Sequence[MemoryWrite],
        pipeline: Callable[[Event], Event],
        *,
        snapshot: str | None = None,
        replace_snapshot: bool = False,
        status: tuple[str, str | None] | None = None,
        ops: Sequence[Op] = (),
        expected_seq: int | None = None,
    ) -> tuple[Event, list[int]]:
        """Append ``writes`` and ``event`` in one transaction.

        Inside it: assign each write its next version, set ``event.seq``/``event.prev_hash``
        from the agent's head, record the writes in ``event.payload["writes"]``, run
        ``pipeline(event)`` (which sets the hash), store rows and event, move the head, and
        record ``snapshot`` (a name) at the event's seq when given (moving an existing one
        only with ``replace_snapshot``; otherwise a taken name raises ``InvalidInput``).
        With ``status`` (``(status, reason)``), set the agent's status in the same transaction.
        ``ops`` (spaces, conflict resolutions, messages, erasures) apply before the pipeline
        runs, and what they create is recorded in the payload (``message_id``, ``erased``, ...).
        ``expected_seq``: raise ``VersionConflict`` unless the agent's head is still at that
        seq (optimistic concurrency for read-then-write operations such as restore).
        Returns the stored event and the versions assigned, in the order of ``writes``.
        """
        ...

    def latest(self, namespace: str, key: str, as_of_seq: int | None = None) -> StoredRow | None:
        """The newest version of ``key`` (written at or before ``as_of_seq`` when given)."""
        ...

    def version(self, namespace: str, key: str, version: int) -> StoredRow | None: ...

    def history(self, namespace: str, key: str, limit: int | None = None) -> list[StoredRow]:
        """Every version (or the newest ``limit``), newest first."""
        ...

    def current(
        self,
        namespace: str,
        *,
        prefix: str = "",
        tags: Sequence[str] = (),
        as_of_seq: int | None = None,
        now: float | None = None,
        limit: int | None = None,
        offset: int = 0,
        include_dead: bool = False,
    ) -> list[StoredRow]:
        """Latest version per key (as of ``as_of_seq``), ordered by key.

        Without ``include_dead``, tombstones, erased versions and versions expired at ``now``
        are left out (a key whose latest version then is erased has no value then).
        """
        ...

    def all_versions(self, namespace: str) -> Iterator[StoredRow]:
        """Every version of every key, by key then version."""
        ...

    def events(
        self,
        agent: str,
        *,
        after_seq: int = 0,
        until_seq: int | None = None,
        since: float | None = None,
        until: float | None = None,
        kinds: Sequence[str] = (),
        limit: int | None = None,
    ) -> Iterator[Event]:
        """The agent's events in seq order."""
        ...

    def chain_rows(self, agent: str, after_seq: int = 0) -> Iterator[tuple[Any, ...]]:
        """Raw event rows ``(seq, time, kind, payload_text, prev_hash, hash)`` of ``agent`` in
        seq order, without parsing payloads (for verification)."""
        ...

    def agent(self, agent: str) -> AgentRow | None: ...

    def agents(self) -> list[AgentRow]: ...

    def snapshot(self, agent: str, name: str) -> SnapshotRow | None: ...

    def snapshots(self, agent: str) -> list[SnapshotRow]: ...

    def space(self, name: str) -> SpaceRow | None: ...

    def spaces(self) -> list[SpaceRow]: ...

    def conflicts(
        self, namespace: str, *, key: str | None = None, status: str | None = "open"
    ) -> list[ConflictRow]:
        """Conflicts of a namespace (a shared space), oldest first."""
        ...

    def conflict(self, conflict_id: int) -> ConflictRow | None: ...

    def messages(
        self,
        *,
        recipient: str | None = None,
        space: str | None = None,
        party: str | None = None,
        unread_only: bool = False,
        since: float | None = None,
        after_id: int = 0,
        limit: int | None = None,
    ) -> list[MessageRow]:
        """Messages to ``recipient`` (direct), broadcasts to ``space``, or (``party``) the
        newest ``limit`` direct messages sent or received by an agent; by id, oldest first."""
        ...

    def message(self, message_id: int) -> MessageRow | None: ...

    def put_signed_head(self, head: SignedHead) -> None:
        """Keep a signed head of an agent's chain."""
        ...

    def signed_heads(self, agent: str) -> list[SignedHead]:
        """The agent's signed heads, by seq."""
        ...

    def value_bytes(self, namespace: str) -> int:
        """Total size of the stored values of a namespace, all versions."""
        ...

    def close(self) -> None: ...


def prefix_upper_bound(prefix: str) -> str | None:
    """The smallest string greater than every string starting with ``prefix``."""
    chars = list(prefix)
    while chars:
        last = ord(chars.pop())
        if last < 0x10FFFF:
            nxt = last + 1
            if 0xD800 <= nxt <= 0xDFFF:  # skip surrogates, which cannot be stored
                nxt = 0xE000
            return "".join(chars) + chr(nxt)
    return None


def check_shared_write(
    w: MemoryWrite,
    agent: str,
    current: tuple[int, str | None],
    stale: list[tuple[MemoryWrite, int, int, str | None]],
    index: int,
) -> None:
    """Compare-and-set and stale-write checks of one shared write (pure: no I/O)."""
    version, author = current
    if w.expected_version is not None and version != w.expected_version:
        raise VersionConflict(
            f"{w.key!r} in {w.namespace!r} is at version {version}, not the expected"
            f" {w.expected_version}; read it again and retry",
            w.key,
            w.expected_version,
            version,
        )
    if w.check_stale and version and author != agent and w.seen_version != version:
        stale.append((w, index, version, author))


def check_erase(op: EraseKey, agent: str) -> None:
    """Refuse an erasure outside the acting agent's own memory (pure: no I/O)."""
    own = agent_namespace(agent)
    if op.namespace != own:
        raise InvalidInput(
            f"agent {agent!r} can only erase keys of its own memory ({own!r}),"
            f" not of {op.namespace!r}"
        )


def erase_entry(op: EraseKey, agent: str, versions: list[int]) -> dict[str, Any]:
    """What the event payload records about one erasure (``payload["erased"]`` items);
    ``NotFound`` when there is nothing to erase."""
    if not versions:
        raise NotFound(
            f"agent {agent!r} has no value to erase under key {op.key!r}"
            " (no version of it holds one)"
        )
    return {"key": op.key, "versions": versions}


def write_entry(w: MemoryWrite, version: int, own: str) -> dict[str, Any]:
    """What the event payload records about one write (as SqliteStore records it)."""
    entry: dict[str, Any] = {
        "encoding": w.encoding,
        "key": w.key,
        "sha256": w.sha256,
        "version": version,
    }
    if w.namespace != own:
        entry["namespace"] = w.namespace
    if w.tags:
        entry["tags"] = list(w.tags)
    if w.expires_at is not None:
        entry["expires_at"] = w.expires_at
    if w.created_at is not None:
        entry["created_at"] = w.created_at
    return entry
