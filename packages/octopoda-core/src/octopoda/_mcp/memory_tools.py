"""Tools on an agent's own memory: remember, recall, search, history, forget, snapshots."""

import time
from typing import Annotated, Any

from pydantic import Field

from .._runtime.runtime import AgentRuntime
from .convert import plain
from .registry import Cursor, Limit, Page, listing, receipt, tool

Key = Annotated[
    str, Field(description="the memory key, exact and case-sensitive, e.g. 'user.name'")
]
Tags = Annotated[list[str] | None, Field(description="labels to filter by later")]
Prefix = Annotated[str, Field(description="only keys starting with this (exact, case-sensitive)")]
Kind = Annotated[
    str | None,
    Field(description="what it is: fact, preference, summary, ... (a short label)"),
]
Kinds = Annotated[
    list[str] | None, Field(description="only memories of these kinds, e.g. ['preference']")
]


def _item(item: Any) -> dict[str, Any]:
    return dict(plain(item))


@tool(title="Remember a value")
def remember(
    rt: AgentRuntime,
    key: Key,
    value: Annotated[Any, Field(description="any JSON value: text, number, object, list")],
    tags: Tags = None,
    ttl_seconds: Annotated[
        float | None, Field(description="forget automatically after this many seconds", gt=0)
    ] = None,
    kind: Kind = None,
) -> dict[str, Any]:
    """Store a fact, preference or result under a key so it survives this conversation.
    Call it whenever the user tells you something worth keeping or you finish a step
    whose result you will need later; say what it is with kind (fact, preference,
    summary, ...) to find it by kind later. Each write is a new version (nothing is
    overwritten) and is durable when this returns: the receipt's version, seq and hash
    are what later reads and the audit trail show."""
    rec = rt.remember(key, value, tags=tags, ttl=ttl_seconds, kind=kind)
    extra = {} if rec.kind is None else {"kind": rec.kind}
    return receipt(
        rt, rec.seq, key=rec.key, version=rec.version, created_at=rec.created_at, **extra
    )


@tool(read_only=True, idempotent=True, title="Recall a value")
def recall(
    rt: AgentRuntime,
    key: Key,
    version: Annotated[
        int | None, Field(description="an older version; omit for current", ge=1)
    ] = None,
) -> dict[str, Any]:
    """Read the current value of one key (or a given version). Call it when you know the
    exact key; use octopoda_search or octopoda_recall_similar when you do not.
    found=false means the key was never written, forgotten or expired."""
    return _item(rt.recall(key, version=version))


@tool(read_only=True, idempotent=True, title="List or search memories", output=Page)
def search(
    rt: AgentRuntime,
    query: Annotated[
        str | None, Field(description="words to look for in keys and values; omit to list")
    ] = None,
    prefix: Prefix = "",
    tags: Tags = None,
    limit: Limit = None,
    cursor: Cursor = None,
    kinds: Kinds = None,
) -> dict[str, Any]:
    """List this agent's memories (by key) or, with query, find them by words (best
    first; case, accents and plural endings do not matter); kinds keeps only memories of
    those kinds. Paginated: pass next_cursor for the next page. Long values are clipped
    (truncated=true): recall the key for all."""
    return listing(
        "octopoda_search",
        lambda off, n: rt.search(prefix, query=query, tags=tags, limit=n, offset=off, kinds=kinds),
        limit,
        cursor,
    )


@tool(read_only=True, idempotent=True, title="Recall by meaning")
def recall_similar(
    rt: AgentRuntime,
    query: Annotated[str, Field(description="a question or description of what you need")],
    limit: Annotated[int, Field(description="how many matches, 1-50", ge=1, le=50)] = 5,
    min_score: Annotated[
        float | None, Field(description="leave out weaker matches", ge=0, le=1)
    ] = None,
    kinds: Kinds = None,
) -> dict[str, Any]:
    """Find the memories most relevant to a question when you do not know their keys,
    best first, each with a score in [0, 1] and the words that matched. Without an
    embedding model (the default) the ranking is lexical (BM25); mode and note say so."""
    found = rt.recall_similar(query, limit=limit, min_score=min_score, kinds=kinds)
    matches = [
        {
            **_item(m.item),
            "score": m.score,
            "matched_terms": list(m.why.terms),
            "method": m.why.method,
        }
        for m in found
    ]
    return {"query": query, "mode": found.mode, "note": found.note, "matches": matches}


