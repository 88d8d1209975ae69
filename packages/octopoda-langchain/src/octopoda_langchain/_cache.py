"""A read cache for OctopodaSaver that the audit chain keeps honest.

Every change to an agent's memory is an event on its chain, and every event names the keys
it wrote (``payload["writes"]``). The cache remembers the chain head (``seq``) it is valid
at. Before it answers, the saver reads the head (one indexed row): unchanged, the cache is
current; moved, the events in between say exactly which threads changed (in this process or
any other), and only those are dropped. The saver's own writes move the cache forward
without a re-read. So a cached answer is never staler than the head read just before it.

Pending writes are known per checkpoint id, independently of the checkpoint: LangGraph's
async and exit durability hand a saver the writes of a checkpoint before the checkpoint
itself, so a ``put`` says nothing about writes. A writes entry is the complete set stored for
that id, from a read of its keys or from this saver's own writes on top of such a set. A slot
(thread, namespace) whose keys were all read at once (a new thread: the read finds nothing)
is also *complete above* an id: every write stored for a later id is in the entries, and a
later id without an entry has none. Losing an entry (LRU) raises that bound past its id;
another writer's event on the slot drops the slot's knowledge with its entries.

Values are kept serialized (bytes and JSON text) and decoded on every read, so callers
never share mutable objects with the cache.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeVar

from octopoda import Event

from ._codec import CheckpointRecord, WriteRecord
from ._keys import CHECKPOINTS, is_segment_of, parse_checkpoint_key

__all__ = ["CheckpointCache"]

K = TypeVar("K")
V = TypeVar("V")

MAX_EVENTS_TO_SCAN = 512
"""When the head moved further than this, the cache is cleared instead of replayed."""

_THREADS = CHECKPOINTS + "t/"


class _Lru(OrderedDict[K, V], Generic[K, V]):
    def __init__(self, size: int, on_evict: Callable[[K], None] | None = None) -> None:
        super().__init__()
        self.size = size
        self.on_evict = on_evict

    def lookup(self, key: K) -> V | None:
        value = self.get(key)
        if value is not None:
            self.move_to_end(key)
        return value

    def store(self, key: K, value: V) -> None:
        self[key] = value
        self.move_to_end(key)
        while len(self) > self.size:
            evicted, _ = self.popitem(last=False)
            if self.on_evict is not None:
                self.on_evict(evicted)

    def drop_where(self, keep: Callable[[K], bool]) -> None:
        for key in [k for k in self if not keep(k)]:
            del self[key]


Slot = tuple[str, str]  # (thread_id, checkpoint_ns)
Cid = tuple[str, str, str]  # (thread_id, checkpoint_ns, checkpoint_id)
Writes = dict[tuple[str, int], WriteRecord]  # (task_id, idx) -> write


class CheckpointCache:
    """Latest ids, checkpoint records and complete pending-write sets, valid at ``seq``."""

    def __init__(self, size: int) -> None:
        self.enabled = size > 0
        self.seq = -1  # unknown: nothing cached
        self.latest: _Lru[Slot, str] = _Lru(max(size, 1) * 4)
        self.records: _Lru[Cid, CheckpointRecord] = _Lru(max(size, 1))
        self.writes: _Lru[Cid, Writes] = _Lru(max(size, 1), self._lost_writes)
        # slot -> id: the writes of every later checkpoint id of the slot are in `writes`
        self.complete_above: _Lru[Slot, str] = _Lru(max(size, 1) * 4)

    def clear(self) -> None:
        self.latest.clear()
        self.records.clear()
        self.writes.clear()
        self.complete_above.clear()

    def forget_segments(self, thread_segment: str, ns_segment: str) -> None:
        """Drop what is cached for the namespace whose key segments these are."""

        def keep(key: tuple[str, ...]) -> bool:
            return not (is_segment_of(key[1], ns_segment) and is_segment_of(key[0], thread_segment))

        self.latest.drop_where(keep)
        self.records.drop_where(keep)
        self.writes.drop_where(keep)
        self.complete_above.drop_where(keep)

    # -- pending writes ---------------------------------------------------------------------

    def known_writes(self, cid: Cid) -> Writes | None:
        """The complete writes of checkpoint ``cid`` if the cache knows them, else None."""
        found = self.writes.lookup(cid)
        if found is not None:
            return found
        above = self.complete_above.get(cid[:2])
        if above is not None and cid[2] > above:
            return {}
        return None

    def store_writes(self, cid: Cid, writes: Writes) -> None:
        """Record the complete set of writes stored for ``cid``."""
        self.writes.store(cid, writes)

    def know_slot(self, slot: Slot, writes: dict[str, Writes]) -> None:
        """The slot's every write was just read (``writes`` by checkpoint id): from now on a
        checkpoint id without an entry has none, until an entry is lost."""
        for checkpoint_id, found in writes.items():
            self.writes.store((*slot, checkpoint_id), found)
        if all((*slot, c) in self.writes for c in writes):
            self.complete_above.store(slot, "")

    def _lost_writes(self, cid: Cid) -> None:
        above = self.complete_above.get(cid[:2])
        if above is not None and cid[2] > above:
            self.complete_above[cid[:2]] = cid[2]

    def validate(self, head: int, events_after: Callable[[int, int], Iterable[Event]]) -> None:
        """Bring the cache to ``head``: replay the events since ``seq`` (their written keys)
        or clear it. ``events_after(seq, limit)`` reads the chain."""
        if head == self.seq:
            return
        if self.seq < 0 or head < self.seq or head - self.seq > MAX_EVENTS_TO_SCAN:
            self.clear()
        else:
            for event in events_after(self.seq, head - self.seq):
                self.invalidate(event.payload)
        self.seq = head

    def invalidate(self, payload: dict[str, Any]) -> None:
        for entry in payload.get("writes") or ():
            if "namespace" in entry:  # another namespace (a shared space): not ours
                continue
            key = entry.get("key", "")
            if key.startswith(_THREADS):
                parsed = parse_checkpoint_key(key)
                if parsed is None:
                    self.clear()
                    return
                self.forget_segments(parsed.thread, parsed.ns)

    def advance(self, seq: int) -> bool:
        """After this saver committed event ``seq``: True when nothing else happened since the
        cache's head (the caller may then record what it wrote); else the cache restarts."""
        if seq == self.seq + 1 and self.seq >= 0:
            self.seq = seq
            return True
        self.clear()
        self.seq = seq
        return False
