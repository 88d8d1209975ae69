"""Octopoda: versioned, audited memory for AI agents.

>>> from octopoda import AgentRuntime
>>> agent = AgentRuntime("support-bot", store=":memory:")
>>> agent.remember("user_name", "Alice").version
1
>>> agent.recall("user_name").value
'Alice'
"""

from ._errors import (
    AccessDenied,
    AgentPaused,
    AuditChainBroken,
    ConfigError,
    DamagedRow,
    EmbedderMismatch,
    InvalidAgentId,
    InvalidBundle,
    InvalidInput,
    InvalidKey,
    InvalidValue,
    LoopDetected,
    NotFound,
    NotSupported,
    OctopodaError,
    SchemaTooNew,
    SnapshotNotFound,
    StorageError,
    UndecodableText,
    VersionConflict,
)
from ._lazy import lazy_names
from ._version import __version__

TYPE_CHECKING = False  # (not typing's: `import octopoda` loads no typing)


def _check_install() -> None:
    """Refuse to run on files shared with Octopoda 3.3.4 (``_migrate/conflict.py``): one
    ``stat`` unless its ``synrix_runtime`` package is installed beside this one."""
    from os import path

    here = path.dirname(path.abspath(__file__))
    if path.isdir(path.join(path.dirname(here), "synrix_runtime")):
        from ._migrate.conflict import check_install

        check_install(here)


_check_install()
del _check_install

if TYPE_CHECKING:
    from ._audit.chain import AuditChainer
    from ._audit.signing import SignedHead
    from ._audit.trail import AuditTrail, ChainHead, VerifyReport, verify_audit_bundle
    from ._instrument import Instrumentation, init, shutdown
    from ._instrument.status import IntegrationStatus
    from ._loops import LoopEventRef, LoopPolicy, LoopSignal, LoopStatus, Outage
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
    from ._runtime.actions import Stats
    from ._runtime.client import AgentInfo, Octopoda
    from ._runtime.collab import Conflict, Goal, Message, SharedValue, SharedVersion
    from ._runtime.compat import Task
    from ._runtime.pipeline import Pipeline, Processor
    from ._runtime.runs import RunInfo
    from ._runtime.runtime import AgentRuntime
    from ._runtime.views import Decision, MemoryDiff, MemoryView
    from ._search.embedders import Embedder
    from ._search.results import MatchReason, SimilarMatch, SimilarResults
    from ._store.postgres.store import PostgresStore
    from ._store.protocol import Store
    from ._store.sqlite.store import SqliteStore

    # Deprecated here: the backend SPI lives in octopoda.store (see _MOVED below).
    from .store import AgentRow as AgentRow
    from .store import ConflictRow as ConflictRow
    from .store import CreateSpace as CreateSpace
    from .store import EraseKey as EraseKey
    from .store import MarkRead as MarkRead
    from .store import MemoryWrite as MemoryWrite
    from .store import MessageRow as MessageRow
    from .store import Op as Op
    from .store import ResolveConflict as ResolveConflict
    from .store import SendMessage as SendMessage
    from .store import SnapshotRow as SnapshotRow
    from .store import SpaceRow as SpaceRow
    from .store import StoredRow as StoredRow

