"""The exceptions Octopoda raises.

Every error is an :class:`OctopodaError`; driver errors (``sqlite3``) are mapped at the
store boundary and never reach the caller raw::

    OctopodaError
    ├── ConfigError            a store URL, path or setting that cannot be used
    ├── InvalidInput           the caller passed something Octopoda cannot store
    │   ├── InvalidKey         empty, oversized or non-text key
    │   ├── InvalidValue       a value that is not JSON-serialisable (or bytes)
    │   ├── InvalidAgentId     empty, oversized or non-text agent id
    │   └── InvalidBundle      an export bundle that is malformed or of an unknown format
    ├── NotFound               something named does not exist
    │   └── SnapshotNotFound
    ├── StorageError           the database failed (busy past the timeout, corrupt, read-only, ...)
    │   └── SchemaTooNew       the file was written by a newer Octopoda
    └── AuditChainBroken       the audit chain of an agent does not verify

Every message says what happened and what to do about it.
"""

from __future__ import annotations

__all__ = [
    "AuditChainBroken",
    "ConfigError",
    "InvalidAgentId",
    "InvalidBundle",
    "InvalidInput",
    "InvalidKey",
    "InvalidValue",
    "NotFound",
    "OctopodaError",
    "SchemaTooNew",
    "SnapshotNotFound",
    "StorageError",
]


class OctopodaError(Exception):
    """Root of every exception Octopoda raises."""


class ConfigError(OctopodaError):
    """A store URL, path or setting cannot be used."""


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


class NotFound(OctopodaError, LookupError):
    """Something that was named does not exist."""


class SnapshotNotFound(NotFound):
    """No snapshot of that name exists for this agent."""


class StorageError(OctopodaError):
    """The database failed. The message names the file and the cause."""


class SchemaTooNew(StorageError):
    """The store was written by a newer Octopoda than this one."""


class AuditChainBroken(OctopodaError):
    """The audit chain of an agent does not verify."""
