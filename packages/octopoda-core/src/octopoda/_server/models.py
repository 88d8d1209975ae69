"""Request and response bodies of the JSON API (pydantic)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

__all__ = [
    "PROBLEMS",
    "BatchBody",
    "BroadcastBody",
    "DecisionBody",
    "EraseBody",
    "GoalBody",
    "ImportBody",
    "MessageBody",
    "Page",
    "Problem",
    "ProgressBody",
    "PutBody",
    "ResolveBody",
    "ResumeBody",
    "SearchBody",
    "ShareBody",
    "SnapshotBody",
    "SpaceBody",
]


class Problem(BaseModel):
    """An error: ``type`` is the OctopodaError class (or the guard's refusal), ``detail``
    its message, ``attributes`` its fields (``VersionConflict``: key, expected, actual)."""

    type: str
    title: str
    status: int
    detail: str
    attributes: dict[str, Any] | None = None


_PROBLEM = {"schema": {"$ref": "#/components/schemas/Problem"}}
PROBLEMS: dict[int | str, dict[str, Any]] = {
    code: {"model": Problem, "description": why, "content": {"application/problem+json": _PROBLEM}}
    for code, why in (
        (400, "InvalidInput, ConfigError"),
        (401, "no token, or an unknown one"),
        (403, "AccessDenied: a read-only or limited token, or not a space member"),
        (404, "NotFound"),
        (409, "VersionConflict, LoopDetected, AuditChainBroken"),
        (413, "the body is over the limit"),
        (421, "the Host header does not name this server"),
        (423, "AgentPaused"),
        (500, "an unexpected failure (logged)"),
        (503, "StorageError"),
    )
}
"""The problem responses every route may give (for the OpenAPI document)."""


class Page(BaseModel):
    """A page of a list; pass ``next_cursor`` as ``cursor`` for the next (null: the last)."""

    items: list[Any]
    next_cursor: int | None = None


_KIND = "what the memory is, such as fact, preference or summary (1 to 64 printable characters)"
_KINDS = "only memories whose kind is one of these"


class PutBody(BaseModel):
    value: Any = Field(description="any JSON value")
    tags: list[str] | None = None
    ttl_seconds: float | None = Field(default=None, gt=0)
    kind: str | None = Field(default=None, description=_KIND)


class BatchBody(BaseModel):
    items: dict[str, Any]
    tags: list[str] | None = None
    ttl_seconds: float | None = Field(default=None, gt=0)
    kind: str | None = Field(default=None, description=_KIND + "; every item's")


class EraseBody(BaseModel):
    reason: str | None = None


class SearchBody(BaseModel):
    query: str
    prefix: str = ""
    tags: list[str] | None = None
    limit: int = Field(default=10, ge=1, le=1000)
    kinds: list[str] | None = Field(default=None, description=_KINDS)


class DecisionBody(BaseModel):
    decision: str
    reasoning: str | None = None
    context: dict[str, Any] | None = None
    run_id: str | None = None


class SnapshotBody(BaseModel):
    name: str | None = None
    replace: bool = False


class ImportBody(BaseModel):
    bundle: dict[str, Any]
    on_existing: str = Field(default="append", pattern="^(append|skip|error)$")


class ResumeBody(BaseModel):
    run_id: str | None = None


class SpaceBody(BaseModel):
    name: str
    agent: str = Field(description="the agent that creates it")
    members: list[str] | None = None


class ShareBody(BaseModel):
    agent: str = Field(description="the writing agent (the author)")
    value: Any
    expected_version: int | None = Field(default=None, ge=0)
    tags: list[str] | None = None
    ttl_seconds: float | None = Field(default=None, gt=0)


class SharedSearchBody(BaseModel):
    agent: str = Field(description="the searching agent (a member of the space)")
    query: str
    prefix: str = ""
    tags: list[str] | None = None
    limit: int = Field(default=10, ge=1, le=1000)


class ResolveBody(BaseModel):
    agent: str
    keep: Any = "mine"


class MessageBody(BaseModel):
    to: str
    body: Any
    message_type: str = "info"
    run_id: str | None = None


class BroadcastBody(BaseModel):
    body: Any
    space: str = "global"
    message_type: str = "info"


class GoalBody(BaseModel):
    goal: str
    milestones: list[str] | None = None


class ProgressBody(BaseModel):
    milestone_index: int | None = None
    progress: float | None = Field(default=None, ge=0, le=1)
    note: str | None = None
