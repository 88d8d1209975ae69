"""AgentRuntime: one agent's versioned, audited memory on a store."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from ._actions import ActionsMixin, LoopGuard, LoopPolicy
from ._audit import AuditTrail
from ._bundle import build_bundle, read_bundle
from ._canonical import canonical_text
from ._collab import CollabMixin
from ._config import open_store
from ._errors import (
    InvalidInput,
    InvalidValue,
    NotFound,
    SnapshotNotFound,
    StorageError,
    VersionConflict,
)
from ._events import Pipeline, Processor
from ._records import (
    EraseResult,
    Event,
    ImportResult,
    MemoryHealth,
    MemoryItem,
    MemoryVersion,
    RecallResult,
    RestoreResult,
    Snapshot,
    VersionRecord,
)
from ._store import (
    EraseKey,
    MemoryWrite,
    Op,
    Store,
    StoredRow,
    agent_namespace,
    stored_sha256,
)
from ._timeline import Decision, MemoryDiff, MemoryView, RecentDecisions, diff_rows
from ._values import (
    decode_value,
    encode_value,
    validate_agent_id,
    validate_key,
    validate_limit,
    validate_prefix,
    validate_reason,
    validate_tags,
)
from ._version import __version__

if TYPE_CHECKING:
    from datetime import timedelta

__all__ = ["AgentRuntime"]

_DAY = 86400.0
REPEAT_WINDOW_EVENTS = 200
"""A decision is compared with the decisions among this agent's last 200 events."""
REPEAT_SIMILARITY = 0.8
"""Text similarity (Jaccard overlap of case-folded words and word pairs) at or above which
a decision counts as a repeat, unless the two name different numbers or identifiers
("order 42" and "order 43" are two decisions)."""


def _seconds(value: float | timedelta | None, what: str) -> float | None:
    if value is None:
        return None
    if not isinstance(value, (int, float)) and hasattr(value, "total_seconds"):
        value = value.total_seconds()  # a timedelta (datetime is not imported for this)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InvalidInput(f"{what} must be a number of seconds or a timedelta, not {value!r}")
    if value <= 0:
        raise InvalidInput(f"{what} must be positive, got {value!r}")
    return float(value)


def _required_seconds(value: float | timedelta, what: str) -> float:
    seconds = _seconds(value, what)
    if seconds is None:
        raise InvalidInput(f"{what} is required: a number of seconds or a timedelta")
    return seconds


def _limit(limit: int | None, what: str = "limit") -> int | None:
    return validate_limit(limit, what)


def _live(row: StoredRow, now: float) -> bool:
    return not row.tombstone and not row.erased and (row.expires_at is None or row.expires_at > now)


