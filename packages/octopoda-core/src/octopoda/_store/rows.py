"""What a store's reads return: one named tuple per table row (values still encoded)."""

import hashlib
import json
import math
from collections.abc import Iterator, Sequence
from typing import Any, Final, NamedTuple

from .._errors import AuditChainBroken, DamagedRow, StorageError
from .._records import Event

__all__ = [
    "AgentRow",
    "AuditedRows",
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
    kind: str | None = None

    @property
    def tombstone(self) -> bool:
        return self.encoding == "tombstone"


_DATA_TYPE: Final = {"json": str, "bytes": bytes, "tombstone": type(None)}


def _number(x: Any) -> bool:
    return type(x) in (int, float) and math.isfinite(x)


def _row_damage(row: StoredRow) -> str | None:
    """Why a row's columns are not of the types a stored version has, or None."""
    expected = _DATA_TYPE.get(row.encoding)
    if expected is None:
        return f"its encoding {row.encoding!r:.40} is unknown"
    data = row.data
    if type(data) is not expected and not (data is None and row.erased):
        stored = "no value" if data is None else f"a {type(data).__name__} value"
        return f"it holds {stored} for encoding {row.encoding!r}"
    if type(row.key) is not str or type(row.version) is not int or type(row.seq) is not int:
        return "its key, version or seq is not of its type"
    if not _number(row.created_at) or not (row.expires_at is None or _number(row.expires_at)):
        return "its created_at or expires_at is not a number"
    if not (row.author is None or type(row.author) is str) or type(row.erased) is not bool:
        return "its author or erased column is not of its type"
    if not (row.kind is None or type(row.kind) is str):
        return "its kind is not text"
    return None


def checked_row(row: StoredRow) -> StoredRow:
    """``row`` if its columns have their types, else :class:`DamagedRow` naming it."""
    why = _row_damage(row)
    if why is not None:
        raise DamagedRow(row.key, row.version, row.seq, why)
    return row


def parse_tags(text: Any, key: Any, version: Any, seq: Any) -> tuple[str, ...]:
    """A tags column stored as JSON text (SQLite) as a tuple of str."""
    if not text:
        return ()
    try:
        tags = json.loads(text)
    except (TypeError, ValueError, RecursionError):
        raise DamagedRow(key, version, seq, "its tags are not valid JSON") from None
    return checked_tags(tags, key, version, seq)


def checked_tags(tags: Any, key: Any, version: Any, seq: Any) -> tuple[str, ...]:
    if type(tags) is not list or not all(type(t) is str for t in tags):
        raise DamagedRow(key, version, seq, "its tags are not a list of strings")
    return tuple(tags)


def decode_stored(row: StoredRow) -> Any:
    """A fresh Python object for a stored (live) version's value; :class:`DamagedRow`
    when it cannot be decoded."""
    if row.encoding == "bytes":
        return bytes(row.data)
    if row.encoding != "json":
        return None
    try:
        return json.loads(row.data)
    except RecursionError:
        raise DamagedRow(
            row.key, row.version, row.seq, "its value is nested too deeply to read back"
        ) from None
    except (TypeError, ValueError) as exc:
        why = f"its value is not valid JSON ({exc})"
        raise DamagedRow(row.key, row.version, row.seq, why) from None


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


def _damaged_head(agent: Any, why: str) -> AuditChainBroken:
    return AuditChainBroken(
        f"the stored head of agent {agent!r:.80} is damaged: {why}. The store was changed"
        " outside Octopoda; restore it from a backup"
    )


def agent_row(r: Sequence[Any]) -> "AgentRow":
    """An agents row as an :class:`AgentRow`; :class:`AuditChainBroken` when its columns
    are not of their types (the chain's head cannot be trusted)."""
    row = AgentRow(*r)
    if type(row.head_seq) is not int or not 0 <= row.head_seq <= _MAX_SEQ:
        raise _damaged_head(row.id, f"its head_seq {row.head_seq!r:.40} is not a seq")
    h = row.head_hash
    if type(h) is not str or len(h) != 64 or not set(h) <= _HEX:
        raise _damaged_head(row.id, "its head_hash is not 64 hex digits")
    if type(row.id) is not str or type(row.status) is not str or not _number(row.created_at):
        raise _damaged_head(row.id, "its id, status or created_at is not of its type")
    if not (row.last_active is None or _number(row.last_active)):
        raise _damaged_head(row.id, "its last_active is not a number")
    if not (row.status_reason is None or type(row.status_reason) is str):
        raise _damaged_head(row.id, "its status_reason is not text")
    return row


def snapshot_row(r: Sequence[Any]) -> "SnapshotRow":
    """A snapshots row; :class:`StorageError` naming it when its columns are not of their
    types."""
    row = SnapshotRow(*r)
    if type(row.seq) is not int or not 0 <= row.seq <= _MAX_SEQ or not _number(row.created_at):
        raise StorageError(
            f"snapshot {row.name!r:.80} of agent {row.agent!r:.80} is damaged: its seq or"
            " created_at is not of its type. The store was changed outside Octopoda; restore"
            " it from a backup"
        )
    return row


def members_of(value: Any, space: Any) -> tuple[str, ...] | None:
    """A space's members (decoded from JSON text when ``value`` is text); StorageError
    naming the space when they are not a list of agent ids."""
    if value is None:
        return None
    members = value
    if isinstance(value, (str, bytes)):
        try:
            members = json.loads(value)
        except (ValueError, RecursionError):
            members = None
    if type(members) is not list or not all(type(m) is str for m in members):
        raise StorageError(
            f"space {space!r:.80} is damaged: its members are not a list of agent ids. The"
            " store was changed outside Octopoda; restore it from a backup"
        )
    return tuple(members)


_HEX: Final = frozenset("0123456789abcdef")
_MAX_SEQ: Final = 2**53  # a seq an audit payload can hold exactly (canonical JSON)


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


class AuditedRows(NamedTuple):
    """An agent's audited side rows as stored (columns unchecked: they may be damaged)."""

    snapshots: list[SnapshotRow]
    conflicts: list[ConflictRow]
    spaces: list[SpaceRow]
    runs: list[RunRow]
    messages: Iterator[MessageRow]  # sent or received, by id, read lazily


# -- events ------------------------------------------------------------------------------------


def damaged_event(agent: str, seq: Any, why: str) -> AuditChainBroken:
    """The error for an event row that cannot be read back (changed outside Octopoda)."""
    return AuditChainBroken(
        f"event seq {seq} of agent {agent!r} is damaged: {why}. The store was changed outside"
        " Octopoda; `agent.audit.verify()` (or `octopoda audit verify`) reports the first bad"
        " seq; restore the store from a backup to write to this agent again"
    )


def _payload(r: tuple[Any, ...]) -> dict[str, Any]:
    if type(r[1]) is not int or type(r[3]) is not str or type(r[2]) not in (int, float):
        raise damaged_event(r[0], r[1], "its seq, time or kind is not of its type")
    text = r[4]
    if type(text) is not str:
        raise damaged_event(r[0], r[1], f"its payload is stored as {type(text).__name__}")
    try:
        payload = json.loads(text)
    except (TypeError, ValueError, RecursionError) as exc:
        raise damaged_event(r[0], r[1], f"its payload is not valid JSON ({exc})") from None
    if type(payload) is not dict:
        raise damaged_event(r[0], r[1], "its payload is not a JSON object")
    return payload


def event_of(r: tuple[Any, ...]) -> Event:
    """An events row (``reads.EVENT_COLS``) as an :class:`Event`; :class:`AuditChainBroken`
    (naming the seq) when its payload cannot be read back."""
    return Event(
        agent=r[0],
        seq=r[1],
        time=r[2],
        kind=r[3],
        payload=_payload(r),
        prev_hash=r[5],
        hash=r[6],
        payload_text=r[4],
    )
