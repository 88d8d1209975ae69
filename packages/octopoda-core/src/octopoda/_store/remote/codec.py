"""The wire form of what the store protocol passes: rows, writes, operations, events and
errors, as JSON that comes back as the same Python objects (named tuples stay named tuples,
tuples stay tuples, bytes stay bytes). The server and :class:`RemoteStore` share it.

Plain JSON values are sent as they are; the rest is tagged with a one-key object whose key
starts with ``$`` (a dict that has such keys itself is wrapped in ``{"$d": ...}``).
"""

from __future__ import annotations

import base64
import contextlib
from typing import Any, Final

from ... import _errors
from ..._audit.signing import SignedHead
from ..._records import Event
from .. import ops, rows, vector_reads

__all__ = ["decode", "decode_error", "encode", "encode_error"]

_TYPES: Final[dict[str, type]] = {
    t.__name__: t
    for t in (
        rows.StoredRow,
        rows.AgentRow,
        rows.ConflictRow,
        rows.MessageRow,
        rows.RunActivityRow,
        rows.RunRow,
        rows.SnapshotRow,
        rows.SpaceRow,
        rows.AuditedRows,
        vector_reads.VectorModel,
        vector_reads.PendingVectors,
        SignedHead,
        ops.MemoryWrite,
        ops.CreateSpace,
        ops.ResolveConflict,
        ops.SendMessage,
        ops.MarkRead,
        ops.EraseKey,
        ops.SetRunStatus,
    )
}
_EVENT_FIELDS: Final = (
    "agent",
    "kind",
    "payload",
    "time",
    "seq",
    "prev_hash",
    "hash",
    "payload_text",
)


def encode(x: Any) -> Any:
    """``x`` as JSON-safe data that :func:`decode` turns back into ``x``."""
    if x is None or type(x) in (str, int, float, bool):
        return x
    if isinstance(x, tuple):
        name = type(x).__name__
        if name in _TYPES and type(x) is _TYPES[name]:
            return {"$t": name, "v": [encode(v) for v in x]}
        return {"$tuple": [encode(v) for v in x]}
    if isinstance(x, list):
        return [encode(v) for v in x]
    if isinstance(x, dict):
        out = {k: encode(v) for k, v in x.items()}
        if all(type(k) is str and not k.startswith("$") for k in x):
            return out
        return {"$d": [[encode(k), encode(v)] for k, v in x.items()]}
    if isinstance(x, (bytes, bytearray, memoryview)):
        return {"$b": base64.b64encode(bytes(x)).decode("ascii")}
    if isinstance(x, Event):
        return {"$event": {f: encode(getattr(x, f)) for f in _EVENT_FIELDS}}
    if isinstance(x, (int, float, str)):  # subclasses (bool is handled above)
        return type(x).__mro__[1](x) if type(x) is not bool else bool(x)
    raise _errors.InvalidInput(f"cannot send a {type(x).__name__} to an Octopoda server")


def decode(x: Any) -> Any:
    """The Python object :func:`encode` made ``x`` from."""
    if type(x) is list:
        return [decode(v) for v in x]
    if type(x) is not dict:
        return x
    if len(x) <= 2 and x:
        if "$t" in x:
            cls = _TYPES.get(x["$t"])
            if cls is None:
                raise _errors.StorageError(f"the server sent an unknown row type {x['$t']!r:.60}")
            return cls(*(decode(v) for v in x["v"]))
        if "$tuple" in x:
            return tuple(decode(v) for v in x["$tuple"])
        if "$b" in x:
            return base64.b64decode(x["$b"])
        if "$d" in x:
            return {decode(k): decode(v) for k, v in x["$d"]}
        if "$event" in x:
            f = {k: decode(v) for k, v in x["$event"].items()}
            return Event(
                f["agent"],
                f["kind"],
                f["payload"],
                f["time"],
                f["seq"],
                f["prev_hash"],
                f["hash"],
                f.get("payload_text", ""),
            )
    return {k: decode(v) for k, v in x.items()}


def encode_error(exc: _errors.OctopodaError) -> dict[str, Any]:
    """The error's class name, message and attributes (for :func:`decode_error`)."""
    attrs = {}
    for k, v in vars(exc).items():
        try:
            attrs[k] = encode(v)
        except _errors.InvalidInput:
            attrs[k] = None
    return {"type": type(exc).__name__, "detail": str(exc), "attributes": attrs}


def decode_error(problem: dict[str, Any], fallback: str) -> _errors.OctopodaError:
    """The OctopodaError a server's problem body names (``StorageError(fallback)`` when it
    names none)."""
    name = problem.get("type")
    cls = getattr(_errors, name, None) if isinstance(name, str) else None
    if not (isinstance(cls, type) and issubclass(cls, _errors.OctopodaError)):
        return _errors.StorageError(fallback)
    exc = cls.__new__(cls)
    Exception.__init__(exc, str(problem.get("detail", fallback)))
    attrs = problem.get("attributes")
    if isinstance(attrs, dict):
        for k, v in attrs.items():
            with contextlib.suppress(AttributeError, TypeError):
                setattr(exc, k, decode(v))
    return exc
