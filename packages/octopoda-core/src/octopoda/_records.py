"""Result types returned by the runtime. Times are Unix epoch seconds (float) everywhere."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = [
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


@dataclass(frozen=True, slots=True)
class VersionRecord:
    """What a write created: the key's new version and the event that wrote it."""

    key: str
    version: int
    created_at: float
    seq: int
    tombstone: bool = False


@dataclass(frozen=True, slots=True)
class RecallResult:
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

    def __bool__(self) -> bool:
        return self.found


@dataclass(frozen=True, slots=True)
class MemoryVersion:
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


@dataclass(frozen=True, slots=True)
class MemoryItem:
    """A key's current value, as listed by ``search``."""

    key: str
    value: Any
    version: int
    created_at: float
    tags: tuple[str, ...]
    expires_at: float | None
    seq: int


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A named point in an agent's history: the seq of the event that took it."""

    name: str
    seq: int
    created_at: float
    keys: int


@dataclass(frozen=True, slots=True)
class RestoreResult:
    """What ``restore`` did: keys written back and keys tombstoned, in event ``seq``."""

    snapshot: str
    snapshot_seq: int
    seq: int
    restored: tuple[str, ...]
    removed: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ImportResult:
    """What ``import_memories`` wrote."""

    keys: int
    versions: int
    skipped_keys: tuple[str, ...] = ()
    seq: int | None = None


@dataclass(frozen=True, slots=True)
class MemoryHealth:
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


@dataclass(slots=True)
class Event:
    """One entry of an agent's event log and audit chain.

    ``payload`` says what changed (keys, versions, SHA-256 of values, ...). ``seq``,
    ``prev_hash`` and ``hash`` are assigned inside the transaction that stores the event.
    """

    agent: str
    kind: str
    payload: dict[str, Any]
    time: float
    seq: int = 0
    prev_hash: str = ""
    hash: str = ""
    payload_text: str = field(default="", repr=False)
