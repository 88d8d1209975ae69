"""Runtime results as JSON for tool results: named tuples as objects, bytes as base64,
long values clipped in listings, and opaque page cursors."""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any, Final

from .._errors import InvalidInput
from .._records import Event

__all__ = [
    "DEFAULT_PAGE",
    "MAX_PAGE",
    "clipped",
    "decode_cursor",
    "encode_cursor",
    "page",
    "plain",
]

DEFAULT_PAGE: Final = 20
"""Items per page when a call gives no ``limit``: a page stays well inside a model's context."""
MAX_PAGE: Final = 100
CLIP_CHARS: Final = 2000
"""A listed value longer than this (as JSON) is replaced by its preview; recall gives it whole."""


def plain(value: Any) -> Any:
    """``value`` as JSON-safe data: named tuples and events as objects, tuples as lists,
    bytes as ``{"base64": ...}``."""
    if isinstance(value, Event):
        return plain(value.to_dict())
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict) and not isinstance(value, dict):
        return plain(to_dict())
    if isinstance(value, tuple) and hasattr(value, "_asdict"):
        return {k: plain(v) for k, v in value._asdict().items()}
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"base64": base64.b64encode(bytes(value)).decode("ascii")}
    return value


def clipped(item: dict[str, Any], field: str = "value") -> dict[str, Any]:
    """``item`` with a long ``field`` replaced by a preview and ``truncated: true``."""
    text = json.dumps(item.get(field), ensure_ascii=False, default=str)
    if len(text) <= CLIP_CHARS:
        return item
    return {**item, field: text[:CLIP_CHARS] + "…", "truncated": True}


def encode_cursor(tool: str, position: int) -> str:
    raw = json.dumps({"t": tool, "p": position}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def decode_cursor(tool: str, cursor: str | None) -> int:
    """The position a cursor of ``tool`` points at (0 without a cursor)."""
    if cursor is None or cursor == "":
        return 0
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        data = json.loads(base64.urlsafe_b64decode(padded.encode("ascii")))
        ok = isinstance(data, dict) and data.get("t") == tool and type(data.get("p")) is int
    except (ValueError, binascii.Error, UnicodeEncodeError):
        ok = False
    if not ok or data["p"] < 0:
        raise InvalidInput(
            f"cursor {cursor[:40]!r} is not a cursor of {tool}; pass the next_cursor of the"
            " previous page of this tool, or no cursor for the first page"
        )
    return int(data["p"])


def page_size(limit: int | None) -> int:
    if limit is None:
        return DEFAULT_PAGE
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_PAGE:
        raise InvalidInput(f"limit must be an int from 1 to {MAX_PAGE}, not {limit!r}")
    return limit


def page(
    tool: str, items: list[Any], size: int, next_position: int | None, **extra: Any
) -> dict[str, Any]:
    """A page of ``items``: ``next_cursor`` is set when more may follow (``next_position``)."""
    cursor = None if next_position is None else encode_cursor(tool, next_position)
    return {**extra, "items": items, "count": len(items), "next_cursor": cursor}
