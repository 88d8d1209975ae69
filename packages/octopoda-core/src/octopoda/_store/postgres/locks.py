"""The advisory locks of a PostgreSQL commit, in one global order (pure: no I/O).

A commit takes transaction-level advisory locks before it reads anything: the agent (its
audit-chain head), each namespace written (shared) and each key written (exclusive), and
the objects its operations touch. Taking them in one order (agent, namespaces, keys,
objects; by id within each) means commits never wait for each other in a cycle; each
statement after the locks sees every commit that released them. :func:`lock_statement`
takes them in one statement: one function call each in a select list, or past
:data:`LOCK_CALLS_LIMIT` locks, :data:`LOCK` over two arrays.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Sequence
from typing import Any, Final

from ..ops import SPACE_PREFIX, CreateSpace, EraseKey, Op, ResolveConflict, SendMessage

__all__ = [
    "KEY_LOCK_LIMIT",
    "LOCK",
    "LOCK_CALLS_LIMIT",
    "lock_id",
    "lock_plan",
    "lock_statement",
    "object_locks",
]

# params: the lock ids, and whether each is shared (see lock_plan)
LOCK: Final = (
    "SELECT count(CASE WHEN shared THEN pg_advisory_xact_lock_shared(id)"
    " ELSE pg_advisory_xact_lock(id) END)"
    " FROM unnest(%s::bigint[], %s::boolean[]) AS l(id, shared)"
)
# Up to this many locks, a commit takes them with one call each in one SELECT (a remember:
# three), which the server runs in about half the time of LOCK's arrays.
LOCK_CALLS_LIMIT: Final = 8

# Past this many keys in one commit, its namespaces are locked exclusively instead of key by
# key, so that an import of 10,000 keys does not exhaust the server's lock table.
KEY_LOCK_LIMIT: Final = 32


@functools.lru_cache(maxsize=4096)  # (an agent's and its namespace's, at every commit)
def lock_id(domain: bytes, *parts: str) -> int:
    """A signed 64-bit advisory lock key for a name (a collision only serialises more)."""
    h = hashlib.blake2b(domain, digest_size=8, person=b"octopoda-lock")
    for part in parts:
        h.update(b"\x00" + part.encode("utf-8", "surrogatepass"))
    return int.from_bytes(h.digest(), "big", signed=True)


def object_locks(slots: Sequence[tuple[str, str]], ops: Sequence[Op]) -> list[tuple[int, bool]]:
    """Locks beyond memory keys, as ``(id, shared)`` sorted by id: a space (shared by its
    writers and senders, exclusive for its creation, so that membership cannot change under
    a write); an inbox (so that message ids reach it in commit order and polling by
    ``after_id`` misses nothing); a conflict being resolved."""
    locks: dict[int, bool] = {}

    def add(lock: int, shared: bool) -> None:
        locks[lock] = locks.get(lock, True) and shared  # exclusive wins

    for ns, _ in slots:
        if ns.startswith(SPACE_PREFIX):
            add(lock_id(b"space", ns[len(SPACE_PREFIX) :]), True)
    for op in ops:
        if isinstance(op, SendMessage):
            if op.recipient is not None:
                add(lock_id(b"inbox", op.recipient), False)
            else:
                add(lock_id(b"space-inbox", op.space or ""), False)
            if op.space is not None:
                add(lock_id(b"space", op.space), True)
        elif isinstance(op, CreateSpace):
            add(lock_id(b"space", op.name), False)
        elif isinstance(op, ResolveConflict):
            add(lock_id(b"conflict", str(op.conflict_id)), False)
    return sorted(locks.items())


@functools.lru_cache(maxsize=256)
def _lock_calls(shared: tuple[bool, ...]) -> str:
    calls = (
        "pg_advisory_xact_lock_shared(%s::bigint)" if s else "pg_advisory_xact_lock(%s::bigint)"
        for s in shared
    )
    return "SELECT " + ", ".join(calls)


def lock_statement(ids: Sequence[int], shared: Sequence[bool]) -> tuple[str, Sequence[Any]]:
    """The statement taking the locks of :func:`lock_plan`, in its order, and its parameters:
    up to :data:`LOCK_CALLS_LIMIT` locks, one call each (a select list is evaluated left to
    right); more, :data:`LOCK` over arrays."""
    if len(ids) > LOCK_CALLS_LIMIT:
        return LOCK, (list(ids), list(shared))
    return _lock_calls(tuple(shared)), list(ids)


def lock_plan(
    agent: str, slots: Sequence[tuple[str, str]], ops: Sequence[Op] = ()
) -> tuple[list[int], list[bool]]:
    """The advisory locks a commit takes, in the one global order, and whether each is shared.

    The agent's lock (exclusive) serialises its chain head. Each namespace written (or
    erased in) is locked shared and each key written or erased exclusively; past
    :data:`KEY_LOCK_LIMIT` keys, the namespaces are locked exclusively instead, which
    excludes every key writer there. Then the locks of
    :func:`object_locks`. Every commit takes its locks in the order agent, namespaces, keys,
    objects (by id within each), so commits never wait for each other in a cycle.
    """
    erased = [(op.namespace, op.key) for op in ops if isinstance(op, EraseKey)]
    if erased:
        slots = list(dict.fromkeys([*slots, *erased]))
    bulk = len(slots) > KEY_LOCK_LIMIT
    namespaces = sorted({lock_id(b"namespace", ns) for ns, _ in slots})
    keys = [] if bulk else sorted({lock_id(b"key", ns, key) for ns, key in slots})
    others = object_locks(slots, ops)
    ids = [lock_id(b"agent", agent), *namespaces, *keys, *(lock for lock, _ in others)]
    shared = [
        False,
        *([not bulk] * len(namespaces)),
        *([False] * len(keys)),
        *(mode for _, mode in others),
    ]
    return ids, shared
