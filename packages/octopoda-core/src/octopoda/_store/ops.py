"""What a commit asks a store to change: namespaces, memory writes and operations.

A commit (:meth:`~octopoda.store.Store.commit`) carries one event, the
:class:`MemoryWrite` s it appends and the :data:`Op` s it applies (spaces, conflict
resolutions, messages, erasures). The rules that decide whether they may happen and what
rows they become are the commit planner's (:mod:`octopoda._store.planner`).
"""

from typing import Final, NamedTuple

__all__ = [
    "SPACE_PREFIX",
    "CreateSpace",
    "EraseKey",
    "MarkRead",
    "MemoryWrite",
    "Op",
    "ResolveConflict",
    "SendMessage",
    "SetRunStatus",
    "agent_namespace",
    "space_namespace",
]

SPACE_PREFIX: Final = "space:"


def agent_namespace(agent: str) -> str:
    """The namespace holding an agent's private memory."""
    return "agent:" + agent


def space_namespace(space: str) -> str:
    """The namespace of a shared space. Stores check membership of writes to it."""
    return SPACE_PREFIX + space


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
    kind: str | None = None  # what the memory is ("fact", "preference", ...); None: none


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
    ``body`` is JSON text; ``run_id`` the run of the sender it was sent in (None: none)."""

    recipient: str | None
    space: str | None
    message_type: str
    body: str
    body_sha256: str
    run_id: str | None = None


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


class SetRunStatus(NamedTuple):
    """Set the status of the acting agent's run ``run_id``: ``"paused"`` (``reason``: why,
    the text ``AgentPaused`` reports) or ``"active"`` (a resume: the run must be paused).

    A run's status changes only with an event of that run: the commit's event must carry
    ``payload["run_id"] == run_id`` (the ``paused`` or ``resumed`` event), so the audit
    chain records every change. The store keeps it in the ``runs`` table, which every
    process reads (``Store.agent_and_run``).
    """

    run_id: str
    status: str
    reason: str | None = None


Op = CreateSpace | ResolveConflict | SendMessage | MarkRead | EraseKey | SetRunStatus
