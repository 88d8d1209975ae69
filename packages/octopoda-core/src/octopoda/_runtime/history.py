"""Snapshots, restore, export and import, and memory health: the history verbs of
``AgentRuntime``."""

from __future__ import annotations

import contextlib
import os
import time
from typing import TYPE_CHECKING, Any, Literal, TextIO

from .._errors import (
    InvalidInput,
    SnapshotNotFound,
)
from .._records import (
    ImportResult,
    MemoryHealth,
    RestoreResult,
    Snapshot,
)
from .._store import (
    MemoryWrite,
    stored_sha256,
)
from .._values import (
    validate_key,
)
from .._version import __version__
from .base import RuntimeBase, is_live, required_seconds
from .consolidate import near_duplicates, newest_first

if TYPE_CHECKING:
    from datetime import timedelta


__all__ = ["HistoryMixin"]


def _near_duplicate_count(live: list[Any]) -> int:
    return sum(len(g.duplicates) for g in near_duplicates(newest_first(live)))


_DAY = 86400.0


class HistoryMixin(RuntimeBase):
    # -- snapshots --------------------------------------------------------------------------

    def snapshot(self, name: str | None = None, *, replace: bool = False) -> Snapshot:
        """Name the current point in history. Nothing is copied: a snapshot is a seq."""
        now = self._now()
        if name is None:
            stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(now))
            name = f"snapshot-{stamp}.{round(now * 1e6) % 1_000_000:06d}Z"
        name = validate_key(name, "snapshot name")
        previous = self._store.snapshot(self._agent_id, name)
        if previous is not None and not replace:
            raise InvalidInput(
                f"agent {self._agent_id!r} already has a snapshot named {name!r};"
                " choose another name or pass replace=True"
            )
        payload: dict[str, Any] = {"name": name}
        if previous is not None:
            payload["replaces_seq"] = previous.seq
        event, _ = self._commit(
            "snapshot", payload, now=now, snapshot=name, replace_snapshot=replace
        )
        keys = len(self._store.current(self._ns, as_of_seq=event.seq, now=now))
        return Snapshot(name, event.seq, now, keys)

    def snapshots(self) -> list[Snapshot]:
        """This agent's snapshots, oldest first (``keys`` counts what is live now)."""
        now = self._now()
        return [
            Snapshot(
                s.name,
                s.seq,
                s.created_at,
                len(self._store.current(self._ns, as_of_seq=s.seq, now=now)),
            )
            for s in self._store.snapshots(self._agent_id)
        ]

    def restore(self, name: str | None = None) -> RestoreResult:
        """Bring memory back to the snapshot ``name`` (None: the latest) by writing new
        versions.

        Keys that changed since are written back; keys created since are tombstoned.
        History stays whole, and the restore is one audited event. A value erased since
        (:meth:`erase`) cannot come back: its key counts as absent at the snapshot, so it is
        tombstoned if it has a value now and left alone otherwise.
        """
        if name is None:
            taken = self._store.snapshots(self._agent_id)
            if not taken:
                raise SnapshotNotFound(f"agent {self._agent_id!r} has no snapshot to restore")
            name = max(taken, key=lambda s: s.seq).name
        snap = self._store.snapshot(self._agent_id, validate_key(name, "snapshot name"))
        if snap is None:
            known = ", ".join(repr(s.name) for s in self._store.snapshots(self._agent_id)) or "none"
            raise SnapshotNotFound(
                f"agent {self._agent_id!r} has no snapshot named {name!r} (snapshots: {known})"
            )

        def plan(now: float) -> tuple[str, dict[str, Any], list[MemoryWrite]]:
            then = {r.key: r for r in self._store.current(self._ns, as_of_seq=snap.seq, now=now)}
            current = {r.key: r for r in self._store.current(self._ns, now=now)}
            writes = [
                MemoryWrite(
                    self._ns,
                    key,
                    old.encoding,
                    old.data,
                    stored_sha256(old),
                    old.tags,
                    old.expires_at,
                    kind=old.kind,
                )
                for key, old in then.items()
                if (cur := current.get(key)) is None
                or (cur.encoding, cur.data, cur.tags, cur.expires_at, cur.kind)
                != (old.encoding, old.data, old.tags, old.expires_at, old.kind)
            ]
            writes.extend(
                MemoryWrite(self._ns, k, "tombstone", None, None)
                for k in sorted(k for k in current if k not in then)
            )
            return "restore", {"snapshot": snap.name, "snapshot_seq": snap.seq}, writes

        done = self._unchanged(plan)
        assert done is not None
        event, writes, _, _ = done
        restored = tuple(w.key for w in writes if w.encoding != "tombstone")
        removed = tuple(w.key for w in writes if w.encoding == "tombstone")
        return RestoreResult(snap.name, snap.seq, event.seq, restored, removed)

    # -- export / import --------------------------------------------------------------------

    def export_memories(self, include_snapshots: bool = False) -> dict[str, Any]:
        """Every key with its full history as a JSON-safe bundle (format: ``bundle.py``).

        ``include_snapshots`` (3.3.4's option) must stay False: a snapshot here is a point
        in the history the bundle already holds whole (``snapshots()`` lists them).
        """
        if include_snapshots:
            from .._errors import NotSupported

            raise NotSupported(
                "export_memories(include_snapshots=True) was Octopoda 3.3.4's; use"
                " export_memories(): the bundle holds every version, and snapshots() lists"
                " the named points in it (docs/migrating.md)"
            )
        from .bundle import build_bundle  # (export and import load the bundle format on use)

        return build_bundle(
            self._agent_id,
            self._store.all_versions(self._ns),
            exported_at=self._now(),
            version=__version__,
        )

    def export_memories_to(self, file: str | os.PathLike[str] | TextIO) -> tuple[int, int]:
        """Write :meth:`export_memories`'s bundle to ``file`` (a path, or a text file open
        for writing) as it is read: one version in memory at a time, however large the
        agent's memory. Returns the number of keys and of versions written. A path is
        written to a temporary file beside it, then renamed into place."""
        from .bundle import write_bundle

        rows = self._store.all_versions(self._ns)
        now = self._now()
        if not isinstance(file, (str, os.PathLike)):
            return write_bundle(self._agent_id, rows, file, exported_at=now, version=__version__)
        target = os.fspath(file)
        partial = f"{target}.partial"
        try:
            with open(partial, "w", encoding="utf-8") as out:
                counts = write_bundle(
                    self._agent_id, rows, out, exported_at=now, version=__version__
                )
            os.replace(partial, target)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(partial)
            raise InvalidInput(
                f"cannot write the export to {target}: {exc.strerror or exc}"
            ) from None
        return counts

    def import_memories(
        self,
        bundle: dict[str, Any] | str | bytes,
        overwrite: bool | None = None,
        *,
        on_existing: Literal["append", "skip", "error"] = "append",
        allow_duplicate: bool = False,
    ) -> ImportResult:
        """Write a bundle's versions (oldest first) as new versions, in one transaction.

        For a key that already has history here: ``append`` adds the bundle's versions after
        it, ``skip`` leaves the key alone, ``error`` refuses the whole import. The bundle is
        validated entirely before anything is written.

        Importing is idempotent: the import event records the bundle's digest
        (``bundle_sha256``), and a bundle this agent imported before writes nothing
        (``ImportResult.already_imported`` is that event's seq). ``allow_duplicate=True``
        appends a second copy. ``overwrite`` is 3.3.4's option: False is
        ``on_existing="skip"``, True ``"append"`` (new versions over the existing ones).
        """
        if overwrite is not None:
            on_existing = "append" if overwrite else "skip"
        if on_existing not in ("append", "skip", "error"):
            raise InvalidInput(
                f"on_existing must be 'append', 'skip' or 'error', not {on_existing!r}"
            )
        from .bundle import read_bundle

        source, per_key, digest = read_bundle(bundle, self._ns, self._max_value_bytes)
        if not allow_duplicate:
            earlier = self._imported(digest)
            if earlier is not None:
                return ImportResult(0, 0, (), None, earlier)
        skipped: list[str] = []

        def plan(now: float) -> tuple[str, dict[str, Any], list[MemoryWrite]] | None:
            writes: list[MemoryWrite] = []
            skipped.clear()
            for key, key_writes in per_key:
                if on_existing != "append" and self._store.latest(self._ns, key) is not None:
                    if on_existing == "error":
                        raise InvalidInput(
                            f"key {key!r} already has history for agent {self._agent_id!r};"
                            " pass on_existing='append' or 'skip'"
                        )
                    skipped.append(key)
                    continue
                writes.extend(key_writes)
            payload = {"source_agent": source, "bundle_sha256": digest}
            return ("import", payload, writes) if writes else None

        done = self._unchanged(plan)
        if done is None:
            return ImportResult(0, 0, tuple(skipped))
        event, writes, _, _ = done
        return ImportResult(len({w.key for w in writes}), len(writes), tuple(skipped), event.seq)

    def _imported(self, digest: str) -> int | None:
        """The seq of this agent's last ``import`` event of the bundle with ``digest``."""
        found = None
        for event in self._store.events(self._agent_id, kinds=("import",)):
            if event.payload.get("bundle_sha256") == digest:
                found = event.seq
        return found

    # -- health -----------------------------------------------------------------------------

    def memory_health(self, *, stale_after_seconds: float | timedelta = 30 * _DAY) -> MemoryHealth:
        """Counts, stale share, size and versions per key of this agent's memory, and
        ``near_duplicates``: the keys ``consolidate()`` would merge, found by words (the
        same rules without an embedder; about linear in the number of keys)."""
        stale_after = required_seconds(stale_after_seconds, "stale_after_seconds")
        now = self._now()
        latest = self._store.current(self._ns, include_dead=True)
        live = [r for r in latest if is_live(r, now)]
        forgotten = sum(1 for r in latest if r.tombstone or r.erased)
        expired = len(latest) - len(live) - forgotten
        stale = sum(1 for r in live if r.created_at < now - stale_after)
        versions = sum(r.version for r in latest)
        busiest = sorted(((r.key, r.version) for r in latest), key=lambda kv: (-kv[1], kv[0]))[:5]
        return MemoryHealth(
            keys=len(live),
            forgotten_keys=forgotten,
            expired_keys=expired,
            versions=versions,
            stale_keys=stale,
            stale_share=stale / len(live) if live else 0.0,
            stale_after_seconds=stale_after,
            size_bytes=self._store.value_bytes(self._ns),
            versions_per_key_mean=versions / len(latest) if latest else 0.0,
            versions_per_key_max=max((r.version for r in latest), default=0),
            busiest_keys=tuple(busiest),
            near_duplicates=_near_duplicate_count(live),
        )
