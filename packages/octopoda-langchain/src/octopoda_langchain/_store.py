"""OctopodaStore: LangGraph's long-term memory store on Octopoda memory."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future
from datetime import datetime, timezone
from typing import Any, NamedTuple, TypeVar

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

from octopoda import AgentRuntime, InvalidInput, InvalidValue, MemoryItem
from octopoda.integrations import Target, resolve_runtime, run_blocking
from octopoda.search import bm25, cosine, string_leaves

from . import _keys as keys
from ._batching import Coalescer
from ._lifecycle import Lifecycle, Opening
from ._search import check_filter, matches, similarity

__all__ = ["OctopodaStore"]

S = TypeVar("S", bound="OctopodaStore")

REFRESH_FRACTION = 0.01
"""A read refreshes an item's TTL once at least this share of the TTL has passed since its
last write (so reading an item twice in a row does not write twice)."""


class _Entry(NamedTuple):
    namespace: tuple[str, ...]
    key: str
    envelope: dict[str, Any]


def _when(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=timezone.utc)


def _in_user_terms(exc: InvalidValue, pairs: Sequence[tuple[str, Any]]) -> InvalidValue:
    """``exc`` about an item's value as its caller sees it: the path inside the value they
    put (``value['s']``, not the envelope's ``value['value']['s']``), and which item."""
    text = str(exc).replace("value['value']", "value")
    culprit = None
    if len(pairs) == 1:
        culprit = pairs[0][0]
    else:
        for key, envelope in pairs:
            try:
                json.dumps(envelope, allow_nan=False)
            except (TypeError, ValueError, RecursionError):
                culprit = key
                break
    parsed = None if culprit is None else keys.parse_store_key(culprit)
    if parsed is not None:
        text = f"cannot put item {parsed[1]!r} in namespace {parsed[0]!r}: {text}"
    return InvalidValue(text)


def _check_labels(namespace: Sequence[str], *, allow_empty: bool = True) -> None:
    """LangGraph's label rules (``validate_op_namespace``): a tuple (or list) of non-empty
    strings without periods or NUL characters; ``*`` in a match path is such a label."""
    if not isinstance(namespace, (tuple, list)):
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
    """What ``batch`` refuses. The ``"langgraph"`` root label is the public ``put``'s rule
    (``BaseStore.put`` checks it); LangGraph's stores accept it through ``batch``."""
    if isinstance(op, PutOp):
        _check_labels(op.namespace, allow_empty=False)
    elif isinstance(op, GetOp):
        _check_labels(op.namespace)
    elif isinstance(op, SearchOp):
        _check_labels(op.namespace_prefix)
        if op.filter:
            check_filter(op.filter)
    elif isinstance(op, ListNamespacesOp):
        for condition in op.match_conditions or ():
            if condition.match_type not in ("prefix", "suffix"):
                raise InvalidInput(
                    f"unsupported namespace match type {condition.match_type!r};"
                    " use 'prefix' or 'suffix'"
                )
            _check_labels(_path(condition))
    else:
        raise InvalidInput(f"unknown store operation {type(op).__name__}")


def _tokens(path: str) -> Any:
    """A field path as ``get_text_at_path`` takes it: ``"$"`` (the whole value) as is."""
    if path == "$":
        return path
    from langgraph.store.base.embed import tokenize_path

    return tokenize_path(path)


def _path(condition: MatchCondition) -> tuple[str, ...]:
    """A match condition's labels; a bare string (``MatchCondition("suffix", "public")``)
    is one label."""
    path = condition.path
    return (path,) if isinstance(path, str) else tuple(path)


def _matches_condition(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = _path(condition)
    if len(namespace) < len(path):
        return False
    if condition.match_type == "prefix":
        pairs = zip(namespace, path, strict=False)
    elif condition.match_type == "suffix":
        pairs = zip(reversed(namespace), reversed(path), strict=False)
    else:
        raise InvalidInput(f"unsupported namespace match type {condition.match_type!r}")
    return all(p == "*" or n == p for n, p in pairs)


def _finished() -> Future[None]:
    done: Future[None] = Future()
    done.set_result(None)
    return done


class OctopodaStore(BaseStore, Lifecycle):
    """LangGraph long-term memory (``create_agent(store=...)``, ``get_store()`` in tools) on
    Octopoda: every put and delete is a versioned, audited write of the agent ``agent_id``
    (or of the ``AgentRuntime`` passed as ``store``).

    Each LangGraph namespace maps onto an Octopoda key prefix (``ls/<label>/.../<key>``), so
    the whole history of an item is ``agent.recall_history(key)``. ``search`` supports
    ``filter`` (exact values and ``$eq $ne $gt $gte $lt $lte``), ``limit``, ``offset`` and
    ``query``: ranked by meaning when ``index`` (LangGraph's ``IndexConfig``: ``embed``,
    ``dims``, ``fields``, default ``["$"]``, the whole value) is given, else lexically (BM25
    over the item's text fields, then the items without a query word, unscored, as
    LangGraph's stores return every item for a query without an index). Filter
    keys may be dotted paths (``"user.tier"``). TTLs (minutes, per item or
    ``ttl={"default_ttl": ...}``) use Octopoda's expiry: an expired item is gone from every
    read at once (``sweep_ttl()`` writes its tombstone); with ``ttl={"refresh_on_read":
    True}``, as in LangGraph's SQLite store, a read with ``refresh_ttl`` writes the item again
    with a fresh expiry. ``clock`` (tests): the time source, the same one the
    ``AgentRuntime`` was given. Open it as LangGraph's stores are opened: ``with
    OctopodaStore.from_conn_string(url) as store:`` (or ``async with``); ``setup()`` is a
    no-op.
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
        self._lock = threading.RLock()  # one batch at a time: reads, then their writes
        self._coalescer = Coalescer(self._abatch_now)
        self.ttl_config = ttl
        self.index_config = index
        self._clock = clock or time.time
        self._similarity: Callable[[Sequence[float], Sequence[float]], float] = cosine
        self.embeddings: Any = None
        """The ``Embeddings`` of the index config (None without one), as LangGraph's stores."""
        self._fields: list[tuple[str, Any]] = []
        self._refresh_on_read = bool(ttl and ttl.get("refresh_on_read", False))
        if index is not None:
            from langgraph.store.base.embed import ensure_embeddings

            self.embeddings = ensure_embeddings(index.get("embed"))
            self._similarity = similarity(str(index.get("distance_type") or "cosine"))
            # "fields" (IndexConfig); LangGraph's SqliteStore reads "text_fields" instead
            config: dict[str, Any] = dict(index)
            fields: list[str] = config.get("fields") or config.get("text_fields") or ["$"]
            self._fields = [(f, _tokens(f)) for f in fields]

    @classmethod
    def from_conn_string(
        cls: type[S],
        conn_string: str,
        *,
        agent_id: str = "langgraph",
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        **kwargs: Any,
    ) -> Opening[S]:
        """A store on ``conn_string`` (path or URL), closed on exit: ``with
        OctopodaStore.from_conn_string(url) as store:`` or ``async with ...``, as LangGraph's
        ``SqliteStore`` and ``PostgresStore`` are opened."""
        return Opening(lambda: cls(conn_string, agent_id=agent_id, index=index, ttl=ttl, **kwargs))

    def close(self) -> None:
        """Release the runtime this store opened (a runtime passed in stays open)."""
        if self._owns_agent:
            self.agent.close()

    # -- TTL sweeping, as LangGraph's SQL stores offer it ---------------------------------

    def sweep_ttl(self) -> int:
        """Tombstone the items whose TTL has passed (one audited event); how many. They read
        as gone the moment they expire, so this only puts the expiry in the history."""
        return self._sweep()

    async def asweep_ttl(self) -> int:
        return await run_blocking(self._sweep)

    def _sweep(self) -> int:
        with self._lock:
            return len(self.agent.forget_expired(keys.STORE))

    def start_ttl_sweeper(self, sweep_interval_minutes: int | None = None) -> Future[None]:
        """No thread is started: expired items read as gone at once, so no sweep is needed
        for correctness (call :meth:`sweep_ttl` to record expiries). A finished future."""
        return _finished()

    async def astart_ttl_sweeper(self, sweep_interval_minutes: int | None = None) -> Future[None]:
        return _finished()

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Nothing runs, so nothing to stop: True."""
        return True

    async def astop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        return True

    def __repr__(self) -> str:
        return f"OctopodaStore(agent={self.agent.agent_id!r}, store={self.agent.store.url!r})"

    # -- BaseStore --------------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        for op in ops:
            _validate(op)
        texts = self._texts_to_embed(ops)
        queries = self._queries_to_embed(ops)
        vectors = self.embeddings.embed_documents(texts) if texts else []
        query_vectors = [self.embeddings.embed_query(q) for q in queries]
        return self._execute(ops, vectors, dict(zip(queries, query_vectors, strict=True)))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """As ``batch``; concurrent calls run together as one batch (see ``_batching``)."""
        ops = list(ops)
        for op in ops:
            _validate(op)
        return await self._coalescer.submit(ops)

    async def _abatch_now(self, ops: list[Op]) -> list[Result]:
        texts = self._texts_to_embed(ops)
        queries = self._queries_to_embed(ops)
        vectors = await self.embeddings.aembed_documents(texts) if texts else []
        query_vectors = [await self.embeddings.aembed_query(q) for q in queries]
        by_query = dict(zip(queries, query_vectors, strict=True))
        return await run_blocking(self._execute, ops, vectors, by_query)

    # -- embeddings (only with an index config) --------------------------------------------

    def _paths(self, op: PutOp) -> list[tuple[str, Any]]:
        if op.index is None or op.index is False:
            return self._fields if op.index is None else []
        return [(f, _tokens(f)) for f in op.index]

    def _put_texts(self, op: PutOp) -> list[tuple[str, str]]:
        """``(path, text)`` pairs of a put to embed, in order."""
        if self.embeddings is None or op.value is None or op.index is False:
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
        if self.embeddings is None:
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
        with self._lock:
            now = self._clock()
            results: list[Result] = []
            refresh: dict[str, _Entry] = {}
            scans: dict[str, list[MemoryItem]] = {}  # prefix -> items, read once a batch
            for op in ops:
                if isinstance(op, GetOp):
                    results.append(self._get(op, now, refresh))
                elif isinstance(op, SearchOp):
                    results.append(self._search(op, now, refresh, query_vectors, scans))
                elif isinstance(op, ListNamespacesOp):
                    results.append(self._list_namespaces(op, scans))
                else:
                    results.append(None)
            self._write(self._last_puts(ops), list(vectors), refresh, now)
            return results

    def _scan(self, prefix: str, scans: dict[str, list[MemoryItem]]) -> list[MemoryItem]:
        found = scans.get(prefix)
        if found is None:
            found = scans[prefix] = self.agent.search(prefix, limit=None)
        return found

    def _get(self, op: GetOp, now: float, refresh: dict[str, _Entry]) -> Item | None:
        key = keys.store_key(op.namespace, op.key)
        found = self.agent.recall(key)
        if not found or not isinstance(found.value, dict) or "value" not in found.value:
            return None
        entry = _Entry(op.namespace, op.key, found.value)
        if op.refresh_ttl and self._refresh_on_read:
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

    def _entries(
        self, prefix: tuple[str, ...], scans: dict[str, list[MemoryItem]]
    ) -> list[tuple[str, float, _Entry]]:
        out = []
        for item in self._scan(keys.store_prefix(prefix), scans):
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
        scans: dict[str, list[MemoryItem]],
    ) -> list[SearchItem]:
        found = [
            row
            for row in self._entries(tuple(op.namespace_prefix), scans)
            if not op.filter or matches(row[2].envelope["value"], op.filter)
        ]
        if op.query:
            ranked = self._rank(op.query, found, query_vectors.get(op.query))
        else:
            found.sort(key=lambda r: (-r[2].envelope.get("updated_at", 0.0), r[0]))
            ranked = [(row, None) for row in found]
        page = ranked[op.offset : op.offset + op.limit]
        if op.refresh_ttl and self._refresh_on_read:
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
                    best = max(self._similarity(query_vector, v) for v in stored.values())
                    scored.append((row, best))
                else:
                    unscored.append((row, None))
            scored.sort(key=lambda pair: (-(pair[1] or 0.0), pair[0][0]))
            return scored + unscored
        # Without an index, LangGraph's stores ignore the query and return every item; ours
        # ranks the items that contain a query word first (BM25) and returns the rest after
        # them, unscored, newest first.
        searchable = [row for row in rows if row[2].envelope.get("index") is not False]
        documents = [self._lexical_texts(row[2].envelope) for row in searchable]
        scores = bm25(query, documents)
        lexical = [(row, s) for row, s in zip(searchable, scores, strict=True) if s > 0]
        lexical.sort(key=lambda pair: (-pair[1], pair[0][0]))
        ranked = {row[0] for row, _ in lexical}
        rest = [row for row in rows if row[0] not in ranked]
        rest.sort(key=lambda r: (-r[2].envelope.get("updated_at", 0.0), r[0]))
        return [(row, round(score, 6)) for row, score in lexical] + [(row, None) for row in rest]

    def _lexical_texts(self, envelope: dict[str, Any]) -> list[str]:
        fields = envelope.get("index")
        value = envelope["value"]
        if not isinstance(fields, list) and self.index_config is None:
            return string_leaves(value)
        from langgraph.store.base.embed import get_text_at_path

        paths = fields if isinstance(fields, list) else [f for f, _ in self._fields]
        return [t for path in paths for t in get_text_at_path(value, _tokens(path))]

    def _list_namespaces(
        self, op: ListNamespacesOp, scans: dict[str, list[MemoryItem]]
    ) -> list[tuple[str, ...]]:
        prefix: tuple[str, ...] = ()
        for condition in op.match_conditions or ():
            if condition.match_type == "prefix":
                fixed = []
                for label in _path(condition):
                    if label == "*":
                        break
                    fixed.append(label)
                prefix = tuple(fixed)
                break
        found = set()
        for item in self._scan(keys.store_prefix(prefix), scans):
            parsed = keys.parse_store_key(item.key)
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
            try:
                self.agent.remember_many(pairs, ttl=None if minutes is None else minutes * 60.0)
            except InvalidValue as exc:
                raise _in_user_terms(exc, pairs) from None
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
