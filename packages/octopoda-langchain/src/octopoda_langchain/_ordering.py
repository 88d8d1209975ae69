"""The index that lists checkpoints of every thread newest first (``list(None, ...)``).

Each checkpoint has an order key besides its record, written in the same event::

    lg/o/<checkpoint id, descending>/<thread>/<checkpoint ns>   1
    lg/u/<checkpoint id, descending>/<thread>/<checkpoint ns>   1 (untagged)

Octopoda orders keys ascending, so the id is stored reversed (:func:`descending`): a prefix
read meets the newest checkpoint of all threads first, and a limited read stops after a
page. For ``filter``, the order key is tagged with the metadata's scalar values
(``m:<dotted path>=<value>``), so the store filters by tags in SQL and a selective filter
does not decode every checkpoint. Tags only narrow the candidates: each checkpoint is checked
against the filter itself. A checkpoint whose metadata cannot be tagged in full (too many or too
long values, not JSON, a copied thread) has its order key under ``lg/u/``, which every
filtered listing reads in full beside the tagged ``lg/o/`` (usually nothing is there).
"""

from __future__ import annotations

import heapq
import json
import math
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, NamedTuple

from octopoda import AgentRuntime, MemoryItem

from ._keys import CHECKPOINTS, segment

__all__ = [
    "ORDER",
    "UNTAGGED_ORDER",
    "OrderRow",
    "descending",
    "filter_tags",
    "metadata_tags",
    "newest_first",
    "order_key",
    "order_key_at",
    "order_keys",
    "order_keys_at",
]

ORDER = CHECKPOINTS + "o/"
UNTAGGED_ORDER = CHECKPOINTS + "u/"

MAX_TAGS = 64  # Octopoda's limit per write
MAX_TAG_LENGTH = 256
MAX_DEPTH = 4
FIRST_PAGE = 16
LAST_PAGE = 4096


def descending(text: str) -> str:
    """``text`` as a key segment that sorts in reverse order: each UTF-8 byte ``b`` as the
    two hex digits of ``255 - b``, then ``~`` (after every hex digit, so a text sorts after
    the texts it is a prefix of)."""
    return bytes(255 - b for b in text.encode()).hex() + "~"


def ascending(segment: str) -> str:
    """The text :func:`descending` made ``segment`` from."""
    return bytes(255 - b for b in bytes.fromhex(segment[:-1])).decode()


def order_key(
    thread_id: str, checkpoint_ns: str, checkpoint_id: str, *, tagged: bool = True
) -> str:
    return order_key_at(segment(thread_id), segment(checkpoint_ns), checkpoint_id, tagged=tagged)


def order_key_at(
    thread_segment: str, ns_segment: str, checkpoint_id: str, *, tagged: bool = True
) -> str:
    """:func:`order_key` from key segments (``_keys.segment``)."""
    prefix = ORDER if tagged else UNTAGGED_ORDER
    return f"{prefix}{descending(checkpoint_id)}/{thread_segment}/{ns_segment}"


def order_keys(thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> list[str]:
    """Both places a checkpoint's order key may be (to delete it)."""
    return order_keys_at(segment(thread_id), segment(checkpoint_ns), checkpoint_id)


def order_keys_at(thread_segment: str, ns_segment: str, checkpoint_id: str) -> list[str]:
    return [
        order_key_at(thread_segment, ns_segment, checkpoint_id, tagged=tagged)
        for tagged in (True, False)
    ]


class OrderRow(NamedTuple):
    """An order key's checkpoint: thread and namespace as key segments (``_keys.original``
    gives the ids unless they were shortened; the record has them all)."""

    thread: str
    ns: str
    checkpoint_id: str


def _parse(item: MemoryItem) -> OrderRow | None:
    parts = item.key[len(ORDER) :].split("/")  # both prefixes are as long
    if len(parts) != 3 or not parts[0].endswith("~"):
        return None
    try:
        checkpoint_id = ascending(parts[0])
    except ValueError:
        return None
    return OrderRow(parts[1], parts[2], checkpoint_id)


# -- tags -------------------------------------------------------------------------------------


def _scalar(value: Any) -> str | None:
    """A filterable scalar as tag text, numbers normalised as SQLite compares them (``True``
    is 1, ``1.0`` is 1); None for what a tag cannot stand for."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and math.isfinite(value):
        return str(int(value)) if value.is_integer() and abs(value) < 2**53 else repr(value)
    return None


def _leaves(value: Mapping[str, Any], path: str, depth: int) -> Iterator[tuple[str, Any]]:
    """``(dotted path, value)`` of every scalar reachable through dicts (lists are not:
    a filter's dotted path does not enter them); ``(path, ...)`` where it went too deep."""
    for key, item in value.items():
        sub = f"{path}.{key}" if path else str(key)
        if isinstance(item, dict):
            if depth >= MAX_DEPTH:
                yield sub, ...
            else:
                yield from _leaves(item, sub, depth + 1)
        elif not isinstance(item, list):
            yield sub, item


def _tag(path: str, value: Any) -> str | None:
    text = _scalar(value)
    if text is None:
        return None
    tag = f"m:{path}={text}"
    return tag if len(tag) <= MAX_TAG_LENGTH and "\x00" not in tag else None


def metadata_tags(metadata: Mapping[str, Any] | None) -> list[str] | None:
    """The tags of a checkpoint's writes, one per scalar of its JSON metadata; None when
    some scalar a filter could name cannot have one (its order key is then untagged)."""
    if metadata is None:
        return None
    tags: list[str] = []
    complete = True
    for path, value in _leaves(metadata, "", 1):
        if value is None:  # a filter for None is never looked up by tag
            continue
        tag = None if value is ... else _tag(path, value)
        if tag is None:
            complete = False
        elif tag not in tags:
            tags.append(tag)
    return tags if complete and len(tags) <= MAX_TAGS else None


def filter_tags(wanted: Mapping[str, Any]) -> list[str]:
    """Tags every tagged checkpoint matching ``wanted`` carries: one per scalar the filter
    names (a dict value stands for all its scalars)."""
    tags: list[str] = []
    for key, value in wanted.items():
        pairs: Iterable[tuple[str, Any]]
        pairs = _leaves(value, key, 1) if isinstance(value, dict) else [(key, value)]
        for path, scalar in pairs:
            if scalar is not ... and scalar is not None and (tag := _tag(path, scalar)):
                tags.append(tag)
    return list(dict.fromkeys(tags))


# -- reading ----------------------------------------------------------------------------------


def _pages(agent: AgentRuntime, prefix: str, tags: list[str]) -> Iterator[MemoryItem]:
    """Every order key under ``prefix`` (with ``tags``), newest first, in growing pages."""
    offset, size = 0, FIRST_PAGE
    while True:
        page = agent.search(prefix, tags=tags or None, limit=size, offset=offset)
        yield from page
        if len(page) < size:
            return
        offset += size
        size = min(size * 4, LAST_PAGE)


def newest_first(agent: AgentRuntime, wanted: Mapping[str, Any] | None) -> Iterator[OrderRow]:
    """Checkpoints of every thread by id, newest first: all of them, or for a ``wanted``
    filter those whose tags may match (the caller checks each)."""
    tags = filter_tags(wanted) if wanted else []
    tagged = _pages(agent, ORDER, tags)
    untagged = _pages(agent, UNTAGGED_ORDER, [])
    for item in heapq.merge(tagged, untagged, key=_newest_first):
        row = _parse(item)
        if row is not None:
            yield row


def _newest_first(item: MemoryItem) -> str:
    return item.key[len(ORDER) :]  # both prefixes are as long
