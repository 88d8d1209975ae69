"""The reads that ``audit.verify`` checks against an agent's events, besides its memory:
every row outside the memory tables that the agent's events determine.

* its agents row (``status``, ``status_reason``: its last agent-wide ``paused`` or
  ``resumed`` event);
* its ``runs`` rows (each run's last ``paused`` or ``resumed`` event);
* its snapshots (each name's last ``snapshot`` event);
* the messages it sent (its ``message_sent`` and ``broadcast`` events) and those sent to
  it (``read_at``: its ``message_read`` events);
* the conflicts its shared writes recorded and those it resolved;
* the spaces it created.

Messages are read in chunks (there can be many); the rest are small. The search tables
are an index rebuilt from memory, not a record: they are not checked.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

from .._errors import StorageError
from .reads import CHUNK, CONFLICT_COLS, MESSAGE_COLS, Dialect
from .rows import (
    AuditedRows,
    ConflictRow,
    MessageRow,
    RunRow,
    SnapshotRow,
    SpaceRow,
    members_of,
)

__all__ = ["AuditedReads", "AuditedSql"]


class AuditedSql:
    """One dialect's statements of the audited side rows, built once."""

    def __init__(self, dialect: Dialect) -> None:
        q = dialect.sql
        self.dialect = dialect
        # params: agent, agent, after id, limit
        self.messages = q(
            f"SELECT {MESSAGE_COLS} FROM messages WHERE (sender = ? OR recipient = ?)"
            " AND id > ? ORDER BY id LIMIT ?"
        )
        # params: agent, agent
        self.conflicts = q(
            f"SELECT {CONFLICT_COLS} FROM conflicts WHERE author = ? OR resolved_by = ? ORDER BY id"
        )
        self.spaces = q(
            "SELECT name, created_at, created_by, members FROM spaces WHERE created_by = ?"
            " ORDER BY name"
        )
        self.runs = q(
            "SELECT run_id, status, status_reason, changed_at, changed_seq FROM runs"
            " WHERE agent = ? ORDER BY run_id"
        )
        self.snapshots = q(
            "SELECT agent, name, seq, created_at FROM snapshots WHERE agent = ? ORDER BY name"
        )


class AuditedReads:
    """``Store.audited_rows``. A backend sets ``_audited_sql`` and provides ``_fetchall``."""

    _audited_sql: ClassVar[AuditedSql]

    def _fetchall(self, sql: str, params: Sequence[Any]) -> list[Any]:
        raise NotImplementedError

    def audited_rows(self, agent: str) -> AuditedRows:
        """The rows outside memory that ``agent``'s events determine (see the module
        docstring); ``messages`` is read lazily, in chunks."""
        sql = self._audited_sql
        both = (agent, agent)
        spaces = [
            SpaceRow(r[0], r[1], r[2], _members(r[3], r[0]))
            for r in self._fetchall(sql.spaces, (agent,))
        ]
        return AuditedRows(
            [SnapshotRow(*r) for r in self._fetchall(sql.snapshots, (agent,))],
            [ConflictRow(*r) for r in self._fetchall(sql.conflicts, both)],
            spaces,
            [RunRow(*r) for r in self._fetchall(sql.runs, (agent,))],
            self._audited_messages(agent),
        )

    def _audited_messages(self, agent: str) -> Iterator[MessageRow]:
        after = 0
        while True:
            chunk = self._fetchall(self._audited_sql.messages, (agent, agent, after, CHUNK))
            for r in chunk:
                yield MessageRow(*r)
            if len(chunk) < CHUNK:
                return
            after = chunk[-1][0]


def _members(value: Any, space: Any) -> Any:
    """A space's members decoded; as stored when they do not decode (verify compares them
    with the event and reports the difference)."""
    try:
        return members_of(value, space)
    except StorageError:
        return value
