"""Typed views of the event payloads the detectors read.

An :class:`~octopoda._records.Event` carries its payload as a plain dict (it is chained and
stored as canonical JSON). These TypedDicts name the fields each kind has, as the runtime
writes them (``record_tool_call``, ``record_handoff``, ``send_message``, ``log_decision``,
the stores' ``write_entry``); the accessors give an event's payload that type, at no cost
beyond a call.
"""

from collections.abc import Sequence
from typing import Any, TypedDict

from .._records import Event

__all__ = [
    "PASS_KINDS",
    "WRITE_KINDS",
    "DecisionPayload",
    "PassPayload",
    "ToolCallPayload",
    "WriteEntry",
    "decision_of",
    "pass_of",
    "tool_call_of",
    "writes_of",
]

WRITE_KINDS = frozenset({"remember", "forget", "shared_write", "restore", "import", "consolidate"})
"""The kinds of event that write memory (``payload["writes"]``)."""
PASS_KINDS = ("handoff", "message_sent")
"""The kinds of event that pass something to another agent."""


class _WriteEntryKeys(TypedDict):
    encoding: str
    key: str
    sha256: str | None
    version: int


class WriteEntry(_WriteEntryKeys, total=False):
    """One entry of ``payload["writes"]`` (``write_entry``): ``sha256`` of the value (None
    for a tombstone), ``namespace`` only when it is not the agent's own, ``expires_at``
    for a TTL."""

    namespace: str
    tags: list[str]
    expires_at: float
    created_at: float
    conflict_id: int


class _ToolCallKeys(TypedDict):
    name: str
    args_sha256: str


class ToolCallPayload(_ToolCallKeys, total=False):
    """A ``tool_call``: digests and previews of the arguments and of the result or the error
    (``error_sha256`` of the error text with numbers and ids masked), the ``*_gist`` digests
    without nonces or metadata when they differ from the plain ones, and usage."""

    args_gist: str
    args_preview: str
    result_sha256: str
    result_gist: str
    result_preview: str
    error: str
    error_sha256: str
    cost_usd: float
    tokens_in: int
    tokens_out: int
    duration_ms: float


class _PassKeys(TypedDict):
    to: str
    content_sha256: str


class PassPayload(_PassKeys, total=False):
    """A ``handoff`` or ``message_sent``: to whom, the content's digest and ``content_gist``,
    a preview, and the id of the message the store delivered."""

    content_gist: str
    preview: str
    message_id: int
    type: str


class DecisionPayload(TypedDict):
    """A ``decision``: ``context["subject"]`` names what it is about."""

    decision: str
    reasoning: str | None
    context: dict[str, Any] | None


def writes_of(event: Event) -> Sequence[WriteEntry]:
    writes = event.payload.get("writes")
    return writes if isinstance(writes, list) else ()


def tool_call_of(event: Event) -> ToolCallPayload:
    return event.payload  # type: ignore[return-value]


def pass_of(event: Event) -> PassPayload:
    return event.payload  # type: ignore[return-value]


def decision_of(event: Event) -> DecisionPayload:
    return event.payload  # type: ignore[return-value]
