"""The dashboard's actions: resume, verify, forget, resolve. Each is a POST with the CSRF
token (403 without it); each is done by the runtime, whose own events audit it (``resumed``,
``forget``, ``conflict_resolved``; a verification only reads). After it the browser is
sent back to the page it came from (303), which shows the result."""

from __future__ import annotations

from urllib.parse import parse_qsl, quote, urlsplit

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from .._errors import OctopodaError
from .security import CSRF_COOKIE, CSRF_FIELD, HEADERS
from .state import dashboard_of, may_agent, may_space, not_found

__all__ = ["router"]

router = APIRouter(include_in_schema=False)


async def _form(request: Request) -> dict[str, str] | None:
    """The form's fields if its CSRF token matches the cookie's (and the browser's Origin,
    when it names one, is this server; an opaque "null" origin has only the token), else
    None."""
    origin = request.headers.get("origin")
    if origin not in (None, "null") and urlsplit(origin).netloc != request.headers.get("host"):
        return None  # (a browser says where a cross-site form came from)
    body = (await request.body()).decode("utf-8", "replace")
    form = dict(parse_qsl(body, keep_blank_values=True))
    csrf = dashboard_of(request).csrf
    if not csrf.accepts(request.cookies.get(CSRF_COOKIE), form.get(CSRF_FIELD)):
        return None
    return form


def _refused() -> Response:
    text = (
        "403: this form's CSRF token is missing or out of date (the server may have"
        " restarted): reload the page and try again."
    )
    return Response(text, status_code=403, media_type="text/plain", headers=HEADERS)


def _back(location: str) -> Response:
    if not location.startswith("/") or location.startswith("//"):
        location = "/"  # (only back to a page of this server)
    return RedirectResponse(location, status_code=303, headers=HEADERS)


def _agent_url(agent: str, suffix: str = "") -> str:
    return f"/agents/{quote(agent, safe='')}{suffix}"


@router.post("/agents/{agent}/resume")
async def resume(request: Request, agent: str) -> Response:
    form = await _form(request)
    if form is None:
        return _refused()
    dash = dashboard_of(request)
    if not may_agent(request, agent) or dash.server.store.agent(agent) is None:
        return not_found(request, f"agent {agent!r}")
    run = form.get("run_id") or None

    def act() -> None:
        with dash.server.agent(agent) as runtime:
            runtime.resume(run)

    await run_in_threadpool(act)
    return _back(form.get("next") or _agent_url(agent))


@router.post("/agents/{agent}/verify")
async def verify(request: Request, agent: str) -> Response:
    form = await _form(request)
    if form is None:
        return _refused()
    dash = dashboard_of(request)
    if not may_agent(request, agent) or dash.server.store.agent(agent) is None:
        return not_found(request, f"agent {agent!r}")

    def act() -> None:
        with dash.server.agent(agent) as runtime:
            dash.record_verify(runtime.audit.verify())

    await run_in_threadpool(act)
    return _back(form.get("next") or _agent_url(agent) + "#audit")


@router.post("/agents/{agent}/memory/{key:path}/forget")
async def forget(request: Request, agent: str, key: str) -> Response:
    form = await _form(request)
    if form is None:
        return _refused()
    dash = dashboard_of(request)
    if not may_agent(request, agent) or dash.server.store.agent(agent) is None:
        return not_found(request, f"agent {agent!r}")

    def act() -> None:
        with dash.server.agent(agent) as runtime:
            runtime.forget(key)

    await run_in_threadpool(act)
    return _back(_agent_url(agent, f"/memory/{quote(key, safe='')}"))


@router.post("/spaces/{space:path}/conflicts/{conflict_id}/resolve")
async def resolve(request: Request, space: str, conflict_id: int) -> Response:
    """Keep mine (the stale write) or theirs (the head it replaced), decided as the
    conflict's author: the ``conflict_resolved`` event is in that agent's chain."""
    form = await _form(request)
    if form is None:
        return _refused()
    dash = dashboard_of(request)
    keep = form.get("keep")
    row = dash.server.store.conflict(conflict_id)
    if row is None or row.namespace != "space:" + space or not may_space(request, space):
        return not_found(request, f"conflict {conflict_id} in space {space!r}")
    if keep not in ("mine", "theirs") or not may_agent(request, row.author):
        return not_found(request, f"resolving conflict {conflict_id} that way", 403)

    def act() -> str | None:
        with dash.server.agent(row.author) as runtime:
            try:
                runtime.resolve_conflict(conflict_id, keep)
            except OctopodaError as exc:
                return str(exc)
        return None

    problem = await run_in_threadpool(act)
    if problem is not None:
        return not_found(request, problem, 409)
    return _back(f"/spaces/{quote(space, safe='')}#conflicts")
