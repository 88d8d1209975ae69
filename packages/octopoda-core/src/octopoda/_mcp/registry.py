"""The tool registry: each tool module adds its tools with :func:`tool`; helpers shared by
the tools (receipts, pages, parameter types)."""

from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from pydantic import ConfigDict, Field, with_config
from typing_extensions import TypedDict

from .._records import Event
from .._runtime.runtime import AgentRuntime
from .calls import ToolSpec
from .convert import clipped, decode_cursor, page, page_size, plain

__all__ = [
    "TOOLS",
    "Cursor",
    "Limit",
    "Page",
    "Receipt",
    "event_after",
    "event_hash",
    "listing",
    "receipt",
    "tool",
]

F = TypeVar("F", bound=Callable[..., dict[str, Any]])

TOOLS: list[ToolSpec] = []

Cursor = Annotated[
    str | None,
    Field(description="next_cursor of the previous page; omit for the first page"),
]
Limit = Annotated[int | None, Field(description="items per page, 1-100 (default 20)", ge=1, le=100)]


_LOOP = Annotated[
    dict[str, Any],
    Field(description="present while this agent's MCP calls loop: state and signals"),
]


@with_config(ConfigDict(extra="allow"))
class Receipt(TypedDict, total=False):
    """What a write did. ``seq`` and ``hash`` name its audit event: a later read of the key
    returns the same version and seq, ``octopoda_timeline`` the same hash."""

    agent_id: Annotated[str, Field(description="the agent that wrote")]
    key: Annotated[str, Field(description="the key written")]
    version: Annotated[int, Field(description="the key's new version")]
    seq: Annotated[int, Field(description="the audit event's seq")]
    hash: Annotated[str, Field(description="the audit event's SHA-256 chain hash")]
    durable: Annotated[bool, Field(description="committed to the store before returning")]
    loop: _LOOP


@with_config(ConfigDict(extra="allow"))
class Page(TypedDict, total=False):
    """One page of a list; pass ``next_cursor`` as ``cursor`` for the next (null: last)."""

    items: list[Any]
    count: int
    next_cursor: Annotated[str | None, Field(description="the cursor of the next page")]
    loop: _LOOP


def tool(
    *,
    read_only: bool = False,
    destructive: bool = False,
    idempotent: bool = False,
    per_agent: bool = True,
    title: str | None = None,
    output: Any = None,
) -> Callable[[F], F]:
    """Register ``fn`` as the tool ``octopoda_<fn name>``; its docstring is the description.
    ``output``: the result's schema (default :class:`Receipt` for writes, else an object)."""

    def add(fn: F) -> F:
        name = "octopoda_" + fn.__name__.rstrip("_")
        schema = output if output is not None else (None if read_only else Receipt)
        TOOLS.append(
            ToolSpec(name, fn, read_only, destructive, idempotent, per_agent, title, schema)
        )
        return fn

    return add


def event_hash(rt: AgentRuntime, seq: int) -> str:
    """The audit hash of the agent's event ``seq``."""
    for event in rt.timeline(after_seq=seq - 1, limit=1):
        if event.seq == seq:
            return event.hash
    return ""


def event_after(rt: AgentRuntime, kind: str, **match: Any) -> Event | None:
    """The newest recent event of ``kind`` whose payload has ``match`` (the event a verb
    that returns no seq just wrote)."""
    head = rt.audit.head().seq
    found = None
    for event in rt.timeline(after_seq=max(0, head - 64), kinds=[kind]):
        if all(event.payload.get(k) == v for k, v in match.items()):
            found = event
    return found


def receipt(rt: AgentRuntime, seq: int, **fields: Any) -> dict[str, Any]:
    """A write's receipt: what it wrote, the event seq and the event's audit hash. A later
    read of the key returns the same version and seq; ``octopoda_timeline`` the same hash."""
    return {
        "agent_id": rt.agent_id,
        **plain(fields),
        "seq": seq,
        "hash": event_hash(rt, seq),
        "durable": True,
    }


def listing(
    tool_name: str,
    fetch: Callable[[int, int], list[Any]],
    limit: int | None,
    cursor: str | None,
    *,
    clip: str | None = "value",
    **extra: Any,
) -> dict[str, Any]:
    """One page: ``fetch(offset, count)`` returns up to ``count`` items from ``offset``."""
    size = page_size(limit)
    offset = decode_cursor(tool_name, cursor)
    rows = fetch(offset, size + 1)
    more = len(rows) > size
    items = [plain(r) for r in rows[:size]]
    if clip is not None:
        items = [clipped(i, clip) if isinstance(i, dict) else i for i in items]
    return page(tool_name, items, size, offset + size if more else None, **extra)
