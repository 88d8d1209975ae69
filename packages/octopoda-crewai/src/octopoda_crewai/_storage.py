"""OctopodaStorage: CrewAI's memory ``StorageBackend`` on versioned, audited Octopoda memory."""

from __future__ import annotations

import base64
import logging
import re
import threading
from collections.abc import Iterable
from datetime import datetime, timezone
from typing import Any

import numpy as np
from crewai.memory.types import MemoryRecord, ScopeInfo

from octopoda import AgentRuntime
from octopoda.integrations import Target, changed_keys, resolve_runtime, run_blocking

from ._vectors import VectorIndex

try:  # crewai 1.15 has it; 1.10.1 and 1.13.0 do not, so ours stands in (also a ValueError)
    from crewai.memory.storage.backend import EmbeddingDimensionMismatchError
except ImportError:  # pragma: no cover - depends on the crewai line

    class EmbeddingDimensionMismatchError(ValueError):  # type: ignore[no-redef]
        """A vector of another dimension than the stored ones (crewai's, before it had one)."""

        def __init__(self, stored_dim: int, new_dim: int) -> None:
            self.stored_dim = stored_dim
            self.new_dim = new_dim
            super().__init__(
                f"Embedding dimension mismatch: this memory store contains {stored_dim}-"
                f"dimensional vectors, but the embedder produced a {new_dim}-dimensional one;"
                " reset the memory or use the embedder it was built with"
            )


__all__ = [
    "RECORD_PREFIX",
    "EmbeddingDimensionMismatchError",
    "OctopodaStorage",
    "record_key",
]

log = logging.getLogger("octopoda_crewai")

RECORD_PREFIX = "crewai/mem/"
"""Every record is the memory key ``crewai/mem/<record id>`` of the storage's agent."""


def _escape(segment: str) -> str:
    return segment.replace("%", "%25").replace("/", "%2F").replace("\x00", "%00")


def record_key(record_id: str) -> str:
    """The Octopoda memory key of the CrewAI record ``record_id`` (its history:
    ``agent.recall_history(record_key(id))``)."""
    return RECORD_PREFIX + _escape(record_id)


_ESCAPED = re.compile("%(25|2F|00)")
_UNESCAPED = {"25": "%", "2F": "/", "00": "\x00"}


def _record_id(key: str) -> str:
    """The record id of the memory key ``key`` (``record_key`` undone, in one pass)."""
    return _ESCAPED.sub(lambda m: _UNESCAPED[m[1]], key[len(RECORD_PREFIX) :])


def _naive_utc(when: datetime) -> datetime:
    """CrewAI compares with ``datetime.utcnow()``: naive UTC, always."""
    if when.tzinfo is not None:
        return when.astimezone(timezone.utc).replace(tzinfo=None)
    return when


def _utcnow() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


def _pack(vector: Any) -> str:
    return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")


def _as_rows(embeddings: list[list[float] | None]) -> list[Any]:
    """Each embedding as a float32 row (None for a record without one), converted from
    Python floats in one call when they are all of one length (save's batches)."""
    given = [e for e in embeddings if e]
    if not given:
        return [None] * len(embeddings)
    if len({len(e) for e in given}) != 1:
        return [None if not e else np.asarray(e, dtype="<f4") for e in embeddings]
    rows = iter(np.asarray(given, dtype="<f4"))
    return [next(rows) if e else None for e in embeddings]


def _unpack(text: str) -> list[float]:
    return np.frombuffer(base64.b64decode(text), dtype="<f4").astype(float).tolist()  # type: ignore[no-any-return]


def _scope_of(prefix: str | None) -> str | None:
    """A scope prefix normalised (``/a/b``); None for every scope (None, ``""``, ``/``)."""
    if prefix is None or not prefix.strip("/"):
        return None
    prefix = prefix.rstrip("/")
    return prefix if prefix.startswith("/") else "/" + prefix


def _in_scope(scope: str, prefix: str | None) -> bool:
    """CrewAI's prefix semantics: ``/a`` holds ``/a`` and ``/a/b``, not ``/ab``."""
    if prefix is None:
        return True
    scope = scope.rstrip("/") or "/"
    return scope == prefix or scope.startswith(prefix + "/")


