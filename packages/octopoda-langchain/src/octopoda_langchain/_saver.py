"""OctopodaSaver: a LangGraph checkpointer on Octopoda's versioned, audited memory."""

from __future__ import annotations

import builtins
import random
import threading
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeVar, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    PendingWrite,
)
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.types import TASKS

from octopoda import AgentRuntime, Event, InvalidInput, MemoryItem
from octopoda.integrations import Target, resolve_runtime, run_blocking

from . import _keys as keys
from ._cache import CheckpointCache, Writes
from ._codec import (
    CheckpointRecord,
    WriteRecord,
    checkpoint_metadata,
    config_for,
    decode_checkpoint,
    decode_write,
    encode_checkpoint,
    encode_write,
    ids_of,
    metadata_json,
)
from ._lifecycle import Lifecycle, Opening
from ._ordering import OrderRow, metadata_tags, newest_first, order_key
from ._search import check_filter, metadata_matches
from ._upkeep import SaverUpkeep, scan, slot

__all__ = ["OctopodaSaver"]

DEFAULT_AGENT_ID = "langgraph"


S = TypeVar("S", bound="OctopodaSaver")


def _lookup(
    writes: Mapping[tuple[str, str, str], list[WriteRecord]], cid: tuple[str, str, str]
) -> Callable[[], Iterable[WriteRecord]]:
    return lambda: writes.get(cid, [])


def _write_order(write: WriteRecord) -> tuple[str, str, int]:
    # LangGraph's writes_sort_key (task_path, task_id, idx): the order a super-step applies.
    return (write.task_path, write.task_id, write.idx)


