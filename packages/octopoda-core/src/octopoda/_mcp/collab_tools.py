"""Tools between agents: shared spaces and their conflicts, messages, broadcasts, goals."""

from typing import Annotated, Any

from pydantic import Field

from .._runtime.runtime import AgentRuntime
from .convert import clipped, decode_cursor, page, page_size, plain
from .registry import Cursor, Limit, Page, event_after, listing, receipt, tool

Space = Annotated[str, Field(description="the shared space (default 'global')")]
SharedKey = Annotated[str, Field(description="the key in the space, exact and case-sensitive")]


@tool(title="Share a value")
def share(
    rt: AgentRuntime,
    key: SharedKey,
    value: Annotated[Any, Field(description="any JSON value")],
    space: Space = "global",
    expected_version: Annotated[
        int | None,
        Field(
            description="write only if the key is still at this version (0: must not exist)", ge=0
        ),
    ] = None,
) -> dict[str, Any]:
    """Write a value to a shared space that other agents read, as a new version
    authored by this agent. A write that did not see another agent's newer version is
    kept and recorded as a conflict (conflict_id set): nothing is lost silently. Use
    expected_version to refuse stale writes instead."""
    v = rt.share(key, value, space=space, expected_version=expected_version)
    return receipt(
        rt,
        v.seq,
        space=v.space,
        key=v.key,
        version=v.version,
        author=v.author,
        created_at=v.created_at,
        conflict_id=v.conflict_id,
    )


@tool(read_only=True, idempotent=True, title="Read a shared value")
def read_shared(rt: AgentRuntime, key: SharedKey, space: Space = "global") -> dict[str, Any]:
    """Read the current value of a shared key and which agent wrote it. Call it before
    you update a shared value, so your write counts as having seen it."""
    return dict(plain(rt.read_shared(key, space=space)))


@tool(read_only=True, idempotent=True, title="List a shared space", output=Page)
def list_shared(
    rt: AgentRuntime,
    space: Space = "global",
    prefix: Annotated[str, Field(description="only keys starting with this")] = "",
    limit: Limit = None,
    cursor: Cursor = None,
    query: Annotated[
        str | None, Field(description="words to look for (best match first); omit to list")
    ] = None,
) -> dict[str, Any]:
    """The current values of a shared space's keys, by key, with their authors; with
    query, only those holding its words, best match first. Call it to see or search what
    other agents have shared. Paginated: pass next_cursor."""

    def fetch(off: int, n: int) -> list[Any]:
        if query is not None:
            return rt.search_shared(query, space=space, prefix=prefix, limit=n, offset=off)
        return rt.shared_items(space=space, prefix=prefix, limit=off + n)[off:]

    return listing("octopoda_list_shared", fetch, limit, cursor, space=space)


@tool(read_only=True, idempotent=True, title="History of a shared key", output=Page)
def shared_history(
    rt: AgentRuntime,
    key: SharedKey,
    space: Space = "global",
    limit: Limit = None,
    cursor: Cursor = None,
) -> dict[str, Any]:
    """Every version of a shared key with its author, newest first. Call it to find out
    who changed a shared value and when. Paginated: pass next_cursor."""

    def fetch(off: int, n: int) -> list[Any]:
        return rt.shared_history(key, space=space, limit=off + n)[off:]

    return listing("octopoda_shared_history", fetch, limit, cursor, space=space, key=key)


@tool(read_only=True, idempotent=True, title="Shared write conflicts", output=Page)
def shared_conflicts(
    rt: AgentRuntime,
    space: Space = "global",
    include_resolved: Annotated[bool, Field(description="also list decided ones")] = False,
    limit: Limit = None,
    cursor: Cursor = None,
) -> dict[str, Any]:
    """Conflicting writes in a shared space awaiting a decision: two agents wrote the
    same key without seeing each other's write. Each shows both values; decide one with
    octopoda_resolve_conflict."""

    def fetch(off: int, n: int) -> list[Any]:
        found = rt.shared_conflicts(space=space, include_resolved=include_resolved)
        return [clipped(clipped(plain(c), "mine_value"), "theirs_value") for c in found][
            off : off + n
        ]

    return listing("octopoda_shared_conflicts", fetch, limit, cursor, clip=None, space=space)


@tool(title="Resolve a shared conflict")
def resolve_conflict(
    rt: AgentRuntime,
    conflict_id: Annotated[int, Field(description="the id from octopoda_shared_conflicts")],
    keep: Annotated[
        Any,
        Field(
            description="'mine' (the later write), 'theirs' (the one it replaced) or a new value"
        ),
    ] = "mine",
) -> dict[str, Any]:
    """Decide a shared conflict: keep 'mine', 'theirs' or write a merged value. The kept
    value becomes current (a new version unless it already is); the decision is audited."""
    v = rt.resolve_conflict(conflict_id, keep)
    if v is None:
        event = event_after(rt, "conflict_resolved", conflict_id=conflict_id)
        seq = event.seq if event is not None else rt.audit.head().seq
        return {**receipt(rt, seq, conflict_id=conflict_id), "written": False}
    out = receipt(rt, v.seq, conflict_id=conflict_id, space=v.space, key=v.key, version=v.version)
    return {**out, "written": True}