class _Entry:
    """A record as cached: the envelope stored in Octopoda, its datetimes parsed."""

    __slots__ = ("created_at", "env", "last_accessed")

    def __init__(self, env: dict[str, Any]) -> None:
        self.env = env
        self.created_at = datetime.fromisoformat(env["created_at"])
        self.last_accessed = datetime.fromisoformat(env["last_accessed"])

    @property
    def scope(self) -> str:
        return str(self.env["scope"])

    @property
    def categories(self) -> list[str]:
        return list(self.env["categories"])

    def matches(
        self,
        prefix: str | None,
        categories: list[str] | None,
        metadata_filter: dict[str, Any] | None,
    ) -> bool:
        if not _in_scope(self.scope, prefix):
            return False
        if categories and not any(c in self.env["categories"] for c in categories):
            return False
        meta = self.env["metadata"]
        return not metadata_filter or all(
            k in meta and meta[k] == v for k, v in metadata_filter.items()
        )

    def record(self, *, with_embedding: bool = True) -> MemoryRecord:
        env = self.env
        packed = env.get("embedding")
        return MemoryRecord(
            id=env["id"],
            content=env["content"],
            scope=env["scope"],
            categories=list(env["categories"]),
            metadata=dict(env["metadata"]),
            importance=env["importance"],
            created_at=self.created_at,
            last_accessed=self.last_accessed,
            embedding=_unpack(packed) if (packed and with_embedding) else None,
            source=env.get("source"),
            private=bool(env.get("private", False)),
        )


def _envelope(record: MemoryRecord, embedding: str | None) -> dict[str, Any]:
    return {
        "id": record.id,
        "content": record.content,
        "scope": record.scope,
        "categories": list(record.categories),
        "metadata": dict(record.metadata),
        "importance": float(record.importance),
        "created_at": _naive_utc(record.created_at).isoformat(),
        "last_accessed": _naive_utc(record.last_accessed).isoformat(),
        "source": record.source,
        "private": bool(record.private),
        "embedding": embedding,
    }


