"""OctopodaSaver: a LangGraph checkpointer on Octopoda's versioned, audited memory."""

from __future__ import annotations

import builtins
import json
import random
import threading
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple, TypeVar, cast

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
from ._search import check_filter, metadata_matches
from ._target import Target, resolve_runtime, to_thread

__all__ = ["OctopodaSaver"]

DEFAULT_AGENT_ID = "langgraph"


S = TypeVar("S", bound="OctopodaSaver")


class _Scan(NamedTuple):
    records: list[CheckpointRecord]
    writes: dict[tuple[str, str, str], list[WriteRecord]]
    keys: list[str]


def _lookup(
    writes: Mapping[tuple[str, str, str], list[WriteRecord]], cid: tuple[str, str, str]
) -> Callable[[], Iterable[WriteRecord]]:
    return lambda: writes.get(cid, [])


def _write_order(write: WriteRecord) -> tuple[str, str, int]:
    # LangGraph's writes_sort_key (task_path, task_id, idx): the order a super-step applies.
    return (write.task_path, write.task_id, write.idx)


class OctopodaSaver(BaseCheckpointSaver[str], Lifecycle):
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
    thread (``asyncio.to_thread``): they never block the event loop.

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
        metadata = self._metadata(record)
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

        def parent_writes() -> Iterable[WriteRecord]:
            with self._lock:
                self._sync()
                return list(self._writes(thread_id, ns, record.parent_id or "").values())

        return self._tuple(record, writes, parent_writes)

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
        if config is None:
            prefix, ns_wanted, id_wanted = keys.CHECKPOINTS + "t/", None, None
        else:
            conf = config["configurable"]
            thread_id = str(conf["thread_id"])
            ns_wanted = conf.get("checkpoint_ns")
            id_wanted = conf.get("checkpoint_id")
            prefix = (
                keys.thread_prefix(thread_id)
                if ns_wanted is None
                else keys.namespace_prefix(thread_id, ns_wanted)
            )
        before_id = before["configurable"].get("checkpoint_id") if before else None
        scan = self._scan(prefix)
        chosen = [
            r
            for r in scan.records
            if (ns_wanted is None or r.checkpoint_ns == ns_wanted)
            and (not id_wanted or r.checkpoint_id == id_wanted)
            and (not before_id or r.checkpoint_id < before_id)
            and (not filter or metadata_matches(self._metadata(r), filter))
        ]
        chosen.sort(key=lambda r: r.checkpoint_id, reverse=True)
        for record in chosen if limit is None else chosen[: max(limit, 0)]:
            slot = (record.thread_id, record.checkpoint_ns, record.checkpoint_id)
            parent = (record.thread_id, record.checkpoint_ns, record.parent_id or "")
            yield self._tuple(record, scan.writes.get(slot, ()), _lookup(scan.writes, parent))

    def _scan(self, prefix: str) -> _Scan:
        """Every checkpoint record, pending write and key under ``prefix``: one query."""
        scan = _Scan([], {}, [])
        for item in self.agent.search(prefix, limit=None):
            scan.keys.append(item.key)
            parsed = keys.parse_checkpoint_key(item.key)
            if parsed is None or parsed.checkpoint_id is None:
                continue
            if parsed.kind == "c":
                scan.records.append(decode_checkpoint(item.value))
            elif parsed.kind == "w":
                slot = (parsed.thread_id, parsed.checkpoint_ns, parsed.checkpoint_id)
                scan.writes.setdefault(slot, []).append(decode_write(item.value))
        return scan

    def _metadata(self, record: CheckpointRecord) -> dict[str, Any]:
        if isinstance(record.metadata, str):
            return cast(dict[str, Any], json.loads(record.metadata))
        return cast(dict[str, Any], self.serde.loads_typed(record.metadata))

    # -- writing ------------------------------------------------------------------------------

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store a checkpoint: one audited event (the record, the thread's newest-id pointer
        and, when the metadata has a ``run_id``, the run index)."""
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
        pairs: list[tuple[str, Any]] = [
            (
                keys.checkpoint_key(thread_id, ns, checkpoint_id),
                encode_checkpoint(record, meta if meta_text is not None else None),
            )
        ]
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

    # -- deleting and copying -------------------------------------------------------------------

    def _forget(self, doomed: Iterable[str], repoint: Mapping[str, str] | None = None) -> None:
        """Tombstone ``doomed`` keys (one event), then move latest pointers (one more)."""
        with self._lock:
            doomed = list(dict.fromkeys(doomed))
            if doomed:
                self.agent.forget_many(doomed)
            if repoint:
                self.agent.remember_many(list(repoint.items()))
            self._cache.clear()
            self._cache.seq = -1

    def _run_keys(self, records: Iterable[CheckpointRecord]) -> builtins.list[str]:
        out = []
        for record in records:
            run_id = self._run_id(record)
            if run_id:
                out.append(
                    keys.run_key(
                        run_id, record.thread_id, record.checkpoint_ns, record.checkpoint_id
                    )
                )
        return out

    def _run_id(self, record: CheckpointRecord) -> str | None:
        run_id = self._metadata(record).get("run_id")
        return run_id if isinstance(run_id, str) and run_id else None

    def delete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint and write of a thread (all namespaces): one event."""
        scan = self._scan(keys.thread_prefix(str(thread_id)))
        self._forget([*scan.keys, *self._run_keys(scan.records)])

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints (and their writes) that runs ``run_ids`` created."""
        doomed: builtins.list[str] = []
        hit: dict[tuple[str, str], set[str]] = {}
        for run_id in run_ids:
            prefix = keys.run_prefix(str(run_id))
            for key in self.agent.keys(prefix):
                parsed = keys.parse_checkpoint_key(key)
                if parsed is None or parsed.checkpoint_id is None:
                    continue
                t, ns, cid = parsed.thread_id, parsed.checkpoint_ns, parsed.checkpoint_id
                doomed.append(key)
                doomed.append(keys.checkpoint_key(t, ns, cid))
                doomed.extend(self.agent.keys(keys.writes_prefix(t, ns, cid)))
                hit.setdefault((t, ns), set()).add(cid)
        repoint: dict[str, str] = {}
        for (t, ns), gone in hit.items():
            prefix = keys.namespace_prefix(t, ns) + "c/"
            left = [keys.unescape(k[len(prefix) :]) for k in self.agent.keys(prefix)]
            left = [cid for cid in left if cid not in gone]
            pointer = keys.latest_key(t, ns)
            if left:
                repoint[pointer] = max(left)
            else:
                doomed.append(pointer)
        self._forget(doomed, repoint)

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint and write of a thread to another thread id: one event."""
        source, target = str(source_thread_id), str(target_thread_id)
        prefix = keys.thread_prefix(source)
        pairs: builtins.list[tuple[str, Any]] = []
        for item in self.agent.search(prefix, limit=None):
            parsed = keys.parse_checkpoint_key(item.key)
            if parsed is None:
                continue
            new_key = keys.thread_prefix(target) + item.key[len(prefix) :]
            value = item.value
            if parsed.kind == "c":
                value = dict(value, thread_id=target)
                record = decode_checkpoint(value)
                pairs.extend((k, 1) for k in self._run_keys([record]))
            pairs.append((new_key, value))
        if pairs:
            with self._lock:
                self.agent.remember_many(pairs)
                self._cache.clear()
                self._cache.seq = -1

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """``keep_latest``: keep each namespace's newest checkpoint (and its writes) only;
        ``delete``: delete the threads."""
        if strategy not in ("keep_latest", "delete"):
            raise InvalidInput(f"strategy must be 'keep_latest' or 'delete', not {strategy!r}")
        doomed: builtins.list[str] = []
        for thread_id in thread_ids:
            scan = self._scan(keys.thread_prefix(str(thread_id)))
            if strategy == "delete":
                doomed.extend([*scan.keys, *self._run_keys(scan.records)])
                continue
            newest: dict[str, str] = {}
            for r in scan.records:
                if r.checkpoint_id > newest.get(r.checkpoint_ns, ""):
                    newest[r.checkpoint_ns] = r.checkpoint_id
            old = [r for r in scan.records if r.checkpoint_id != newest[r.checkpoint_ns]]
            gone = {(r.checkpoint_ns, r.checkpoint_id) for r in old}
            for key in scan.keys:
                parsed = keys.parse_checkpoint_key(key)
                if (
                    parsed is not None
                    and parsed.kind in ("c", "w")
                    and (parsed.checkpoint_ns, parsed.checkpoint_id) in gone
                ):
                    doomed.append(key)
            doomed.extend(self._run_keys(old))
        self._forget(doomed)

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
        return await to_thread(self.get_tuple, config)

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

        for item in await to_thread(collect):
            yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return await to_thread(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        await to_thread(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        await to_thread(self.delete_thread, thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await to_thread(self.delete_for_runs, run_ids)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await to_thread(self.copy_thread, source_thread_id, target_thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await to_thread(self.prune, thread_ids, strategy=strategy)
