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
)
from ._version import __version__

if TYPE_CHECKING:
    from ._actions import LoopPolicy, Stats
    from ._audit import AuditTrail, ChainHead, VerifyReport, verify_audit_bundle
    from ._events import AuditChainer, Pipeline, Processor
    from ._loops import LoopEventRef, LoopSignal, LoopStatus
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
    from ._store import AgentRow, MemoryWrite, SnapshotRow, Store, StoredRow
    from ._timeline import Decision, MemoryDiff, MemoryView

# Everything but the errors loads on first use (PEP 562), so `import octopoda` stays cheap
# for command-line tools and for programs that import it before they need it.
_LAZY: dict[str, str] = {
    "LoopPolicy": "._actions",
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
    "AgentPaused",
    "AgentRow",
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
    "LoopDetected",
    "LoopEventRef",
    "LoopPolicy",
    "LoopSignal",
    "LoopStatus",
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
    "SnapshotRow",
    "SqliteStore",
    "Stats",
    "StorageError",
    "Store",
    "StoredRow",
    "VerifyReport",
    "VersionRecord",
    "__version__",
    "verify_audit_bundle",
]
