"""How LangGraph and LangChain data is laid out as Octopoda memory keys (pure: no I/O).

Everything lives in one agent's memory (its audit chain records every change). Path
segments are escaped (``%`` -> ``%25``, ``/`` -> ``%2F``, NUL -> ``%00``), so a thread id,
namespace or key may contain any character::

    lg/t/<thread>/<checkpoint ns>/c/<checkpoint id>            a checkpoint (JSON record)
    lg/t/<thread>/<checkpoint ns>/w/<checkpoint id>/<task>/<i>  one pending write
    lg/t/<thread>/<checkpoint ns>/latest                       newest checkpoint id there
    lg/r/<run id>/<thread>/<checkpoint ns>/<checkpoint id>     run index (delete_for_runs)

    ls/<label>/<label>/.../<label>//<key>                      an OctopodaStore item

    chat/<session>/<time ns>-<random>                          a chat message

A segment longer than :data:`MAX_SEGMENT` characters (escaped) is kept as its escaped start,
``%~`` and the SHA-256 of the whole text (:func:`segment`): every key stays within the core's
1,024 characters, and no escaped text contains ``%~``, so a shortened segment never equals
another one. Such a segment cannot be read back: the checkpoint record holds the full ids.

Octopoda orders keys by their UTF-8 bytes (SQLite ``BINARY``, PostgreSQL ``COLLATE "C"``), so
a prefix selects one thread, one namespace or one checkpoint's writes.
"""

from __future__ import annotations

import functools
import hashlib
import re
from typing import Final, NamedTuple

__all__ = [
    "CHECKPOINTS",
    "MAX_SEGMENT",
    "STORE",
    "CheckpointKey",
    "chat_prefix",
    "checkpoint_key",
    "escape",
    "is_segment_of",
    "latest_key",
    "namespace_prefix",
    "namespace_prefix_at",
    "original",
    "parse_checkpoint_key",
    "parse_store_key",
    "run_key",
    "run_prefix",
    "segment",
    "store_key",
    "store_prefix",
    "thread_prefix",
    "unescape",
    "write_key",
    "writes_prefix",
]

CHECKPOINTS = "lg/"
STORE = "ls/"

_ESCAPES = {"%": "%25", "/": "%2F", "\x00": "%00"}
_NEEDS_ESCAPE = re.compile(r"[%/\x00]")
_UNESCAPES = {"%25": "%", "%2F": "/", "%00": "\x00"}
_ESCAPED = re.compile(r"%(?:25|2F|00)")


def escape(segment: str) -> str:
    """``segment`` with ``%``, ``/`` and NUL escaped, so it never contains a ``/``."""
    if _NEEDS_ESCAPE.search(segment) is None:
        return segment
    return _NEEDS_ESCAPE.sub(lambda m: _ESCAPES[m.group()], segment)


def unescape(segment: str) -> str:
    if "%" not in segment:
        return segment
    return _ESCAPED.sub(lambda m: _UNESCAPES[m.group()], segment)


MAX_SEGMENT: Final = 256
"""The longest segment (escaped) a checkpoint key holds as is: four of them and an id fit."""
_SHORTENED = "%~"  # never in an escaped text: each % there starts %25, %2F or %00
_DIGEST_CHARS: Final = 64


@functools.lru_cache(maxsize=4096)
def segment(text: str) -> str:
    """``text`` as a key segment: escaped, and when longer than :data:`MAX_SEGMENT`, its
    readable start, ``%~`` and the SHA-256 of the whole ``text``."""
    escaped = escape(text)
    if len(escaped) <= MAX_SEGMENT:
        return escaped
    start = escaped[: MAX_SEGMENT - len(_SHORTENED) - _DIGEST_CHARS]
    cut = start.rfind("%", len(start) - 2)
    if cut >= 0:  # do not split an escape
        start = start[:cut]
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return f"{start}{_SHORTENED}{digest}"


def original(key_segment: str) -> str | None:
    """The text a key segment stands for; None for a shortened one (read the record)."""
    return None if _SHORTENED in key_segment else unescape(key_segment)


def is_segment_of(text: str, key_segment: str) -> bool:
    """Whether ``key_segment`` is :func:`segment` of ``text``."""
    if _SHORTENED in key_segment:
        return len(text) >= len(key_segment) - _DIGEST_CHARS and segment(text) == key_segment
    return text == unescape(key_segment)


