"""SQLite's vector index (``vector_reads.py`` says how it is kept): statements, the read of
what is behind, and the write transaction that stores vectors. Vectors are float32 BLOBs,
ranked in the process (``_search/vectors.py``: numpy when installed)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from typing import Any, Final

from ..._search.embedders import pack
from ..._search.vectors import VectorMatrix
from ..ops import agent_namespace
from ..rows import StoredRow
from ..search_reads import Filtered
from ..vector_reads import PendingVectors, VectorModel, mismatch, written_texts
from .schema import READS
from .search_index import WRITTEN

__all__ = ["Matrices", "apply", "pending", "reset"]

MODEL: Final = "SELECT model, dimension FROM vector_model WHERE id = 1"
_PUT_MODEL: Final = "INSERT OR IGNORE INTO vector_model (id, model, dimension) VALUES (1, ?, ?)"
_BEHIND: Final = (
    "SELECT a.id, COALESCE(s.seq, 0), a.head_seq FROM agents a"
    " LEFT JOIN vector_marks s ON s.agent = a.id WHERE a.head_seq > COALESCE(s.seq, 0)"
)
_MARK: Final = "SELECT COALESCE((SELECT seq FROM vector_marks WHERE agent = ?), 0)"
_SET_MARK: Final = (
    "INSERT INTO vector_marks (agent, seq) VALUES (?, ?)"
    " ON CONFLICT (agent) DO UPDATE SET seq = excluded.seq"
)
DROP: Final = "DELETE FROM memory_vectors WHERE namespace = ? AND key = ?"
# A vector replaced gets a new id (the matrix cache sees the change); a stored vector of a
# newer version than the one embedded stays.
_DROP_OLDER: Final = "DELETE FROM memory_vectors WHERE namespace = ? AND key = ? AND version <= ?"
_PUT: Final = (
    "INSERT OR IGNORE INTO memory_vectors (namespace, key, version, vector) VALUES (?, ?, ?, ?)"
)
# The newest id of a namespace's vectors: it changes whenever one is stored (a replaced
# vector gets a new id; ids are never reused). A vector deleted without another stored
# (forget, erase) may stay in the cached matrix: harmless, as every candidate is read back
# and kept only if its vector's version is the key's current, live one.
SIGNATURE: Final = "SELECT MAX(id) FROM memory_vectors WHERE namespace = ?"
MATRIX: Final = "SELECT key, version, vector FROM memory_vectors WHERE namespace = ? ORDER BY id"
RESET: Final = (
    "DELETE FROM memory_vectors",
    "DELETE FROM vector_marks",
    "DELETE FROM vector_model",
)


def pending(conn: sqlite3.Connection) -> list[PendingVectors]:
    """What each agent wrote since its vector mark (plain reads: no transaction)."""
    out = []
    for agent, mark, head in conn.execute(_BEHIND).fetchall():
        rows = conn.execute(WRITTEN, (agent_namespace(agent), agent, mark, head)).fetchall()
        texts, drops = written_texts(rows)
        out.append(PendingVectors(agent, mark, head, texts, drops))
    return out


def apply(
    conn: sqlite3.Connection,
    model: VectorModel,
    todo: PendingVectors | None,
    puts: Sequence[tuple[str, str, int, Sequence[float]]],
) -> bool:
    """One ``BEGIN IMMEDIATE`` transaction (see ``VectorReads._vector_apply``); False on a
    read-only file (nothing stored)."""
    try:
        conn.execute("BEGIN IMMEDIATE")
        if conn.execute(_PUT_MODEL, model).rowcount == 1:  # a new model: no old vectors
            conn.execute("DELETE FROM memory_vectors")
        stored = VectorModel(*conn.execute(MODEL).fetchone())
        if stored != model:
            raise mismatch(stored, model.name, model.dimension)
        if todo is None or conn.execute(_MARK, (todo.agent,)).fetchone()[0] == todo.mark:
            if todo is not None:
                conn.executemany(DROP, todo.drops)
            conn.executemany(_DROP_OLDER, [(ns, k, ver) for ns, k, ver, _ in puts])
            conn.executemany(_PUT, [(ns, k, ver, pack(v)) for ns, k, ver, v in puts])
            if todo is not None:
                conn.execute(_SET_MARK, (todo.agent, todo.head))
        conn.execute("COMMIT")
        return True
    except BaseException as exc:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        if isinstance(exc, sqlite3.OperationalError) and "readonly" in str(exc):
            return False
        raise


def reset(conn: sqlite3.Connection) -> None:
    conn.execute("BEGIN IMMEDIATE")
    try:
        for statement in RESET:
            conn.execute(statement)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def model_of(row: Any) -> VectorModel | None:
    return None if row is None else VectorModel(row[0], row[1])


class Matrices:
    """Per namespace, its vectors as one matrix, rebuilt when one is stored (the newest id
    of the namespace in ``memory_vectors``: :data:`SIGNATURE`), and the search over it:
    the best rows by cosine, then their memories read with the search's filters (more rows
    while fewer than ``limit`` pass)."""

    def __init__(self) -> None:
        self._cache: dict[str, tuple[tuple[Any, ...], VectorMatrix]] = {}

    def clear(self) -> None:
        self._cache.clear()

    def forget(self, namespace: str) -> None:
        self._cache.pop(namespace, None)

    def matrix(self, fetchall: Fetch, namespace: str, model: VectorModel) -> VectorMatrix:
        signature = tuple(fetchall(SIGNATURE, (namespace,))[0])
        cached = self._cache.get(namespace)
        if cached is not None and cached[0] == signature and cached[1].dimension == model.dimension:
            return cached[1]
        matrix = VectorMatrix(fetchall(MATRIX, (namespace,)), model.dimension)
        self._cache[namespace] = (signature, matrix)
        return matrix

    def search(
        self,
        fetchall: Fetch,
        namespace: str,
        query: Sequence[float],
        model: VectorModel,
        filtered: Filtered,
        limit: int,
    ) -> list[tuple[StoredRow, float]]:
        matrix = self.matrix(fetchall, namespace, model)
        k = limit * 4 + 16
        while True:
            found = _passing(fetchall, matrix, matrix.top(query, k), namespace, filtered, limit)
            if len(found) >= limit or k >= len(matrix):
                return found
            k *= 4


def _passing(
    fetchall: Fetch,
    matrix: VectorMatrix,
    best: list[tuple[int, float]],
    namespace: str,
    filtered: Filtered,
    limit: int,
) -> list[tuple[StoredRow, float]]:
    """The first ``limit`` rows of ``best`` whose vector is of their key's current version
    and whose memory passes the filters, in order: their memories read a few more than
    missing at a time, then 4, 16, ... times as many (most pass: ``best`` holds more
    than ``limit`` for those that do not, and is mostly not read)."""
    found: list[tuple[StoredRow, float]] = []
    start, scale = 0, 1
    while start < len(best) and len(found) < limit:
        chunk = best[start : start + (limit - len(found)) * scale + 8]
        start, scale = start + len(chunk), scale * 4
        sql, params = filtered.current_of_keys(namespace, [matrix.keys[i] for i, _ in chunk])
        rows = {r.key: r for r in map(READS.row, fetchall(sql, params))}
        for i, score in chunk:
            row = rows.get(matrix.keys[i])
            if row is not None and row.version == matrix.versions[i]:
                found.append((row, score))
    return found[:limit]


Fetch = Callable[[str, Sequence[Any]], list[Any]]
