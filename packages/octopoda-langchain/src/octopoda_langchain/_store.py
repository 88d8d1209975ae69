"""OctopodaStore: LangGraph's long-term memory store on Octopoda memory."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timezone
from typing import Any, NamedTuple

from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
)

from octopoda import AgentRuntime, InvalidInput

from . import _keys as keys
from ._search import bm25, cosine, matches, string_leaves
from ._target import Target, resolve_runtime, to_thread

__all__ = ["OctopodaStore"]

REFRESH_FRACTION = 0.01
"""A read refreshes an item's TTL once at least this share of the TTL has passed since its
last write (so reading an item twice in a row does not write twice)."""


class _Entry(NamedTuple):
    namespace: tuple[str, ...]
    key: str
    envelope: dict[str, Any]


def _when(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=timezone.utc)


def _check_labels(namespace: tuple[str, ...], *, allow_empty: bool = True) -> None:
    if not isinstance(namespace, tuple):
        raise InvalidNamespaceError(f"a namespace is a tuple of strings, not {namespace!r}")
    if not namespace and not allow_empty:
        raise InvalidNamespaceError("Namespace cannot be empty.")
    for label in namespace:
        if not isinstance(label, str) or not label or "." in label or "\x00" in label:
            raise InvalidNamespaceError(
                f"invalid namespace label {label!r} in {namespace!r}: labels are non-empty"
                " strings without periods or NUL characters"
            )


def _validate(op: Op) -> None:
    if isinstance(op, PutOp):
        _check_labels(op.namespace, allow_empty=False)
        if op.namespace[0] == "langgraph":
            raise InvalidNamespaceError(
                f'Root label for namespace cannot be "langgraph". Got: {op.namespace}'
            )
    elif isinstance(op, GetOp):
        _check_labels(op.namespace)
    elif isinstance(op, SearchOp):
        _check_labels(op.namespace_prefix)
    elif isinstance(op, ListNamespacesOp):
        for condition in op.match_conditions or ():
            if not all(isinstance(label, str) for label in condition.path):
                raise InvalidNamespaceError(f"invalid match path {condition.path!r}")
    else:
        raise InvalidInput(f"unknown store operation {type(op).__name__}")


def _matches_condition(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = condition.path
    if len(namespace) < len(path):
        return False
    if condition.match_type == "prefix":
        pairs = zip(namespace, path, strict=False)
    elif condition.match_type == "suffix":
        pairs = zip(reversed(namespace), reversed(path), strict=False)
    else:
        raise InvalidInput(f"unsupported namespace match type {condition.match_type!r}")
    return all(p == "*" or n == p for n, p in pairs)


class OctopodaStore(BaseStore):
    """LangGraph long-term memory (``create_agent(store=...)``, ``get_store()`` in tools) on
    Octopoda: every put and delete is a versioned, audited write of the agent ``agent_id``
    (or of the ``AgentRuntime`` passed as ``store``).

    Each LangGraph namespace maps onto an Octopoda key prefix (``ls/<label>/.../<key>``), so
    the whole history of an item is ``agent.recall_history(key)``. ``search`` supports
    ``filter`` (exact values and ``$eq $ne $gt $gte $lt $lte``), ``limit``, ``offset`` and
    ``query``: ranked by meaning when ``index`` (LangGraph's ``IndexConfig``: ``embed``,
    ``dims``, ``fields``) is given, else lexically (BM25 over the item's text fields; only
    items that contain a query word are returned). TTLs (minutes, per item or
    ``ttl={"default_ttl": ...}``) use Octopoda's expiry: an expired item is gone from every
    read at once; a read with ``refresh_ttl`` writes the item again with a fresh expiry.
    ``clock`` (tests): the time source, the same one the ``AgentRuntime`` was given.
    """

    supports_ttl = True

    def __init__(
        self,
        store: Target = None,
        *,
        agent_id: str = "langgraph",
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.agent: AgentRuntime
        """The Octopoda agent whose memory holds the items."""
        self.agent, self._owns_agent = resolve_runtime(store, agent_id)
        self.ttl_config = ttl
        self.index_config = index
        self._clock = clock or time.time
        self._embeddings: Any = None
        self._fields: list[tuple[str, Any]] = []
        if index is not None:
            from langgraph.store.base.embed import ensure_embeddings, tokenize_path

            self._embeddings = ensure_embeddings(index.get("embed"))
            self._fields = [(f, tokenize_path(f)) for f in index.get("fields") or ["$"]]

    def close(self) -> None:
        """Release the runtime this store opened (a runtime passed in stays open)."""
        if self._owns_agent:
            self.agent.close()

    def __repr__(self) -> str:
        return f"OctopodaStore(agent={self.agent.agent_id!r}, store={self.agent.store.url!r})"

    # -- BaseStore --------------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        for op in ops:
            _validate(op)
        texts = self._texts_to_embed(ops)
        queries = self._queries_to_embed(ops)
        vectors = self._embeddings.embed_documents(texts) if texts else []
        query_vectors = [self._embeddings.embed_query(q) for q in queries]
        return self._execute(ops, vectors, dict(zip(queries, query_vectors, strict=True)))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        for op in ops:
            _validate(op)
        texts = self._texts_to_embed(ops)
        queries = self._queries_to_embed(ops)
        vectors = await self._embeddings.aembed_documents(texts) if texts else []
        query_vectors = [await self._embeddings.aembed_query(q) for q in queries]
        by_query = dict(zip(queries, query_vectors, strict=True))
        return await to_thread(self._execute, ops, vectors, by_query)

    # -- embeddings (only with an index config) --------------------------------------------

    def _paths(self, op: PutOp) -> list[tuple[str, Any]]:
        if op.index is None or op.index is False:
            return self._fields if op.index is None else []
        from langgraph.store.base.embed import tokenize_path

        return [(f, tokenize_path(f)) for f in op.index]

    def _put_texts(self, op: PutOp) -> list[tuple[str, str]]:
        """``(path, text)`` pairs of a put to embed, in order."""
        if self._embeddings is None or op.value is None or op.index is False:
            return []
        from langgraph.store.base.embed import get_text_at_path

        out = []
        for path, tokens in self._paths(op):
            found = get_text_at_path(op.value, tokens)
            if len(found) == 1:
                out.append((path, found[0]))
            else:
                out.extend((f"{path}.{i}", text) for i, text in enumerate(found))
        return out

    def _last_puts(self, ops: Sequence[Op]) -> dict[tuple[tuple[str, ...], str], PutOp]:
        last: dict[tuple[tuple[str, ...], str], PutOp] = {}
        for op in ops:
            if isinstance(op, PutOp):
                last[(op.namespace, op.key)] = op
        return last

    def _texts_to_embed(self, ops: Sequence[Op]) -> list[str]:
        return [t for op in self._last_puts(ops).values() for _, t in self._put_texts(op)]

    def _queries_to_embed(self, ops: Sequence[Op]) -> list[str]:
        if self._embeddings is None:
            return []
        found = {op.query for op in ops if isinstance(op, SearchOp) and op.query}
        return sorted(found)

    # -- execution (blocking; async callers run it in a worker thread) ---------------------

    def _execute(
        self,
        ops: Sequence[Op],
        vectors: Sequence[Sequence[float]],
        query_vectors: dict[str, Sequence[float]],
    ) -> list[Result]:
        now = self._clock()
        results: list[Result] = []
        refresh: dict[str, _Entry] = {}
        for op in ops:
            if isinstance(op, GetOp):
                results.append(self._get(op, now, refresh))
            elif isinstance(op, SearchOp):
                results.append(self._search(op, now, refresh, query_vectors))
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op))
            else:
                results.append(None)
        self._write(self._last_puts(ops), list(vectors), refresh, now)
        return results

    def _get(self, op: GetOp, now: float, refresh: dict[str, _Entry]) -> Item | None:
        key = keys.store_key(op.namespace, op.key)
        found = self.agent.recall(key)
        if not found or not isinstance(found.value, dict) or "value" not in found.value:
            return None
        entry = _Entry(op.namespace, op.key, found.value)
        if op.refresh_ttl:
            self._maybe_refresh(key, entry, found.created_at or now, now, refresh)
        return self._item(entry)

    @staticmethod
    def _item(entry: _Entry, score: float | None = None, *, search: bool = False) -> Item:
        env = entry.envelope
        created = _when(env["created_at"])
        updated = _when(env.get("updated_at", env["created_at"]))
        if search:
            return SearchItem(entry.namespace, entry.key, env["value"], created, updated, score)
        return Item(
            value=env["value"],
            key=entry.key,
            namespace=entry.namespace,
            created_at=created,
            updated_at=updated,
        )

    def _maybe_refresh(
        self, key: str, entry: _Entry, written_at: float, now: float, refresh: dict[str, _Entry]
    ) -> None:
        minutes = entry.envelope.get("ttl_minutes")
        if minutes and now - written_at >= minutes * 60.0 * REFRESH_FRACTION:
            refresh[key] = entry

    def _entries(self, prefix: tuple[str, ...]) -> list[tuple[str, float, _Entry]]:
        out = []
        for item in self.agent.search(keys.store_prefix(prefix), limit=None):
            parsed = keys.parse_store_key(item.key)
            env = item.value
            if parsed is None or not isinstance(env, dict) or "value" not in env:
                continue
            out.append((item.key, item.created_at, _Entry(parsed[0], parsed[1], env)))
        return out

    def _search(
        self,
        op: SearchOp,
        now: float,
        refresh: dict[str, _Entry],
        query_vectors: dict[str, Sequence[float]],
    ) -> list[SearchItem]:
        found = [
            row
            for row in self._entries(op.namespace_prefix)
            if not op.filter or matches(row[2].envelope["value"], op.filter)
        ]
        if op.query:
            ranked = self._rank(op.query, found, query_vectors.get(op.query))
        else:
            found.sort(key=lambda r: (-r[2].envelope.get("updated_at", 0.0), r[0]))
            ranked = [(row, None) for row in found]
        page = ranked[op.offset : op.offset + op.limit]
        if op.refresh_ttl:
            for (key, written_at, entry), _ in page:
                self._maybe_refresh(key, entry, written_at, now, refresh)
        return [
            self._item(entry, score, search=True)  # type: ignore[misc]
            for (_, _, entry), score in page
        ]

    def _rank(
        self,
        query: str,
        rows: list[tuple[str, float, _Entry]],
        query_vector: Sequence[float] | None,
    ) -> list[tuple[tuple[str, float, _Entry], float | None]]:
        if query_vector is not None:
            scored: list[tuple[tuple[str, float, _Entry], float | None]] = []
            unscored = []
            for row in rows:
                stored = row[2].envelope.get("vectors") or {}
                if stored:
                    best = max(cosine(query_vector, v) for v in stored.values())
                    scored.append((row, best))
                else:
                    unscored.append((row, None))
            scored.sort(key=lambda pair: (-(pair[1] or 0.0), pair[0][0]))
            return scored + unscored
        searchable = [row for row in rows if row[2].envelope.get("index") is not False]
        documents = [self._lexical_texts(row[2].envelope) for row in searchable]
        scores = bm25(query, documents)
        lexical = [(row, s) for row, s in zip(searchable, scores, strict=True) if s > 0]
        lexical.sort(key=lambda pair: (-pair[1], pair[0][0]))
        return [(row, round(score, 6)) for row, score in lexical]

    def _lexical_texts(self, envelope: dict[str, Any]) -> list[str]:
        fields = envelope.get("index")
        value = envelope["value"]
        if not isinstance(fields, list) and self.index_config is None:
            return string_leaves(value)
        from langgraph.store.base.embed import get_text_at_path, tokenize_path

        paths = fields if isinstance(fields, list) else [f for f, _ in self._fields]
        return [t for path in paths for t in get_text_at_path(value, tokenize_path(path))]

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        prefix: tuple[str, ...] = ()
        for condition in op.match_conditions or ():
            if condition.match_type == "prefix":
                fixed = []
                for label in condition.path:
                    if label == "*":
                        break
                    fixed.append(label)
                prefix = tuple(fixed)
                break
        found = set()
        for key in self.agent.keys(keys.store_prefix(prefix)):
            parsed = keys.parse_store_key(key)
            if parsed is None:
                continue
            namespace = parsed[0]
            if all(_matches_condition(c, namespace) for c in op.match_conditions or ()):
                found.add(namespace if op.max_depth is None else namespace[: op.max_depth])
        return sorted(found)[op.offset : op.offset + op.limit]

    # -- writes -------------------------------------------------------------------------------

    def _write(
        self,
        puts: dict[tuple[tuple[str, ...], str], PutOp],
        vectors: list[Sequence[float]],
        refresh: dict[str, _Entry],
        now: float,
    ) -> None:
        """Apply the batch's puts and deletes (one event per distinct TTL, one for deletes)
        and the TTL refreshes its reads earned."""
        groups: dict[float | None, list[tuple[str, Any]]] = {}
        deletes: list[str] = []
        for (namespace, key), op in puts.items():
            store_key = keys.store_key(namespace, key)
            refresh.pop(store_key, None)
            if op.value is None:
                deletes.append(store_key)
                continue
            embedded = self._put_texts(op)
            envelope = self._envelope(store_key, op, now)
            if embedded:
                envelope["vectors"] = {path: list(vectors.pop(0)) for path, _ in embedded}
            groups.setdefault(op.ttl, []).append((store_key, envelope))
        for store_key, entry in refresh.items():
            minutes = entry.envelope.get("ttl_minutes")
            groups.setdefault(minutes, []).append((store_key, entry.envelope))
        for minutes, pairs in groups.items():
            self.agent.remember_many(pairs, ttl=None if minutes is None else minutes * 60.0)
        if deletes:
            self.agent.forget_many(deletes)

    def _envelope(self, store_key: str, op: PutOp, now: float) -> dict[str, Any]:
        previous = self.agent.recall(store_key)
        created = now
        if previous and isinstance(previous.value, dict):
            created = previous.value.get("created_at", now)
        envelope: dict[str, Any] = {
            "value": dict(op.value or {}),
            "created_at": created,
            "updated_at": now,
        }
        if op.ttl is not None:
            if isinstance(op.ttl, bool) or not isinstance(op.ttl, (int, float)) or op.ttl <= 0:
                raise InvalidInput(f"ttl is a positive number of minutes or None, not {op.ttl!r}")
            envelope["ttl_minutes"] = float(op.ttl)
        if op.index is not None:
            envelope["index"] = op.index if op.index is False else list(op.index)
        return envelope
