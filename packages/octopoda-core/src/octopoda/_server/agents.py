"""The runtime verbs of one agent: ``/v1/agents/{agent}/...``."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request

from .._errors import NotFound
from .models import (
    BatchBody,
    DecisionBody,
    EraseBody,
    GoalBody,
    ImportBody,
    MessageBody,
    Page,
    ProgressBody,
    PutBody,
    ResumeBody,
    SearchBody,
    SnapshotBody,
)
from .state import allow, jsonable, state_of, token_of

__all__ = ["router"]

router = APIRouter(prefix="/v1")
Json = dict[str, Any]
MAX_PAGE = 1000
Limit = Query(100, ge=1, le=MAX_PAGE)
Cursor = Query(0, ge=0, description="next_cursor of the previous page (0: the first)")
Kinds = Query(None, description="only memories of these kinds (repeat it: kind=fact&kind=note)")


def _page(items: list[Any], limit: int, cursor_of: Any) -> Json:
    """A page of at most ``limit`` items from ``items`` (fetched with one extra)."""
    more = len(items) > limit
    items = items[:limit]
    return {
        "items": [jsonable(i) for i in items],
        "next_cursor": cursor_of(items[-1]) if more and items else None,
    }


@router.get("/agents", response_model=Page, tags=["agents"])
def list_agents(request: Request, limit: int = Limit, cursor: int = Cursor) -> Json:
    """Every agent with its status, last activity and event count."""
    token = token_of(request)
    agents = [
        a for a in state_of(request).client.agents() if token is None or token.may_agent(a.id)
    ]
    page = agents[cursor : cursor + limit + 1]
    return _page(page, limit, lambda _: cursor + limit)


@router.get("/agents/{agent}", tags=["agents"])
def agent_status(request: Request, agent: str) -> Json:
    """An agent's status, paused runs and loop status."""
    allow(request, agent=agent)
    state = state_of(request)
    with state.agent(agent) as runtime:
        row = state.store.agent(runtime.agent_id)
        if row is None:
            raise NotFound(f"no agent {agent!r} in this store; write a memory to create it")
        return {
            "agent": jsonable(row),
            "paused": runtime.paused,
            "runs": jsonable(runtime.runs(status="paused")),
            "loops": jsonable(runtime.loop_status()),
        }


@router.get("/agents/{agent}/stats", tags=["agents"])
def stats(request: Request, agent: str) -> Json:
    allow(request, agent=agent)
    with state_of(request).agent(agent) as runtime:
        return dict(jsonable(runtime.stats()))


# -- memories ----------------------------------------------------------------------------


@router.put("/agents/{agent}/memories/{key:path}", tags=["memories"])
def put_memory(request: Request, agent: str, key: str, body: PutBody) -> Json:
    """Write a new version of ``key`` (remember)."""
    allow(request, agent=agent)
    with state_of(request).agent(agent) as runtime:
        done = runtime.remember(
            key, body.value, tags=body.tags, ttl=body.ttl_seconds, kind=body.kind
        )
        return dict(jsonable(done))


@router.post("/agents/{agent}/memories", tags=["memories"])
def remember_many(request: Request, agent: str, body: BatchBody) -> list[Json]:
    """Write many keys in one commit (remember_many)."""
    allow(request, agent=agent)
    with state_of(request).agent(agent) as runtime:
        done = runtime.remember_many(
            body.items, tags=body.tags, ttl=body.ttl_seconds, kind=body.kind
        )
        return [jsonable(r) for r in done]


@router.get("/agents/{agent}/memories", response_model=Page, tags=["memories"])
def list_memories(
    request: Request,
    agent: str,
    prefix: str = "",
    as_of: int | None = Query(None, ge=0, description="the state as of this event seq"),
    limit: int = Limit,
    cursor: int = Cursor,
    kind: list[str] | None = Kinds,
) -> Json:
    """Current values, by key."""
    allow(request, agent=agent)
    with state_of(request).agent(agent) as runtime:
        items = runtime.search(prefix, limit=limit + 1, offset=cursor, as_of=as_of, kinds=kind)
        return _page(items, limit, lambda _: cursor + limit)


