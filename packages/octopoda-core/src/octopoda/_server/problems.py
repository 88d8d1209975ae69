"""``OctopodaError`` -> HTTP: a status per error class (``InvalidInput`` is 400: 422 is
FastAPI's own answer to a body that does not fit the schema) and a problem body (RFC 9457 style)
naming the error's type and message; the remote store turns it back into the same error."""

from __future__ import annotations

from typing import Any, Final

from .. import _errors
from .._store.remote.codec import encode_error

__all__ = ["problem_of", "status_of"]

_STATUS: Final[tuple[tuple[type[_errors.OctopodaError], int], ...]] = (
    (_errors.AccessDenied, 403),
    (_errors.NotFound, 404),
    (_errors.VersionConflict, 409),
    (_errors.AuditChainBroken, 409),
    (_errors.LoopDetected, 409),
    (_errors.AgentPaused, 423),
    (_errors.InvalidInput, 400),
    (_errors.ConfigError, 400),
    (_errors.StorageError, 503),
)


def status_of(exc: _errors.OctopodaError) -> int:
    for cls, status in _STATUS:
        if isinstance(exc, cls):
            return status
    return 500


def problem_of(exc: _errors.OctopodaError) -> dict[str, Any]:
    body = encode_error(exc)
    status = status_of(exc)
    return {"title": body["type"], "status": status, **body}
