"""Similarity of embedding vectors: brute-force cosine over unit vectors, with numpy when
it is installed (``pip install 'octopoda-core[vectors]'``) and in pure Python otherwise."""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from typing import Any

from .embedders import unpack

__all__ = ["VectorMatrix", "cosine", "have_numpy"]


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity of two vectors; 0.0 when either is all zeros."""
    dot = sum(x * y for x, y in zip(a, b, strict=False))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0


def _numpy() -> Any:
    try:
        import numpy  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return None
    return numpy


def have_numpy() -> bool:
    return _numpy() is not None


class VectorMatrix:
    """The stored vectors of one namespace (unit length, float32 BLOBs), ranked against a
    query vector by dot product (= cosine). Built once per change of the namespace's
    vectors and cached by the store."""

    def __init__(self, rows: Sequence[tuple[str, int, bytes]], dimension: int) -> None:
        self.keys = [r[0] for r in rows]
        self.versions = [r[1] for r in rows]
        self.dimension = dimension
        np = _numpy()
        self._np = np
        if np is not None:
            flat = b"".join(r[2] for r in rows)
            self._matrix: Any = np.frombuffer(flat, dtype="<f4").reshape(len(rows), dimension)
        else:
            self._matrix = [unpack(r[2]) for r in rows]

    def __len__(self) -> int:
        return len(self.keys)

    def top(self, query: Sequence[float], k: int) -> list[tuple[int, float]]:
        """The ``k`` best rows (index, cosine), best first."""
        n = len(self.keys)
        k = min(k, n)
        if k <= 0:
            return []
        np = self._np
        if np is None:
            scores = [sum(x * y for x, y in zip(row, query, strict=True)) for row in self._matrix]
            best = heapq.nlargest(k, range(n), key=scores.__getitem__)
            return [(i, float(scores[i])) for i in best]
        q = np.asarray(query, dtype=np.float32)
        scores = self._matrix @ q
        part = np.argpartition(-scores, k - 1)[:k] if k < n else np.arange(n)
        order = part[np.argsort(-scores[part], kind="stable")]
        return [(int(i), float(scores[i])) for i in order]
