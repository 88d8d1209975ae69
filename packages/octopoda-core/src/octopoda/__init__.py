"""Octopoda: versioned, audited memory for AI agents.

>>> from octopoda import AgentRuntime
>>> agent = AgentRuntime("support-bot", store=":memory:")
>>> agent.remember("user_name", "Alice").version
1
>>> agent.recall("user_name").value
'Alice'
"""

from typing import TYPE_CHECKING

from ._errors import (
    AccessDenied,
    AgentPaused,
    AuditChainBroken,
    ConfigError,
    InvalidAgentId,
    InvalidBundle,
    InvalidInput,
    InvalidKey,
    InvalidValue,
    LoopDetected,
    NotFound,
    OctopodaError,
    SchemaTooNew,
    SnapshotNotFound,
    StorageError,
    VersionConflict,
)
from ._version import __version__

if TYPE_CHECKING:
    from ._actions import Stats
    from ._audit import AuditTrail, ChainHead, VerifyReport, verify_audit_bundle
    from ._client import AgentInfo, Octopoda
    from ._collab import Conflict, Goal, Message, SharedValue, SharedVersion
    from ._events import AuditChainer, Pipeline, Processor
    from ._loops import LoopEventRef, LoopPolicy, LoopSignal, LoopStatus
    from ._postgres import PostgresStore
    from ._records import (
        EraseResult,
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
    from ._store import (
        AgentRow,
        ConflictRow,
        CreateSpace,
        EraseKey,
        MarkRead,
        MemoryWrite,
        MessageRow,
        Op,
        ResolveConflict,
        SendMessage,
        SnapshotRow,
        SpaceRow,
        Store,
        StoredRow,
    )
    from ._timeline import Decision, MemoryDiff, MemoryView

# Everything but the errors loads on first use (PEP 562), so `import octopoda` stays cheap
# for command-line tools and for programs that import it before they need it.
_LAZY: dict[str, str] = {
    "PostgresStore": "._postgres",
    "AgentInfo": "._client",
    "Octopoda": "._client",
    "Conflict": "._collab",
    "Goal": "._collab",
    "Message": "._collab",
    "SharedValue": "._collab",
    "SharedVersion": "._collab",
    "SpaceRow": "._store",
    "CreateSpace": "._store",
    "EraseKey": "._store",
    "MarkRead": "._store",
    "Op": "._store",
    "ResolveConflict": "._store",
    "SendMessage": "._store",
    "ConflictRow": "._store",
    "MessageRow": "._store",
    "LoopPolicy": "._loops",
    "Stats": "._actions",
    "LoopEventRef": "._loops",
    "LoopSignal": "._loops",
    "LoopStatus": "._loops",
    "AgentRow": "._store",
    "SnapshotRow": "._store",
    "AgentRuntime": "._runtime",
    "AuditChainer": "._events",
    "AuditTrail": "._audit",
    "ChainHead": "._audit",
    "Decision": "._timeline",
    "EraseResult": "._records",
    "Event": "._records",
    "ImportResult": "._records",
    "MemoryDiff": "._timeline",
    "MemoryHealth": "._records",
    "MemoryItem": "._records",
    "MemoryVersion": "._records",
    "MemoryView": "._timeline",
    "MemoryWrite": "._store",
    "Pipeline": "._events",
    "Processor": "._events",
    "RecallResult": "._records",
    "RestoreResult": "._records",
    "SignedHead": "._signing",
    "Snapshot": "._records",
    "SqliteStore": "._sqlite",
    "Store": "._store",
    "StoredRow": "._store",
    "VerifyReport": "._audit",
    "VersionRecord": "._records",
    "verify_audit_bundle": "._audit",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'octopoda' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


del TYPE_CHECKING


__all__ = [
    "AccessDenied",
    "AgentInfo",
    "AgentPaused",
    "AgentRow",
    "AgentRuntime",
    "AuditChainBroken",
    "AuditChainer",
    "AuditTrail",
    "ChainHead",
    "ConfigError",
    "Conflict",
    "ConflictRow",
    "CreateSpace",
    "Decision",
    "EraseKey",
    "EraseResult",
    "Event",
    "Goal",
    "ImportResult",
    "InvalidAgentId",
    "InvalidBundle",
    "InvalidInput",
    "InvalidKey",
    "InvalidValue",
    "LoopDetected",
    "LoopEventRef",
    "LoopPolicy",
    "LoopSignal",
    "LoopStatus",
    "MarkRead",
    "MemoryDiff",
    "MemoryHealth",
    "MemoryItem",
    "MemoryVersion",
    "MemoryView",
    "MemoryWrite",
    "Message",
    "MessageRow",
    "NotFound",
    "Octopoda",
    "OctopodaError",
    "Op",
    "Pipeline",
    "PostgresStore",
    "Processor",
    "RecallResult",
    "ResolveConflict",
    "RestoreResult",
    "SchemaTooNew",
    "SendMessage",
    "SharedValue",
    "SharedVersion",
    "SignedHead",
    "Snapshot",
    "SnapshotNotFound",
    "SnapshotRow",
    "SpaceRow",
    "SqliteStore",
    "Stats",
    "StorageError",
    "Store",
    "StoredRow",
    "VerifyReport",
    "VersionConflict",
    "VersionRecord",
    "__version__",
    "verify_audit_bundle",
]
