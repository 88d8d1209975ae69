"""Recall-write: read a key and write back an unchanged or cycling value, again and again.

Fires when a key is read and written back unchanged or with one of its recent values, or
rewritten with the value it already has, ``min_churns`` (3) times in a row with nothing
new in between. A write with a TTL (a lease renewal) is never churn, nor is one that only
refreshes the volatile parts of a value (a heartbeat's time: see ``volatile``), and a
forget (or a restore or import) of the key ends it. There is no time window. Confidence 0.8 at the
threshold.
"""

from __future__ import annotations

from .._records import Event
from .chain import find, record
from .gists import digest
from .monitor import Detector, LoopMonitor
from .payloads import WriteEntry
from .signals import confidence
from .streams import KeyStream

__all__ = ["RecallWriteDetector"]


class RecallWriteDetector(Detector):
    """Reads and writes reach it through the novelty tracker, which keeps one
    :class:`KeyStream` per key (its ``read`` and ``churns`` are this detector's)."""

    kind = "recall_write"
    __slots__ = ("min_churns",)

    def __init__(self, monitor: LoopMonitor, *, min_churns: int = 3) -> None:
        super().__init__(monitor)
        self.min_churns = min_churns

    def observe_read(self, key: KeyStream, data: str | bytes | None) -> None:
        """A read of ``key`` that found ``data`` (None: nothing): pending until a write."""
        preview = "(missing)" if data is None else str(data)[:60]
        key.read = (data, (0, "read", key.key, preview))

    def observe_other_write(self, stream: str, key: KeyStream) -> None:
        """A forget, restore or import of the key: any churn is over."""
        if key.churns is not None:
            self.end(stream, key)

    def end(self, stream: str, key: KeyStream) -> None:
        """The key's churn is over (a new value, progress, or not a write of a value)."""
        key.churns = None
        self.clear(stream)

    def observe_write(
        self,
        stream: str,
        key: KeyStream,
        rec: str,
        entry: WriteEntry,
        event: Event,
        recent: str,
        follows: bool,
        renewed: bool = False,
    ) -> None:
        """A write (remember, shared write) of value ``rec`` to ``key`` after a read of it,
        during a churn, or repeating its last value (the novelty tracker calls only then: a
        new value written without a read is nothing to recall-write). ``recent`` holds the
        values of its last writes before this one; ``follows`` says nothing new happened
        since the last of them; ``renewed`` that only its volatile parts changed."""
        read = key.read
        if renewed or "expires_at" in entry:  # a renewal (a lease, a heartbeat): not churn
            key.read = None
            if key.churns is not None:
                self.end(stream, key)
            return
        if read is not None:
            key.read = None
            unchanged = rec == record(digest(read[0]))
            repeat = unchanged or find(recent, rec) >= 0
        else:
            unchanged = repeat = recent.endswith(rec)
        if not repeat or not follows:
            if key.churns is not None:
                self.end(stream, key)
            if not repeat:
                return
        refs = key.churns
        if refs is None:
            refs = key.churns = []
        if read is not None:
            refs.append(read[1])
        refs.append((event.seq, event.kind, entry["key"], str(entry.get("sha256") or "-")[:12]))
        if len(refs) > 48:
            del refs[:-48]
        n = sum(1 for r in refs if r[0])
        if n >= self.min_churns:
            if read is None:
                what = f"rewritten with the value it already had {n} times in a row"
            else:
                how = "unchanged" if unchanged else "with a value it already had"
                what = f"read and written back {how} {n} times in a row"
            self.report(
                stream,
                confidence(0.8, n - self.min_churns),
                f"key {entry['key']}",
                refs[-24:],
                f"{entry['key']} was {what}",
                "skip the write when the value did not change, or find what the read-modify-"
                "write step is waiting for",
                event.time,
            )
