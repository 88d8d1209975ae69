"""Octopoda: versioned, audited memory for AI agents.

>>> from octopoda import AgentRuntime
>>> agent = AgentRuntime("support-bot", store=":memory:")
>>> agent.remember("user_name", "Alice").version
1
>>> agent.recall("user_name").value
'Alice'
"""

from ._errors import (
    AuditChainBroken,
    ConfigError,
    InvalidAgentId,
    InvalidBundle,
    InvalidInput,
    InvalidKey,
    InvalidValue,
    NotFound,
    OctopodaError,
    SchemaTooNew,
    SnapshotNotFound,
    StorageError,
)
from ._events import AuditChainer, Pipeline, Processor
from ._records import (
    Event,
    ImportResult,
    MemoryHealth,
    MemoryItem,
    MemoryVersion,
    RecallResult,
    RestoreResult,
    Snapshot,
    VersionRecord,
)
from ._runtime import AgentRuntime
from ._sqlite import SqliteStore
from ._store import MemoryWrite, Store, StoredRow
from ._version import __version__

__all__ = [
    "AgentRuntime",
    "AuditChainBroken",
    "AuditChainer",
    "ConfigError",
    "Event",
    "ImportResult",
    "InvalidAgentId",
    "InvalidBundle",
    "InvalidInput",
    "InvalidKey",
    "InvalidValue",
    "MemoryHealth",
    "MemoryItem",
    "MemoryVersion",
    "MemoryWrite",
    "NotFound",
    "OctopodaError",
    "Pipeline",
    "Processor",
    "RecallResult",
    "RestoreResult",
    "SchemaTooNew",
    "Snapshot",
    "SnapshotNotFound",
    "SqliteStore",
    "StorageError",
    "Store",
    "StoredRow",
    "VersionRecord",
    "__version__",
]