@tool(read_only=True, idempotent=True, title="Version history of a key", output=Page)
def recall_history(
    rt: AgentRuntime, key: Key, limit: Limit = None, cursor: Cursor = None
) -> dict[str, Any]:
    """Every version of one key, newest first, with time, seq and whether it was a
    forget (tombstone). Call it to see how a fact changed or to find an older value."""

    def fetch(off: int, n: int) -> list[Any]:
        return rt.recall_history(key, limit=off + n)[off:]

    return listing("octopoda_recall_history", fetch, limit, cursor, key=key)


@tool(read_only=True, idempotent=True, title="Memories about an entity", output=Page)
def related(
    rt: AgentRuntime,
    entity: Annotated[str, Field(description="a name: a person, product, project, ...")],
    limit: Limit = None,
    cursor: Cursor = None,
) -> dict[str, Any]:
    """Memories that mention an entity (a person, product, project) in their key or
    text, best first. It is a word match, not a knowledge graph: no LLM extracts
    relations, so ask for the name as it was written. Paginated."""
    return listing(
        "octopoda_related",
        lambda off, n: rt.search(query=entity, limit=n, offset=off),
        limit,
        cursor,
        entity=entity,
    )


@tool(destructive=True, title="Forget a key")
def forget(rt: AgentRuntime, key: Key) -> dict[str, Any]:
    """Forget one key: recall then says not found, but its history stays (a tombstone
    version, audited). Call it when the user asks you to forget something or a fact
    became wrong. forgotten=false when the key had no current value."""
    rec = rt.forget(key)
    if rec is None:
        return {"agent_id": rt.agent_id, "key": key, "forgotten": False}
    out = receipt(rt, rec.seq, key=rec.key, version=rec.version, created_at=rec.created_at)
    return {**out, "forgotten": True}


@tool(destructive=True, title="Forget stale memories")
def forget_stale(
    rt: AgentRuntime,
    max_age_days: Annotated[float, Field(description="forget values older than this", gt=0)] = 30,
) -> dict[str, Any]:
    """Forget every key whose current value is older than max_age_days, in one audited
    event (history stays). Call it for housekeeping when memory_health reports many
    stale keys."""
    recs = rt.forget_stale(max_age_days * 86400.0)
    out: dict[str, Any] = {"agent_id": rt.agent_id, "forgotten": [r.key for r in recs]}
    if recs:
        out.update(receipt(rt, recs[0].seq))
    return out


@tool(destructive=True, title="Erase a key for good")
def erase(
    rt: AgentRuntime,
    key: Key,
    reason: Annotated[str | None, Field(description="why, kept in the audit trail")] = None,
) -> dict[str, Any]:
    """Remove every stored value of one key permanently (a deletion request). Unlike
    octopoda_forget nothing can bring it back; the audit trail keeps only that it was
    erased. Call it only when the user explicitly asks for permanent deletion."""
    done = rt.erase(key, reason=reason)
    if done is None:
        return {"agent_id": rt.agent_id, "key": key, "erased": False}
    return {**receipt(rt, done.seq, key=key, versions=list(done.versions)), "erased": True}


@tool(read_only=True, idempotent=True, title="Memory health")
def memory_health(
    rt: AgentRuntime,
    stale_after_days: Annotated[float, Field(description="a value older is stale", gt=0)] = 30,
) -> dict[str, Any]:
    """Counts and shape of this agent's memory: keys, forgotten and expired keys,
    versions, stale share, size and the busiest keys. Call it before cleaning up."""
    health = rt.memory_health(stale_after_seconds=stale_after_days * 86400.0)
    return {"agent_id": rt.agent_id, **plain(health)}


