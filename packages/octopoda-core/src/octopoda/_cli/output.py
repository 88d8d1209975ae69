"""What the command line prints: JSON with a bytes marker, ISO-8601 times and text tables.

Pure functions (no click, no I/O), so the server or tests can reuse them.

JSON output keeps the library's Unix epoch seconds (float) and shows a ``bytes`` value as
``{"$bytes": "<base64>"}``. Text output shows times as ISO-8601 UTC
(``2026-05-09T07:35:25Z``).
"""

from __future__ import annotations

import base64
import dataclasses
import json
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any, Final

from .._records import MemoryVersion

__all__ = [
    "BYTES_MARKER",
    "count",
    "iso_time",
    "preview",
    "record",
    "table",
    "text_cell",
    "to_json",
    "version_state",
]

BYTES_MARKER: Final = "$bytes"
_PREVIEW_WIDTH: Final = 60


def _json_default(obj: Any) -> Any:
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return {BYTES_MARKER: base64.b64encode(bytes(obj)).decode("ascii")}
    raise TypeError(f"a {type(obj).__name__} is not JSON-serialisable")


def to_json(data: Any, *, indent: int | None = 2) -> str:
    """``data`` as JSON text (UTF-8 kept, ``bytes`` as ``{"$bytes": base64}``)."""
    separators = None if indent is not None else (",", ":")
    return json.dumps(
        data, indent=indent, separators=separators, ensure_ascii=False, default=_json_default
    )


def record(obj: Any, **first: Any) -> dict[str, Any]:
    """A result (dataclass or named tuple) as a dict of its fields, after ``first``."""
    out = dict(first)
    if dataclasses.is_dataclass(obj):
        out.update((f.name, getattr(obj, f.name)) for f in dataclasses.fields(obj))
    else:
        out.update(obj._asdict())
    return out


def count(n: int, noun: str) -> str:
    """``1 key``, ``3 keys``."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def iso_time(seconds: float | None) -> str:
    """Unix seconds as ISO-8601 UTC to the second (``-`` for None)."""
    if seconds is None:
        return "-"
    try:
        moment = datetime.fromtimestamp(seconds, tz=timezone.utc)
    except (OverflowError, OSError, ValueError):  # outside what datetime can show
        return f"{seconds:g}"
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")


def text_cell(text: str) -> str:
    """``text`` for one table cell: as is when printable, else JSON-quoted with escapes."""
    return text if text.isprintable() else json.dumps(text, ensure_ascii=False)


def preview(value: Any, width: int = _PREVIEW_WIDTH) -> str:
    """A value as compact JSON on one line, cut to ``width`` characters."""
    text = to_json(value, indent=None)
    return text if len(text) <= width else text[: width - 3] + "..."


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Left-aligned columns separated by two spaces; ``headers`` (if any) first."""
    lines = [list(headers), *rows] if headers else list(rows)
    if not lines:
        return ""
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() for line in lines
    )


def version_state(item: MemoryVersion, now: float) -> str:
    """``live``, ``forgotten`` (a tombstone), ``erased`` or ``expired``."""
    if item.tombstone:
        return "forgotten"
    if item.erased:
        return "erased"
    if item.expires_at is not None and item.expires_at <= now:
        return "expired"
    return "live"
