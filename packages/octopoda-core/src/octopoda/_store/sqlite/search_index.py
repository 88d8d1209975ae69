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

The text is kept once, in the key's ``search_docs`` row (``body``); ``search_text`` is an
external-content FTS5 index of it (migration ``0009_search_text_in_docs``). So a new
version whose text is unchanged (the same value again, or only numbers changed) moves the
row's version and leaves FTS5 alone, and a changed text is removed by handing FTS5 the old
text (``'delete'``) rather than FTS5 reading, tokenizing and deleting its own copy. The
row's ``body`` must always be the text FTS5 indexed for it: every change goes through here
or ``_erase_securely``, and FTS5's ``integrity-check`` (rank 1) compares the two.

Only ``erase`` touches the index in its own transaction (``store._erase_securely``): the
erased words must not stay in the file. A read-only file is searched as it was last
indexed (the query still leaves out any key whose indexed version is no longer current).
"""

from __future__ import annotations

import sqlite3
from typing import Any, Final

from ..._search.lexical import document_text
from ..ops import agent_namespace

__all__ = ["catch_up"]

# Agents whose head moved past the index's mark: (agent, mark, head).
_BEHIND: Final = (
    "SELECT a.id, COALESCE(s.seq, 0), a.head_seq FROM agents a"
    " LEFT JOIN search_marks s ON s.agent = a.id WHERE a.head_seq > COALESCE(s.seq, 0)"
)
# The keys the events (mark, head] of one agent wrote, each with its newest version
# (params: own namespace, agent, mark, head): (namespace, key, version, encoding, value,
# erased), version None for a key without any (never: the events wrote one).
WRITTEN: Final = (
    "WITH c (namespace, key) AS (SELECT DISTINCT"
    " COALESCE(json_extract(w.value, '$.namespace'), ?), json_extract(w.value, '$.key')"
    " FROM events e, json_each(e.payload, '$.writes') w"
    " WHERE e.agent = ? AND e.seq > ? AND e.seq <= ?)"
    " SELECT c.namespace, c.key, m.version, m.encoding, m.value, m.erased FROM c"
    " LEFT JOIN memories m ON m.namespace = c.namespace AND m.key = c.key AND m.version ="
    " (SELECT MAX(x.version) FROM memories x WHERE x.namespace = c.namespace AND x.key = c.key)"
)
# WRITTEN with each key's index row, if any: (..., doc id, indexed version, indexed text).
_WRITTEN_AND_INDEXED: Final = WRITTEN.replace(
    " FROM c LEFT JOIN memories m",
    ", d.id, d.version, d.body FROM c LEFT JOIN search_docs d"
    " ON d.namespace = c.namespace AND d.key = c.key LEFT JOIN memories m",
)
# (search_text holds no copy of the text: FTS5 is told the text it indexed, to remove it)
_DROP_TEXT_ID: Final = "INSERT INTO search_text (search_text, rowid, body) VALUES ('delete', ?, ?)"
_DROP_DOC_ID: Final = "DELETE FROM search_docs WHERE id = ?"
_MOVE_DOC: Final = "UPDATE search_docs SET version = ? WHERE id = ?"
_REWRITE_DOC: Final = "UPDATE search_docs SET version = ?, body = ? WHERE id = ?"
# (erase: FTS5 reads the text to remove from the search_docs row, deleted next)
DROP_TEXT: Final = (
    "DELETE FROM search_text WHERE rowid = (SELECT id FROM search_docs"
    " WHERE namespace = ? AND key = ?)"
)
DROP_DOC: Final = "DELETE FROM search_docs WHERE namespace = ? AND key = ?"
_LAST_DOC: Final = "SELECT COALESCE(MAX(id), 0) FROM search_docs"
_PUT_DOC: Final = (
    "INSERT INTO search_docs (id, namespace, key, version, body) VALUES (?, ?, ?, ?, ?)"
)
_PUT_TEXT: Final = "INSERT INTO search_text (rowid, body) VALUES (?, ?)"
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
            written = conn.execute(_WRITTEN_AND_INDEXED, (own, agent, mark, head)).fetchall()
            _reindex(conn, written)
            conn.execute(_SET_MARK, (agent, head))
        conn.execute("COMMIT")
    except BaseException as exc:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        if isinstance(exc, sqlite3.OperationalError) and "readonly" in str(exc):
            return  # (a read-only file, or connection: searched as last indexed)
        raise


def _reindex(conn: sqlite3.Connection, written: list[tuple[Any, ...]]) -> None:
    """Each written key's text replaced by its newest version's (under the same doc id), or
    removed; a key not indexed yet only added, one whose text is unchanged (the same
    version, or a new one with the same strings) only given its new version. Each kind of
    statement runs for all the keys at once."""
    drop_texts, drop_docs, moves, rewrites, docs, texts = [], [], [], [], [], []
    next_id = conn.execute(_LAST_DOC).fetchone()[0] + 1
    for namespace, key, version, encoding, value, erased, doc, indexed, old in written:
        text = None if version is None or erased else document_text(key, encoding, value)
        if doc is None:
            if text is not None:
                docs.append((next_id, namespace, key, version, text))
                texts.append((next_id, text))
                next_id += 1
        elif text == old:
            if indexed != version:
                moves.append((version, doc))
        else:
            drop_texts.append((doc, old))
            if text is None:
                drop_docs.append((doc,))
            else:
                rewrites.append((version, text, doc))
                texts.append((doc, text))
    conn.executemany(_DROP_TEXT_ID, drop_texts)  # (first: FTS5 is given the old text)
    conn.executemany(_DROP_DOC_ID, drop_docs)
    conn.executemany(_MOVE_DOC, moves)
    conn.executemany(_REWRITE_DOC, rewrites)
    conn.executemany(_PUT_DOC, docs)
    conn.executemany(_PUT_TEXT, texts)
