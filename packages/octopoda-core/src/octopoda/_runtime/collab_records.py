"""The records of :mod:`.collab` (shared versions and values, conflicts, messages, goals)
and how store rows become them."""

import json
from typing import Any, NamedTuple

from .._errors import StorageError
from .._store import MessageRow, StoredRow
from .._store.rows import decode_stored
from .._values import validate_int

__all__ = ["Conflict", "Goal", "Message", "SharedValue", "SharedVersion"]


class SharedVersion(NamedTuple):
    """What a shared write created. ``conflict_id`` is set when it was a stale write."""

    key: str
    space: str
    version: int
    author: str
    created_at: float
    seq: int
    conflict_id: int | None = None


class SharedValue(NamedTuple):
    """A shared key's current value (``value`` is the value itself) and who wrote it."""

    key: str
    space: str
    found: bool
    value: Any = None
    version: int | None = None
    author: str | None = None
    created_at: float | None = None
    tags: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return self.found


class Conflict(NamedTuple):
    """A stale shared write: ``mine`` is the write that did not see ``theirs`` (the head it
    replaced). Both stay in history; ``resolve_conflict`` decides which is current."""

    id: int
    space: str
    key: str
    mine_version: int
    mine_author: str
    mine_value: Any
    theirs_version: int
    theirs_author: str | None
    theirs_value: Any
    seen_version: int | None
    created_at: float
    status: str
    resolution: str | None
    resolved_by: str | None
    resolved_at: float | None


class Message(NamedTuple):
    """A direct message (``recipient``) or a broadcast (``space``); ``run_id``: the run
    of the sender it was sent in."""

    id: int
    sender: str
    recipient: str | None
    space: str | None
    message_type: str
    body: Any
    created_at: float
    read_at: float | None
    run_id: str | None = None

    @property
    def read(self) -> bool:
        return self.read_at is not None


class Goal(NamedTuple):
    """An agent's goal, its milestones and progress (0..1). Each update is a new version."""

    goal: str
    milestones: tuple[dict[str, Any], ...]
    progress: float
    status: str
    note: str | None
    set_at: float
    updated_at: float
    version: int


def message_of(row: MessageRow) -> Message:
    try:
        body = json.loads(row.body)
    except (TypeError, ValueError, RecursionError):
        raise StorageError(
            f"message {row.id} is damaged: its body is not valid JSON. The store was changed"
            " outside Octopoda; restore it from a backup"
        ) from None
    return Message(
        row.id,
        row.sender,
        row.recipient,
        row.space,
        row.message_type,
        body,
        row.created_at,
        row.read_at,
        row.run_id,
    )


def conflict_id_of(value: Any) -> int | None:
    """A conflict id to look up (None: not an int, so no conflict has it); out of the
    stores' range: :class:`InvalidInput`."""
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return None if value <= 0 else validate_int(value, "conflict_id", 1)


def value_of(row: StoredRow | None) -> Any:
    if row is None or row.tombstone or row.erased:
        return None
    return decode_stored(row)


def goal_of(value: Any, version: int) -> Goal:
    """A stored goal (a version of ``goal:<agent>``) as a :class:`Goal`."""
    try:
        return Goal(
            value["goal"],
            tuple(value["milestones"]),
            value["progress"],
            value["status"],
            value.get("note"),
            value["set_at"],
            value["updated_at"],
            version,
        )
    except (TypeError, KeyError, AttributeError):
        raise StorageError(
            f"goal version {version} is damaged: it is not a goal object. The store was"
            " changed outside Octopoda; restore it from a backup"
        ) from None