@router.get("/agents/{agent}/memories/{key:path}/history", tags=["memories"])
def memory_history(
    request: Request, agent: str, key: str, limit: int | None = Query(None, ge=1)
) -> list[Json]:
    """Every version of ``key``, newest first."""
    allow(request, agent=agent)
    with state_of(request).agent(agent) as runtime:
        return [jsonable(v) for v in runtime.recall_history(key, limit=limit)]


@router.post("/agents/{agent}/memories/{key:path}/erase", tags=["memories"])
def erase(request: Request, agent: str, key: str, body: EraseBody) -> Json:
    """Remove the content of every version of ``key`` (audited)."""
    allow(request, agent=agent)
    with state_of(request).agent(agent) as runtime:
        done = runtime.erase(key, reason=body.reason)
        if done is None:
            raise NotFound(f"{key!r} of agent {agent!r} holds no value to erase")
        return dict(jsonable(done))


@router.get("/agents/{agent}/memories/{key:path}", tags=["memories"])
def get_memory(
    request: Request,
    agent: str,
    key: str,
    version: int | None = Query(None, ge=1),
    as_of: int | None = Query(None, ge=0),
) -> Json:
    """The current value of ``key`` (or ``version``, or as of event ``as_of``)."""
    allow(request, agent=agent)
    with state_of(request).agent(agent) as runtime:
        found = runtime.as_of(as_of).recall(key) if as_of is not None else None
        if found is None:
            found = runtime.recall(key, version=version)
        if not found:
            raise NotFound(f"agent {agent!r} has no value for {key!r}")
        return dict(jsonable(found))


@router.delete("/agents/{agent}/memories/{key:path}", tags=["memories"])
def forget(request: Request, agent: str, key: str) -> Json:
    """Forget ``key`` (a tombstone version)."""
    allow(request, agent=agent)
    with state_of(request).agent(agent) as runtime:
        done = runtime.forget(key)
        if done is None:
            raise NotFound(f"agent {agent!r} has no value for {key!r} to forget")
        return dict(jsonable(done))


@router.post("/agents/{agent}/search", tags=["memories"])
def search(request: Request, agent: str, body: SearchBody) -> list[Json]:
    """Current values whose words match ``query``, best first."""
    allow(request, agent=agent)
    with state_of(request).agent(agent) as runtime:
        found = runtime.search(
            body.prefix, query=body.query, tags=body.tags, limit=body.limit, kinds=body.kinds
        )
        return [jsonable(i) for i in found]


@router.post("/agents/{agent}/similar", tags=["memories"])
def recall_similar(request: Request, agent: str, body: SearchBody) -> Json:
    """Memories by meaning (lexical, or hybrid with an embedder)."""
    allow(request, agent=agent)
    with state_of(request).agent(agent) as runtime:
        found = runtime.recall_similar(
            body.query, limit=body.limit, prefix=body.prefix, tags=body.tags, kinds=body.kinds
        )
        return {
            "mode": found.mode,
            "note": found.note,
            "matches": [
                {"key": m.key, "value": jsonable(m.value), "score": m.score, "why": jsonable(m.why)}
                for m in found.matches
            ],
        }


# -- decisions, timeline, views ------------------------------------------------------------


@router.post("/agents/{agent}/decisions", tags=["decisions"])
def log_decision(request: Request, agent: str, body: DecisionBody) -> Json:
    allow(request, agent=agent)
    with state_of(request).agent(agent) as runtime:
        done = runtime.log_decision(
            body.decision, reasoning=body.reasoning, context=body.context, run_id=body.run_id
        )
        return dict(jsonable(done))


