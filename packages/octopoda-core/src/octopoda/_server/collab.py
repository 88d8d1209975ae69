"""Shared spaces and broadcasts: ``/v1/spaces/...`` (the acting agent is named in each call)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query, Request

from .models import BroadcastBody, ResolveBody, ShareBody, SharedSearchBody, SpaceBody
from .state import allow, jsonable, state_of, token_of

__all__ = ["router"]

router = APIRouter(prefix="/v1", tags=["spaces"])
Json = dict[str, Any]


@router.get("/spaces")
def list_spaces(request: Request) -> list[Json]:
    """Spaces created explicitly (open spaces need no creation)."""
    token = token_of(request)
    return [
        jsonable(s)
        for s in state_of(request).client.spaces()
        if token is None or token.may_space(s.name)
    ]


@router.post("/spaces")
def create_space(request: Request, body: SpaceBody) -> Json:
    allow(request, agent=body.agent, space=body.name)
    with state_of(request).agent(body.agent) as runtime:
        runtime.create_space(body.name, members=body.members)
        return {"name": body.name, "members": body.members}


@router.put("/spaces/{space}/memories/{key:path}")
def share(request: Request, space: str, key: str, body: ShareBody) -> Json:
    """Write a shared value; with ``expected_version`` a compare-and-set (409 on conflict)."""
    allow(request, agent=body.agent, space=space)
    with state_of(request).agent(body.agent) as runtime:
        done = runtime.share(
            key,
            body.value,
            space=space,
            expected_version=body.expected_version,
            tags=body.tags,
            ttl=body.ttl_seconds,
        )
        return dict(jsonable(done))


@router.get("/spaces/{space}/memories/{key:path}/history")
def shared_history(
    request: Request, space: str, key: str, agent: str, limit: int | None = Query(None, ge=1)
) -> list[Json]:
    allow(request, agent=agent, space=space)
    with state_of(request).agent(agent) as runtime:
        return [jsonable(v) for v in runtime.shared_history(key, space=space, limit=limit)]


@router.get("/spaces/{space}/memories/{key:path}")
def read_shared(request: Request, space: str, key: str, agent: str) -> Json:
    """A shared value as ``agent`` reads it (the version it saw is remembered)."""
    allow(request, agent=agent, space=space)
    with state_of(request).agent(agent) as runtime:
        return dict(jsonable(runtime.read_shared(key, space=space)))


@router.get("/spaces/{space}/memories")
def shared_items(
    request: Request, space: str, agent: str, prefix: str = "", limit: int = Query(50, ge=1)
) -> list[Json]:
    allow(request, agent=agent, space=space)
    with state_of(request).agent(agent) as runtime:
        return [jsonable(v) for v in runtime.shared_items(space=space, prefix=prefix, limit=limit)]


@router.post("/spaces/{space}/search")
def search_shared(request: Request, space: str, body: SharedSearchBody) -> list[Json]:
    """A space's current values whose words match ``query``, best first, with authors."""
    allow(request, agent=body.agent, space=space)
    with state_of(request).agent(body.agent) as runtime:
        found = runtime.search_shared(
            body.query, space=space, prefix=body.prefix, tags=body.tags, limit=body.limit
        )
        return [jsonable(v) for v in found]


@router.post("/spaces/{space}/similar")
def recall_similar_shared(request: Request, space: str, body: SharedSearchBody) -> Json:
    """A space's values by meaning (lexical, or hybrid with an embedder)."""
    allow(request, agent=body.agent, space=space)
    with state_of(request).agent(body.agent) as runtime:
        found = runtime.recall_similar_shared(
            body.query, space=space, limit=body.limit, prefix=body.prefix, tags=body.tags
        )
        return {
            "mode": found.mode,
            "note": found.note,
            "matches": [
                {"key": m.key, "value": jsonable(m.value), "score": m.score, "why": jsonable(m.why)}
                for m in found.matches
            ],
        }


@router.get("/spaces/{space}/conflicts")
def conflicts(
    request: Request, space: str, agent: str, include_resolved: bool = False
) -> list[Json]:
    allow(request, agent=agent, space=space)
    with state_of(request).agent(agent) as runtime:
        found = runtime.shared_conflicts(space=space, include_resolved=include_resolved)
        return [jsonable(c) for c in found]


@router.post("/spaces/{space}/conflicts/{conflict_id}/resolve")
def resolve(request: Request, space: str, conflict_id: int, body: ResolveBody) -> Json:
    """Resolve a conflict: ``keep`` ``"mine"``, ``"theirs"`` or a new value."""
    allow(request, agent=body.agent, space=space)
    with state_of(request).agent(body.agent) as runtime:
        done = runtime.resolve_conflict(conflict_id, keep=body.keep)
        return {"conflict_id": conflict_id, "written": jsonable(done)}


@router.post("/agents/{agent}/broadcasts", tags=["messages"])
def broadcast(request: Request, agent: str, body: BroadcastBody) -> Json:
    allow(request, agent=agent, space=body.space)
    with state_of(request).agent(agent) as runtime:
        sent = runtime.broadcast(body.body, space=body.space, message_type=body.message_type)
        return dict(jsonable(sent))


@router.get("/agents/{agent}/broadcasts", tags=["messages"])
def read_broadcasts(
    request: Request,
    agent: str,
    space: str = "global",
    since: float | None = None,
    limit: int = Query(50, ge=1),
) -> list[Json]:
    allow(request, agent=agent, space=space)
    with state_of(request).agent(agent) as runtime:
        found = runtime.read_broadcasts(space=space, since=since, limit=limit)
        return [jsonable(m) for m in found]