@tool(title="Send a message")
def send_message(
    rt: AgentRuntime,
    to_agent: Annotated[str, Field(description="the id of the agent to send to")],
    message: Annotated[Any, Field(description="the message: text or any JSON value")],
    message_type: Annotated[str, Field(description="e.g. info, request, result")] = "info",
) -> dict[str, Any]:
    """Send a message to another agent; it is stored (read it with octopoda_read_messages
    as that agent) and audited."""
    m = rt.send_message(to_agent, message, message_type)
    event = event_after(rt, "message_sent", message_id=m.id)
    seq = event.seq if event is not None else rt.audit.head().seq
    return receipt(rt, seq, message_id=m.id, to_agent=to_agent, created_at=m.created_at)


@tool(read_only=True, idempotent=True, title="Read messages", output=Page)
def read_messages(
    rt: AgentRuntime,
    unread_only: Annotated[bool, Field(description="only messages not marked read")] = True,
    limit: Limit = None,
    cursor: Cursor = None,
) -> dict[str, Any]:
    """Messages sent to this agent, oldest first. Reading does not mark them read:
    call octopoda_mark_read for each one you handled."""
    size = page_size(limit)
    after = decode_cursor("octopoda_read_messages", cursor)
    found = rt.read_messages(unread_only=unread_only, limit=size + 1, after_id=after)
    items = [clipped(plain(m), "body") for m in found[:size]]
    more = len(found) > size
    return page("octopoda_read_messages", items, size, found[size - 1].id if more else None)


@tool(idempotent=True, title="Mark a message read")
def mark_read(
    rt: AgentRuntime, message_id: Annotated[int, Field(description="the message's id", ge=1)]
) -> dict[str, Any]:
    """Mark a message to this agent as read (audited). Call it once you have handled
    the message, so octopoda_read_messages stops listing it."""
    rt.mark_read(message_id)
    event = event_after(rt, "message_read", message_id=message_id)
    seq = event.seq if event is not None else rt.audit.head().seq
    return receipt(rt, seq, message_id=message_id)


@tool(title="Broadcast to a space")
def broadcast(
    rt: AgentRuntime,
    message: Annotated[Any, Field(description="the message: text or any JSON value")],
    space: Space = "global",
    message_type: Annotated[str, Field(description="e.g. info, status, alert")] = "info",
) -> dict[str, Any]:
    """Send a message to every agent reading a shared space (they see it with
    octopoda_read_broadcasts). Call it for news that concerns the whole team."""
    m = rt.broadcast(message, space=space, message_type=message_type)
    event = event_after(rt, "broadcast", message_id=m.id)
    seq = event.seq if event is not None else rt.audit.head().seq
    return receipt(rt, seq, message_id=m.id, space=space, created_at=m.created_at)


@tool(read_only=True, idempotent=True, title="Read broadcasts", output=Page)
def read_broadcasts(
    rt: AgentRuntime,
    space: Space = "global",
    since: Annotated[float | None, Field(description="Unix time in seconds", ge=0)] = None,
    limit: Limit = None,
    cursor: Cursor = None,
) -> dict[str, Any]:
    """Broadcasts in a shared space, oldest first (since: only newer ones). Call it to
    catch up on announcements other agents made to the space. Paginated."""

    def fetch(off: int, n: int) -> list[Any]:
        found = rt.read_broadcasts(space=space, since=since, limit=off + n)[off:]
        return [clipped(plain(m), "body") for m in found]

    return listing("octopoda_read_broadcasts", fetch, limit, cursor, clip=None, space=space)


def _goal(rt: AgentRuntime, goal: Any) -> dict[str, Any]:
    row = rt.store.version("goal:" + rt.agent_id, "current", goal.version)
    return receipt(rt, row.seq if row is not None else rt.audit.head().seq, goal=goal)


@tool(title="Set the goal")
def set_goal(
    rt: AgentRuntime,
    goal: Annotated[str, Field(description="what this agent is trying to achieve")],
    milestones: Annotated[list[str] | None, Field(description="steps towards it")] = None,
) -> dict[str, Any]:
    """Set this agent's goal and milestones (replacing the current goal; the old one
    stays in history). Call it at the start of a multi-step task."""
    return _goal(rt, rt.set_goal(goal, milestones))


@tool(read_only=True, idempotent=True, title="Get the goal")
def get_goal(rt: AgentRuntime) -> dict[str, Any]:
    """This agent's current goal, milestones and progress (0-1); goal is null if none.
    Call it when resuming work to see what is left."""
    goal = rt.get_goal()
    return {"agent_id": rt.agent_id, "goal": None if goal is None else plain(goal)}


@tool(title="Update goal progress")
def update_progress(
    rt: AgentRuntime,
    milestone_index: Annotated[
        int | None, Field(description="a milestone just completed (0-based)", ge=0)
    ] = None,
    progress: Annotated[float | None, Field(description="overall progress 0-1", ge=0, le=1)] = None,
    note: Annotated[str | None, Field(description="what was done")] = None,
) -> dict[str, Any]:
    """Record progress on the goal: complete a milestone and/or set progress. Progress
    1 completes the goal. Call it after each finished step."""
    return _goal(
        rt, rt.update_progress(milestone_index=milestone_index, progress=progress, note=note)
    )
