"""``OctopodaError`` -> HTTP: a status per error class (``InvalidInput`` is 400: 422 is
FastAPI's own answer to a body that does not fit the schema) and a problem body (RFC 9457 style)
naming the error's type and message; the remote store turns it back into the same error."""

from __future__ import annotations

from typing import Any, Final

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from .. import _errors
from .._errors import OctopodaError
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


def install_handlers(app: FastAPI) -> None:
    """Every error a route raises becomes a problem body."""

    @app.exception_handler(OctopodaError)
    async def octopoda_error(request: Request, exc: OctopodaError) -> JSONResponse:
        problem = problem_of(exc)
        return JSONResponse(
            problem, status_code=problem["status"], media_type="application/problem+json"
        )

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        """FastAPI's own refusals (a body that is not JSON, an unknown route) as problems."""
        from http import HTTPStatus

        kind = HTTPStatus(exc.status_code).phrase.title().replace(" ", "").replace("-", "")
        problem = {"type": kind, "title": kind, "status": exc.status_code, "detail": exc.detail}
        return JSONResponse(
            problem,
            status_code=exc.status_code,
            media_type="application/problem+json",
            headers=getattr(exc, "headers", None),
        )

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        import logging

        logging.getLogger("octopoda").error(
            "octopoda serve: %s %s failed", request.method, request.url.path, exc_info=exc
        )
        problem = {"type": "InternalError", "title": "InternalError", "status": 500}
        problem["detail"] = f"the server failed ({type(exc).__name__}); see its log"
        return JSONResponse(problem, status_code=500, media_type="application/problem+json")
