"""The JSON records an OctopodaSaver stores, and their decoded forms (pure: no I/O).

A checkpoint record keeps LangGraph's serialized checkpoint (``serde.dumps_typed``) as
base64 next to readable fields, so ``octopoda memory get`` shows thread, ids and metadata::

    {"v": 1, "thread_id": "t1", "checkpoint_ns": "", "checkpoint_id": "1f0...",
     "parent_checkpoint_id": "1ef...", "type": "msgpack", "checkpoint": "<base64>",
     "metadata": {"source": "loop", "step": 3, "parents": {}, "run_id": "..."}}

Metadata that is not JSON (rare: LangGraph writes JSON-safe metadata) is kept serialized as
``metadata_type`` + ``metadata_b64`` instead. A pending write::

    {"v": 1, "task_id": "...", "task_path": "...", "idx": 0, "channel": "messages",
     "type": "msgpack", "value": "<base64>"}
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from typing import Any, NamedTuple

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import CheckpointMetadata, get_checkpoint_metadata

from octopoda import InvalidValue

__all__ = [
    "CheckpointRecord",
    "WriteRecord",
    "checkpoint_metadata",
    "config_for",
    "decode_checkpoint",
    "decode_write",
    "encode_checkpoint",
    "encode_write",
    "ids_of",
    "metadata_json",
]

RECORD_VERSION = 1


class CheckpointRecord(NamedTuple):
    """A stored checkpoint, still serialized: ``data`` is what ``serde.loads_typed`` takes.
    ``metadata`` is JSON text, or ``(type, bytes)`` for serialized metadata."""

    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str
    parent_id: str | None
    type: str
    data: bytes
    metadata: str | tuple[str, bytes]


class WriteRecord(NamedTuple):
    task_id: str
    task_path: str
    idx: int
    channel: str
    type: str
    data: bytes


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.b64decode(text)


def metadata_json(metadata: Mapping[str, Any]) -> str | None:
    """Metadata as compact JSON text, or None when it is not JSON-safe."""
    try:
        return json.dumps(metadata, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError):
        return None


def encode_checkpoint(
    record: CheckpointRecord, metadata: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The JSON value stored for ``record``; ``metadata`` is the JSON-safe dict (or None)."""
    value: dict[str, Any] = {
        "v": RECORD_VERSION,
        "thread_id": record.thread_id,
        "checkpoint_ns": record.checkpoint_ns,
        "checkpoint_id": record.checkpoint_id,
        "parent_checkpoint_id": record.parent_id,
        "type": record.type,
        "checkpoint": _b64(record.data),
    }
    if isinstance(record.metadata, str) and metadata is not None:
        value["metadata"] = dict(metadata)
    else:
        assert not isinstance(record.metadata, str)
        value["metadata_type"] = record.metadata[0]
        value["metadata_b64"] = _b64(record.metadata[1])
    return value


def decode_checkpoint(value: Any) -> CheckpointRecord:
    """A stored checkpoint value back into a record; ``InvalidValue`` if it is not one."""
    try:
        if "metadata" in value:
            metadata: str | tuple[str, bytes] = json.dumps(
                value["metadata"], ensure_ascii=False, separators=(",", ":")
            )
        else:
            metadata = (value["metadata_type"], _unb64(value["metadata_b64"]))
        return CheckpointRecord(
            value["thread_id"],
            value["checkpoint_ns"],
            value["checkpoint_id"],
            value.get("parent_checkpoint_id"),
            value["type"],
            _unb64(value["checkpoint"]),
            metadata,
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidValue(f"not an octopoda-langchain checkpoint record ({exc!r})") from None


def encode_write(record: WriteRecord) -> dict[str, Any]:
    return {
        "v": RECORD_VERSION,
        "task_id": record.task_id,
        "task_path": record.task_path,
        "idx": record.idx,
        "channel": record.channel,
        "type": record.type,
        "value": _b64(record.data),
    }


def decode_write(value: Any) -> WriteRecord:
    try:
        return WriteRecord(
            value["task_id"],
            value.get("task_path", ""),
            int(value["idx"]),
            value["channel"],
            value["type"],
            _unb64(value["value"]),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidValue(f"not an octopoda-langchain pending write ({exc!r})") from None


# -- configs and metadata ---------------------------------------------------------------------


def checkpoint_metadata(config: RunnableConfig, metadata: CheckpointMetadata) -> dict[str, Any]:
    """The metadata LangGraph's own savers store: the given metadata (all of it, ``writes``
    included) plus the run's scalar config values."""
    return dict(get_checkpoint_metadata(config, metadata))


def ids_of(config: RunnableConfig) -> tuple[str, str, str | None]:
    conf = config["configurable"]
    return str(conf["thread_id"]), str(conf.get("checkpoint_ns") or ""), conf.get("checkpoint_id")


def config_for(thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> RunnableConfig:
    return {
        "configurable": {
            "thread_id": thread_id,
            "checkpoint_ns": checkpoint_ns,
            "checkpoint_id": checkpoint_id,
        }
    }