class OctopodaStorage:
    """CrewAI's memory storage (``Memory(storage=OctopodaStorage("crew.db"))``) on Octopoda.

    Every record is one memory of the agent ``agent_id`` (key :func:`record_key`): ``save``
    and ``update`` write new versions, ``delete`` and ``reset`` write tombstones, each call one
    audited event on the agent's hash chain, so the history of a record and who changed it
    stay readable after CrewAI forgot it. ``store``: a path, URL, ``Store``, ``Octopoda``
    client or ``AgentRuntime`` (a runtime or store passed in stays open on ``close()``).

    Search ranks by cosine similarity of the embeddings CrewAI supplies (scores in [0, 1]),
    held in an in-process index built from the store on open; after another process or
    storage wrote to the same agent, the next call reads again the records its events
    changed (all of them past 1,000 events). Timestamps come back naive UTC, as CrewAI's
    scoring needs; a vector of another dimension than the stored ones raises CrewAI's
    ``EmbeddingDimensionMismatchError``. Thread-safe (``Memory`` saves from a worker thread).
    """

    def __init__(self, store: Target = None, *, agent_id: str = "crewai-memory") -> None:
        self.agent: AgentRuntime
        """The Octopoda agent whose memory holds the records."""
        self.agent, self._owns_agent = resolve_runtime(store, agent_id)
        self._target = store
        self._lock = threading.RLock()
        self._entries: dict[str, _Entry] = {}
        self._scopes: dict[str, set[str]] = {}  # scope -> ids, for prefix selection
        self._index = VectorIndex()
        self._seen_seq = -1
        self._closed = False
        with self._lock:
            self._reload()

    @property
    def write_lock(self) -> threading.RLock:
        """The lock every operation holds; crewai 1.10-1.13's encoding flow takes it around
        its read-then-write steps (as it does LanceDB's)."""
        return self._lock

    def __repr__(self) -> str:
        return f"OctopodaStorage(agent={self.agent.agent_id!r}, store={self.agent.store.url!r})"

    # -- the cache -------------------------------------------------------------------------

    def _head_seq(self) -> int:
        row = self.agent.store.agent(self.agent.agent_id)
        return -1 if row is None else int(row.head_seq)

    def _reload(self) -> None:
        self._entries.clear()
        self._scopes.clear()
        self._index.clear()
        seq = self._head_seq()
        for item in self.agent.search(RECORD_PREFIX, limit=None):
            env = item.value
            if not isinstance(env, dict) or "id" not in env:
                continue
            self._cache(_Entry(env))
        self._seen_seq = seq

    def _cache_saved(self, entries: list[_Entry], vectors: list[Any]) -> None:
        """Cache the entries ``save`` wrote, each with its embedding row (None: it has
        none), the rows put in the index in one go."""
        with_vectors: list[str] = []
        rows = []
        for entry, vector in zip(entries, vectors, strict=True):
            rid = entry.env["id"]
            self._uncache_scope(rid)
            self._entries[rid] = entry
            self._scopes.setdefault(entry.scope, set()).add(rid)
            if vector is None:
                self._index.remove(rid)
            else:
                with_vectors.append(rid)
                rows.append(vector)
        if rows:
            self._index.put_many(with_vectors, rows)

    def _cache(self, entry: _Entry, vector: Any = None) -> None:
        """Cache ``entry``; ``vector``: its embedding when the caller has it unpacked."""
        rid = entry.env["id"]
        self._uncache_scope(rid)
        self._entries[rid] = entry
        self._scopes.setdefault(entry.scope, set()).add(rid)
        packed = entry.env.get("embedding")
        if packed:
            if vector is None:  # (the index takes the stored float32 bytes as they are)
                vector = np.frombuffer(base64.b64decode(packed), dtype="<f4")
            self._index.put(rid, vector)
        else:
            self._index.remove(rid)

    def _drop(self, rid: str) -> None:
        """Forget ``rid`` in the cache (deleted, or no longer a record)."""
        self._uncache_scope(rid)
        self._entries.pop(rid, None)
        self._index.remove(rid)

    def _uncache_scope(self, rid: str) -> None:
        old = self._entries.get(rid)
        if old is not None:
            ids = self._scopes.get(old.scope)
            if ids is not None:
                ids.discard(rid)
                if not ids:
                    del self._scopes[old.scope]

    def _fresh(self) -> None:
        """Called under the lock before every operation: the cache as the store is now."""
        if self._closed:
            # CrewAI's own storages stay usable after close() (Memory.close() closes them,
            # tests and tools read them after): a storage that opened its runtime opens it
            # again, and close() releases it again.
            if self._owns_agent:
                self.agent, _ = resolve_runtime(self._target, self.agent.agent_id)
            self._closed = False
            self._seen_seq = -2
        head = self._head_seq()
        seen = self._seen_seq
        if head == seen:
            return
        # another writer (process, storage) changed the agent's memory: read again what
        # its events changed, or everything when they cannot tell (-2: reload)
        changed = None if seen == -2 else changed_keys(self.agent, max(seen, 0), head)
        if changed is None:
            self._reload()
            return
        for key in changed:
            if key.startswith(RECORD_PREFIX):
                rid, found = _record_id(key), self.agent.recall(key)
                env = found.value if found.found else None
                if isinstance(env, dict) and env.get("id") == rid:
                    self._cache(_Entry(env))
                else:
                    self._drop(rid)
        self._seen_seq = head

    def _wrote(self, seq: int) -> None:
        # Our own write (under the lock) moves the head by one event; with another writer's
        # events in between, the next call catches up on them (and this write's keys).
        if seq == self._seen_seq + 1:
            self._seen_seq = seq

    def _write(self, entries: list[_Entry], vectors: list[Any] | None = None) -> None:
        """Write ``entries`` in one event and cache them; ``vectors``: each one's embedding
        row (None: it has none), when the caller has them unpacked."""
        if not entries:
            return
        done = self.agent.remember_many([(record_key(e.env["id"]), e.env) for e in entries])
        if vectors is None:
            for entry in entries:
                self._cache(entry)
        else:
            self._cache_saved(entries, vectors)
        self._wrote(done[-1].seq)

    def _forget(self, ids: Iterable[str]) -> int:
        wanted = [i for i in dict.fromkeys(ids) if i in self._entries]
        if not wanted:
            return 0
        done = self.agent.forget_many(record_key(i) for i in wanted)
        for rid in wanted:
            self._drop(rid)
        if done:
            self._wrote(done[-1].seq)
        return len(wanted)

    def _check_dim(self, vectors: Iterable[list[float] | None]) -> None:
        dim = self._index.dim
        for vector in vectors:
            if not vector:
                continue
            if dim and len(vector) != dim:
                raise EmbeddingDimensionMismatchError(dim, len(vector))
            dim = len(vector)

    def _select(
        self,
        scope_prefix: str | None,
        categories: list[str] | None = None,
        metadata_filter: dict[str, Any] | None = None,
    ) -> list[_Entry]:
        prefix = _scope_of(scope_prefix)
        if prefix is None:
            found: Iterable[_Entry] = self._entries.values()
        else:
            entries = self._entries
            found = [
                entries[rid]
                for scope, ids in self._scopes.items()
                if _in_scope(scope, prefix)
                for rid in ids
            ]
        if not categories and not metadata_filter:
            return list(found)
        return [e for e in found if e.matches(None, categories, metadata_filter)]

    # -- StorageBackend --------------------------------------------------------------------

    def save(self, records: list[MemoryRecord]) -> None:
        """Write ``records`` (new versions of those whose id exists) in one audited event."""
        if not records:
            return
        with self._lock:
            self._fresh()
            self._check_dim(r.embedding for r in records)
            vectors = _as_rows([r.embedding for r in records])  # (one conversion per batch)
            entries = [
                _Entry(_envelope(r, None if v is None else _pack(v)))
                for r, v in zip(records, vectors, strict=True)
            ]
            self._write(entries, vectors)

    def update(self, record: MemoryRecord) -> None:
        """The next version of ``record`` (by id). Without an embedding it keeps the
        stored one."""
        with self._lock:
            self._fresh()
            self._check_dim([record.embedding])
            packed: str | None
            if record.embedding:
                packed = _pack(record.embedding)
            else:
                old = self._entries.get(record.id)
                packed = old.env.get("embedding") if old else None
            self._write([_Entry(_envelope(record, packed))])

    def search(
        self,
        query_embedding: list[float],
        scope_prefix: str | None = None,
        categories: list[str] | None = None,
        metadata_filter: dict[str, Any] | None = None,
        limit: int = 10,
        min_score: float = 0.0,
    ) -> list[tuple[MemoryRecord, float]]:
        """The ``limit`` records most similar to ``query_embedding`` in ``scope_prefix``
        (and subscopes), with any of ``categories`` and every ``metadata_filter`` pair;
        scores (cosine, clipped) in [0, 1], best first, at least ``min_score``."""
        with self._lock:
            self._fresh()
            if not self._index.dim or not query_embedding or limit <= 0:
                return []
            if len(query_embedding) != self._index.dim:
                raise EmbeddingDimensionMismatchError(self._index.dim, len(query_embedding))
            filtered = bool(_scope_of(scope_prefix) or categories or metadata_filter)
            allowed = (
                {e.env["id"] for e in self._select(scope_prefix, categories, metadata_filter)}
                if filtered
                else None
            )
            out = []
            for rid, score in self._index.search(query_embedding, allowed, limit):
                if score < min_score:
                    break
                # without the embedding, as Qdrant Edge's search returns them (CrewAI's
                # recall and consolidation do not read it; get_record has it)
                out.append((self._entries[rid].record(with_embedding=False), score))
            return out

    def delete(
        self,
        scope_prefix: str | None = None,
        categories: list[str] | None = None,
        record_ids: list[str] | None = None,
        older_than: datetime | None = None,
        metadata_filter: dict[str, Any] | None = None,
    ) -> int:
        """Tombstone the records matching every criterion given (none: all); how many."""
        with self._lock:
            self._fresh()
            if record_ids is not None:
                wanted = set(record_ids)
                found = [self._entries[i] for i in wanted if i in self._entries]
                prefix = _scope_of(scope_prefix)
                found = [e for e in found if e.matches(prefix, categories, metadata_filter)]
            else:
                found = self._select(scope_prefix, categories, metadata_filter)
            if older_than is not None:
                cutoff = _naive_utc(older_than)
                found = [e for e in found if e.created_at < cutoff]
            return self._forget(e.env["id"] for e in found)

    def get_record(self, record_id: str) -> MemoryRecord | None:
        with self._lock:
            self._fresh()
            entry = self._entries.get(record_id)
            return None if entry is None else entry.record()

    def list_records(
        self, scope_prefix: str | None = None, limit: int = 200, offset: int = 0
    ) -> list[MemoryRecord]:
        """Records in ``scope_prefix`` (and subscopes), newest first."""
        with self._lock:
            self._fresh()
            found = self._select(scope_prefix)
            found.sort(key=lambda e: (e.created_at, e.env["id"]), reverse=True)
            return [e.record() for e in found[offset : offset + limit]]

    def get_scope_info(self, scope: str) -> ScopeInfo:
        with self._lock:
            self._fresh()
            path = scope.rstrip("/") or "/"
            if not path.startswith("/"):
                path = "/" + path
            found = self._select(path)
            return ScopeInfo(
                path=path,
                record_count=len(found),
                categories=sorted({c for e in found for c in e.categories}),
                oldest_record=min((e.created_at for e in found), default=None),
                newest_record=max((e.created_at for e in found), default=None),
                child_scopes=self._children(path, found),
            )

    @staticmethod
    def _children(parent: str, found: Iterable[_Entry]) -> list[str]:
        base = "/" if parent == "/" else parent + "/"
        children = set()
        for entry in found:
            scope = entry.scope
            if scope.startswith(base):
                first = scope[len(base) :].split("/", 1)[0]
                if first:
                    children.add(base + first)
        return sorted(children)

    def list_scopes(self, parent: str = "/") -> list[str]:
        """The immediate child scopes of ``parent`` that hold records."""
        with self._lock:
            self._fresh()
            path = _scope_of(parent) or "/"
            return self._children(path, self._select(path))

    def list_categories(self, scope_prefix: str | None = None) -> dict[str, int]:
        with self._lock:
            self._fresh()
            counts: dict[str, int] = {}
            for entry in self._select(scope_prefix):
                for category in entry.categories:
                    counts[category] = counts.get(category, 0) + 1
            return counts

    def count(self, scope_prefix: str | None = None) -> int:
        with self._lock:
            self._fresh()
            return len(self._select(scope_prefix))

    def reset(self, scope_prefix: str | None = None) -> None:
        """Tombstone every record in ``scope_prefix`` (None: all); history keeps them."""
        with self._lock:
            self._fresh()
            self._forget([e.env["id"] for e in self._select(scope_prefix)])

    def touch_records(self, record_ids: list[str]) -> None:
        """Set ``last_accessed`` of the records to now (one audited event)."""
        with self._lock:
            self._fresh()
            now = _utcnow().isoformat()
            entries = []
            for rid in dict.fromkeys(record_ids):
                old = self._entries.get(rid)
                if old is not None:
                    entries.append(_Entry({**old.env, "last_accessed": now}))
            self._write(entries)

    def close(self) -> None:
        """Release the runtime this storage opened (one passed in stays open). Idempotent;
        a later call opens it again, as CrewAI's storages stay usable after ``close()``."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._entries.clear()
            self._scopes.clear()
            self._index.clear()
            if self._owns_agent:
                self.agent.close()

    def __enter__(self) -> OctopodaStorage:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- async twins -------------------------------------------------------------------------

    async def asave(self, records: list[MemoryRecord]) -> None:
        await run_blocking(self.save, records)

    async def asearch(
        self,
        query_embedding: list[float],
        scope_prefix: str | None = None,
        categories: list[str] | None = None,
        metadata_filter: dict[str, Any] | None = None,
        limit: int = 10,
        min_score: float = 0.0,
    ) -> list[tuple[MemoryRecord, float]]:
        return await run_blocking(
            self.search, query_embedding, scope_prefix, categories, metadata_filter, limit,
            min_score,
        )  # fmt: skip

    async def adelete(
        self,
        scope_prefix: str | None = None,
        categories: list[str] | None = None,
        record_ids: list[str] | None = None,
        older_than: datetime | None = None,
        metadata_filter: dict[str, Any] | None = None,
    ) -> int:
        return await run_blocking(
            self.delete, scope_prefix, categories, record_ids, older_than, metadata_filter
        )