@router.get("/agents/{agent}/decisions", tags=["decisions"])
def decisions(request: Request, agent: str, limit: int | None = Query(None, ge=1)) -> list[Json]:
    allow(request, agent=agent)
    with state_of(request).agent(agent) as runtime:
        return [jsonable(d) for d in runtime.decisions(limit=limit)]


@router.get("/agents/{agent}/timeline", response_model=Page, tags=["decisions"])
def timeline(
    request: Request,
    agent: str,
    kind: Annotated[list[str] | None, Query(description="only events of these kinds")] = None,
    run_id: str | None = None,
    limit: int = Limit,
    cursor: int = Cursor,
) -> Json:
    """The agent's events in seq order; ``cursor`` is the last seq seen."""
    allow(request, agent=agent)
    with state_of(request).agent(agent) as runtime:
        events = runtime.timeline(kinds=kind, run_id=run_id, after_seq=cursor, limit=limit + 1)
        return _page(events, limit, lambda e: e.seq)


@router.get("/agents/{agent}/as-of/{seq}", tags=["decisions"])
def as_of(request: Request, agent: str, seq: int) -> Json:
    """The agent's memory as it was right after event ``seq``."""
    allow(request, agent=agent)
    with state_of(request).agent(agent) as runtime:
        return {"seq": seq, "memory": jsonable(runtime.as_of(seq).to_dict())}


@router.get("/agents/{agent}/diff", tags=["decisions"])
def diff(request: Request, agent: str, a: int, b: int | None = None) -> Json:
    """What changed in memory between events ``a`` and ``b`` (default: now)."""
    allow(request, agent=agent)
    with state_of(request).agent(agent) as runtime:
        return dict(jsonable(runtime.diff(a, b)))


# -- snapshots, export --------------------------------------------------------------------


@router.post("/agents/{agent}/snapshots", tags=["snapshots"])
def snapshot(request: Request, agent: str, body: SnapshotBody) -> Json:
    allow(request, agent=agent)
    with state_of(request).agent(agent) as runtime:
        return dict(jsonable(runtime.snapshot(body.name, replace=body.replace)))


@router.get("/agents/{agent}/snapshots", tags=["snapshots"])
def snapshots(request: Request, agent: str) -> list[Json]:
    allow(request, agent=agent)
    with state_of(request).agent(agent) as runtime:
        return [jsonable(s) for s in runtime.snapshots()]


@router.post("/agents/{agent}/snapshots/{name}/restore", tags=["snapshots"])
def restore(request: Request, agent: str, name: str) -> Json:
    allow(request, agent=agent)
    with state_of(request).agent(agent) as runtime:
        return dict(jsonable(runtime.restore(name)))


@router.get("/agents/{agent}/export", tags=["snapshots"])
def export(request: Request, agent: str) -> Json:
    allow(request, agent=agent)
    with state_of(request).agent(agent) as runtime:
        return dict(jsonable(runtime.export_memories()))


@router.post("/agents/{agent}/import", tags=["snapshots"])
def import_bundle(request: Request, agent: str, body: ImportBody) -> Json:
    allow(request, agent=agent)
    with state_of(request).agent(agent) as runtime:
        how: Any = body.on_existing
        return dict(jsonable(runtime.import_memories(body.bundle, on_existing=how)))


# -- audit, loops ---------------------------------------------------------------------------


@router.get("/agents/{agent}/audit/verify", tags=["audit"])
def audit_verify(request: Request, agent: str) -> Json:
    """Recompute the agent's hash chain; ``ok`` false names the first broken seq."""
    allow(request, agent=agent)
    with state_of(request).agent(agent) as runtime:
        return dict(jsonable(runtime.audit.verify()))


@router.get("/agents/{agent}/audit/head", tags=["audit"])
def audit_head(request: Request, agent: str) -> Json:
    allow(request, agent=agent)
    with state_of(request).agent(agent) as runtime:
        return dict(jsonable(runtime.audit.head()))


