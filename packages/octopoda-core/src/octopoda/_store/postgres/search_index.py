"""The PostgreSQL search index, kept up to date by the searches (not by the writes).

As on SQLite (``sqlite/search_index.py``): a commit does not touch ``memory_search``; the
index records per agent the seq of the newest event it has indexed (``search_marks``) and
a search first indexes, in one short transaction, every key the events since then wrote,
from the key's newest version. The catch-up holds a transaction-scoped advisory lock
(:data:`SEARCH_LOCK`), so two searches never index at once; ``erase`` takes the same lock
before it removes the key's row, so a catch-up that read the value before the erasure can
never put its words back.
"""

from __future__ import annotations

from typing import Any, Final

from ..._search.lexical import document_text, index_words
from ..ops import agent_namespace
from . import schema as q
from .locks import lock_id

__all__ = [
    "BEHIND",
    "SEARCH_LOCK",
    "SEARCH_LOCK_SQL",
    "SET_MARK",
    "WRITTEN",
    "written_params",
    "written_rows",
]

SEARCH_LOCK: Final = lock_id(b"search-index")
SEARCH_LOCK_SQL: Final = "SELECT pg_advisory_xact_lock(%s)"

BEHIND: Final = (
    "SELECT a.id, COALESCE(s.seq, 0), a.head_seq FROM agents a"
    " LEFT JOIN search_marks s ON s.agent = a.id WHERE a.head_seq > COALESCE(s.seq, 0)"
)
# The keys the events (mark, head] of one agent wrote, with their newest version (params:
# own namespace, agent, mark, head).
WRITTEN: Final = (
    "WITH c AS (SELECT DISTINCT COALESCE(w ->> 'namespace', %s) AS namespace,"
    " w ->> 'key' AS key FROM events e,"
    " jsonb_array_elements(CASE WHEN e.payload LIKE '%%\"writes\"%%'"
    " THEN e.payload::jsonb -> 'writes' ELSE '[]'::jsonb END) w"
    " WHERE e.agent = %s AND e.seq > %s AND e.seq <= %s)"
    " SELECT c.namespace, c.key, m.version, m.encoding, m.value_text, m.erased FROM c"
    " LEFT JOIN LATERAL (SELECT version, encoding, value_text, erased FROM memories x"
    " WHERE x.namespace = c.namespace AND x.key = c.key ORDER BY version DESC LIMIT 1) m"
    " ON true"
)
SET_MARK: Final = (
    "INSERT INTO search_marks (agent, seq) VALUES (%s, %s)"
    " ON CONFLICT (agent) DO UPDATE SET seq = EXCLUDED.seq"
)


def written_rows(rows: list[Any]) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """The index rows to put (namespace, key, version, words) and to drop (namespace, key)
    for the keys ``rows`` (from :data:`WRITTEN`) hold."""
    puts, drops = [], []
    for namespace, key, version, encoding, value, erased in rows:
        text = None
        if version is not None and not erased:
            data = value if encoding == "json" else key  # (bytes: indexed by the key only)
            text = document_text(key, encoding, data)
        if text is None:
            drops.append((namespace, key))
        else:
            puts.append((namespace, key, version, index_words(text[: q.MAX_INDEXED_CHARS])))
    return puts, drops


def written_params(agent: str, mark: int, head: int) -> tuple[str, str, int, int]:
    """The parameters of :data:`WRITTEN`."""
    return agent_namespace(agent), agent, mark, head
