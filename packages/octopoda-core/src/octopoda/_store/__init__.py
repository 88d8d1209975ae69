"""The store layer: where a write becomes rows.

* :mod:`.protocol`: the ``Store`` protocol, whose docstring is the contract every backend
  keeps (``octopoda.testing.StoreConformance`` checks it);
* :mod:`.ops` and :mod:`.rows`: what a commit asks for (memory writes, operations) and what
  reads return (one named tuple per table row);
* :mod:`.planner`: the pure commit planner, the rules of a write once for every backend;
* :mod:`.reads`: the SQL reads, written once for every SQL dialect (:mod:`.run_reads`:
  those of runs);
* :mod:`.config`: which store a path, URL or ``OCTOPODA_DATABASE_URL`` opens;
* :mod:`.sqlite` and :mod:`.postgres`: the backends, each a schema module (migrations,
  statements, its dialect) and a store class that reads, plans and executes.

The public face of this layer (the backend SPI) is :mod:`octopoda.store`.
"""

from .ops import (
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
from .protocol import Store
from .rows import (
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

__all__ = [
    "AgentRow",
    "AuditedRows",
    "ConflictRow",
    "CreateSpace",
    "EraseKey",
    "MarkRead",
    "MemoryWrite",
    "MessageRow",
    "Op",
    "ResolveConflict",
    "RunActivityRow",
    "RunRow",
    "SendMessage",
    "SetRunStatus",
    "SnapshotRow",
    "SpaceRow",
    "Store",
    "StoredRow",
    "agent_namespace",
    "space_namespace",
    "stored_sha256",
]
