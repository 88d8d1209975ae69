"""Result types returned by the runtime. Times are Unix epoch seconds (float) everywhere.

Results are immutable named tuples: cheap to create on hot paths and to import.
"""

from collections.abc import Sequence
from typing import Any, NamedTuple

__all__ = [
    "EraseResult",
    "Event",
    "ImportResult",
    "MemoryHealth",
    "MemoryItem",
    "MemoryVersion",
    "RecallResult",
    "RestoreResult",
    "Snapshot",
    "VersionRecord",
]


class VersionRecord(NamedTuple):
    """What a write created: the key's new version and the event that wrote it (and the
    version's ``kind``, None: none)."""

    key: str
    version: int
    created_at: float
    seq: int
    tombstone: bool = False
    kind: str | None = None


class EraseResult(NamedTuple):
    """What ``erase`` did: the versions of ``key`` whose values it removed, in event ``seq``
    (at ``erased_at``)."""

    key: str
    versions: tuple[int, ...]
    erased_at: float
    seq: int


class RecallResult(NamedTuple):
    """The answer to ``recall``. ``found`` is False (and ``value`` None) for a missing,
    forgotten or expired key."""

    key: str
    found: bool
    value: Any = None
    version: int | None = None
    created_at: float | None = None
    tags: tuple[str, ...] = ()
    expires_at: float | None = None
    seq: int | None = None
    kind: str | None = None

    def __bool__(self) -> bool:
        return self.found


class MemoryVersion(NamedTuple):
    """One stored version of a key (a tombstone has ``tombstone=True`` and value None)."""

    key: str
    version: int
    value: Any
    created_at: float
    tags: tuple[str, ...]
    expires_at: float | None
    seq: int
    author: str | None
    tombstone: bool
    erased: bool = False
    kind: str | None = None


class MemoryItem(NamedTuple):
    """A key's current value, as listed by ``search`` (``kind``: its version's kind, None:
    none)."""

    key: str
    value: Any
    version: int
    created_at: float
    tags: tuple[str, ...]
    expires_at: float | None
    seq: int
    kind: str | None = None


class Snapshot(NamedTuple):
    """A named point in an agent's history: the seq of the event that took it."""

    name: str
    seq: int
    created_at: float
    keys: int


class RestoreResult(NamedTuple):
    """What ``restore`` did: keys written back and keys tombstoned, in event ``seq``."""

    snapshot: str
    snapshot_seq: int
    seq: int
    restored: tuple[str, ...]
    removed: tuple[str, ...]


class ImportResult(NamedTuple):
    """What ``import_memories`` wrote. ``already_imported``: the seq of the earlier
    ``import`` event of the same bundle, when this one wrote nothing for that reason."""

    keys: int
    versions: int
    skipped_keys: tuple[str, ...] = ()
    seq: int | None = None
    already_imported: int | None = None


class MemoryHealth(NamedTuple):
    """Counts and shape of an agent's memory."""

    keys: int
    forgotten_keys: int
    expired_keys: int
    versions: int
    stale_keys: int
    stale_share: float
    stale_after_seconds: float
    size_bytes: int
    versions_per_key_mean: float
    versions_per_key_max: int
    busiest_keys: tuple[tuple[str, int], ...] = ()
    near_duplicates: int = 0
    """Current keys that ``consolidate()`` would merge into another, by words (an
    embedder is never called here: ``consolidate(dry_run=True)`` asks it)."""


class Event:
    """One entry of an agent's event log and audit chain.

    ``payload`` says what changed (keys, versions, SHA-256 of values, ...). ``seq``,
    ``prev_hash`` and ``hash`` are assigned inside the transaction that stores the event;
    ``payload_text`` is the payload's canonical JSON, fixed by the audit chainer.
    """

    __slots__ = (
        "agent",
        "hash",
        "kind",
        "payload",
        "payload_text",
        "prev_hash",
        "seq",
        "time",
        "writes",
    )

    def __init__(
        self,
        agent: str,
        kind: str,
        payload: dict[str, Any],
        time: float,
        seq: int = 0,
        prev_hash: str = "",
        hash: str = "",
        payload_text: str = "",
    ) -> None:
        self.agent = agent
        self.kind = kind
        self.payload = payload
        self.time = time
        self.seq = seq
        self.prev_hash = prev_hash
        self.hash = hash
        self.payload_text = payload_text
        self.writes: Sequence[Any] = ()
        """The memory writes being committed with the event, in the order of
        ``payload["writes"]`` (in the committing process only: not stored)."""

    def _key(self) -> tuple[Any, ...]:
        return (self.agent, self.seq, self.time, self.kind, self.payload, self.prev_hash, self.hash)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Event) and self._key() == other._key()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"Event(agent={self.agent!r}, seq={self.seq}, kind={self.kind!r},"
            f" time={self.time!r}, payload={self.payload!r}, hash={self.hash[:16]!r})"
        )

    def to_dict(self) -> dict[str, Any]:
        """The event as JSON-safe data (without the cached canonical payload text)."""
        return {
            "agent": self.agent,
            "seq": self.seq,
            "time": self.time,
            "kind": self.kind,
            "payload": self.payload,
            "prev_hash": self.prev_hash,
            "hash": self.hash,
        }
