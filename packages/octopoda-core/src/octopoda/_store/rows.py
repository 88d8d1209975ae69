"""What a store's reads return: one named tuple per table row (values still encoded)."""

import hashlib
from typing import Any, NamedTuple

__all__ = [
    "AgentRow",
    "ConflictRow",
    "MessageRow",
    "RunActivityRow",
    "RunRow",
    "SnapshotRow",
    "SpaceRow",
    "StoredRow",
    "stored_sha256",
]


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


class AgentRow(NamedTuple):
    id: str
    created_at: float
    status: str
    head_seq: int
    head_hash: str
    last_active: float | None
    status_reason: str | None = None


class SnapshotRow(NamedTuple):
    agent: str
    name: str
    seq: int
    created_at: float


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
    run_id: str | None = None


class RunRow(NamedTuple):
    """A run's status as the ``runs`` table keeps it: ``paused`` or ``active``, why
    (``status_reason``: the JSON the pause recorded), and the time and seq of the event
    that set it. A run without a row was never paused: it is active."""

    run_id: str
    status: str
    status_reason: str | None
    changed_at: float
    changed_seq: int


class RunActivityRow(NamedTuple):
    """One run of an agent as ``Store.runs`` lists it: its events (the first and last
    time, how many, the newest seq) and its status (``active`` unless a ``runs`` row says
    otherwise)."""

    run_id: str
    first_seen: float
    last_seen: float
    events: int
    last_seq: int
    status: str
    status_reason: str | None