class OctopodaSaver(SaverUpkeep, BaseCheckpointSaver[str], Lifecycle):
    """A LangGraph checkpointer whose checkpoints are versioned, audited Octopoda memory.

    ``store`` is where the checkpoints live: a path or URL (``"agent.db"``,
    ``"postgresql://..."``), an open ``Store``, an ``Octopoda`` client (its agent
    ``agent_id``), or an existing :class:`~octopoda.AgentRuntime`, whose agent then owns the
    checkpoints. Every ``put`` and ``put_writes`` is one audited event on that agent's chain;
    deletes write tombstones (the history stays; ``get``/``list`` no longer see it).

    Keep checkpoints on their own agent (the default, ``agent_id="langgraph"``, or e.g.
    ``f"{name}.checkpoints"`` on the same store) when the agent's tool calls are watched for
    loops: each checkpoint is a new memory value, which Octopoda's loop detectors count as
    progress, so sharing the agent would keep a retry loop from being recognised.

    ``cache_size`` checkpoints (and their pending writes) are cached in this process and
    checked against the chain head before each read, so other processes' writes are always
    seen (``0`` turns the cache off). Async methods run the blocking store calls in a worker
    thread (``octopoda.integrations.run_blocking``): they never block the event loop.

    It opens as LangGraph's SQLite and PostgreSQL savers do: ``with`` / ``async with
    OctopodaSaver.from_conn_string(url) as saver:``, ``with`` / ``async with`` on the saver
    itself, and ``setup()`` (a no-op, also awaitable).

    >>> saver = OctopodaSaver(":memory:")
    >>> graph = builder.compile(checkpointer=saver)  # doctest: +SKIP
    """

    def __init__(
        self,
        store: Target = None,
        *,
        agent_id: str = DEFAULT_AGENT_ID,
        serde: SerializerProtocol | None = None,
        cache_size: int = 1024,
    ) -> None:
        super().__init__(serde=serde)
        if isinstance(cache_size, bool) or not isinstance(cache_size, int) or cache_size < 0:
            raise InvalidInput(f"cache_size must be an int >= 0, not {cache_size!r}")
        self.agent: AgentRuntime
        """The Octopoda agent whose memory and audit chain hold the checkpoints."""
        self.agent, self._owns_agent = resolve_runtime(store, agent_id)
        self._cache = CheckpointCache(cache_size)
        self._lock = threading.RLock()

    @classmethod
    def from_conn_string(
        cls: type[S], conn_string: str, *, agent_id: str = DEFAULT_AGENT_ID, **kwargs: Any
    ) -> Opening[S]:
        """A saver on the store at ``conn_string`` (path or URL), closed on exit: ``with
        OctopodaSaver.from_conn_string(url) as saver:`` or ``async with ...``, as LangGraph's
        ``SqliteSaver``, ``PostgresSaver`` and ``AsyncPostgresSaver`` are opened."""
        return Opening(lambda: cls(conn_string, agent_id=agent_id, **kwargs))

    def close(self) -> None:
        """Release the runtime this saver opened (a runtime passed in stays open)."""
        if self._owns_agent:
            self.agent.close()

    def __repr__(self) -> str:
        return f"OctopodaSaver(agent={self.agent.agent_id!r}, store={self.agent.store.url!r})"

    # -- the cache, checked against the audit chain ----------------------------------------

    def _events_after(self, seq: int, limit: int) -> Iterable[Event]:
        return self.agent.timeline(after_seq=seq, limit=limit)

    def _sync(self) -> None:
        """Bring the cache up to the chain head (call with the lock held)."""
        if self._cache.enabled:
            self._cache.validate(self.agent.audit.head().seq, self._events_after)

    def _latest_id(self, thread_id: str, checkpoint_ns: str) -> str | None:
        """The newest checkpoint id of a thread/namespace (lock held, cache synced)."""
        cache = self._cache
        slot = (thread_id, checkpoint_ns)
        if cache.enabled and (cached := cache.latest.lookup(slot)) is not None:
            return cached
        found = self.agent.recall(keys.latest_key(thread_id, checkpoint_ns))
        latest = found.value if found and isinstance(found.value, str) else None
        if latest is None:
            latest = self._scan_slot(thread_id, checkpoint_ns)
        if latest is not None and cache.enabled:
            cache.latest.store(slot, latest)
        return latest

    def _newest(self, thread_id: str, checkpoint_ns: str) -> CheckpointRecord | None:
        latest = self._latest_id(thread_id, checkpoint_ns)
        record = None if latest is None else self._record(thread_id, checkpoint_ns, latest)
        if record is None and latest is not None:  # a stale pointer: its checkpoint is gone
            self._cache.latest.pop((thread_id, checkpoint_ns), None)
            latest = self._scan_slot(thread_id, checkpoint_ns)
            record = None if latest is None else self._record(thread_id, checkpoint_ns, latest)
        return record

    def _scan_slot(self, thread_id: str, checkpoint_ns: str) -> str | None:
        """The newest id by reading the whole namespace (when the pointer is missing, as for
        a new thread, or stale); the cache learns every pending write there on the way."""
        ids: builtins.list[str] = []
        writes: dict[str, Writes] = {}
        for item in self.agent.search(keys.namespace_prefix(thread_id, checkpoint_ns), limit=None):
            parsed = keys.parse_checkpoint_key(item.key)
            if parsed is None or parsed.checkpoint_id is None:
                continue
            if parsed.kind == "c":
                ids.append(parsed.checkpoint_id)
            elif parsed.kind == "w":
                write = decode_write(item.value)
                writes.setdefault(parsed.checkpoint_id, {})[(write.task_id, write.idx)] = write
        if self._cache.enabled:
            self._cache.know_slot((thread_id, checkpoint_ns), writes)
        return max(ids, default=None)

    def _record(
        self, thread_id: str, checkpoint_ns: str, checkpoint_id: str
    ) -> CheckpointRecord | None:
        cache = self._cache
        cid = (thread_id, checkpoint_ns, checkpoint_id)
        if cache.enabled and (cached := cache.records.lookup(cid)) is not None:
            return cached
        found = self.agent.recall(keys.checkpoint_key(*cid))
        if not found:
            return None
        record = decode_checkpoint(found.value)
        if cache.enabled:
            cache.records.store(cid, record)
        return record

    def _writes(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> Writes:
        cache = self._cache
        cid = (thread_id, checkpoint_ns, checkpoint_id)
        if cache.enabled and (cached := cache.known_writes(cid)) is not None:
            return cached
        items = self.agent.search(keys.writes_prefix(*cid), limit=None)
        writes = self._writes_from(items)
        if cache.enabled:
            cache.store_writes(cid, writes)
        return writes

    @staticmethod
    def _writes_from(items: Iterable[MemoryItem]) -> Writes:
        out: Writes = {}
        for item in items:
            write = decode_write(item.value)
            out[(write.task_id, write.idx)] = write
        return out

    # -- reading ------------------------------------------------------------------------------

    def _tuple(
        self,
        record: CheckpointRecord,
        writes: Iterable[WriteRecord],
        parent_writes: Callable[[], Iterable[WriteRecord]],
    ) -> CheckpointTuple:
        serde = self.serde
        metadata = self.metadata_of(record)
        pending: list[PendingWrite] = [
            (w.task_id, w.channel, serde.loads_typed((w.type, w.data)))
            for w in sorted(writes, key=_write_order)
        ]
        thread_id, ns = record.thread_id, record.checkpoint_ns
        parent = None if not record.parent_id else config_for(thread_id, ns, record.parent_id)
        checkpoint = serde.loads_typed((record.type, record.data))
        if checkpoint.get("v", 4) < 4 and record.parent_id:
            self._migrate_pending_sends(checkpoint, parent_writes())
        return CheckpointTuple(
            config_for(thread_id, ns, record.checkpoint_id),
            checkpoint,
            cast(CheckpointMetadata, metadata),
            parent,
            pending,
        )

    def _migrate_pending_sends(
        self, checkpoint: dict[str, Any], parent_writes: Iterable[WriteRecord]
    ) -> None:
        """A checkpoint from before LangGraph's format 4 gets its parent's ``Send``s (the
        ``TASKS`` writes) as the ``TASKS`` channel, as LangGraph's PostgresSaver does."""
        sends = [w for w in sorted(parent_writes, key=_write_order) if w.channel == TASKS]
        if not sends:
            return
        values = [self.serde.loads_typed((w.type, w.data)) for w in sends]
        checkpoint.setdefault("channel_values", {})[TASKS] = values
        versions = checkpoint.setdefault("channel_versions", {})
        versions[TASKS] = max(versions.values()) if versions else self.get_next_version(None, None)

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint ``config`` names (its ``checkpoint_id``), or the thread's newest."""
        thread_id, ns, checkpoint_id = ids_of(config)
        with self._lock:
            self._sync()
            if checkpoint_id:
                record = self._record(thread_id, ns, checkpoint_id)
            else:
                record = self._newest(thread_id, ns)
            if record is None:
                return None
            writes = list(self._writes(thread_id, ns, record.checkpoint_id).values())
            parent_writes = self._parent_writes(record)
        return self._tuple(record, writes, parent_writes)

    def _parent_writes(self, record: CheckpointRecord) -> Callable[[], Iterable[WriteRecord]]:
        """The parent's writes, read only if asked (a checkpoint older than format 4): from
        the cache as the caller's read left it (lock held, synced), else from the store."""
        cid = (record.thread_id, record.checkpoint_ns, record.parent_id or "")
        known = self._cache.known_writes(cid) if self._cache.enabled else None

        def read() -> Iterable[WriteRecord]:
            if known is not None:
                return list(known.values())
            with self._lock:
                self._sync()
                return list(self._writes(*cid).values())

        return read

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Checkpoints newest first (by id): of one thread (and namespace, if the config has
        ``checkpoint_ns``), or of every thread for ``config=None``; ``filter`` matches
        metadata values (a dotted key such as ``"user.tier"`` is a path into nested
        values), ``before`` keeps older ids only, ``limit`` caps the count."""
        if filter:
            check_filter(filter)
        before_id = before["configurable"].get("checkpoint_id") if before else None
        if config is None:
            yield from self._list_all(filter, before_id, limit)
            return
        conf = config["configurable"]
        thread_id = str(conf["thread_id"])
        ns_wanted = conf.get("checkpoint_ns")
        id_wanted = conf.get("checkpoint_id")
        prefix = (
            keys.thread_prefix(thread_id)
            if ns_wanted is None
            else keys.namespace_prefix(thread_id, ns_wanted)
        )
        found = scan(self.agent, prefix)
        chosen = [
            r
            for r in found.records
            if (ns_wanted is None or r.checkpoint_ns == ns_wanted)
            and (not id_wanted or r.checkpoint_id == id_wanted)
            and (not before_id or r.checkpoint_id < before_id)
            and (not filter or metadata_matches(self.metadata_of(r), filter))
        ]
        chosen.sort(key=lambda r: r.checkpoint_id, reverse=True)
        for record in chosen if limit is None else chosen[: max(limit, 0)]:
            own = slot(record.thread_id, record.checkpoint_ns, record.checkpoint_id)
            parent = slot(record.thread_id, record.checkpoint_ns, record.parent_id or "")
            yield self._tuple(record, found.writes.get(own, ()), _lookup(found.writes, parent))

    def _list_all(
        self, wanted: dict[str, Any] | None, before_id: str | None, limit: int | None
    ) -> Iterator[CheckpointTuple]:
        """Every thread's checkpoints newest first, from the order index (``_ordering``):
        a page of it for a limit, the filter's tags narrowing it in SQL."""
        left = None if limit is None else max(limit, 0)
        if left == 0:
            return
        last = None
        for row in newest_first(self.agent, wanted):
            if before_id and row.checkpoint_id >= before_id:
                continue
            if row == last:  # re-put with its metadata now (un)tagged: in both places
                continue
            loaded = self._load(row, wanted)
            if loaded is None:
                continue
            last = row
            yield loaded
            if left is not None:
                left -= 1
                if left == 0:
                    return

    def _load(self, row: OrderRow, wanted: dict[str, Any] | None) -> CheckpointTuple | None:
        """The checkpoint an order row names, if it (still) exists and matches ``wanted``
        (the row's tags only made it a candidate)."""
        thread_id, ns = keys.original(row.thread), keys.original(row.ns)
        checkpoint_id = row.checkpoint_id
        with self._lock:
            self._sync()
            if thread_id is None or ns is None:  # a shortened id: the record has it
                at = keys.namespace_prefix_at(row.thread, row.ns)
                found = self.agent.recall(f"{at}c/{keys.escape(checkpoint_id)}")
                if not found:
                    return None
                shortened = decode_checkpoint(found.value)
                thread_id, ns = shortened.thread_id, shortened.checkpoint_ns
            record = self._record(thread_id, ns, checkpoint_id)
            if record is None:
                return None
            writes = list(self._writes(thread_id, ns, checkpoint_id).values())
            parent_writes = self._parent_writes(record)
        if wanted and not metadata_matches(self.metadata_of(record), wanted):
            return None
        return self._tuple(record, writes, parent_writes)

    # -- writing ------------------------------------------------------------------------------

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store a checkpoint: one audited event (the record, the thread's newest-id pointer,
        its order key for listing all threads, tagged with the metadata's values
        (``_ordering``), and, when the metadata has a ``run_id``, the run index)."""
        thread_id, ns, parent_id = ids_of(config)
        checkpoint_id = checkpoint["id"]
        type_, data = self.serde.dumps_typed(checkpoint)
        meta = checkpoint_metadata(config, metadata)
        meta_text = metadata_json(meta)
        record = CheckpointRecord(
            thread_id,
            ns,
            checkpoint_id,
            parent_id,
            type_,
            data,
            meta_text if meta_text is not None else self.serde.dumps_typed(meta),
        )
        json_meta = meta if meta_text is not None else None
        pairs: list[tuple[str, Any] | tuple[str, Any, list[str]]] = [
            (
                keys.checkpoint_key(thread_id, ns, checkpoint_id),
                encode_checkpoint(record, json_meta),
            ),
        ]
        tags = metadata_tags(json_meta)
        order = order_key(thread_id, ns, checkpoint_id, tagged=tags is not None)
        pairs.append((order, 1, tags or []))
        run_id = meta.get("run_id")
        if isinstance(run_id, str) and run_id:
            pairs.append((keys.run_key(run_id, thread_id, ns, checkpoint_id), 1))
        with self._lock:
            self._sync()
            previous = self._latest_id(thread_id, ns)
            newest = previous is None or checkpoint_id >= previous
            if newest:
                pairs.append((keys.latest_key(thread_id, ns), checkpoint_id))
            written = self.agent.remember_many(pairs)
            cache = self._cache
            if cache.enabled and cache.advance(written[0].seq):
                # The checkpoint says nothing about its pending writes: they may have been
                # stored before it (async durability); the cache knows them or it does not.
                cache.records.store((thread_id, ns, checkpoint_id), record)
                if newest:
                    cache.latest.store((thread_id, ns), checkpoint_id)
        return config_for(thread_id, ns, checkpoint_id)

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store a task's writes for a checkpoint, as one audited event. Like LangGraph's
        savers, a regular write already stored for (task, index) is kept; special writes
        (errors, interrupts) replace."""
        thread_id, ns, checkpoint_id = ids_of(config)
        if checkpoint_id is None:
            raise InvalidInput("put_writes needs a config with a checkpoint_id")
        replace = all(channel in WRITES_IDX_MAP for channel, _ in writes)
        records = []
        for idx, (channel, value) in enumerate(writes):
            type_, data = self.serde.dumps_typed(value)
            records.append(
                WriteRecord(
                    task_id, task_path, WRITES_IDX_MAP.get(channel, idx), channel, type_, data
                )
            )
        with self._lock:
            self._sync()
            existing = self._writes(thread_id, ns, checkpoint_id)
            if not replace:
                records = [r for r in records if (r.task_id, r.idx) not in existing]
            if not records:
                return
            written = self.agent.remember_many(
                [
                    (
                        keys.write_key(thread_id, ns, checkpoint_id, r.task_id, r.idx),
                        encode_write(r),
                    )
                    for r in records
                ]
            )
            cache = self._cache
            if cache.enabled and cache.advance(written[0].seq):
                updated = dict(existing)
                updated.update(((r.task_id, r.idx), r) for r in records)
                cache.store_writes((thread_id, ns, checkpoint_id), updated)

    # -- versions -------------------------------------------------------------------------------

    def get_next_version(self, current: str | None, channel: None) -> str:
        """Monotonic channel versions, as LangGraph's SQLite and Postgres savers make them."""
        if current is None:
            current_v = 0
        elif isinstance(current, int):
            current_v = current
        else:
            current_v = int(current.split(".")[0])
        return f"{current_v + 1:032}.{random.random():016}"

    # -- async: the same, in a worker thread ----------------------------------------------------

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await run_blocking(self.get_tuple, config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        def collect() -> builtins.list[CheckpointTuple]:
            return list(self.list(config, filter=filter, before=before, limit=limit))

        for item in await run_blocking(collect):
            yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return await run_blocking(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        await run_blocking(self.put_writes, config, writes, task_id, task_path)
