"""The exceptions Octopoda raises.

Every error is an :class:`OctopodaError`; driver errors (``sqlite3``) are mapped at the
store boundary and never reach the caller raw::

    OctopodaError
    ├── ConfigError            a store URL, path or setting that cannot be used
    │   └── EmbedderMismatch   the store's vectors are from another model or dimension
    ├── InvalidInput           the caller passed something Octopoda cannot store
    │   ├── InvalidKey         empty, oversized or non-text key
    │   ├── InvalidValue       a value that is not JSON-serialisable (or bytes)
    │   ├── InvalidAgentId     empty, oversized or non-text agent id
    │   └── InvalidBundle      an export bundle that is malformed or of an unknown format
    ├── NotSupported           an Octopoda 3.3.4 method with no equivalent (names the replacement)
    ├── NotFound               something named does not exist
    │   └── SnapshotNotFound
    ├── StorageError           the database failed (busy past the timeout, corrupt, read-only, ...)
    │   ├── SchemaTooNew       the file was written by a newer Octopoda
    │   ├── DamagedRow         a memory version that cannot be read back (changed by hand)
    │   └── UndecodableText    SQLite text that is not valid UTF-8 (changed by hand)
    ├── VersionConflict        a compare-and-set write found another version at the head
    ├── AccessDenied           an agent is not a member of a shared space
    ├── AuditChainBroken       the audit chain of an agent does not verify
    ├── LoopDetected           a loop tripped a policy with on_loop="raise"
    └── AgentPaused            the agent is paused (by the breaker or by hand): resume() it

Every message says what happened and what to do about it.
"""

from __future__ import annotations

TYPE_CHECKING = False  # (not typing's: `import octopoda` loads no typing)
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "AccessDenied",
    "AgentPaused",
    "AuditChainBroken",
    "ConfigError",
    "DamagedRow",
    "EmbedderMismatch",
    "InvalidAgentId",
    "InvalidBundle",
    "InvalidInput",
    "InvalidKey",
    "InvalidValue",
    "LoopDetected",
    "NotFound",
    "NotSupported",
    "OctopodaError",
    "SchemaTooNew",
    "SnapshotNotFound",
    "StorageError",
    "UndecodableText",
    "VersionConflict",
]


class OctopodaError(Exception):
    """Root of every exception Octopoda raises."""


class ConfigError(OctopodaError):
    """A store URL, path or setting cannot be used."""


class EmbedderMismatch(ConfigError):
    """The store's vectors were made by another embedding model (or dimension) than the
    one configured: re-embed them with ``octopoda reindex`` (or ``store.reset_vectors()``)."""


class InvalidInput(OctopodaError, ValueError):
    """The caller passed something Octopoda cannot store. The store is unchanged."""


class InvalidKey(InvalidInput):
    """A memory key is empty, too long, or not text."""


class InvalidValue(InvalidInput):
    """A value is neither JSON-serialisable nor ``bytes``."""


class InvalidAgentId(InvalidInput):
    """An agent id is empty, too long, or not text."""


class InvalidBundle(InvalidInput):
    """An export bundle is malformed or has an unknown format version."""


class NotSupported(OctopodaError, NotImplementedError):
    """An Octopoda 3.3.4 method with no equivalent; the message names what to use instead."""


class NotFound(OctopodaError, LookupError):
    """Something that was named does not exist."""


class SnapshotNotFound(NotFound):
    """No snapshot of that name exists for this agent."""


class StorageError(OctopodaError):
    """The database failed. The message names the file and the cause."""


class SchemaTooNew(StorageError):
    """The store was written by a newer Octopoda than this one."""


class DamagedRow(StorageError):
    """A stored memory version that cannot be read back (changed outside Octopoda).
    ``key``, ``version`` and ``seq`` name it (as stored: perhaps not of their types)."""

    def __init__(self, key: Any, version: Any, seq: Any, why: str) -> None:
        super().__init__(
            f"memory {key!r} v{version} (seq {seq}) is damaged: {why}. The store was changed"
            " outside Octopoda; `agent.audit.verify()` (or `octopoda audit verify`) reports"
            " it; restore the store from a backup"
        )
        self.key, self.version, self.seq, self.why = key, version, seq, why


class UndecodableText(StorageError):
    """The store holds text that is not valid UTF-8 (SQLite; the driver cannot return it)."""


class AuditChainBroken(OctopodaError):
    """The audit chain of an agent does not verify."""


class LoopDetected(OctopodaError):
    """A loop signal reached the policy's confidence with ``on_loop="raise"``.

    ``signal`` is the :class:`~octopoda.LoopSignal` (kind, confidence, the events by seq).
    The action that completed the loop was recorded before this was raised.
    """

    def __init__(self, message: str, signal: Any = None) -> None:
        super().__init__(message)
        self.signal = signal


class AgentPaused(OctopodaError):
    """The agent (or one of its runs) is paused; tool calls are refused until
    ``agent.resume()`` (``agent.resume(run_id=...)`` for a run).

    ``reason`` says why; ``signal`` is the loop signal that tripped the breaker, if any, as
    a dict (``LoopSignal.to_dict()``: it is read back from the store, where another process
    may have paused the agent); ``run_id`` is the paused run (None: the whole agent).
    """

    def __init__(
        self, message: str, reason: str = "", signal: Any = None, *, run_id: str | None = None
    ) -> None:
        super().__init__(message)
        self.reason = reason
        self.signal = signal
        self.run_id = run_id


class VersionConflict(OctopodaError):
    """A compare-and-set write (``expected_version``) found another version at the head.
    Nothing was written. ``key``, ``expected`` and ``actual`` say what was found."""

    def __init__(self, message: str, key: str = "", expected: int = 0, actual: int = 0) -> None:
        super().__init__(message)
        self.key = key
        self.expected = expected
        self.actual = actual


class AccessDenied(OctopodaError, PermissionError):
    """The agent is not a member of the shared space it tried to read or write."""