@tool(destructive=True, title="Consolidate duplicates")
def consolidate(
    rt: AgentRuntime,
    dry_run: Annotated[bool, Field(description="only report (default); false merges")] = True,
    similarity_threshold: Annotated[
        float, Field(description="how alike two values must be, 0 to 1", ge=0, le=1)
    ] = 0.9,
) -> dict[str, Any]:
    """Find near-duplicate memories (the same thing under different keys: by meaning with
    an embedder, else by shared words; equal values always) and, with dry_run=false, merge
    each group into its newest key in one audited event: that key gets a new version with
    the group's tags, the others a tombstone (history stays). Call it with the default
    dry run first and show the groups."""
    out = rt.consolidate(similarity_threshold=similarity_threshold, dry_run=dry_run)
    seq = out.pop("seq")
    report = {"agent_id": rt.agent_id, **plain(out)}
    if seq is not None:  # (a dry run has no event)
        report.update(receipt(rt, seq))
    return report


@tool(read_only=True, idempotent=True, title="Search with filters", output=Page)
def search_filtered(
    rt: AgentRuntime,
    query: Annotated[str | None, Field(description="words to look for; omit to list")] = None,
    tags: Tags = None,
    min_age_seconds: Annotated[
        float | None, Field(description="written at least this long ago", ge=0)
    ] = None,
    max_age_seconds: Annotated[
        float | None, Field(description="written at most this long ago", ge=0)
    ] = None,
    prefix: Prefix = "",
    limit: Limit = None,
    cursor: Cursor = None,
    kinds: Kinds = None,
) -> dict[str, Any]:
    """Like octopoda_search, also filtered by the age of each key's current value (in
    seconds). Call it for "what did I learn in the last hour" or "old notes tagged x"."""
    now = time.time()

    def fits(created_at: float) -> bool:
        age = now - created_at
        if min_age_seconds is not None and age < min_age_seconds:
            return False
        return max_age_seconds is None or age <= max_age_seconds

    def fetch(off: int, n: int) -> list[Any]:
        found = rt.search(prefix, query=query, tags=tags, limit=None, kinds=kinds)
        return [i for i in found if fits(i.created_at)][off : off + n]

    return listing("octopoda_search_filtered", fetch, limit, cursor)


@tool(title="Snapshot memory")
def snapshot(
    rt: AgentRuntime,
    name: Annotated[str | None, Field(description="a name; omit for a timestamped one")] = None,
    replace: Annotated[bool, Field(description="move an existing snapshot of that name")] = False,
) -> dict[str, Any]:
    """Name the current state of this agent's memory so you can return to it with
    octopoda_restore. Call it before a risky change. Nothing is copied: a snapshot is a
    point in the audited history."""
    snap = rt.snapshot(name, replace=replace)
    return receipt(rt, snap.seq, name=snap.name, keys=snap.keys, created_at=snap.created_at)


@tool(read_only=True, idempotent=True, title="List snapshots", output=Page)
def list_snapshots(rt: AgentRuntime, limit: Limit = None, cursor: Cursor = None) -> dict[str, Any]:
    """This agent's snapshots, oldest first, with the seq each marks. Call it to find
    the name to pass to octopoda_restore. Paginated."""
    return listing(
        "octopoda_list_snapshots",
        lambda off, n: rt.snapshots()[off : off + n],
        limit,
        cursor,
        clip=None,
    )


@tool(destructive=True, title="Restore a snapshot")
def restore(
    rt: AgentRuntime, name: Annotated[str, Field(description="the snapshot's name")]
) -> dict[str, Any]:
    """Bring memory back to a snapshot: changed keys get their old values back as new
    versions, keys created since are forgotten. History stays whole (one audited event).
    Call it only when asked to undo changes since the snapshot."""
    done = rt.restore(name)
    return receipt(
        rt,
        done.seq,
        snapshot=done.snapshot,
        snapshot_seq=done.snapshot_seq,
        restored=list(done.restored),
        removed=list(done.removed),
    )