# Everything but the errors loads on first use (PEP 562), so `import octopoda` stays cheap
# for command-line tools and for programs that import it before they need it.
_LAZY: dict[str, str] = {
    "init": "._instrument",
    "shutdown": "._instrument",
    "Instrumentation": "._instrument",
    "IntegrationStatus": "._instrument.status",
    "PostgresStore": "._store.postgres.store",
    "AgentInfo": "._runtime.client",
    "Octopoda": "._runtime.client",
    "Conflict": "._runtime.collab",
    "Goal": "._runtime.collab",
    "Message": "._runtime.collab",
    "SharedValue": "._runtime.collab",
    "SharedVersion": "._runtime.collab",
    "LoopPolicy": "._loops",
    "Embedder": "._search.embedders",
    "MatchReason": "._search.results",
    "SimilarMatch": "._search.results",
    "SimilarResults": "._search.results",
    "Stats": "._runtime.actions",
    "Task": "._runtime.compat",
    "LoopEventRef": "._loops",
    "LoopSignal": "._loops",
    "LoopStatus": "._loops",
    "Outage": "._loops",
    "RunInfo": "._runtime.runs",
    "AgentRuntime": "._runtime.runtime",
    "AuditChainer": "._audit.chain",
    "AuditTrail": "._audit.trail",
    "ChainHead": "._audit.trail",
    "Decision": "._runtime.views",
    "EraseResult": "._records",
    "Event": "._records",
    "ImportResult": "._records",
    "MemoryDiff": "._runtime.views",
    "MemoryHealth": "._records",
    "MemoryItem": "._records",
    "MemoryVersion": "._records",
    "MemoryView": "._runtime.views",
    "Pipeline": "._runtime.pipeline",
    "Processor": "._runtime.pipeline",
    "RecallResult": "._records",
    "RestoreResult": "._records",
    "SignedHead": "._audit.signing",
    "Snapshot": "._records",
    "SqliteStore": "._store.sqlite.store",
    "Store": "._store.protocol",
    "VerifyReport": "._audit.trail",
    "VersionRecord": "._records",
    "verify_audit_bundle": "._audit.trail",
}


# The backend SPI's rows and ops moved to octopoda.store. Deprecated here for one release:
# not in __all__, and each access warns, naming the new place (CHANGELOG "Deprecated").
_MOVED: frozenset[str] = frozenset(
    (
        "AgentRow",
        "ConflictRow",
        "CreateSpace",
        "EraseKey",
        "MarkRead",
        "MemoryWrite",
        "MessageRow",
        "Op",
        "ResolveConflict",
        "SendMessage",
        "SnapshotRow",
        "SpaceRow",
        "StoredRow",
    )
)


def __getattr__(name: str) -> object:
    from importlib import import_module

    if name in _MOVED:
        import warnings

        warnings.warn(
            f"octopoda.{name} is deprecated and will be removed in the next release;"
            f" import it from octopoda.store (from octopoda.store import {name})",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(import_module(".store", __name__), name)
    if name == "store":  # the backend SPI submodule, also as an attribute
        return import_module(".store", __name__)
    return _lazy(name)


del TYPE_CHECKING


__all__ = [
    "AccessDenied",
    "AgentInfo",
    "AgentPaused",
    "AgentRuntime",
    "AuditChainBroken",
    "AuditChainer",
    "AuditTrail",
    "ChainHead",
    "ConfigError",
    "Conflict",
    "DamagedRow",
    "Decision",
    "Embedder",
    "EmbedderMismatch",
    "EraseResult",
    "Event",
    "Goal",
    "ImportResult",
    "Instrumentation",
    "IntegrationStatus",
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
    "MatchReason",
    "MemoryDiff",
    "MemoryHealth",
    "MemoryItem",
    "MemoryVersion",
    "MemoryView",
    "Message",
    "NotFound",
    "NotSupported",
    "Octopoda",
    "OctopodaError",
    "Outage",
    "Pipeline",
    "PostgresStore",
    "Processor",
    "RecallResult",
    "RestoreResult",
    "RunInfo",
    "SchemaTooNew",
    "SharedValue",
    "SharedVersion",
    "SignedHead",
    "SimilarMatch",
    "SimilarResults",
    "Snapshot",
    "SnapshotNotFound",
    "SqliteStore",
    "Stats",
    "StorageError",
    "Store",
    "Task",
    "UndecodableText",
    "VerifyReport",
    "VersionConflict",
    "VersionRecord",
    "__version__",
    "init",
    "shutdown",
    "verify_audit_bundle",
]

_lazy, __dir__ = lazy_names(__name__, _LAZY, __all__)
del lazy_names
