"""Tools about an agent as a whole: decisions, loops, statistics, the audit trail and
points in time, the context block, and conversations turned into memories."""

from typing import Annotated, Any

from pydantic import Field

from .._runtime.runtime import AgentRuntime
from .._version import __version__
from .calls import Calls
from .convert import clipped, decode_cursor, page, page_size, plain
from .registry import TOOLS, Cursor, Limit, Page, listing, receipt, tool

Seq = Annotated[int, Field(description="an event seq (from a receipt or the timeline)", ge=0)]


@tool(title="Log a decision")
def log_decision(
    rt: AgentRuntime,
    decision: Annotated[str, Field(description="what was decided, in one sentence")],
    reasoning: Annotated[str | None, Field(description="why")] = None,
    context: Annotated[dict[str, Any] | None, Field(description="facts it was based on")] = None,
) -> dict[str, Any]:
    """Record a decision and why, in the audit trail; what the agent knew then can be
    read later with octopoda_as_of at its seq. Call it whenever you choose between
    options. repeats_seq is set when you restate a recent decision (a possible loop)."""
    d = rt.log_decision(decision, reasoning=reasoning, context=context)
    return receipt(
        rt,
        d.seq,
        decision=decision,
        created_at=d.time,
        repeats_seq=d.repeats_seq,
        similarity=d.similarity,
    )


@tool(read_only=True, idempotent=True, title="List decisions", output=Page)
def decisions(rt: AgentRuntime, limit: Limit = None, cursor: Cursor = None) -> dict[str, Any]:
    """Logged decisions of this agent, newest first, with their reasoning. Call it to
    recall what was already decided and why before deciding again. Paginated."""

    def fetch(off: int, n: int) -> list[Any]:
        found = rt.decisions()[::-1][off : off + n]
        return [
            {"seq": d.seq, "time": d.time, "decision": d.decision, "reasoning": d.reasoning}
            for d in found
        ]

    return listing("octopoda_decisions", fetch, limit, cursor, clip=None)


@tool(read_only=True, idempotent=True, title="Loop status")
def loop_status(
    rt: AgentRuntime,
    run_id: Annotated[str | None, Field(description="one run only; omit for all runs")] = None,
) -> dict[str, Any]:
    """Whether this agent is looping: ok, warning or looping, with each signal (retry,
    oscillation, ping-pong, reflection, recall-write), the events that form it and a
    suggested fix. Call it when you seem to be repeating yourself."""
    return {"agent_id": rt.agent_id, **plain(rt.loop_status(run_id))}


@tool(read_only=True, idempotent=True, title="Loop history", output=Page)
def loop_history(
    rt: AgentRuntime,
    since: Annotated[float | None, Field(description="Unix time in seconds", ge=0)] = None,
    limit: Limit = None,
    cursor: Cursor = None,
) -> dict[str, Any]:
    """Past loop detections of this agent, oldest first, from every process. Call it to
    review where work got stuck before. Paginated: pass next_cursor."""

    def fetch(off: int, n: int) -> list[Any]:
        return rt.loop_history(since=since, limit=off + n)[off:]

    return listing("octopoda_loop_history", fetch, limit, cursor, clip=None)


@tool(read_only=True, idempotent=True, title="Agent statistics")
def agent_stats(rt: AgentRuntime) -> dict[str, Any]:
    """Operations and latencies of this server process, tool and LLM calls, spend,
    loops detected and whether the agent is paused; plus its event count."""
    return {"agent_id": rt.agent_id, "events": rt.audit.head().seq, **plain(rt.stats())}


@tool(read_only=True, idempotent=True, per_agent=False, title="List agents", output=Page)
def list_agents(calls: Calls, limit: Limit = None, cursor: Cursor = None) -> dict[str, Any]:
    """Every agent in the store with its status (active, paused, idle), last activity and
    event count. Call it to find another agent's id before messaging it."""
    return listing(
        "octopoda_list_agents",
        lambda off, n: calls.client.agents()[off : off + n],
        limit,
        cursor,
        clip=None,
    )


