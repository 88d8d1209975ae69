"""PostgreSQL schema and SQL: named, append-only migrations, the PostgreSQL
:class:`~octopoda._store.reads.Dialect`, and the commit's statements (pure: no I/O;
``PostgresStore`` executes them).

Never edit a migration that has shipped; add another. The tables are the SQLite schema's
(:mod:`octopoda._store.sqlite.schema`), with the same migration names, in PostgreSQL's
dialect:

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
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final

from ..ops import MemoryWrite
from ..reads import Dialect, ReadSql
from ..rows import StoredRow, checked_row, checked_tags
from ..run_reads import RunSql
from ..search_reads import SearchSql

__all__ = [
    "CREATE_MIGRATIONS_TABLE",
    "MIGRATIONS",
    "MIGRATION_LOCK",
    "READS",
    "RUN_READS",
    "SEARCH",
    "TABLES",
    "PostgresDialect",
    "memory_row",
]

# pg_advisory_xact_lock key serialising migrations in one database: ASCII "octopoda" as a
# big-endian signed 64-bit integer. Commits lock hashed keys (see lock_plan).
MIGRATION_LOCK: Final = int.from_bytes(b"octopoda", "big", signed=True)

# The text search configuration of the search index (English stemming and stopwords).
TEXT_SEARCH_CONFIG: Final = "'english'::regconfig"
# Text past this many characters is not indexed (a tsvector holds at most 1 MB).
MAX_INDEXED_CHARS: Final = 200_000

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
    "runs",
    "memory_search",
    "search_marks",
    "vector_model",
    "memory_vectors",
    "vector_marks",
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
    (
        "0005_runs",
        (
            'ALTER TABLE events ADD COLUMN run_id text COLLATE "C"',
            "CREATE INDEX events_by_run ON events (agent, run_id, seq) WHERE run_id IS NOT NULL",
            'ALTER TABLE messages ADD COLUMN run_id text COLLATE "C"',
            """CREATE TABLE runs (
                agent         text COLLATE "C" NOT NULL,
                run_id        text COLLATE "C" NOT NULL,
                status        text NOT NULL,
                status_reason text,
                changed_at    double precision NOT NULL,
                changed_seq   bigint NOT NULL,
                PRIMARY KEY (agent, run_id)
            )""",
        ),
    ),
    (
        "0006_search",
        (
            # One row per key with a current value: its newest version and its text's
            # tsvector (search_reads.py).
            """CREATE TABLE memory_search (
                namespace   text COLLATE "C" NOT NULL,
                key         text COLLATE "C" NOT NULL,
                version     bigint NOT NULL,
                document    tsvector NOT NULL,
                PRIMARY KEY (namespace, key)
            )""",
            "CREATE INDEX memory_search_document ON memory_search USING GIN (document)",
            # The index of the memories already stored (document_text's text, in SQL, its
            # ASCII punctuation made spaces as index_words does; a JSON text jsonb cannot
            # hold, with \u0000, is indexed by its key only).
            f"""INSERT INTO memory_search (namespace, key, version, document)
                SELECT m.namespace, m.key, m.version, to_tsvector({TEXT_SEARCH_CONFIG},
                  regexp_replace(m.key || CASE WHEN m.encoding = 'json'
                  AND m.value_text NOT LIKE '%\\\\u0000%'
                  THEN COALESCE((SELECT ' ' || string_agg(s #>> '{{}}', ' ')
                    FROM jsonb_path_query(m.value_text::jsonb, 'strict $.**') s
                    WHERE jsonb_typeof(s) = 'string'), '') ELSE '' END,
                  '[[:punct:][:space:]]+', ' ', 'g'))
                FROM (SELECT DISTINCT ON (namespace, key) namespace, key, version, encoding,
                      value_text, erased FROM memories ORDER BY namespace, key, version DESC) m
                WHERE m.encoding <> 'tombstone' AND NOT m.erased""",
            # Per agent, the seq of the newest event indexed (postgres/search_index.py).
            """CREATE TABLE search_marks (
                agent       text COLLATE "C" PRIMARY KEY,
                seq         bigint NOT NULL
            )""",
            "INSERT INTO search_marks (agent, seq) SELECT id, head_seq FROM agents",
        ),
    ),
    (
        "0007_vectors",
        (
            # The model whose vectors the store holds (one row; none: no vectors yet).
            """CREATE TABLE vector_model (
                id          integer PRIMARY KEY CHECK (id = 1),
                model       text NOT NULL,
                dimension   integer NOT NULL
            )""",
            # One vector per key, of the version it was made from (vector_reads.py). Its
            # pgvector column `embedding vector(dimension)` and HNSW index are added when
            # the first model is recorded (postgres/vector_index.py): a database without
            # pgvector migrates, and only a search by meaning needs the extension.
            """CREATE TABLE memory_vectors (
                namespace   text COLLATE "C" NOT NULL,
                key         text COLLATE "C" NOT NULL,
                version     bigint NOT NULL,
                PRIMARY KEY (namespace, key)
            )""",
            # Per agent, the seq of the newest event embedded (none: nothing embedded yet).
            """CREATE TABLE vector_marks (
                agent       text COLLATE "C" PRIMARY KEY,
                seq         bigint NOT NULL
            )""",
        ),
    ),
    (
        "0008_memory_kind",
        # What a version is ("fact", "preference", ...: remember(kind=)); NULL: no kind.
        ("ALTER TABLE memories ADD COLUMN kind text",),
    ),
)

# -- reads --------------------------------------------------------------------------------


class PostgresDialect(Dialect):
    """PostgreSQL's spelling: ``%s`` placeholders, ``value_text``/``value_bytea``, ``jsonb``
    tags and members, arrays for lists, ``DISTINCT ON`` for the newest version per key."""

    param = "%s"
    memory_columns = (
        "key, version, encoding, value_text, value_bytea, tags, created_at, expires_at, seq,"
        " author, erased, kind"
    )
    value_size = "COALESCE(octet_length(value_text), octet_length(value_bytea), 0)"

    def row(self, r: tuple[Any, ...]) -> StoredRow:
        return checked_row(
            StoredRow(
                key=r[0],
                version=r[1],
                encoding=r[2],
                data=r[3] if r[3] is not None else r[4],
                tags=checked_tags(r[5], r[0], r[1], r[8]) if r[5] else (),
                created_at=r[6],
                expires_at=r[7],
                seq=r[8],
                author=r[9],
                erased=r[10],
                kind=r[11],
            )
        )

    def members(self, value: Any) -> tuple[str, ...] | None:
        return None if value is None else tuple(value)

    def any_of(self, column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        return f"{column} = ANY(%s::text[])", [list(values)]

    def has_tags(self, tags: Sequence[str]) -> tuple[list[str], list[Any]]:
        return ["m.tags @> %s::jsonb"], [json.dumps(list(tags), ensure_ascii=False)]

    def latest_per_key(self, where: str, namespace: str) -> tuple[str, list[Any], str]:
        columns = ", ".join("m." + c for c in self.memory_columns.split(", "))
        sql = (
            f"SELECT {columns} FROM (SELECT DISTINCT ON (key) {self.memory_columns}"
            f" FROM memories WHERE {where} ORDER BY key, version DESC) m"
        )
        return sql, [], "m.key"


READS: Final = ReadSql(PostgresDialect())
RUN_READS: Final = RunSql(READS.dialect)
# Any of the words: plainto_tsquery (which never fails on any text) with its ANDs made ORs.
SEARCH: Final = SearchSql(
    READS.dialect,
    "SELECT {columns}, ts_rank(s.document, q.query) AS score FROM (SELECT"
    f" replace(plainto_tsquery({TEXT_SEARCH_CONFIG}, ?)::text, ' & ', ' | ')::tsquery AS query) q"
    " JOIN memory_search s ON s.document @@ q.query"
    " JOIN memories m ON m.namespace = s.namespace AND m.key = s.key AND m.version = s.version"
    " WHERE s.namespace = ?"
    # (a key a concurrent write moved on since the catch-up read it: indexed again next)
    " AND NOT EXISTS (SELECT 1 FROM memories n WHERE n.namespace = m.namespace"
    " AND n.key = m.key AND n.version > m.version)",
    " ".join,
)

# -- a commit -----------------------------------------------------------------------------

# Round trip 1 (after BEGIN and the locks of locks.lock_plan): the agent's head, the heads
# of the keys written; then the preconditions of reads.queue_preconditions.
# The agent's head: NULLs before its first commit, which inserts the agent row with its event
# (INSERT_FIRST_EVENT); under the agent's lock, no other commit can insert it meanwhile.
HEAD: Final = "SELECT a.head_seq, a.head_hash FROM (SELECT 1) o LEFT JOIN agents a ON a.id = %s"
# The same, with the newest version and author of the one key written (params: agent,
# namespace, key).
HEAD_AND_KEY: Final = (
    "SELECT a.head_seq, a.head_hash, k.version, k.author FROM (SELECT 1) o"
    " LEFT JOIN agents a ON a.id = %s"
    " LEFT JOIN LATERAL (SELECT version, author FROM memories WHERE namespace = %s AND key = %s"
    " ORDER BY version DESC LIMIT 1) k ON true"
)
KEY_HEADS: Final = (
    "SELECT h.version, h.author FROM unnest(%s::text[], %s::text[]) WITH ORDINALITY"
    " AS s(namespace, key, i) LEFT JOIN LATERAL (SELECT version, author FROM memories m"
    " WHERE m.namespace = s.namespace AND m.key = s.key ORDER BY version DESC LIMIT 1) h"
    " ON true ORDER BY s.i"
)
NEXT_MESSAGE_ID: Final = "SELECT nextval(pg_get_serial_sequence('messages', 'id'))"
# After planning, only when a write is stale: one more round trip for the conflicts' ids.
NEXT_CONFLICT_IDS: Final = (
    "SELECT nextval(pg_get_serial_sequence('conflicts', 'id')) FROM generate_series(1, %s)"
)

# Round trip 2: rows, operations, event, head; then COMMIT.
INSERT_MEMORY: Final = (
    "INSERT INTO memories (namespace, key, version, encoding, value_text, value_bytea, tags,"
    " author, created_at, expires_at, seq, kind) VALUES (%s, %s, %s, %s, %s, %s, %s::jsonb, %s,"
    " %s, %s, %s, %s)"
)
INSERT_CONFLICT: Final = (
    "INSERT INTO conflicts (id, namespace, key, version, author, head_version, head_author,"
    " seen_version, created_at, seq) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
)
INSERT_MESSAGE: Final = (
    "INSERT INTO messages (id, sender, recipient, space, message_type, body, body_sha256,"
    " run_id, created_at, seq) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
)
SET_RUN_STATUS: Final = (
    "INSERT INTO runs (agent, run_id, status, status_reason, changed_at, changed_seq)"
    " VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (agent, run_id) DO UPDATE SET"
    " status = EXCLUDED.status, status_reason = EXCLUDED.status_reason,"
    " changed_at = EXCLUDED.changed_at, changed_seq = EXCLUDED.changed_seq"
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
_EVENT: Final = (
    "WITH event AS (INSERT INTO events (agent, seq, time, kind, payload, prev_hash, hash,"
    " run_id) VALUES (%s, %s, %s, %s, %s, %s, %s, %s))"
)
# The event and the agent's new head, in one statement.
INSERT_EVENT: Final = (
    _EVENT + " UPDATE agents SET head_seq = %s, head_hash = %s, last_active = %s WHERE id = %s"
)
# An agent's first event and its row (params: INSERT_EVENT's, then the agent's created_at).
INSERT_FIRST_EVENT: Final = (
    _EVENT + " INSERT INTO agents (head_seq, head_hash, last_active, id, created_at, status)"
    " VALUES (%s, %s, %s, %s, %s, 'active')"
)
# A commit's one memory row and its event, in one statement (params: INSERT_MEMORY's, then
# the event statement's): a remember's round trip 2 is this and COMMIT.
INSERT_MEMORY_AND_EVENT: Final = (
    "WITH memory AS (" + INSERT_MEMORY + "), " + INSERT_EVENT.removeprefix("WITH ")
)
INSERT_MEMORY_AND_FIRST_EVENT: Final = (
    "WITH memory AS (" + INSERT_MEMORY + "), " + INSERT_FIRST_EVENT.removeprefix("WITH ")
)
SET_STATUS: Final = "UPDATE agents SET status = %s, status_reason = %s WHERE id = %s"
INSERT_SNAPSHOT: Final = (
    "INSERT INTO snapshots (agent, name, seq, created_at) VALUES (%s, %s, %s, %s)"
)
REPLACE_SNAPSHOT: Final = (
    INSERT_SNAPSHOT + " ON CONFLICT (agent, name) DO UPDATE"
    " SET seq = EXCLUDED.seq, created_at = EXCLUDED.created_at"
)
# The search index of one key (search_reads.py): its row replaced, or removed.
PUT_SEARCH: Final = (
    "INSERT INTO memory_search (namespace, key, version, document) VALUES (%s, %s, %s,"
    f" to_tsvector({TEXT_SEARCH_CONFIG}, %s)) ON CONFLICT (namespace, key) DO UPDATE"
    " SET version = EXCLUDED.version, document = EXCLUDED.document"
)
DROP_SEARCH: Final = "DELETE FROM memory_search WHERE namespace = %s AND key = %s"
DROP_VECTOR: Final = "DELETE FROM memory_vectors WHERE namespace = %s AND key = %s"
EVENT_HASH: Final = "SELECT hash FROM events WHERE agent = %s AND seq = %s"
PUT_SIGNED_HEAD: Final = (
    "INSERT INTO signed_heads (agent, seq, public_key, hash, signature, created_at)"
    " VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (agent, seq, public_key) DO UPDATE"
    " SET hash = EXCLUDED.hash, signature = EXCLUDED.signature,"
    " created_at = EXCLUDED.created_at RETURNING seq"
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
        w.kind,
    )
