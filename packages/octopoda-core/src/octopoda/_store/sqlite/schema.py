"""SQLite schema and SQL: named, append-only migrations (never edit one that has shipped; add
another), the SQLite :class:`~octopoda._store.reads.Dialect`, and the write statements with
their parameter builders. Nothing here does I/O: ``SqliteStore`` executes these.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final

from ..ops import MemoryWrite
from ..reads import Dialect, ReadSql
from ..rows import StoredRow, checked_row, parse_tags
from ..run_reads import RunSql
from ..search_reads import SearchSql

__all__ = [
    "APPLICATION_ID",
    "MIGRATIONS",
    "READS",
    "RUN_READS",
    "SEARCH",
    "SqliteDialect",
    "fts_match",
    "memory_row",
]

# Written into the file header (PRAGMA application_id) so `octopoda doctor` and the store can
# tell an Octopoda file from some other SQLite database. ASCII "Octo".
APPLICATION_ID: Final = 0x4F63746F

MIGRATIONS: Final[tuple[tuple[str, tuple[str, ...]], ...]] = (
    (
        "0001_initial",
        (
            f"PRAGMA application_id = {APPLICATION_ID}",
            """CREATE TABLE agents (
                id          TEXT PRIMARY KEY,
                created_at  REAL NOT NULL,
                status      TEXT NOT NULL DEFAULT 'active',
                metadata    TEXT,
                head_seq    INTEGER NOT NULL DEFAULT 0,
                head_hash   TEXT NOT NULL,
                last_active REAL
            ) WITHOUT ROWID""",
            """CREATE TABLE memories (
                namespace   TEXT NOT NULL,
                key         TEXT NOT NULL,
                version     INTEGER NOT NULL,
                encoding    TEXT NOT NULL,
                value       BLOB,
                tags        TEXT,
                author      TEXT,
                created_at  REAL NOT NULL,
                expires_at  REAL,
                seq         INTEGER NOT NULL,
                erased      INTEGER NOT NULL DEFAULT 0,
                PRIMARY KEY (namespace, key, version)
            ) WITHOUT ROWID""",
            """CREATE TABLE events (
                agent       TEXT NOT NULL,
                seq         INTEGER NOT NULL,
                time        REAL NOT NULL,
                kind        TEXT NOT NULL,
                payload     TEXT NOT NULL,
                prev_hash   TEXT NOT NULL,
                hash        TEXT NOT NULL,
                PRIMARY KEY (agent, seq)
            ) WITHOUT ROWID""",
            """CREATE TABLE snapshots (
                agent       TEXT NOT NULL,
                name        TEXT NOT NULL,
                seq         INTEGER NOT NULL,
                created_at  REAL NOT NULL,
                PRIMARY KEY (agent, name)
            ) WITHOUT ROWID""",
        ),
    ),
    (
        "0002_signed_heads",
        (
            """CREATE TABLE signed_heads (
                agent       TEXT NOT NULL,
                seq         INTEGER NOT NULL,
                public_key  TEXT NOT NULL,
                hash        TEXT NOT NULL,
                signature   TEXT NOT NULL,
                created_at  REAL NOT NULL,
                PRIMARY KEY (agent, seq, public_key)
            ) WITHOUT ROWID""",
        ),
    ),
    (
        "0003_agent_status_reason",
        ("ALTER TABLE agents ADD COLUMN status_reason TEXT",),
    ),
    (
        "0004_spaces_conflicts_messages",
        (
            """CREATE TABLE spaces (
                name        TEXT PRIMARY KEY,
                created_at  REAL NOT NULL,
                created_by  TEXT NOT NULL,
                members     TEXT
            ) WITHOUT ROWID""",
            """CREATE TABLE conflicts (
                id           INTEGER PRIMARY KEY AUTOINCREMENT,
                namespace    TEXT NOT NULL,
                key          TEXT NOT NULL,
                version      INTEGER NOT NULL,
                author       TEXT NOT NULL,
                head_version INTEGER NOT NULL,
                head_author  TEXT,
                seen_version INTEGER,
                created_at   REAL NOT NULL,
                seq          INTEGER NOT NULL,
                status       TEXT NOT NULL DEFAULT 'open',
                resolution   TEXT,
                resolved_by  TEXT,
                resolved_at  REAL
            )""",
            "CREATE INDEX conflicts_by_namespace ON conflicts (namespace, status, id)",
            """CREATE TABLE messages (
                id           INTEGER PRIMARY KEY AUTOINCREMENT,
                sender       TEXT NOT NULL,
                recipient    TEXT,
                space        TEXT,
                message_type TEXT NOT NULL,
                body         TEXT NOT NULL,
                body_sha256  TEXT NOT NULL,
                created_at   REAL NOT NULL,
                read_at      REAL,
                seq          INTEGER NOT NULL
            )""",
            "CREATE INDEX messages_to ON messages (recipient, id)",
            "CREATE INDEX messages_from ON messages (sender, id)",
            "CREATE INDEX messages_in_space ON messages (space, id)",
        ),
    ),
    (
        "0005_runs",
        (
            # the run an event or message belongs to (None: the agent's default run)
            "ALTER TABLE events ADD COLUMN run_id TEXT",
            "CREATE INDEX events_by_run ON events (agent, run_id, seq) WHERE run_id IS NOT NULL",
            "ALTER TABLE messages ADD COLUMN run_id TEXT",
            # a run's status, written with its paused or resumed event (SetRunStatus)
            """CREATE TABLE runs (
                agent         TEXT NOT NULL,
                run_id        TEXT NOT NULL,
                status        TEXT NOT NULL,
                status_reason TEXT,
                changed_at    REAL NOT NULL,
                changed_seq   INTEGER NOT NULL,
                PRIMARY KEY (agent, run_id)
            ) WITHOUT ROWID""",
        ),
    ),
    (
        "0006_search",
        (
            # One row per key with a current value: its newest version (search_reads.py).
            """CREATE TABLE search_docs (
                id          INTEGER PRIMARY KEY,
                namespace   TEXT NOT NULL,
                key         TEXT NOT NULL,
                version     INTEGER NOT NULL,
                UNIQUE (namespace, key)
            )""",
            # Its text (rowid = search_docs.id): key and the value's strings.
            "CREATE VIRTUAL TABLE search_text USING fts5(body, tokenize = "
            "'porter unicode61 remove_diacritics 2')",
            # The index of the memories already stored (document_text's text, in SQL).
            """INSERT INTO search_docs (namespace, key, version)
                SELECT m.namespace, m.key, m.version FROM memories m
                WHERE m.version = (SELECT MAX(x.version) FROM memories x
                                   WHERE x.namespace = m.namespace AND x.key = m.key)
                AND m.encoding <> 'tombstone' AND NOT m.erased""",
            """INSERT INTO search_text (rowid, body)
                SELECT d.id, d.key || CASE WHEN m.encoding = 'json' THEN COALESCE(
                    (SELECT char(10) || group_concat(j.value, char(10)) FROM json_tree(m.value) j
                     WHERE j.type = 'text'), '') ELSE '' END
                FROM search_docs d JOIN memories m
                ON m.namespace = d.namespace AND m.key = d.key AND m.version = d.version""",
            # Per agent, the seq of the newest event indexed (sqlite/search_index.py).
            """CREATE TABLE search_marks (
                agent       TEXT PRIMARY KEY,
                seq         INTEGER NOT NULL
            ) WITHOUT ROWID""",
            "INSERT INTO search_marks (agent, seq) SELECT id, head_seq FROM agents",
        ),
    ),
    (
        "0007_vectors",
        (
            # The model whose vectors the store holds (one row; none: no vectors yet).
            """CREATE TABLE vector_model (
                id          INTEGER PRIMARY KEY CHECK (id = 1),
                model       TEXT NOT NULL,
                dimension   INTEGER NOT NULL
            )""",
            # One unit vector (little-endian float32) per key, of the version it was made
            # from (vector_reads.py). AUTOINCREMENT: ids are never reused, so the newest id
            # of a namespace changes with every vector stored (the matrix cache).
            """CREATE TABLE memory_vectors (
                id          INTEGER PRIMARY KEY AUTOINCREMENT,
                namespace   TEXT NOT NULL,
                key         TEXT NOT NULL,
                version     INTEGER NOT NULL,
                vector      BLOB NOT NULL,
                UNIQUE (namespace, key)
            )""",
            # The newest id of a namespace, read by every vector search (the matrix cache).
            "CREATE INDEX memory_vectors_newest ON memory_vectors (namespace, id)",
            # Per agent, the seq of the newest event embedded (none: nothing embedded yet).
            """CREATE TABLE vector_marks (
                agent       TEXT PRIMARY KEY,
                seq         INTEGER NOT NULL
            ) WITHOUT ROWID""",
        ),
    ),
    (
        "0008_memory_kind",
        # What a version is ("fact", "preference", ...: remember(kind=)); NULL: no kind.
        ("ALTER TABLE memories ADD COLUMN kind TEXT",),
    ),
    (
        "0009_search_text_in_docs",
        (
            # Each document's text kept once, in its search_docs row, the FTS5 table an
            # external-content index of it: the catch-up compares a key's new text with the
            # indexed one (unchanged: only the version moves) and hands FTS5 the old text
            # to remove, instead of FTS5 storing, reading and deleting a copy of its own.
            "ALTER TABLE search_docs ADD COLUMN body TEXT NOT NULL DEFAULT ''",
            """UPDATE search_docs SET body = COALESCE(
                (SELECT t.body FROM search_text t WHERE t.rowid = search_docs.id), '')""",
            "DROP TABLE search_text",
            "CREATE VIRTUAL TABLE search_text USING fts5(body, content = 'search_docs',"
            " content_rowid = 'id', tokenize = 'porter unicode61 remove_diacritics 2')",
            "INSERT INTO search_text (search_text) VALUES ('rebuild')",
        ),
    ),
)


# -- reads --------------------------------------------------------------------------------


class SqliteDialect(Dialect):
    """SQLite's spelling: one ``value`` column, tags and members as JSON text."""

    param = "?"
    memory_columns = (
        "key, version, encoding, value, tags, created_at, expires_at, seq, author, erased, kind"
    )
    value_size = "LENGTH(CAST(value AS BLOB))"

    def row(self, r: tuple[Any, ...]) -> StoredRow:
        erased = r[9]
        return checked_row(
            StoredRow(
                key=r[0],
                version=r[1],
                encoding=r[2],
                data=r[3],
                tags=parse_tags(r[4], r[0], r[1], r[7]) if r[4] else (),
                created_at=r[5],
                expires_at=r[6],
                seq=r[7],
                author=r[8],
                erased=erased == 1 if erased in (0, 1) else erased,
                kind=r[10],
            )
        )

    def members(self, value: Any) -> tuple[str, ...] | None:
        return None if value is None else tuple(json.loads(value))

    def any_of(self, column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        return f"{column} IN ({', '.join('?' * len(values))})", list(values)

    def has_tags(self, tags: Sequence[str]) -> tuple[list[str], list[Any]]:
        # instr() on the stored JSON text first (the tag as memory_row encodes it, quotes
        # included): a cheap test that rules out most rows before json_each() parses them
        match = (
            "instr(m.tags, ?) > 0"
            " AND EXISTS (SELECT 1 FROM json_each(m.tags) WHERE json_each.value = ?)"
        )
        params: list[Any] = []
        for tag in tags:
            params += (json.dumps(tag, ensure_ascii=False), tag)
        return [match] * len(tags), params

    walks_key_index = True

    def latest_walk(self, where: str, as_of_seq: int | None) -> tuple[str, list[Any], str]:
        columns = ", ".join("m." + c for c in self.memory_columns.split(", "))
        newest = "SELECT MAX(x.version) FROM memories x WHERE x.namespace = m.namespace"
        newest += " AND x.key = m.key" + (" AND x.seq <= ?" if as_of_seq is not None else "")
        sql = f"SELECT {columns} FROM memories m WHERE {where} AND m.version = ({newest})"
        return sql, [] if as_of_seq is None else [as_of_seq], "m.key"

    def latest_per_key(self, where: str, namespace: str) -> tuple[str, list[Any], str]:
        columns = ", ".join("m." + c for c in self.memory_columns.split(", "))
        sql = (
            f"SELECT {columns} FROM (SELECT key AS k, MAX(version) AS v FROM memories"
            f" WHERE {where} GROUP BY key) h"
            " JOIN memories m ON m.namespace = ? AND m.key = h.k AND m.version = h.v"
        )
        return sql, [namespace], "h.k"

    def limit_offset(self, limit: int | None, offset: int) -> tuple[str, list[Any]]:
        if limit is None and not offset:
            return "", []
        return " LIMIT ? OFFSET ?", [-1 if limit is None else limit, offset]  # -1: no limit


READS: Final = ReadSql(SqliteDialect())
RUN_READS: Final = RunSql(READS.dialect)


def fts_match(terms: Sequence[str]) -> str:
    """An FTS5 query matching any of ``terms``, each a quoted string (never an operator)."""
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


SEARCH: Final = SearchSql(
    READS.dialect,
    # CROSS JOIN fixes the order: the full-text match first, then its documents and their
    # memories. Left to itself, SQLite walks a key prefix's range of memories and runs the
    # MATCH once per key (40 ms instead of 1 ms on 400 memories under one prefix).
    "SELECT {columns}, -bm25(search_text) AS score FROM search_text"
    " CROSS JOIN search_docs d ON d.id = search_text.rowid"
    " CROSS JOIN memories m"
    " ON m.namespace = d.namespace AND m.key = d.key AND m.version = d.version"
    " WHERE search_text MATCH ? AND d.namespace = ?"
    # (a key whose indexed version is no longer its newest: only a read-only file's index)
    " AND NOT EXISTS (SELECT 1 FROM memories n WHERE n.namespace = m.namespace"
    " AND n.key = m.key AND n.version > m.version)",
    fts_match,
    # The same over the namespace's best ? matches by (score, key), the search's order
    # (ties in score decided by the key, so the shortlist is exactly the first ones), and
    # their number: only their memories are read.
    "SELECT {columns}, h.score AS score, h.n FROM (SELECT namespace, key, version, score,"
    " COUNT(*) OVER () AS n FROM (SELECT d.namespace, d.key, d.version,"
    " -bm25(search_text) AS score FROM search_text"
    " CROSS JOIN search_docs d ON d.id = search_text.rowid"
    " WHERE search_text MATCH ? AND d.namespace = ? ORDER BY score DESC, d.key LIMIT ?)) h"
    " CROSS JOIN memories m ON m.namespace = h.namespace AND m.key = h.key"
    " AND m.version = h.version"
    " WHERE NOT EXISTS (SELECT 1 FROM memories n WHERE n.namespace = m.namespace"
    " AND n.key = m.key AND n.version > m.version)",
)

# -- a commit -----------------------------------------------------------------------------

HEAD: Final = "SELECT head_seq, head_hash FROM agents WHERE id = ?"
# The head and the newest version of the first key written, in one statement (params:
# namespace, key, agent).
HEAD_AND_VERSION: Final = (
    "SELECT head_seq, head_hash,"
    " (SELECT MAX(version) FROM memories WHERE namespace = ? AND key = ?)"
    " FROM agents WHERE id = ?"
)
NEW_AGENT: Final = (
    "INSERT INTO agents (id, created_at, status, head_seq, head_hash) VALUES (?, ?, 'active', 0, ?)"
)
MAX_VERSION: Final = "SELECT MAX(version) FROM memories WHERE namespace = ? AND key = ?"
# The newest version of several keys of one namespace ({marks}: one ? per key).
MAX_VERSIONS: Final = (
    "SELECT key, MAX(version) FROM memories WHERE namespace = ? AND key IN ({marks}) GROUP BY key"
)
INSERT_MEMORY: Final = (
    "INSERT INTO memories (namespace, key, version, encoding, value, tags, author, created_at,"
    " expires_at, seq, kind) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
INSERT_EVENT: Final = (
    "INSERT INTO events (agent, seq, time, kind, payload, prev_hash, hash, run_id)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)
MOVE_HEAD: Final = "UPDATE agents SET head_seq = ?, head_hash = ?, last_active = ? WHERE id = ?"
SET_STATUS: Final = "UPDATE agents SET status = ?, status_reason = ? WHERE id = ?"
INSERT_SNAPSHOT: Final = "INSERT INTO snapshots (agent, name, seq, created_at) VALUES (?, ?, ?, ?)"
REPLACE_SNAPSHOT: Final = (
    INSERT_SNAPSHOT + " ON CONFLICT (agent, name) DO UPDATE"
    " SET seq = excluded.seq, created_at = excluded.created_at"
)
INSERT_CONFLICT: Final = (
    "INSERT INTO conflicts (namespace, key, version, author, head_version, head_author,"
    " seen_version, created_at, seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
RESOLVE_CONFLICT: Final = (
    "UPDATE conflicts SET status = 'resolved', resolution = ?, resolved_by = ?, resolved_at = ?"
    " WHERE id = ? AND status = 'open'"
)
INSERT_SPACE: Final = (
    "INSERT INTO spaces (name, created_at, created_by, members) VALUES (?, ?, ?, ?)"
)
INSERT_MESSAGE: Final = (
    "INSERT INTO messages (sender, recipient, space, message_type, body, body_sha256,"
    " run_id, created_at, seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
SET_RUN_STATUS: Final = (
    "INSERT INTO runs (agent, run_id, status, status_reason, changed_at, changed_seq)"
    " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (agent, run_id) DO UPDATE SET"
    " status = excluded.status, status_reason = excluded.status_reason,"
    " changed_at = excluded.changed_at, changed_seq = excluded.changed_seq"
)
MARK_READ: Final = (
    "UPDATE messages SET read_at = ? WHERE id = ? AND recipient = ? AND read_at IS NULL"
)
ERASE: Final = (
    "UPDATE memories SET value = NULL, erased = 1 WHERE namespace = ? AND key = ?"
    " AND erased = 0 AND encoding != 'tombstone'"
)
OPTIMIZE_SEARCH: Final = "INSERT INTO search_text (search_text) VALUES ('optimize')"
PUT_SIGNED_HEAD: Final = (
    "INSERT OR REPLACE INTO signed_heads (agent, seq, public_key, hash, signature, created_at)"
    " VALUES (?, ?, ?, ?, ?, ?)"
)


def memory_row(w: MemoryWrite, version: int, agent: str, time: float, seq: int) -> tuple[Any, ...]:
    """The parameters of :data:`INSERT_MEMORY` for one write."""
    return (
        w.namespace,
        w.key,
        version,
        w.encoding,
        w.data,
        json.dumps(list(w.tags), ensure_ascii=False) if w.tags else None,
        agent,
        time if w.created_at is None else w.created_at,
        w.expires_at,
        seq,
        w.kind,
    )


UNDECODABLE_SCAN: Final = (
    "SELECT version, seq, typeof(value), CAST(key AS BLOB), CAST(encoding AS BLOB),"
    " CAST(tags AS BLOB), CAST(author AS BLOB), CAST(value AS BLOB), CAST(kind AS BLOB)"
    " FROM memories WHERE namespace = ? ORDER BY key, version"
)
"""Every memory row of a namespace with its text columns as bytes: to find one that is not
UTF-8 (the driver refuses to return it as text)."""

CHAIN_CHUNK_AS_BYTES: Final = (
    "SELECT seq, time, typeof(kind), CAST(kind AS BLOB), typeof(payload), CAST(payload AS BLOB),"
    " typeof(prev_hash), CAST(prev_hash AS BLOB), typeof(hash), CAST(hash AS BLOB)"
    " FROM events WHERE agent = ? AND seq > ? ORDER BY seq LIMIT ?"
)
"""``ReadSql.chain_chunk`` with the text columns as bytes, for a chunk holding text that is
not UTF-8."""