@router.get("/agents/{agent}/audit/export", tags=["audit"])
def audit_export(request: Request, agent: str) -> Json:
    """The verifiable bundle of the agent's chain (``octopoda audit verify-bundle FILE``)."""
    allow(request, agent=agent)
    with state_of(request).agent(agent) as runtime:
        return dict(jsonable(runtime.audit.export()))


@router.get("/agents/{agent}/audit/signed-heads", tags=["audit"])
def signed_heads(request: Request, agent: str) -> list[Json]:
    """The agent's Ed25519-signed chain heads, by seq."""
    allow(request, agent=agent)
    with state_of(request).agent(agent) as runtime:
        return [jsonable(h) for h in runtime.audit.signed_heads()]


@router.get("/agents/{agent}/loops", tags=["loops"])
def loop_status(request: Request, agent: str, run_id: str | None = None) -> Json:
    allow(request, agent=agent)
    with state_of(request).agent(agent) as runtime:
        return dict(jsonable(runtime.loop_status(run_id)))


@router.get("/agents/{agent}/loops/history", tags=["loops"])
def loop_history(
    request: Request, agent: str, run_id: str | None = None, limit: int | None = Query(None, ge=1)
) -> list[Json]:
    allow(request, agent=agent)
    with state_of(request).agent(agent) as runtime:
        return [jsonable(s) for s in runtime.loop_history(run_id=run_id, limit=limit)]


@router.post("/agents/{agent}/loops/resume", tags=["loops"])
def resume(request: Request, agent: str, body: ResumeBody) -> Json:
    """Lift a pause of the agent (or of its run ``run_id``)."""
    allow(request, agent=agent)
    with state_of(request).agent(agent) as runtime:
        return {"resumed": runtime.resume(body.run_id)}


# -- messages, goals -----------------------------------------------------------------------


@router.post("/agents/{agent}/messages", tags=["messages"])
def send_message(request: Request, agent: str, body: MessageBody) -> Json:
    allow(request, agent=agent)
    with state_of(request).agent(agent) as runtime:
        sent = runtime.send_message(body.to, body.body, body.message_type, run_id=body.run_id)
        return dict(jsonable(sent))


@router.get("/agents/{agent}/messages", response_model=Page, tags=["messages"])
def read_messages(
    request: Request,
    agent: str,
    unread_only: bool = False,
    limit: int = Limit,
    cursor: int = Query(0, ge=0, description="the last message id seen"),
) -> Json:
    allow(request, agent=agent)
    with state_of(request).agent(agent) as runtime:
        found = runtime.read_messages(unread_only=unread_only, limit=limit + 1, after_id=cursor)
        return _page(found, limit, lambda m: m.id)


@router.post("/agents/{agent}/messages/{message_id}/read", tags=["messages"])
def mark_read(request: Request, agent: str, message_id: int) -> Json:
    allow(request, agent=agent)
    with state_of(request).agent(agent) as runtime:
        runtime.mark_read(message_id)
        return {"message_id": message_id, "read": True}


@router.put("/agents/{agent}/goal", tags=["goals"])
def set_goal(request: Request, agent: str, body: GoalBody) -> Json:
    allow(request, agent=agent)
    with state_of(request).agent(agent) as runtime:
        return dict(jsonable(runtime.set_goal(body.goal, body.milestones)))


@router.get("/agents/{agent}/goal", tags=["goals"])
def get_goal(request: Request, agent: str) -> Json:
    allow(request, agent=agent)
    with state_of(request).agent(agent) as runtime:
        goal = runtime.get_goal()
        if goal is None:
            raise NotFound(f"agent {agent!r} has no goal; PUT one first")
        return dict(jsonable(goal))


@router.post("/agents/{agent}/goal/progress", tags=["goals"])
def update_progress(request: Request, agent: str, body: ProgressBody) -> Json:
    allow(request, agent=agent)
    with state_of(request).agent(agent) as runtime:
        done = runtime.update_progress(
            milestone_index=body.milestone_index, progress=body.progress, note=body.note
        )
        return dict(jsonable(done))
