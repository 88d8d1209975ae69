"""Deleting, copying and pruning checkpoints (the saver's ``delete_thread``,
``delete_for_runs``, ``copy_thread`` and ``prune``), and the prefix scan they share with
``list``. Deletes write tombstones, so the history stays; each call is one or two events."""

from __future__ import annotations

import builtins
import json
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple, cast

from langgraph.checkpoint.serde.base import SerializerProtocol

from octopoda import AgentRuntime, InvalidInput
from octopoda.integrations import run_blocking

from . import _keys as keys
from ._cache import CheckpointCache
from ._codec import CheckpointRecord, WriteRecord, decode_checkpoint, decode_write
from ._ordering import order_key, order_keys, order_keys_at

__all__ = ["SaverUpkeep", "Scan", "scan", "slot"]


class Scan(NamedTuple):
    """``writes`` by (thread segment, namespace segment, checkpoint id): see :func:`slot`."""

    records: list[CheckpointRecord]
    writes: dict[tuple[str, str, str], list[WriteRecord]]
    keys: list[str]


def slot(thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> tuple[str, str, str]:
    """Where :class:`Scan` keeps a checkpoint's writes."""
    return (keys.segment(thread_id), keys.segment(checkpoint_ns), checkpoint_id)


def scan(agent: AgentRuntime, prefix: str) -> Scan:
    """Every checkpoint record, pending write and key under ``prefix``: one query."""
    found = Scan([], {}, [])
    for item in agent.search(prefix, limit=None):
        found.keys.append(item.key)
        parsed = keys.parse_checkpoint_key(item.key)
        if parsed is None or parsed.checkpoint_id is None:
            continue
        if parsed.kind == "c":
            found.records.append(decode_checkpoint(item.value))
        elif parsed.kind == "w":
            at = (parsed.thread, parsed.ns, parsed.checkpoint_id)
            found.writes.setdefault(at, []).append(decode_write(item.value))
    return found


def _order_keys(records: Iterable[CheckpointRecord]) -> list[str]:
    return [k for r in records for k in order_keys(r.thread_id, r.checkpoint_ns, r.checkpoint_id)]


class SaverUpkeep:
    """The maintenance half of :class:`~octopoda_langchain.OctopodaSaver` (a mixin)."""

    agent: AgentRuntime
    serde: SerializerProtocol
    _lock: threading.RLock
    _cache: CheckpointCache

    def metadata_of(self, record: CheckpointRecord) -> dict[str, Any]:
        """A stored checkpoint's metadata, decoded."""
        if isinstance(record.metadata, str):
            return cast(dict[str, Any], json.loads(record.metadata))
        return cast(dict[str, Any], self.serde.loads_typed(record.metadata))

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
            run_id = self.metadata_of(record).get("run_id")
            if isinstance(run_id, str) and run_id:
                out.append(
                    keys.run_key(
                        run_id, record.thread_id, record.checkpoint_ns, record.checkpoint_id
                    )
                )
        return out

    def delete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint and write of a thread (all namespaces): one event."""
        found = scan(self.agent, keys.thread_prefix(str(thread_id)))
        self._forget([*found.keys, *self._run_keys(found.records), *_order_keys(found.records)])

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints (and their writes) that runs ``run_ids`` created."""
        doomed: builtins.list[str] = []
        hit: dict[tuple[str, str], set[str]] = {}
        for run_id in run_ids:
            for key in self.agent.keys(keys.run_prefix(str(run_id))):
                parsed = keys.parse_checkpoint_key(key)
                if parsed is None or parsed.checkpoint_id is None:
                    continue
                # key segments: a shortened thread id is not known here, nor needed
                t, ns, cid = parsed.thread, parsed.ns, parsed.checkpoint_id
                at = keys.namespace_prefix_at(t, ns)
                doomed += [key, f"{at}c/{keys.escape(cid)}", *order_keys_at(t, ns, cid)]
                doomed.extend(self.agent.keys(f"{at}w/{keys.escape(cid)}/"))
                hit.setdefault((t, ns), set()).add(cid)
        repoint: dict[str, str] = {}
        for (t, ns), gone in hit.items():
            prefix = keys.namespace_prefix_at(t, ns) + "c/"
            left = [keys.unescape(k[len(prefix) :]) for k in self.agent.keys(prefix)]
            left = [cid for cid in left if cid not in gone]
            pointer = keys.namespace_prefix_at(t, ns) + "latest"
            if left:
                repoint[pointer] = max(left)
            else:
                doomed.append(pointer)
        self._forget(doomed, repoint)

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint and write of a thread to another thread id: one event. (The
        copies' order keys are untagged: filtered listings check them one by one.)"""
        source, target = str(source_thread_id), str(target_thread_id)
        prefix = keys.thread_prefix(source)
        pairs: builtins.list[tuple[str, Any]] = []
        for item in self.agent.search(prefix, limit=None):
            parsed = keys.parse_checkpoint_key(item.key)
            if parsed is None:
                continue
            value = item.value
            if parsed.kind == "c":
                value = dict(value, thread_id=target)
                record = decode_checkpoint(value)
                pairs.extend((k, 1) for k in self._run_keys([record]))
                order = order_key(target, record.checkpoint_ns, record.checkpoint_id, tagged=False)
                pairs.append((order, 1))
            pairs.append((keys.thread_prefix(target) + item.key[len(prefix) :], value))
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
            found = scan(self.agent, keys.thread_prefix(str(thread_id)))
            if strategy == "delete":
                doomed += [*found.keys, *self._run_keys(found.records)]
                doomed += _order_keys(found.records)
                continue
            newest: dict[str, str] = {}
            for r in found.records:
                if r.checkpoint_id > newest.get(r.checkpoint_ns, ""):
                    newest[r.checkpoint_ns] = r.checkpoint_id
            old = [r for r in found.records if r.checkpoint_id != newest[r.checkpoint_ns]]
            gone = {(keys.segment(r.checkpoint_ns), r.checkpoint_id) for r in old}
            for key in found.keys:
                parsed = keys.parse_checkpoint_key(key)
                if (
                    parsed is not None
                    and parsed.kind in ("c", "w")
                    and (parsed.ns, parsed.checkpoint_id) in gone
                ):
                    doomed.append(key)
            doomed += [*self._run_keys(old), *_order_keys(old)]
        self._forget(doomed)

    async def adelete_thread(self, thread_id: str) -> None:
        await run_blocking(self.delete_thread, thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await run_blocking(self.delete_for_runs, run_ids)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await run_blocking(self.copy_thread, source_thread_id, target_thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await run_blocking(self.prune, thread_ids, strategy=strategy)