class AgentRuntime(ActionsMixin, CollabMixin):
    """One agent's memory: every write a new version, every change an audited event.

    ``store`` is a path, ``"sqlite:///..."`` URL, ``":memory:"``, an open
    :class:`~octopoda.SqliteStore`, or None for the default
    (``$OCTOPODA_HOME/octopoda.db``, else ``~/.octopoda/octopoda.db``).
    ``processors`` run on every event of this agent before it is chained and stored.
    ``policy`` (a :class:`~octopoda.LoopPolicy`) turns loop detection into intervention;
    by default loops are detected and logged only.
    """

    def __init__(
        self,
        agent_id: str,
        *,
        store: Store | str | None = None,
        durability: Literal["normal", "full"] | None = None,
        processors: Iterable[Processor] = (),
        policy: LoopPolicy | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self._agent_id = validate_agent_id(agent_id)
        self._store = open_store(store, durability=durability)
        self._ns = agent_namespace(self._agent_id)
        self._clock = clock or time.time
        self._guard = LoopGuard(self._agent_id, self._store, policy, self._now())
        self._in_after_commit = False
        self._seen: dict[tuple[str, str], int] = {}  # shared keys: the version last seen
        self._decisions = RecentDecisions(REPEAT_WINDOW_EVENTS)
        self._pipeline = Pipeline([*self._guard.processors(), *processors])
        self.audit = AuditTrail(self._store, self._agent_id)
        """The agent's hash-chained audit trail: ``verify()``, ``head()``, ``export()``."""

    # -- plumbing ---------------------------------------------------------------------------

    @property
    def agent_id(self) -> str:
        return self._agent_id

    @property
    def store(self) -> Store:
        return self._store

    @property
    def policy(self) -> LoopPolicy:
        return self._guard.policy

    @property
    def pipeline(self) -> Pipeline:
        """The processors every event of this agent passes through (append to extend)."""
        return self._pipeline

    def _now(self) -> float:
        return round(self._clock(), 6)

    def _commit(
        self,
        kind: str,
        payload: dict[str, Any],
        writes: Sequence[MemoryWrite] = (),
        *,
        now: float | None = None,
        snapshot: str | None = None,
        replace_snapshot: bool = False,
        status: tuple[str, str | None] | None = None,
        ops: Sequence[Op] = (),
        expected_seq: int | None = None,
    ) -> tuple[Event, list[int]]:
        event = Event(self._agent_id, kind, payload, self._now() if now is None else now)
        event.writes = writes  # (for the detectors: what bookkeeping looks like)
        stored, versions = self._store.commit(
            event,
            writes,
            self._pipeline.run,
            snapshot=snapshot,
            replace_snapshot=replace_snapshot,
            status=status,
            ops=ops,
            expected_seq=expected_seq,
        )
        self._after_commit(stored)
        return stored, versions

    def close(self) -> None:
        """Release this runtime. A shared file store stays open for other runtimes."""

    def __enter__(self) -> AgentRuntime:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"AgentRuntime({self._agent_id!r}, store={self._store.url!r})"

    # -- memory -----------------------------------------------------------------------------

    def remember(
        self,
        key: str,
        value: Any,
        *,
        tags: Iterable[str] | None = None,
        ttl: float | timedelta | None = None,
    ) -> VersionRecord:
        """Store ``value`` as the next version of ``key``; durable when this returns.

        ``value`` is anything JSON-serialisable (tuples come back as lists) or bytes.
        ``ttl`` (seconds or a timedelta): the value is not returned after it expires.
        """
        started = time.perf_counter()
        key = validate_key(key)
        encoded = encode_value(value)
        tag_tuple = () if tags is None else validate_tags(tags)
        now = self._now()
        expires_at = None if ttl is None else round(now + _required_seconds(ttl, "ttl"), 6)
        write = MemoryWrite(
            self._ns, key, encoded.encoding, encoded.data, encoded.sha256, tag_tuple, expires_at
        )
        event, versions = self._commit("remember", {}, (write,), now=now)
        self._guard.write_us.append((time.perf_counter() - started) * 1e6)
        return VersionRecord(key, versions[0], now, event.seq)

    def remember_many(
        self,
        items: Mapping[str, Any] | Iterable[tuple[str, Any] | tuple[str, Any, Iterable[str]]],
        *,
        tags: Iterable[str] | None = None,
        ttl: float | timedelta | None = None,
    ) -> list[VersionRecord]:
        """Store several values in one transaction and one audited event (all or nothing).

        A key given twice gets two consecutive versions, in order. A ``(key, value, tags)``
        triple gives that key its own tags instead of ``tags``.
        """
        pairs = list(items.items() if isinstance(items, Mapping) else items)
        tag_tuple = validate_tags(tags)
        ttl_seconds = _seconds(ttl, "ttl")
        now = self._now()
        expires_at = None if ttl_seconds is None else round(now + ttl_seconds, 6)
        writes = []
        for pair in pairs:
            if not isinstance(pair, tuple) or len(pair) not in (2, 3):
                raise InvalidInput(
                    "remember_many takes a mapping, (key, value) pairs or (key, value, tags)"
                    f" triples, not {pair!r}"
                )
            key = validate_key(pair[0])
            encoded = encode_value(pair[1])
            writes.append(
                MemoryWrite(
                    self._ns,
                    key,
                    encoded.encoding,
                    encoded.data,
                    encoded.sha256,
                    validate_tags(pair[2]) if len(pair) == 3 else tag_tuple,
                    expires_at,
                )
            )
        if not writes:
            return []
        event, versions = self._commit("remember", {}, writes, now=now)
        return [
            VersionRecord(w.key, v, now, event.seq) for w, v in zip(writes, versions, strict=True)
        ]

    def recall(self, key: str, *, version: int | None = None) -> RecallResult:
        """The current value of ``key`` (or a given ``version``).

        A missing, forgotten, expired or erased key gives ``found=False`` and ``value=None``.
        """
        started = time.perf_counter()
        key = validate_key(key)
        if version is None:
            row = self._store.latest(self._ns, key)
        else:
            if isinstance(version, bool) or not isinstance(version, int) or version < 1:
                raise InvalidInput(f"version must be a positive int, not {version!r}")
            row = self._store.version(self._ns, key, version)
        now = self._now()
        found = row is not None and _live(row, now)
        self._guard.observe_read(self._ns, key, row.data if found else None, now)  # type: ignore[union-attr]
        if not found:
            result = RecallResult(key, False)
        else:
            assert row is not None
            result = RecallResult(
                key,
                True,
                decode_value(row.encoding, row.data),
                row.version,
                row.created_at,
                row.tags,
                row.expires_at,
                row.seq,
            )
        self._guard.read_us.append((time.perf_counter() - started) * 1e6)
        return result

    def recall_history(self, key: str, *, limit: int | None = None) -> list[MemoryVersion]:
        """Every version of ``key``, newest first. Expired or erased values read as None."""
        key = validate_key(key)
        limit = _limit(limit)
        now = self._now()
        rows = self._store.history(self._ns, key)
        if limit is not None:
            rows = rows[:limit]
        return [self._version(row, now) for row in rows]

    def _version(self, row: StoredRow, now: float) -> MemoryVersion:
        visible = _live(row, now)
        return MemoryVersion(
            key=row.key,
            version=row.version,
            value=decode_value(row.encoding, row.data) if visible else None,
            created_at=row.created_at,
            tags=row.tags,
            expires_at=row.expires_at,
            seq=row.seq,
            author=row.author,
            tombstone=row.tombstone,
            erased=row.erased,
        )

    def search(
        self,
        prefix: str = "",
        *,
        tags: Iterable[str] | None = None,
        limit: int | None = 50,
        offset: int = 0,
    ) -> list[MemoryItem]:
        """Current values whose key starts with ``prefix`` (exact, case-sensitive) and that
        carry every tag in ``tags``, ordered by key."""
        rows = self._store.current(
            self._ns,
            prefix=validate_prefix(prefix),
            tags=validate_tags(tags),
            now=self._now(),
            limit=_limit(limit),
            offset=_limit(offset, "offset") or 0,
        )
        return [self._item(row) for row in rows]

    @staticmethod
    def _item(row: StoredRow) -> MemoryItem:
        return MemoryItem(
            row.key,
            decode_value(row.encoding, row.data),
            row.version,
            row.created_at,
            row.tags,
            row.expires_at,
            row.seq,
        )

    def keys(self, prefix: str = "") -> list[str]:
        """Keys that currently have a value, ordered."""
        return [item.key for item in self.search(prefix, limit=None)]

    def _unchanged(
        self,
        plan: Callable[[float], tuple[str, dict[str, Any], list[MemoryWrite]] | None],
        *,
        ops: Sequence[Op] = (),
    ) -> tuple[Event, list[MemoryWrite], list[int], float] | None:
        """Read-then-write without races: ``plan(now)`` reads the agent's memory and returns
        what to commit (or None); the commit (with ``ops``) only succeeds if no other writer
        moved the agent meanwhile, else it is planned again."""
        for _ in range(50):
            row = self._store.agent(self._agent_id)
            seq = 0 if row is None else row.head_seq
            now = self._now()
            planned = plan(now)
            if planned is None:
                return None
            kind, payload, writes = planned
            try:
                event, versions = self._commit(
                    kind, payload, writes, now=now, ops=ops, expected_seq=seq
                )
            except VersionConflict:
                continue
            return event, writes, versions, now
        raise StorageError(
            f"agent {self._agent_id!r} kept changing under a read-then-write; try again"
        )

    def _tombstones(
        self, keys: Callable[[float], list[str]], payload: dict[str, Any]
    ) -> list[VersionRecord]:
        def plan(now: float) -> tuple[str, dict[str, Any], list[MemoryWrite]] | None:
            live = keys(now)
            if not live:
                return None
            return (
                "forget",
                dict(payload),
                [MemoryWrite(self._ns, k, "tombstone", None, None) for k in live],
            )

        done = self._unchanged(plan)
        if done is None:
            return []
        event, writes, versions, now = done
        return [
            VersionRecord(w.key, v, now, event.seq, True)
            for w, v in zip(writes, versions, strict=True)
        ]

    def _live_keys(self, keys: list[str], now: float) -> list[str]:
        return [
            k for k in keys if (r := self._store.latest(self._ns, k)) is not None and _live(r, now)
        ]

    def forget(self, key: str) -> VersionRecord | None:
        """Write a tombstone for ``key``: history stays, ``recall`` says not found.

        Returns None (and writes nothing) when the key has no current value.
        """
        key = validate_key(key)
        done = self._tombstones(lambda now: self._live_keys([key], now), {})
        return done[0] if done else None

    def forget_many(self, keys: Iterable[str]) -> list[VersionRecord]:
        """Tombstone every key in ``keys`` that has a current value, in one transaction.
        Keys without a value are skipped; returns the tombstones written."""
        wanted = list(dict.fromkeys(validate_key(k) for k in keys))
        return self._tombstones(lambda now: self._live_keys(wanted, now), {})

    def forget_stale(self, max_age_seconds: float | timedelta = 30 * _DAY) -> list[VersionRecord]:
        """Tombstone every key whose current value was written more than ``max_age_seconds``
        ago, in one transaction. Returns the tombstones written."""
        max_age = _required_seconds(max_age_seconds, "max_age_seconds")

        def stale(now: float) -> list[str]:
            cutoff = now - max_age
            return [r.key for r in self._store.current(self._ns, now=now) if r.created_at < cutoff]

        return self._tombstones(stale, {"reason": "stale", "max_age_seconds": max_age})

    def forget_expired(self, prefix: str = "") -> list[VersionRecord]:
        """Tombstone every key (under ``prefix``) whose current value has expired, in one
        transaction: the sweep of a TTL store. Expired values read as not found already;
        the tombstones put the expiry in the history and the audit trail. Returns them."""
        prefix = validate_prefix(prefix)

        def expired(now: float) -> list[str]:
            rows = self._store.current(self._ns, prefix=prefix, now=now, include_dead=True)
            return [
                r.key
                for r in rows
                if not r.tombstone
                and not r.erased
                and r.expires_at is not None
                and r.expires_at <= now
            ]

        return self._tombstones(expired, {"reason": "expired"})

    def erase(self, key: str, *, reason: str | None = None) -> EraseResult | None:
        """Remove the content of ``key`` for good (a GDPR erasure request, say).

        Every version that still holds a value loses it, in one audited ``erase`` event that
        lists the versions (and ``reason``, if given). The history stays: versions, times,
        tags, seqs and the value digests in earlier events; ``recall`` says not found and
        ``recall_history`` shows those versions with ``erased=True`` and value None. Unlike
        :meth:`forget`, nothing can bring the content back: ``as_of``, ``diff``,
        ``restore`` and ``export_memories`` see an erased version as no value at all. The
        key is exact (no prefix); a later ``remember`` writes its next version as usual.

        On SQLite the freed bytes are overwritten with zeros and the write-ahead log is
        checkpointed and truncated (best effort while other connections read); on
        PostgreSQL the old row versions remain until VACUUM (see docs/audit.md).

        Returns None (and writes nothing) when no version of ``key`` holds a value.
        """
        key = validate_key(key)
        reason = validate_reason(reason)
        payload: dict[str, Any] = {} if reason is None else {"reason": reason}

        def plan(now: float) -> tuple[str, dict[str, Any], list[MemoryWrite]] | None:
            rows = self._store.history(self._ns, key)
            if all(row.tombstone or row.erased for row in rows):
                return None
            return "erase", dict(payload), []

        done = self._unchanged(plan, ops=(EraseKey(self._ns, key),))
        if done is None:
            return None
        event, _, _, now = done
        versions = tuple(event.payload["erased"][0]["versions"])
        return EraseResult(key, versions, now, event.seq)

    # -- snapshots --------------------------------------------------------------------------

    def snapshot(self, name: str | None = None, *, replace: bool = False) -> Snapshot:
        """Name the current point in history. Nothing is copied: a snapshot is a seq."""
        now = self._now()
        if name is None:
            stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(now))
            name = f"snapshot-{stamp}.{round(now * 1e6) % 1_000_000:06d}Z"
        name = validate_key(name)
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

    def restore(self, name: str) -> RestoreResult:
        """Bring memory back to the snapshot ``name`` by writing new versions.

        Keys that changed since are written back; keys created since are tombstoned.
        History stays whole, and the restore is one audited event. A value erased since
        (:meth:`erase`) cannot come back: its key counts as absent at the snapshot, so it is
        tombstoned if it has a value now and left alone otherwise.
        """
        snap = self._store.snapshot(self._agent_id, validate_key(name))
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
                )
                for key, old in then.items()
                if (cur := current.get(key)) is None
                or (cur.encoding, cur.data, cur.tags, cur.expires_at)
                != (old.encoding, old.data, old.tags, old.expires_at)
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

    def export_memories(self) -> dict[str, Any]:
        """Every key with its full history as a JSON-safe bundle (see ``octopoda._bundle``)."""
        return build_bundle(
            self._agent_id,
            self._store.all_versions(self._ns),
            exported_at=self._now(),
            version=__version__,
        )

    def import_memories(
        self,
        bundle: dict[str, Any] | str | bytes,
        *,
        on_existing: Literal["append", "skip", "error"] = "append",
    ) -> ImportResult:
        """Write a bundle's versions (oldest first) as new versions, in one transaction.

        For a key that already has history here: ``append`` adds the bundle's versions after
        it, ``skip`` leaves the key alone, ``error`` refuses the whole import. The bundle is
        validated entirely before anything is written.
        """
        if on_existing not in ("append", "skip", "error"):
            raise InvalidInput(
                f"on_existing must be 'append', 'skip' or 'error', not {on_existing!r}"
            )
        source, per_key = read_bundle(bundle, self._ns)
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
            return ("import", {"source_agent": source}, writes) if writes else None

        done = self._unchanged(plan)
        if done is None:
            return ImportResult(0, 0, tuple(skipped))
        event, writes, _, _ = done
        return ImportResult(len({w.key for w in writes}), len(writes), tuple(skipped), event.seq)

    # -- health -----------------------------------------------------------------------------

    def memory_health(self, *, stale_after_seconds: float | timedelta = 30 * _DAY) -> MemoryHealth:
        """Counts, stale share, size and versions per key of this agent's memory."""
        stale_after = _required_seconds(stale_after_seconds, "stale_after_seconds")
        now = self._now()
        latest = self._store.current(self._ns, include_dead=True)
        live = [r for r in latest if _live(r, now)]
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
        )

    # -- decisions, points in time, timeline ------------------------------------------------

    def log_decision(
        self,
        decision: str,
        *,
        reasoning: str | None = None,
        context: dict[str, Any] | None = None,
    ) -> Decision:
        """Record a decision as an audited event. What the agent knew then is ``as_of`` its
        seq (no copy of memory is made). The result flags a restated recent decision."""
        if not isinstance(decision, str) or not decision.strip():
            raise InvalidInput("decision must be a non-empty str describing what was decided")
        if reasoning is not None and not isinstance(reasoning, str):
            raise InvalidInput(f"reasoning must be a str or None, not {type(reasoning).__name__}")
        if context is not None and not isinstance(context, dict):
            raise InvalidInput(f"context must be a dict or None, not {type(context).__name__}")
        payload: dict[str, Any] = {"decision": decision, "reasoning": reasoning, "context": context}
        try:
            canonical_text(payload)
        except (TypeError, ValueError) as exc:
            raise InvalidValue(f"decision context cannot be recorded as JSON: {exc}") from None
        repeat = self._recent_repeat(decision)
        if repeat is not None:
            payload["repeats_seq"], payload["similarity"] = repeat[0], round(repeat[1], 4)
        event, _ = self._commit("decision", payload)
        return Decision(
            event.seq,
            event.time,
            decision,
            reasoning,
            context,
            repeat[0] if repeat else None,
            round(repeat[1], 4) if repeat else None,
            MemoryView(self._store, self._ns, event.seq, event.time),
        )

    def _recent_repeat(self, decision: str) -> tuple[int, float] | None:
        head = self.audit.head().seq
        return self._decisions.most_similar(
            self._store, self._agent_id, head, decision, REPEAT_SIMILARITY
        )

    def decisions(self, *, limit: int | None = None) -> list[Decision]:
        """Logged decisions, oldest first."""
        return [
            Decision(
                e.seq,
                e.time,
                e.payload["decision"],
                e.payload.get("reasoning"),
                e.payload.get("context"),
                e.payload.get("repeats_seq"),
                e.payload.get("similarity"),
                MemoryView(self._store, self._ns, e.seq, e.time),
            )
            for e in self._store.events(self._agent_id, kinds=["decision"], limit=_limit(limit))
        ]

    def as_of(self, point: int | Decision) -> MemoryView:
        """This agent's memory as it was right after event ``point`` (a seq or a decision)."""
        if isinstance(point, Decision):
            return point.memory()
        if isinstance(point, bool) or not isinstance(point, int) or point < 0:
            raise InvalidInput(f"as_of takes an event seq (int >= 0) or a Decision, not {point!r}")
        return MemoryView(self._store, self._ns, point, self._event_time(point))

    def _event_time(self, seq: int) -> float | None:
        if seq == 0:
            return None
        for event in self._store.events(self._agent_id, after_seq=seq - 1, limit=1):
            if event.seq == seq:
                return event.time
        raise NotFound(
            f"agent {self._agent_id!r} has no event {seq} (its last is {self.audit.head().seq})"
        )

    def timeline(
        self,
        *,
        since: float | None = None,
        until: float | None = None,
        kinds: Iterable[str] | None = None,
        after_seq: int = 0,
        limit: int | None = None,
    ) -> list[Event]:
        """This agent's events in order, filtered by time (Unix seconds), kind and seq."""
        return list(
            self._store.events(
                self._agent_id,
                after_seq=after_seq,
                since=since,
                until=until,
                kinds=tuple(kinds or ()),
                limit=_limit(limit),
            )
        )

    def diff(self, seq_a: int, seq_b: int | None = None) -> MemoryDiff:
        """Keys added, changed and removed between event ``seq_a`` and ``seq_b`` (default:
        now)."""
        b = self.audit.head().seq if seq_b is None else seq_b
        for seq in (seq_a, b):
            if isinstance(seq, bool) or not isinstance(seq, int) or seq < 0:
                raise InvalidInput(f"diff takes event seqs (int >= 0), not {seq!r}")
        # Each side as the agent saw it then: TTL expiry judged at that point's time.
        time_b = self._now() if seq_b is None else self._event_time(b)
        before = self._store.current(self._ns, as_of_seq=seq_a, now=self._event_time(seq_a))
        after = self._store.current(self._ns, as_of_seq=b, now=time_b)
        return diff_rows(seq_a, b, before, after)
