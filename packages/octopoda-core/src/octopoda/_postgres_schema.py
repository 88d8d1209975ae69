"""PostgreSQL schema and SQL: named, append-only migrations, statements and pure builders.

Never edit a migration that has shipped; add another. The tables are the SQLite schema's
(``_sqlite_schema``), with the same migration names, in PostgreSQL's dialect:

* names (agent ids, namespaces, keys, snapshot and space names) are ``text COLLATE "C"``:
  compared and ordered by their UTF-8 bytes, exactly like SQLite's BINARY collation,
  whatever the database's locale;
* a value is stored in ``value_text`` (``json``: the exact JSON text, so its SHA-256 in the
  audit event is over the same bytes) or ``value_bytea`` (``bytes``); a tombstone and an
  erased version have neither;
* tags and space members are ``jsonb`` arrays (tags are queried by containment);
* times are ``double precision`` Unix seconds, as in SQLite; ids are identity columns.

Every migration runs in one transaction with its ``schema_migrations`` record, under a
transaction-level advisory lock (:data:`MIGRATION_LOCK`), so several hosts opening one empty
database at once apply each migration exactly once.

Nothing here does I/O: ``PostgresStore`` (``_postgres``) executes these statements.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any, Final

from ._store import (
    CreateSpace,
    EraseKey,
    MemoryWrite,
    Op,
    ResolveConflict,
    SendMessage,
    prefix_upper_bound,
)

__all__ = [
    "CREATE_MIGRATIONS_TABLE",
    "KEY_LOCK_LIMIT",
    "MIGRATIONS",
    "MIGRATION_LOCK",
    "TABLES",
    "current_query",
    "events_query",
    "lock_plan",
    "member_error",
    "messages_query",
    "object_locks",
    "spaces_touched",
]

# pg_advisory_xact_lock key serialising migrations in one database: ASCII "octopoda" as a
# big-endian signed 64-bit integer. Commits lock hashed keys (see lock_plan).
MIGRATION_LOCK: Final = int.from_bytes(b"octopoda", "big", signed=True)

# The tables Octopoda owns, besides schema_migrations (for info() and integrity_check()).
TABLES: Final = (
    "agents",
    "memories",
    "events",
    "snapshots",
    "signed_heads",
    "spaces",
    "conflicts",
    "messages",
)

CREATE_MIGRATIONS_TABLE: Final = (
    "CREATE TABLE IF NOT EXISTS schema_migrations"
    ' (name text COLLATE "C" PRIMARY KEY, applied_at double precision NOT NULL)'
)

MIGRATIONS: Final[tuple[tuple[str, tuple[str, ...]], ...]] = (
    (
        "0001_initial",
        (
            """CREATE TABLE agents (
                id          text COLLATE "C" PRIMARY KEY,
                created_at  double precision NOT NULL,
                status      text NOT NULL DEFAULT 'active',
                metadata    jsonb,
                head_seq    bigint NOT NULL DEFAULT 0,
                head_hash   text NOT NULL,
                last_active double precision
            )""",
            """CREATE TABLE memories (
                namespace   text COLLATE "C" NOT NULL,
                key         text COLLATE "C" NOT NULL,
                version     bigint NOT NULL,
                encoding    text NOT NULL,
                value_text  text,
                value_bytea bytea,
                tags        jsonb,
                author      text COLLATE "C",
                created_at  double precision NOT NULL,
                expires_at  double precision,
                seq         bigint NOT NULL,
                erased      boolean NOT NULL DEFAULT false,
                PRIMARY KEY (namespace, key, version)
            )""",
            """CREATE TABLE events (
                agent       text COLLATE "C" NOT NULL,
                seq         bigint NOT NULL,
                time        double precision NOT NULL,
                kind        text COLLATE "C" NOT NULL,
                payload     text NOT NULL,
                prev_hash   text NOT NULL,
                hash        text NOT NULL,
                PRIMARY KEY (agent, seq)
            )""",
            """CREATE TABLE snapshots (
                agent       text COLLATE "C" NOT NULL,
                name        text COLLATE "C" NOT NULL,
                seq         bigint NOT NULL,
                created_at  double precision NOT NULL,
                PRIMARY KEY (agent, name)
            )""",
        ),
    ),
    (
        "0002_signed_heads",
        (
            """CREATE TABLE signed_heads (
                agent       text COLLATE "C" NOT NULL,
                seq         bigint NOT NULL,
                public_key  text COLLATE "C" NOT NULL,
                hash        text NOT NULL,
                signature   text NOT NULL,
                created_at  double precision NOT NULL,
                PRIMARY KEY (agent, seq, public_key)
            )""",
        ),
    ),
    (
        "0003_agent_status_reason",
        ("ALTER TABLE agents ADD COLUMN status_reason text",),
    ),
    (
        "0004_spaces_conflicts_messages",
        (
            """CREATE TABLE spaces (
                name        text COLLATE "C" PRIMARY KEY,
                created_at  double precision NOT NULL,
                created_by  text COLLATE "C" NOT NULL,
                members     jsonb
            )""",
            """CREATE TABLE conflicts (
                id           bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
                namespace    text COLLATE "C" NOT NULL,
                key          text COLLATE "C" NOT NULL,
                version      bigint NOT NULL,
                author       text COLLATE "C" NOT NULL,
                head_version bigint NOT NULL,
                head_author  text COLLATE "C",
                seen_version bigint,
                created_at   double precision NOT NULL,
                seq          bigint NOT NULL,
                status       text NOT NULL DEFAULT 'open',
                resolution   text,
                resolved_by  text COLLATE "C",
                resolved_at  double precision
            )""",
            "CREATE INDEX conflicts_by_namespace ON conflicts (namespace, status, id)",
            """CREATE TABLE messages (
                id           bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
                sender       text COLLATE "C" NOT NULL,
                recipient    text COLLATE "C",
                space        text COLLATE "C",
                message_type text NOT NULL,
                body         text NOT NULL,
                body_sha256  text NOT NULL,
                created_at   double precision NOT NULL,
                read_at      double precision,
                seq          bigint NOT NULL
            )""",
            "CREATE INDEX messages_to ON messages (recipient, id)",
            "CREATE INDEX messages_from ON messages (sender, id)",
            "CREATE INDEX messages_in_space ON messages (space, id)",
        ),
    ),
)

# -- statements ---------------------------------------------------------------------------

COLS: Final = (
    "key, version, encoding, value_text, value_bytea, tags, created_at, expires_at, seq,"
    " author, erased"
)
AGENT_COLS: Final = "id, created_at, status, head_seq, head_hash, last_active, status_reason"
CONFLICT_COLS: Final = (
    "id, namespace, key, version, author, head_version, head_author, seen_version,"
    " created_at, seq, status, resolution, resolved_by, resolved_at"
)
MESSAGE_COLS: Final = (
    "id, sender, recipient, space, message_type, body, created_at, read_at, seq, body_sha256"
)

# A commit's first round trip (after BEGIN): locks, the agent row, its head, the heads of the
# keys written, and the checks of its operations.
LOCK: Final = (
    "SELECT count(CASE WHEN shared THEN pg_advisory_xact_lock_shared(id)"
    " ELSE pg_advisory_xact_lock(id) END)"
    " FROM unnest(%s::bigint[], %s::boolean[]) AS l(id, shared)"
)
# The agent's head, creating the agent on its first commit. Under the agent's lock, the row
# either exists and is visible to this statement, or the INSERT adds it: one row either way.
_HEAD_CTE: Final = (
    "WITH new AS (INSERT INTO agents (id, created_at, status, head_seq, head_hash)"
    " VALUES (%s, %s, 'active', 0, %s) ON CONFLICT (id) DO NOTHING RETURNING head_seq, head_hash),"
    " head AS (SELECT head_seq, head_hash FROM new"
    " UNION ALL SELECT head_seq, head_hash FROM agents WHERE id = %s)"
)
HEAD: Final = _HEAD_CTE + " SELECT head_seq, head_hash FROM head"
# The same, with the newest version and author of the one key written (params: HEAD's, then
# namespace, key).
HEAD_AND_KEY: Final = (
    _HEAD_CTE + " SELECT head.head_seq, head.head_hash, k.version, k.author FROM head"
    " LEFT JOIN LATERAL (SELECT version, author FROM memories WHERE namespace = %s AND key = %s"
    " ORDER BY version DESC LIMIT 1) k ON true"
)
KEY_HEADS: Final = (
    "SELECT h.version, h.author FROM unnest(%s::text[], %s::text[]) WITH ORDINALITY"
    " AS s(namespace, key, i) LEFT JOIN LATERAL (SELECT version, author FROM memories m"
    " WHERE m.namespace = s.namespace AND m.key = s.key ORDER BY version DESC LIMIT 1) h"
    " ON true ORDER BY s.i"
)
SNAPSHOT_TAKEN: Final = "SELECT 1 FROM snapshots WHERE agent = %s AND name = %s"
NEXT_MESSAGE_ID: Final = "SELECT nextval(pg_get_serial_sequence('messages', 'id'))"
NEXT_CONFLICT_IDS: Final = (
    "SELECT nextval(pg_get_serial_sequence('conflicts', 'id')) FROM generate_series(1, %s)"
)
UNREAD_MESSAGE: Final = (
    "SELECT 1 FROM messages WHERE id = %s AND recipient = %s AND read_at IS NULL"
)
SPACES_NAMED: Final = (
    "SELECT name, members, created_by FROM spaces WHERE name = ANY(%s::text[]) ORDER BY name"
)
CONFLICT_STATE: Final = "SELECT status, resolution FROM conflicts WHERE id = %s"
# The versions of a key that still hold a value (params: namespace, key), for an erasure.
ERASABLE: Final = (
    "SELECT array_agg(version ORDER BY version) FROM memories WHERE namespace = %s AND key = %s"
    " AND NOT erased AND encoding <> 'tombstone'"
)

# The second round trip: rows, operations, event, head; then COMMIT.
INSERT_MEMORY: Final = (
    "INSERT INTO memories (namespace, key, version, encoding, value_text, value_bytea, tags,"
    " author, created_at, expires_at, seq) VALUES (%s, %s, %s, %s, %s, %s, %s::jsonb, %s, %s,"
    " %s, %s)"
)
INSERT_CONFLICT: Final = (
    "INSERT INTO conflicts (id, namespace, key, version, author, head_version, head_author,"
    " seen_version, created_at, seq) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
)
INSERT_MESSAGE: Final = (
    "INSERT INTO messages (id, sender, recipient, space, message_type, body, body_sha256,"
    " created_at, seq) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)"
)
MARK_READ: Final = "UPDATE messages SET read_at = %s WHERE id = %s AND recipient = %s"
INSERT_SPACE: Final = (
    "INSERT INTO spaces (name, created_at, created_by, members) VALUES (%s, %s, %s, %s::jsonb)"
)
RESOLVE_CONFLICT: Final = (
    "UPDATE conflicts SET status = 'resolved', resolution = %s, resolved_by = %s,"
    " resolved_at = %s WHERE id = %s"
)
# An erasure (params: namespace, key, versions). The old row versions stay in the table as
# dead tuples until VACUUM removes them (docs/audit.md).
ERASE: Final = (
    "UPDATE memories SET value_text = NULL, value_bytea = NULL, erased = true"
    " WHERE namespace = %s AND key = %s AND version = ANY(%s::bigint[])"
)
# The event and the agent's new head, in one statement.
INSERT_EVENT: Final = (
    "WITH event AS (INSERT INTO events (agent, seq, time, kind, payload, prev_hash, hash)"
    " VALUES (%s, %s, %s, %s, %s, %s, %s))"
    " UPDATE agents SET head_seq = %s, head_hash = %s, last_active = %s WHERE id = %s"
)
SET_STATUS: Final = "UPDATE agents SET status = %s, status_reason = %s WHERE id = %s"
INSERT_SNAPSHOT: Final = (
    "INSERT INTO snapshots (agent, name, seq, created_at) VALUES (%s, %s, %s, %s)"
)
REPLACE_SNAPSHOT: Final = (
    INSERT_SNAPSHOT + " ON CONFLICT (agent, name) DO UPDATE"
    " SET seq = EXCLUDED.seq, created_at = EXCLUDED.created_at"
)
EVENT_HASH: Final = "SELECT hash FROM events WHERE agent = %s AND seq = %s"

# Reads.
LATEST: Final = (
    f"SELECT {COLS} FROM memories WHERE namespace = %s AND key = %s ORDER BY version DESC LIMIT 1"
)
LATEST_AS_OF: Final = (
    f"SELECT {COLS} FROM memories WHERE namespace = %s AND key = %s AND seq <= %s"
    " ORDER BY version DESC LIMIT 1"
)
VERSION: Final = f"SELECT {COLS} FROM memories WHERE namespace = %s AND key = %s AND version = %s"
HISTORY: Final = (
    f"SELECT {COLS} FROM memories WHERE namespace = %s AND key = %s ORDER BY version DESC"
)
ALL_VERSIONS: Final = (
    f"SELECT {COLS} FROM memories WHERE namespace = %s AND (key, version) > (%s, %s)"
    " ORDER BY key, version LIMIT %s"
)
CHAIN_CHUNK: Final = (
    "SELECT seq, time, kind, payload, prev_hash, hash FROM events"
    " WHERE agent = %s AND seq > %s ORDER BY seq LIMIT %s"
)
AGENT: Final = f"SELECT {AGENT_COLS} FROM agents WHERE id = %s"
AGENTS: Final = f"SELECT {AGENT_COLS} FROM agents ORDER BY id"
SNAPSHOT: Final = (
    "SELECT agent, name, seq, created_at FROM snapshots WHERE agent = %s AND name = %s"
)
SNAPSHOTS: Final = (
    "SELECT agent, name, seq, created_at FROM snapshots WHERE agent = %s ORDER BY seq, name"
)
SPACE: Final = "SELECT name, created_at, created_by, members FROM spaces WHERE name = %s"
SPACES: Final = "SELECT name, created_at, created_by, members FROM spaces ORDER BY name"
CONFLICT: Final = f"SELECT {CONFLICT_COLS} FROM conflicts WHERE id = %s"
MESSAGE: Final = f"SELECT {MESSAGE_COLS} FROM messages WHERE id = %s"
# The newest direct messages an agent sent or received (params: party x3, limit), newest first.
PARTY_MESSAGES: Final = (
    f"SELECT * FROM (SELECT {MESSAGE_COLS} FROM messages WHERE recipient = %s"
    f" UNION ALL SELECT {MESSAGE_COLS} FROM messages WHERE sender = %s"
    " AND recipient IS NOT NULL AND recipient <> %s) m ORDER BY id DESC LIMIT %s"
)
PUT_SIGNED_HEAD: Final = (
    "INSERT INTO signed_heads (agent, seq, public_key, hash, signature, created_at)"
    " VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (agent, seq, public_key) DO UPDATE"
    " SET hash = EXCLUDED.hash, signature = EXCLUDED.signature,"
    " created_at = EXCLUDED.created_at RETURNING seq"
)
SIGNED_HEADS: Final = (
    "SELECT agent, seq, public_key, hash, signature, created_at FROM signed_heads"
    " WHERE agent = %s ORDER BY seq, public_key"
)
VALUE_BYTES: Final = (
    "SELECT COALESCE(SUM(COALESCE(octet_length(value_text), octet_length(value_bytea), 0)), 0)"
    " FROM memories WHERE namespace = %s"
)

# Migrations and maintenance.
HAS_MIGRATIONS: Final = "SELECT to_regclass('schema_migrations') IS NOT NULL"
APPLIED_MIGRATIONS: Final = "SELECT name FROM schema_migrations ORDER BY name"
MIGRATION_APPLIED: Final = "SELECT 1 FROM schema_migrations WHERE name = %s"
RECORD_MIGRATION: Final = "INSERT INTO schema_migrations (name, applied_at) VALUES (%s, %s)"
LOCK_MIGRATIONS: Final = f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK})"
MISSING_TABLES: Final = "SELECT t FROM unnest(%s::text[]) AS t WHERE to_regclass(t) IS NULL"
BAD_HEADS: Final = (
    "SELECT a.id, a.head_seq, a.head_hash, e.seq, e.hash FROM agents a LEFT JOIN LATERAL"
    " (SELECT seq, hash FROM events WHERE agent = a.id ORDER BY seq DESC LIMIT 1) e ON true"
    " WHERE a.head_seq <> COALESCE(e.seq, 0) OR a.head_hash <> COALESCE(e.hash, %s)"
    " ORDER BY a.id LIMIT 20"
)
INFO: Final = (
    "SELECT current_database(), current_schema(), current_setting('server_version'),"
    " (SELECT COALESCE(SUM(pg_total_relation_size(to_regclass(t))), 0)"
    "  FROM unnest(%s::text[]) AS t)"
)

# -- pure builders ------------------------------------------------------------------------

SPACE_PREFIX: Final = "space:"

# Past this many keys in one commit, its namespaces are locked exclusively instead of key by
# key, so that an import of 10,000 keys does not exhaust the server's lock table.
KEY_LOCK_LIMIT: Final = 32


def lock_id(domain: bytes, *parts: str) -> int:
    """A signed 64-bit advisory lock key for a name (a collision only serialises more)."""
    h = hashlib.blake2b(domain, digest_size=8, person=b"octopoda-lock")
    for part in parts:
        h.update(b"\x00" + part.encode("utf-8", "surrogatepass"))
    return int.from_bytes(h.digest(), "big", signed=True)


def spaces_touched(slots: Sequence[tuple[str, str]], ops: Sequence[Op]) -> list[str]:
    """The shared spaces a commit writes to, sends to or creates (their rows are read, for
    membership and existence, inside the commit)."""
    names = {ns[len(SPACE_PREFIX) :] for ns, _ in slots if ns.startswith(SPACE_PREFIX)}
    for op in ops:
        if isinstance(op, SendMessage) and op.space is not None:
            names.add(op.space)
        elif isinstance(op, CreateSpace):
            names.add(op.name)
    return sorted(names)


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


def member_error(agent: str, space: str, row: tuple[Any, ...] | None) -> str | None:
    """Why ``agent`` may not write to or broadcast in ``space`` (row: members, created_by),
    or None (as SqliteStore decides it)."""
    if row is None or row[0] is None or agent in row[0]:
        return None
    return f"agent {agent!r} is not a member of space {space!r}; ask its creator {row[1]!r}"


def current_query(
    namespace: str,
    *,
    prefix: str = "",
    tags: Sequence[str] = (),
    as_of_seq: int | None = None,
    now: float | None = None,
    limit: int | None = None,
    offset: int = 0,
    include_dead: bool = False,
) -> tuple[str, list[Any]]:
    """The SQL and parameters for the latest version per key (see ``Store.current``)."""
    inner = ["namespace = %s"]
    params: list[Any] = [namespace]
    if prefix:
        inner.append("key >= %s")
        params.append(prefix)
        upper = prefix_upper_bound(prefix)
        if upper is not None:
            inner.append("key < %s")
            params.append(upper)
    if as_of_seq is not None:
        inner.append("seq <= %s")
        params.append(as_of_seq)
    sql = (
        f"SELECT {COLS} FROM (SELECT DISTINCT ON (key) {COLS} FROM memories"
        f" WHERE {' AND '.join(inner)} ORDER BY key, version DESC) m"
    )
    outer: list[str] = []
    if not include_dead:
        outer.append("encoding <> 'tombstone' AND NOT erased")
        if now is not None:
            outer.append("(expires_at IS NULL OR expires_at > %s)")
            params.append(now)
    if tags:
        outer.append("tags @> %s::jsonb")
        params.append(json.dumps(list(tags), ensure_ascii=False))
    if outer:
        sql += " WHERE " + " AND ".join(outer)
    sql += " ORDER BY key"
    if limit is not None:
        sql += " LIMIT %s"
        params.append(limit)
    if offset:
        sql += " OFFSET %s"
        params.append(offset)
    return sql, params


def events_query(
    *,
    until_seq: int | None,
    since: float | None,
    until: float | None,
    kinds: Sequence[str],
) -> tuple[str, list[Any]]:
    """SQL for one chunk of an agent's events. Its parameters are ``agent, after_seq,
    *extra, size``; the list returned is ``extra``."""
    clauses = ["agent = %s", "seq > %s"]
    extra: list[Any] = []
    if until_seq is not None:
        clauses.append("seq <= %s")
        extra.append(until_seq)
    if since is not None:
        clauses.append("time >= %s")
        extra.append(since)
    if until is not None:
        clauses.append("time < %s")
        extra.append(until)
    if kinds:
        clauses.append("kind = ANY(%s::text[])")
        extra.append(list(kinds))
    sql = (
        "SELECT agent, seq, time, kind, payload, prev_hash, hash FROM events WHERE "
        + " AND ".join(clauses)
        + " ORDER BY seq LIMIT %s"
    )
    return sql, extra


def conflicts_query(namespace: str, key: str | None, status: str | None) -> tuple[str, list[Any]]:
    sql = f"SELECT {CONFLICT_COLS} FROM conflicts WHERE namespace = %s"
    params: list[Any] = [namespace]
    if key is not None:
        sql += " AND key = %s"
        params.append(key)
    if status is not None:
        sql += " AND status = %s"
        params.append(status)
    return sql + " ORDER BY id", params


def messages_query(
    *,
    recipient: str | None,
    space: str | None,
    unread_only: bool,
    since: float | None,
    after_id: int,
    limit: int | None,
) -> tuple[str, list[Any]]:
    """Direct messages to ``recipient`` or broadcasts to ``space`` (exactly one given)."""
    sql = f"SELECT {MESSAGE_COLS} FROM messages WHERE id > %s"
    params: list[Any] = [after_id]
    if recipient is not None:
        sql += " AND recipient = %s"
        params.append(recipient)
    else:
        sql += " AND space = %s AND recipient IS NULL"
        params.append(space)
    if unread_only:
        sql += " AND read_at IS NULL"
    if since is not None:
        sql += " AND created_at >= %s"
        params.append(since)
    sql += " ORDER BY id"
    if limit is not None:
        sql += " LIMIT %s"
        params.append(limit)
    return sql, params


def memory_row(w: MemoryWrite, version: int, author: str, seq: int, t: float) -> tuple[Any, ...]:
    """The parameters of :data:`INSERT_MEMORY` for one write."""
    return (
        w.namespace,
        w.key,
        version,
        w.encoding,
        w.data if w.encoding == "json" else None,
        w.data if w.encoding == "bytes" else None,
        json.dumps(list(w.tags), ensure_ascii=False) if w.tags else None,
        author,
        t if w.created_at is None else w.created_at,
        w.expires_at,
        seq,
    )
