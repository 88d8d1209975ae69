"""The store backend SPI: what a store implements and what it is given.

Users of Octopoda rarely need this module: ``AgentRuntime(store=...)`` takes a path, a URL
or a store object. It is for writing (or testing) a backend:

* :class:`Store`: the protocol, whose docstring is the contract (and
  ``octopoda.testing.StoreConformance`` the suite every backend passes);
* the rows reads return (:class:`StoredRow`, :class:`AgentRow`, :class:`SnapshotRow`,
  :class:`SpaceRow`, :class:`ConflictRow`, :class:`MessageRow`, :class:`RunRow`,
  :class:`RunActivityRow`, :class:`AuditedRows`) and the writes and operations a commit carries
  (:class:`MemoryWrite`, :data:`Op`: :class:`CreateSpace`, :class:`ResolveConflict`,
  :class:`SendMessage`, :class:`MarkRead`, :class:`EraseKey`, :class:`SetRunStatus`);
* the commit planner, so that a backend never re-derives the rules of a write: read what
  :func:`reads_needed` lists into a :class:`HeadRead`, call :func:`plan_commit`, give the
  event its ids with :meth:`CommitPlan.stamp`, run the pipeline, write the plan's rows
  (:func:`plan_plain_commit` plans a commit for which :func:`is_plain_commit` holds,
  every ``remember``, from the head and the key's version alone);
* helpers: :func:`agent_namespace`, :func:`space_namespace`, :func:`stored_sha256`;
* the two backends, :class:`SqliteStore` and :class:`PostgresStore` (the ``postgres``
  extra; loaded on first use).
"""

from typing import TYPE_CHECKING

from ._lazy import lazy_names
from ._store.ops import (
    CreateSpace,
    EraseKey,
    MarkRead,
    MemoryWrite,
    Op,
    ResolveConflict,
    SendMessage,
    SetRunStatus,
    agent_namespace,
    space_namespace,
)
from ._store.planner import (
    CommitPlan,
    CommitReads,
    ConflictState,
    HeadRead,
    KeyHead,
    PlannedConflict,
    SpaceRule,
    is_plain_commit,
    plan_commit,
    plan_plain_commit,
    reads_needed,
)
from ._store.protocol import Store
from ._store.rows import (
    AgentRow,
    AuditedRows,
    ConflictRow,
    MessageRow,
    RunActivityRow,
    RunRow,
    SnapshotRow,
    SpaceRow,
    StoredRow,
    stored_sha256,
)
from ._store.sqlite.store import SqliteStore
from ._store.vector_reads import VectorModel

if TYPE_CHECKING:
    from ._store.postgres.store import PostgresStore


del TYPE_CHECKING

__all__ = [
    "AgentRow",
    "AuditedRows",
    "CommitPlan",
    "CommitReads",
    "ConflictRow",
    "ConflictState",
    "CreateSpace",
    "EraseKey",
    "HeadRead",
    "KeyHead",
    "MarkRead",
    "MemoryWrite",
    "MessageRow",
    "Op",
    "PlannedConflict",
    "PostgresStore",
    "ResolveConflict",
    "RunActivityRow",
    "RunRow",
    "SendMessage",
    "SetRunStatus",
    "SnapshotRow",
    "SpaceRow",
    "SpaceRule",
    "SqliteStore",
    "Store",
    "StoredRow",
    "VectorModel",
    "agent_namespace",
    "is_plain_commit",
    "plan_commit",
    "plan_plain_commit",
    "reads_needed",
    "space_namespace",
    "stored_sha256",
]

__getattr__, __dir__ = lazy_names(__name__, {"PostgresStore": "._store.postgres.store"}, __all__)
del lazy_names