@tool(read_only=True, idempotent=True, per_agent=False, title="Server status")
def status(calls: Calls) -> dict[str, Any]:
    """The Octopoda version, the store this server uses, the default agent id and the
    number of tools. Call it to check the memory server is connected."""
    return {
        "version": __version__,
        "store": calls.store.url,
        "default_agent_id": calls.default_agent,
        "tools": len(TOOLS),
    }


@tool(read_only=True, idempotent=True, title="Verify the audit trail")
def audit_verify(rt: AgentRuntime) -> dict[str, Any]:
    """Recompute this agent's hash chain and check every stored memory against its
    audited write. ok=false names the first bad seq and why (tampering, a lost row)."""
    return dict(plain(rt.audit.verify()))


@tool(read_only=True, idempotent=True, title="Event timeline", output=Page)
def timeline(
    rt: AgentRuntime,
    kinds: Annotated[
        list[str] | None,
        Field(description="only these kinds, e.g. remember, forget, decision, tool_call"),
    ] = None,
    since: Annotated[float | None, Field(description="Unix time in seconds", ge=0)] = None,
    limit: Limit = None,
    cursor: Cursor = None,
) -> dict[str, Any]:
    """This agent's audited events in order (seq, time, kind, payload, hash): what it
    did and when. Paginated by seq; pass next_cursor for the next page."""
    size = page_size(limit)
    after = decode_cursor("octopoda_timeline", cursor)
    found = rt.timeline(kinds=kinds, since=since, after_seq=after, limit=size + 1)
    items = [clipped(plain(e), "payload") for e in found[:size]]
    more = len(found) > size
    return page("octopoda_timeline", items, size, found[size - 1].seq if more else None)


@tool(read_only=True, idempotent=True, title="Diff two points")
def diff(
    rt: AgentRuntime,
    from_seq: Seq,
    to_seq: Annotated[int | None, Field(description="a later seq; omit for now", ge=0)] = None,
) -> dict[str, Any]:
    """Keys added, changed (old and new value) and removed between two event seqs (to
    now without to_seq). Call it to see what changed since a decision or a receipt."""
    d = rt.diff(from_seq, to_seq)
    return {
        "from_seq": d.from_seq,
        "to_seq": d.to_seq,
        "added": plain(d.added),
        "changed": {k: {"old": plain(a), "new": plain(b)} for k, (a, b) in d.changed.items()},
        "removed": plain(d.removed),
    }


@tool(read_only=True, idempotent=True, title="Memory as of a point")
def as_of(
    rt: AgentRuntime,
    seq: Seq,
    key: Annotated[str | None, Field(description="one key; omit to list")] = None,
    prefix: Annotated[str, Field(description="only keys starting with this")] = "",
    limit: Limit = None,
    cursor: Cursor = None,
) -> dict[str, Any]:
    """This agent's memory as it was right after event seq (e.g. a decision's seq:
    what the agent knew when it decided). With key, that key's value then."""
    view = rt.as_of(seq)
    if key is not None:
        return {"seq": seq, **plain(view.recall(key))}
    items = view.search(prefix)
    return listing("octopoda_as_of", lambda off, n: items[off : off + n], limit, cursor, seq=seq)


@tool(read_only=True, idempotent=True, title="Context for a prompt")
def get_context(
    rt: AgentRuntime,
    query: Annotated[str | None, Field(description="what the conversation is about")] = None,
    limit: Annotated[int, Field(description="memories to include, 1-50", ge=1, le=50)] = 10,
) -> dict[str, Any]:
    """A compact briefing to start or resume a conversation: the goal, the memories most
    relevant to query (or the most recent), the last decisions, unread messages and loop
    state. Call it first thing in a new conversation."""
    if query:
        memories = [m.item for m in rt.recall_similar(query, limit=limit)]
    else:
        memories = sorted(rt.search(limit=None), key=lambda i: i.seq, reverse=True)[:limit]
    goal = rt.get_goal()
    return {
        "agent_id": rt.agent_id,
        "goal": None if goal is None else plain(goal),
        "memories": [clipped(plain(m)) for m in memories],
        "recent_decisions": [
            {"seq": d.seq, "decision": d.decision, "reasoning": d.reasoning}
            for d in rt.decisions()[-5:]
        ],
        "unread_messages": len(rt.read_messages(unread_only=True, limit=100)),
        "loop_state": rt.loop_status().state,
    }
