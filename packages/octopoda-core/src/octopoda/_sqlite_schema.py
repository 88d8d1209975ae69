"""SQLite schema: named, append-only migrations. Never edit one that has shipped; add another."""

from __future__ import annotations

from typing import Final

__all__ = ["APPLICATION_ID", "MIGRATIONS"]

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
)
