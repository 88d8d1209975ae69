"""Octopoda: versioned, audited memory for AI agents.

>>> from octopoda import AgentRuntime
>>> agent = AgentRuntime("support-bot", store=":memory:")
>>> agent.remember("user_name", "Alice").version
1
>>> agent.recall("user_name").value
'Alice'
"""

from ._audit import AuditTrail, ChainHead, VerifyReport, verify_audit_bundle
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
from ._signing import SignedHead
from ._sqlite import SqliteStore
from ._store import MemoryWrite, Store, StoredRow
from ._timeline import Decision, MemoryDiff, MemoryView
from ._version import __version__

__all__ = [
    "AgentRuntime",
    "AuditChainBroken",
    "AuditChainer",
    "AuditTrail",
    "ChainHead",
    "ConfigError",
    "Decision",
    "Event",
    "ImportResult",
    "InvalidAgentId",
    "InvalidBundle",
    "InvalidInput",
    "InvalidKey",
    "InvalidValue",
    "MemoryDiff",
    "MemoryHealth",
    "MemoryItem",
    "MemoryVersion",
    "MemoryView",
    "MemoryWrite",
    "NotFound",
    "OctopodaError",
    "Pipeline",
    "Processor",
    "RecallResult",
    "RestoreResult",
    "SchemaTooNew",
    "SignedHead",
    "Snapshot",
    "SnapshotNotFound",
    "SqliteStore",
    "StorageError",
    "Store",
    "StoredRow",
    "VerifyReport",
    "VersionRecord",
    "__version__",
    "verify_audit_bundle",
]
