"""The vector part of the store contract: one embedding per key's current version, made by
the searches (not by the writes), like the lexical index.

A commit never embeds: ``remember`` costs the same with or without an embedder. A search
by meaning first calls :meth:`VectorReads.index_vectors`: it reads, without any lock, the
keys written since the vector index's per-agent marks (``vector_marks``), embeds their text
(:func:`~octopoda._search.lexical.document_text`) with no lock and no transaction open, and
then in one short write transaction stores the vectors and moves the marks, for each agent
whose mark nobody moved in the meantime (another process that indexed first wins; what it
did not cover stays behind its mark and is indexed next time).

The store records the model that made its vectors (``vector_model``: name and dimension);
an embedder of another name or dimension is refused with :class:`EmbedderMismatch`, and
:meth:`VectorReads.reset_vectors` (``octopoda reindex``) drops the vectors so that the next
search embeds everything again. :meth:`VectorReads.put_vectors` stores vectors a caller made
(adapters whose framework brings its own embeddings).

A backend provides the hooks at the bottom (SQLite: BLOBs ranked in the process, numpy when
installed; PostgreSQL: a pgvector column with an HNSW index).
"""

from collections.abc import Sequence
from typing import Any, Final, NamedTuple

from .._errors import EmbedderMismatch, InvalidInput
from .._search.embedders import Embedder, checked_vectors
from .._search.lexical import document_text
from .rows import StoredRow

__all__ = ["PendingVectors", "VectorModel", "VectorReads", "written_texts"]

EMBED_BATCH: Final = 256  # texts per embed() call


class VectorModel(NamedTuple):
    """The model whose vectors a store holds."""

    name: str
    dimension: int


class PendingVectors(NamedTuple):
    """One agent's keys written since its vector mark: the texts to embed
    ``(namespace, key, version, text)`` and the keys to drop ``(namespace, key)``."""

    agent: str
    mark: int
    head: int
    texts: list[tuple[str, str, int, str]]
    drops: list[tuple[str, str]]


def written_texts(
    rows: Sequence[tuple[Any, ...]],
) -> tuple[list[tuple[str, str, int, str]], list[tuple[str, str]]]:
    """From rows ``(namespace, key, version, encoding, value, erased)`` (the lexical
    index's ``WRITTEN`` query): the texts to embed, and the keys with no value any more."""
    texts, drops = [], []
    for namespace, key, version, encoding, value, erased in rows:
        text = None
        if version is not None and not erased:
            text = document_text(key, encoding, value if encoding == "json" else key)
        if text is None:
            drops.append((namespace, key))
        else:
            texts.append((namespace, key, version, text))
    return texts, drops


def mismatch(stored: VectorModel, name: str, dimension: int) -> EmbedderMismatch:
    return EmbedderMismatch(
        f"this store's vectors were made by {stored.name!r} ({stored.dimension} dimensions),"
        f" not by {name!r} ({dimension} dimensions); re-embed them with `octopoda reindex`"
        " (or store.reset_vectors()), or configure the same embedder again"
    )


class VectorReads:
    """Vector search and indexing on top of a backend's hooks."""

    def index_vectors(self, embedder: Embedder) -> int:
        """Embed every key written since the last call (with any embedder) and store the
        vectors; the number of texts embedded. Refuses an embedder of another model than
        the stored vectors' (:class:`EmbedderMismatch`)."""
        stored = self.vector_model()
        if stored is not None:
            self._check_model(stored, embedder.name, embedder.dimension)
        total = 0
        for pending in self._vector_pending():
            vectors: list[list[float]] = []
            texts = [t for *_, t in pending.texts]
            for start in range(0, len(texts), EMBED_BATCH):
                chunk = texts[start : start + EMBED_BATCH]
                out = embedder.embed(chunk)
                dimension = embedder.dimension or None
                vectors += checked_vectors(
                    out, len(chunk), dimension, f"embedder {embedder.name!r}"
                )
            if vectors:
                model = VectorModel(embedder.name, len(vectors[0]))
            elif stored is not None:
                model = stored  # (only keys to drop: the model is the stored one)
            else:
                continue  # (nothing embedded and no vectors yet: nothing to record)
            puts = [
                (ns, key, version, v)
                for (ns, key, version, _), v in zip(pending.texts, vectors, strict=True)
            ]
            self._vector_apply(model, pending, puts)
            stored = model
            total += len(puts)
        return total

    def search_vectors(
        self,
        namespace: str,
        vector: Sequence[float],
        *,
        model: str | None = None,
        prefix: str = "",
        tags: Sequence[str] = (),
        now: float | None = None,
        limit: int = 10,
        kinds: Sequence[str] = (),
    ) -> list[tuple[StoredRow, float]]:
        """Current values of ``namespace`` ranked by the cosine similarity of their stored
        vector to ``vector``, best first, each with the cosine (in [-1, 1]). Keys without a
        vector for their current version are not found. ``model``, if given, must be the
        stored vectors' model."""
        stored = self.vector_model()
        if stored is None:
            return []
        (query,) = checked_vectors([vector], 1, None, "the query vector")
        self._check_model(stored, model or stored.name, len(query))
        if kinds:
            return self._vector_search(namespace, query, stored, prefix, tags, now, limit, kinds)
        return self._vector_search(namespace, query, stored, prefix, tags, now, limit)

    def put_vectors(
        self,
        namespace: str,
        items: Sequence[tuple[str, int, Sequence[float]]],
        *,
        model: str,
    ) -> None:
        """Store caller-made vectors ``(key, version, vector)`` for ``namespace`` (the
        version the vector describes: a later version of the key is not found by it)."""
        if not items:
            return
        vectors = checked_vectors([v for *_, v in items], len(items), None, "put_vectors")
        dimension = len(vectors[0])
        if any(len(v) != dimension for v in vectors):
            raise InvalidInput("put_vectors: the vectors do not all have the same dimension")
        stored = self.vector_model()
        if stored is not None:
            self._check_model(stored, model, dimension)
        puts = [(namespace, k, ver, v) for (k, ver, _), v in zip(items, vectors, strict=True)]
        self._vector_apply(VectorModel(model, dimension), None, puts)

    def _check_model(self, stored: VectorModel, name: str, dimension: int) -> None:
        if stored.name != name or (dimension and stored.dimension != dimension):
            raise mismatch(stored, name, dimension)

    # -- backend hooks --------------------------------------------------------------------

    def vector_model(self) -> VectorModel | None:
        """The model of the stored vectors (None: no vectors yet)."""
        raise NotImplementedError

    def reset_vectors(self) -> None:
        """Drop every vector, the model and the marks: the next ``index_vectors`` embeds
        every current value again (``octopoda reindex``)."""
        raise NotImplementedError

    def _vector_pending(self) -> list[PendingVectors]:
        raise NotImplementedError

    def _vector_apply(
        self,
        model: VectorModel,
        pending: PendingVectors | None,
        puts: list[tuple[str, str, int, list[float]]],
    ) -> None:
        """In one write transaction: record ``model`` if none is (refuse another), and, if
        ``pending``'s mark is still the agent's mark, drop its keys, store ``puts`` (keeping
        a newer stored version) and move the mark to its head (``pending`` None: only the
        puts)."""
        raise NotImplementedError

    def _vector_search(
        self,
        namespace: str,
        query: list[float],
        model: VectorModel,
        prefix: str,
        tags: Sequence[str],
        now: float | None,
        limit: int,
        kinds: Sequence[str] = (),
    ) -> list[tuple[StoredRow, float]]:
        raise NotImplementedError
