"""The export bundle: an agent's memory with full history, as JSON-safe data.

Format (``format_version`` 1)::

    {
      "format": "octopoda.memories",
      "format_version": 1,
      "agent": "support-bot",
      "exported_at": 1764440000.123456,          # Unix seconds
      "octopoda_version": "0.1.0",
      "memories": [
        {"key": "user_name", "versions": [
           {"version": 1, "created_at": ..., "encoding": "json", "value": "Alice",
            "tags": ["profile"], "expires_at": null, "kind": "fact"},
           {"version": 2, "created_at": ..., "encoding": "tombstone"},
           {"version": 3, "created_at": ..., "encoding": "bytes", "value": "<base64>", ...}
        ]}
      ]
    }

Versions are listed oldest first. Erased versions are exported as ``"encoding": "erased"``
without a value; ``kind`` is there only for a version that has one (``remember(kind=)``).
:func:`write_bundle` writes the same bundle to a file one version at a time (one memory per
line), so an export never holds more than a version in memory.
"""

from __future__ import annotations

import binascii
import json
import math
from collections.abc import Iterable
from typing import Any, Final, TextIO

from .._errors import InvalidBundle, OctopodaError
from .._store import MemoryWrite, StoredRow
from .._store.rows import decode_stored
from .._values import (
    DEFAULT_MAX_VALUE_BYTES,
    encode_value,
    validate_key,
    validate_kind,
    validate_tags,
)

__all__ = [
    "BUNDLE_FORMAT",
    "BUNDLE_VERSION",
    "build_bundle",
    "bundle_digest",
    "read_bundle",
    "write_bundle",
]

BUNDLE_FORMAT: Final = "octopoda.memories"
BUNDLE_VERSION: Final = 1


def _export_version(row: StoredRow) -> dict[str, Any]:
    item: dict[str, Any] = {"version": row.version, "created_at": row.created_at}
    if row.erased:
        item["encoding"] = "erased"
    elif row.encoding == "json":
        item["encoding"] = "json"
        item["value"] = decode_stored(row)
    elif row.encoding == "bytes":
        item["encoding"] = "bytes"
        import base64  # (only for bytes values: not at import)

        item["value"] = base64.b64encode(bytes(row.data)).decode("ascii")
    else:
        item["encoding"] = "tombstone"
    if row.encoding != "tombstone":
        item["tags"] = list(row.tags)
        item["expires_at"] = row.expires_at
        if row.kind is not None:
            item["kind"] = row.kind
    return item


def build_bundle(
    agent: str, rows: Iterable[StoredRow], *, exported_at: float, version: str
) -> dict[str, Any]:
    """Group rows (ordered by key, then version) into a bundle."""
    memories: list[dict[str, Any]] = []
    for row in rows:
        if not memories or memories[-1]["key"] != row.key:
            memories.append({"key": row.key, "versions": []})
        memories[-1]["versions"].append(_export_version(row))
    return {
        "format": BUNDLE_FORMAT,
        "format_version": BUNDLE_VERSION,
        "agent": agent,
        "exported_at": exported_at,
        "octopoda_version": version,
        "memories": memories,
    }


_dump = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode


def write_bundle(
    agent: str, rows: Iterable[StoredRow], out: TextIO, *, exported_at: float, version: str
) -> tuple[int, int]:
    """:func:`build_bundle`'s bundle written to ``out`` as it is read, one version at a
    time; the number of keys and of versions written."""
    head = {
        "format": BUNDLE_FORMAT,
        "format_version": BUNDLE_VERSION,
        "agent": agent,
        "exported_at": exported_at,
        "octopoda_version": version,
    }
    out.write(_dump(head)[:-1] + ',"memories":[')
    key: str | None = None
    keys = versions = 0
    for row in rows:
        if row.key != key:
            opening = "]},\n" if keys else "\n"
            out.write(opening + '{"key":' + _dump(row.key) + ',"versions":[')
            key, keys = row.key, keys + 1
        else:
            out.write(",")
        out.write(_dump(_export_version(row)))
        versions += 1
    out.write("]}\n]}\n" if keys else "]}\n")
    return keys, versions


def _number(value: Any, where: str, *, optional: bool = False) -> float | None:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InvalidBundle(f"{where} must be a number of Unix seconds, got {value!r}")
    return float(value)


