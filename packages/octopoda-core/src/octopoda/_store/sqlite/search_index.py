"""The SQLite search index, kept up to date by the searches (not by the writes).

A commit does not touch the index: writing FTS5 segments in every write's transaction made
``remember`` twice as slow. Instead the index records, per agent, the seq of the newest
event it has indexed (``search_marks``), and a search first brings it up to date: in one
short ``BEGIN IMMEDIATE`` transaction it reads the events of every agent whose head moved
past its mark (a range of the ``events`` primary key), re-indexes each key those events
wrote from the key's newest version (a live value replaces the key's text; a tombstone or
an erased value removes it), and moves the marks. So a returned write is searchable at
once, a batch of writes is indexed in one go, and two processes searching at once are
serialised by the write lock (the marks are read again inside it).

Only ``erase`` touches the index in its own transaction (``store._erase_securely``): the
erased words must not stay in the file. A read-only file is searched as it was last
indexed (the query still leaves out any key whose indexed version is no longer current).
"""

from __future__ import annotations

import sqlite3
from typing import Final

from ..._search.lexical import document_text
from ..ops import agent_namespace

__all__ = ["catch_up"]

# Agents whose head moved past the index's mark: (agent, mark, head).
_BEHIND: Final = (
    "SELECT a.id, COALESCE(s.seq, 0), a.head_seq FROM agents a"
    " LEFT JOIN search_marks s ON s.agent = a.id WHERE a.head_seq > COALESCE(s.seq, 0)"
)
# The keys the events (mark, head] of one agent wrote (params: own namespace, agent, mark, head).
_WRITTEN: Final = (
    "SELECT DISTINCT COALESCE(json_extract(w.value, '$.namespace'), ?),"
    " json_extract(w.value, '$.key') FROM events e, json_each(e.payload, '$.writes') w"
    " WHERE e.agent = ? AND e.seq > ? AND e.seq <= ?"
)
_NEWEST: Final = (
    "SELECT version, encoding, value, erased FROM memories WHERE namespace = ? AND key = ?"
    " ORDER BY version DESC LIMIT 1"
)
_PUT_DOC: Final = (
    "INSERT INTO search_docs (namespace, key, version) VALUES (?, ?, ?)"
    " ON CONFLICT (namespace, key) DO UPDATE SET version = excluded.version RETURNING id"
)
_PUT_TEXT: Final = "INSERT OR REPLACE INTO search_text (rowid, body) VALUES (?, ?)"
DROP_TEXT: Final = (
    "DELETE FROM search_text WHERE rowid = (SELECT id FROM search_docs"
    " WHERE namespace = ? AND key = ?)"
)
DROP_DOC: Final = "DELETE FROM search_docs WHERE namespace = ? AND key = ?"
_SET_MARK: Final = (
    "INSERT INTO search_marks (agent, seq) VALUES (?, ?)"
    " ON CONFLICT (agent) DO UPDATE SET seq = excluded.seq"
)


def catch_up(conn: sqlite3.Connection) -> None:
    """Index every memory written since the index's marks (nothing to do: no write
    transaction at all). On a read-only file the index stays as it is."""
    if not conn.execute(_BEHIND).fetchall():
        return
    try:
        conn.execute("BEGIN IMMEDIATE")
        for agent, mark, head in conn.execute(_BEHIND).fetchall():  # again, under the lock
            own = agent_namespace(agent)
            for namespace, key in conn.execute(_WRITTEN, (own, agent, mark, head)).fetchall():
                _reindex(conn, namespace, key)
            conn.execute(_SET_MARK, (agent, head))
        conn.execute("COMMIT")
    except BaseException as exc:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        if isinstance(exc, sqlite3.OperationalError) and "readonly" in str(exc):
            return  # (a read-only file, or connection: searched as last indexed)
        raise


def _reindex(conn: sqlite3.Connection, namespace: str, key: str) -> None:
    newest = conn.execute(_NEWEST, (namespace, key)).fetchone()
    text = None
    if newest is not None and not newest[3]:
        text = document_text(key, newest[1], newest[2])
    if text is None:
        conn.execute(DROP_TEXT, (namespace, key))
        conn.execute(DROP_DOC, (namespace, key))
        return
    doc = conn.execute(_PUT_DOC, (namespace, key, newest[0])).fetchone()[0]
    conn.execute(_PUT_TEXT, (doc, text))
