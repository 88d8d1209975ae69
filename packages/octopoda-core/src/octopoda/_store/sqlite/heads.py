"""The key heads a commit plan reads on SQLite: one statement per namespace and 500 keys
for the versions of a batch (``remember_many``), one per key where a stale check needs the
head's author too."""

from __future__ import annotations

import sqlite3
from typing import Any, Final

from ..planner import NO_VERSION, CommitReads, KeyHead
from . import schema as q

__all__ = ["key_head", "max_versions"]

_KEYS_PER_READ: Final = 500


def key_head(
    conn: sqlite3.Connection,
    slot: tuple[str, str],
    needs: CommitReads,
    first: tuple[str, str] | None,
    head: tuple[Any, ...],
    versions: dict[tuple[str, str], int],
) -> KeyHead:
    if slot in needs.authored:  # a stale check: the head's author too
        found = conn.execute(q.READS.key_head, slot).fetchone()
        return NO_VERSION if found is None else KeyHead(*found)
    if slot == first:  # read with the agent's head
        return KeyHead(head[2] or 0)
    return KeyHead(versions.get(slot, 0))


def max_versions(conn: sqlite3.Connection, slots: list[tuple[str, str]]) -> dict[Any, int]:
    """The newest version of each (namespace, key) of ``slots`` that has one: a statement
    per namespace and 500 keys (``remember_many`` of a thousand keys: two reads, not a
    thousand)."""
    by_namespace: dict[str, list[str]] = {}
    for namespace, key in slots:
        by_namespace.setdefault(namespace, []).append(key)
    out: dict[Any, int] = {}
    for namespace, keys in by_namespace.items():
        for start in range(0, len(keys), _KEYS_PER_READ):
            chunk = keys[start : start + _KEYS_PER_READ]
            sql = q.MAX_VERSIONS.format(marks=", ".join("?" * len(chunk)))
            for key, version in conn.execute(sql, (namespace, *chunk)):
                out[(namespace, key)] = version
    return out