def _import_version(
    namespace: str, key: str, item: Any, where: str, limit: int
) -> MemoryWrite | None:
    if not isinstance(item, dict):
        raise InvalidBundle(f"{where} must be an object, got {type(item).__name__}")
    encoding = item.get("encoding")
    created_at = _number(item.get("created_at"), f"{where}.created_at")
    if encoding == "tombstone":
        return MemoryWrite(namespace, key, "tombstone", None, None, created_at=created_at)
    if encoding == "erased":
        return None
    if "value" not in item:
        raise InvalidBundle(f"{where} has encoding {encoding!r} but no value")
    if encoding == "json":
        value: Any = item["value"]
    elif encoding == "bytes":
        import base64

        try:
            value = base64.b64decode(str(item["value"]), validate=True)
        except (binascii.Error, ValueError):
            raise InvalidBundle(f"{where}.value is not valid base64") from None
    else:
        raise InvalidBundle(
            f"{where}.encoding is {encoding!r}; expected json, bytes, tombstone or erased"
        )
    try:
        encoded = encode_value(value, limit, "the value")
        tags = validate_tags(item.get("tags") or ())
        kind = validate_kind(item.get("kind"))
    except OctopodaError as exc:
        raise InvalidBundle(f"{where}: {exc}") from None
    expires_at = _number(item.get("expires_at"), f"{where}.expires_at", optional=True)
    return MemoryWrite(
        namespace,
        key,
        encoded.encoding,
        encoded.data,
        encoded.sha256,
        tags,
        expires_at,
        created_at,
        kind=kind,
    )


def bundle_digest(bundle: dict[str, Any]) -> str:
    """SHA-256 of what a bundle holds (its agent and memories; not when it was exported),
    over sorted-key compact JSON: the same export gives the same digest, whatever its
    formatting (big integers included, which canonical JSON refuses)."""
    import hashlib

    content = {"agent": bundle.get("agent"), "memories": bundle.get("memories")}
    text = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def read_bundle(
    bundle: Any, namespace: str, limit: int = DEFAULT_MAX_VALUE_BYTES
) -> tuple[str | None, list[tuple[str, list[MemoryWrite]]], str]:
    """Validate a whole bundle before anything is written; return its source agent, the
    writes per key and the bundle's digest (:func:`bundle_digest`)."""
    if isinstance(bundle, (str, bytes)):
        try:
            bundle = json.loads(bundle)
        except (ValueError, RecursionError) as exc:
            raise InvalidBundle(f"the bundle is not valid JSON: {exc}") from None
    if not isinstance(bundle, dict):
        raise InvalidBundle(
            f"a bundle is a dict from export_memories(), not {type(bundle).__name__}"
        )
    if bundle.get("format") != BUNDLE_FORMAT and _is_legacy(bundle):
        raise InvalidBundle(
            "this is an Octopoda 3.3.4 export bundle (meta, memories); import it with"
            " `octopoda migrate --from FILE` (docs/migrating.md), which reads 3.3.4's formats"
        )
    if bundle.get("format") != BUNDLE_FORMAT:
        raise InvalidBundle(
            f"not an Octopoda memory bundle (format {bundle.get('format')!r});"
            " pass what export_memories() returned"
        )
    version = bundle.get("format_version")
    if type(version) is not int or version != BUNDLE_VERSION:
        raise InvalidBundle(
            f"bundle format_version {bundle.get('format_version')!r} is not supported by this"
            f" Octopoda (it reads version {BUNDLE_VERSION}); upgrade octopoda-core"
        )
    memories = bundle.get("memories")
    if not isinstance(memories, list):
        raise InvalidBundle("bundle['memories'] must be a list")
    out: list[tuple[str, list[MemoryWrite]]] = []
    seen: set[str] = set()
    for i, entry in enumerate(memories):
        where = f"memories[{i}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("versions"), list):
            raise InvalidBundle(f"{where} must be an object with 'key' and a 'versions' list")
        try:
            key = validate_key(entry.get("key"))
        except OctopodaError as exc:
            raise InvalidBundle(f"{where}.key: {exc}") from None
        if key in seen:
            raise InvalidBundle(f"{where}: key {key!r} appears twice in the bundle")
        seen.add(key)
        writes = [
            w
            for j, item in enumerate(entry["versions"])
            if (w := _import_version(namespace, key, item, f"{where}.versions[{j}]", limit))
            is not None
        ]
        out.append((key, writes))
    source = bundle.get("agent")
    return (source if isinstance(source, str) else None), out, bundle_digest(bundle)


def _is_legacy(bundle: dict[str, Any]) -> bool:
    return isinstance(bundle.get("meta"), dict) and isinstance(bundle.get("memories"), dict)
