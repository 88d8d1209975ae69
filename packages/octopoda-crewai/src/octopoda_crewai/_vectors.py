"""The in-process vector index of :class:`OctopodaStorage` (numpy; crewai brings it).

One row per live record with an embedding, each row the unit-length vector; a search is
one matrix-vector product. Rows of deleted records are zeroed and reused. The index is a
cache: the records (and their vectors) live in Octopoda memory, and the storage rebuilds
this from there on open and whenever another writer changed the memory.

Isolated here so that it can give way to the core's vector primitive when that lands.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np

__all__ = ["VectorIndex"]


class VectorIndex:
    """Cosine similarity over a growing set of ``(id, vector)`` rows of one dimension."""

    def __init__(self) -> None:
        self.dim = 0
        self._matrix = np.zeros((0, 0), dtype=np.float32)
        self._ids: list[str | None] = []
        self._rows: dict[str, int] = {}
        self._free: list[int] = []

    def __len__(self) -> int:
        return len(self._rows)

    def clear(self) -> None:
        self.__init__()  # type: ignore[misc]

    def put(self, record_id: str, vector: Sequence[float]) -> None:
        """Add or replace the vector of ``record_id`` (the caller checked the dimension)."""
        v = np.asarray(vector, dtype=np.float32)
        if self.dim == 0:
            self.dim = int(v.shape[0])
            self._matrix = np.zeros((16, self.dim), dtype=np.float32)
        norm = float(np.linalg.norm(v))
        if norm > 0.0:
            v = v / norm
        row = self._rows.get(record_id)
        if row is None:
            row = self._free.pop() if self._free else self._grow()
            self._rows[record_id] = row
            self._ids[row] = record_id
        self._matrix[row] = v

    def put_many(self, record_ids: Sequence[str], vectors: Sequence[Sequence[float]]) -> None:
        """:meth:`put` of each ``(record_ids[i], vectors[i])``, normalised and stored in one
        array operation (the last vector of an id given twice wins)."""
        last = {rid: i for i, rid in enumerate(record_ids)}  # (in order: the last one wins)
        if len(last) != len(record_ids):
            record_ids = list(last)
            vectors = [vectors[i] for i in last.values()]
        block = np.array(vectors, dtype=np.float32, ndmin=2)
        if block.shape[0] == 0:
            return
        if self.dim == 0:
            self.dim = int(block.shape[1])
            self._matrix = np.zeros((16, self.dim), dtype=np.float32)
        norms = np.linalg.norm(block, axis=1, keepdims=True)
        np.divide(block, norms, out=block, where=norms > 0.0)
        rows = self._rows
        at = np.empty(len(record_ids), dtype=np.int64)
        for i, rid in enumerate(record_ids):
            row = rows.get(rid)
            if row is None:
                row = self._free.pop() if self._free else self._grow()
                rows[rid] = row
                self._ids[row] = rid
            at[i] = row
        self._matrix[at] = block

    def _grow(self) -> int:
        row = len(self._ids)
        if row >= self._matrix.shape[0]:
            bigger = np.zeros((max(16, row * 2), self.dim), dtype=np.float32)
            bigger[:row] = self._matrix[:row]
            self._matrix = bigger
        self._ids.append(None)
        return row

    def remove(self, record_id: str) -> None:
        row = self._rows.pop(record_id, None)
        if row is not None:
            self._ids[row] = None
            self._matrix[row] = 0.0
            self._free.append(row)
        if not self._rows:
            self.clear()

    def search(
        self,
        query: Sequence[float],
        allowed: Collection[str] | None = None,
        limit: int | None = None,
    ) -> list[tuple[str, float]]:
        """The ``limit`` best rows (all without one), or of those in ``allowed`` only,
        each with its cosine similarity to ``query`` clipped into [0, 1], best first."""
        if not self._rows:
            return []
        q = np.asarray(query, dtype=np.float32)
        norm = float(np.linalg.norm(q))
        if norm > 0.0:
            q = q / norm
        used = len(self._ids)
        if allowed is not None:
            rows = np.fromiter((self._rows[i] for i in allowed if i in self._rows), dtype=np.int64)
            if rows.size == 0:
                return []
            scores = self._matrix[rows] @ q
        else:
            scores = self._matrix[:used] @ q
            rows = np.arange(used)
        np.clip(scores, 0.0, 1.0, out=scores)
        wanted = None if limit is None else limit + (len(self._free) if allowed is None else 0)
        if wanted is not None and 0 < wanted < scores.shape[0]:
            top = np.argpartition(-scores, wanted - 1)[:wanted]
            order = top[np.argsort(-scores[top], kind="stable")]
        else:
            order = np.argsort(-scores, kind="stable")
        ids = self._ids
        out = []
        for k in order:
            rid = ids[int(rows[k])]
            if rid is not None:
                out.append((rid, float(scores[k])))
                if limit is not None and len(out) >= limit:
                    break
        return out