# -- checkpoints ----------------------------------------------------------------------------


def thread_prefix(thread_id: str) -> str:
    return f"{CHECKPOINTS}t/{segment(thread_id)}/"


def namespace_prefix(thread_id: str, checkpoint_ns: str) -> str:
    return namespace_prefix_at(segment(thread_id), segment(checkpoint_ns))


def namespace_prefix_at(thread_segment: str, ns_segment: str) -> str:
    """:func:`namespace_prefix` from key segments (as :func:`parse_checkpoint_key` gives)."""
    return f"{CHECKPOINTS}t/{thread_segment}/{ns_segment}/"


def checkpoint_key(thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> str:
    return f"{namespace_prefix(thread_id, checkpoint_ns)}c/{escape(checkpoint_id)}"


def latest_key(thread_id: str, checkpoint_ns: str) -> str:
    return f"{namespace_prefix(thread_id, checkpoint_ns)}latest"


def writes_prefix(thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> str:
    return f"{namespace_prefix(thread_id, checkpoint_ns)}w/{escape(checkpoint_id)}/"


def write_key(
    thread_id: str, checkpoint_ns: str, checkpoint_id: str, task_id: str, idx: int
) -> str:
    return f"{writes_prefix(thread_id, checkpoint_ns, checkpoint_id)}{segment(task_id)}/{idx}"


def run_prefix(run_id: str) -> str:
    return f"{CHECKPOINTS}r/{segment(run_id)}/"


def run_key(run_id: str, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> str:
    slot = f"{segment(thread_id)}/{segment(checkpoint_ns)}"
    return f"{run_prefix(run_id)}{slot}/{escape(checkpoint_id)}"


class CheckpointKey(NamedTuple):
    """A parsed ``lg/`` key. ``kind``: ``c`` (checkpoint), ``w`` (write), ``latest``, ``r``
    (run index). ``thread``/``ns`` are key segments (:func:`original` gives the ids unless
    they were shortened); ``task_id``/``idx`` are set for writes (``task_id`` as a segment),
    ``run_id`` (a segment) for the run index."""

    kind: str
    thread: str
    ns: str
    checkpoint_id: str | None = None
    task_id: str | None = None
    idx: int | None = None
    run_id: str | None = None


def parse_checkpoint_key(key: str) -> CheckpointKey | None:
    """The parts of an ``lg/`` key, or None for a key this layout does not produce."""
    if not key.startswith(CHECKPOINTS):
        return None
    parts = key[len(CHECKPOINTS) :].split("/")
    try:
        if parts[0] == "t":
            thread, ns, kind = parts[1], parts[2], parts[3]
            if kind == "c" and len(parts) == 5:
                return CheckpointKey("c", thread, ns, unescape(parts[4]))
            if kind == "w" and len(parts) == 7:
                cid, task = unescape(parts[4]), parts[5]
                return CheckpointKey("w", thread, ns, cid, task, int(parts[6]))
            if kind == "latest" and len(parts) == 4:
                return CheckpointKey("latest", thread, ns)
        elif parts[0] == "r" and len(parts) == 5:
            run, thread, ns, cid = parts[1:]
            return CheckpointKey("r", thread, ns, unescape(cid), run_id=run)
    except (IndexError, ValueError):
        return None
    return None


# -- store ----------------------------------------------------------------------------------


def store_prefix(namespace: tuple[str, ...]) -> str:
    """The prefix of every item in ``namespace`` and in the namespaces below it."""
    return STORE + "".join(escape(label) + "/" for label in namespace)


def store_key(namespace: tuple[str, ...], key: str) -> str:
    return f"{store_prefix(namespace)}/{escape(key)}"


def parse_store_key(key: str) -> tuple[tuple[str, ...], str] | None:
    """``(namespace, key)`` of an ``ls/`` key, or None."""
    if not key.startswith(STORE):
        return None
    rest = key[len(STORE) :]
    labels: list[str] = []
    while True:
        cut = rest.find("/")
        if cut < 0:
            return None
        segment, rest = rest[:cut], rest[cut + 1 :]
        if not segment:
            break
        labels.append(unescape(segment))
    if not labels:
        return None
    return tuple(labels), unescape(rest)


# -- chat history ---------------------------------------------------------------------------


def chat_prefix(session_id: str) -> str:
    return f"chat/{escape(session_id)}/"
