"""Memory verbs of ``AgentRuntime``: remember, recall, history, listing, forget, erase
(``search`` by words is in ``search.py``)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from .._errors import (
    InvalidInput,
)
from .._records import (
    EraseResult,
    MemoryItem,
    MemoryVersion,
    RecallResult,
    VersionRecord,
)
from .._store import (
    EraseKey,
    MemoryWrite,
    StoredRow,
)
from .._store.rows import decode_stored
from .._values import (
    encode_value,
    validate_int,
    validate_key,
    validate_kind,
    validate_prefix,
    validate_reason,
    validate_tags,
)
from .base import RuntimeBase, checked_limit, is_live, optional_seconds, required_seconds
from .views import kind_filter

if TYPE_CHECKING:
    from datetime import timedelta


__all__ = ["MemoryMixin"]

_DAY = 86400.0


class MemoryMixin(RuntimeBase):
    # -- memory -----------------------------------------------------------------------------

    def remember(
        self,
        key: str,
        value: Any,
        tags: Iterable[str] | None = None,
        *,
        ttl: float | timedelta | None = None,
        kind: str | None = None,
    ) -> VersionRecord:
        """Store ``value`` as the next version of ``key``; durable when this returns.

        ``value`` is anything JSON-serialisable (tuples come back as lists) or bytes.
        ``ttl`` (seconds or a timedelta): the value is not returned after it expires.
        ``kind`` says what the memory is (``"fact"``, ``"preference"``, ``"summary"``, ...:
        1 to 64 printable characters; None: no kind); ``search(kinds=)`` filters by it.
        Like ``tags``, it belongs to this version: the next ``remember`` sets its own.
        """
        started = time.perf_counter()
        key = validate_key(key)
        encoded = encode_value(value, self._max_value_bytes, f"the value of {key!r:.200}")
        tag_tuple = () if tags is None else validate_tags(tags)
        if kind is not None:
            kind = validate_kind(kind)
        now = self._now()
        expires_at = None if ttl is None else round(now + required_seconds(ttl, "ttl"), 6)
        write = MemoryWrite(
            self._ns,
            key,
            encoded.encoding,
            encoded.data,
            encoded.sha256,
            tag_tuple,
            expires_at,
            kind=kind,
        )
        event, versions = self._commit("remember", {}, (write,), now=now)
        self._guard.write_us.append((time.perf_counter() - started) * 1e6)
        return VersionRecord(key, versions[0], now, event.seq, False, kind)

    def remember_many(
        self,
        items: Mapping[str, Any] | Iterable[tuple[str, Any] | tuple[str, Any, Iterable[str]]],
        *,
        tags: Iterable[str] | None = None,
        ttl: float | timedelta | None = None,
        kind: str | None = None,
    ) -> list[VersionRecord]:
        """Store several values in one transaction and one audited event (all or nothing).

        A key given twice gets two consecutive versions, in order. A ``(key, value, tags)``
        triple gives that key its own tags instead of ``tags``. ``kind`` (as in
        :meth:`remember`) is every version's kind.
        """
        pairs = list(items.items() if isinstance(items, Mapping) else items)
        tag_tuple = validate_tags(tags)
        kind = validate_kind(kind)
        ttl_seconds = optional_seconds(ttl, "ttl")
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
            encoded = encode_value(pair[1], self._max_value_bytes, f"the value of {key!r:.200}")
            writes.append(
                MemoryWrite(
                    self._ns,
                    key,
                    encoded.encoding,
                    encoded.data,
                    encoded.sha256,
                    validate_tags(pair[2]) if len(pair) == 3 else tag_tuple,
                    expires_at,
                    kind=kind,
                )
            )
        if not writes:
            return []
        event, versions = self._commit("remember", {}, writes, now=now)
        return [
            VersionRecord(w.key, v, now, event.seq, False, kind)
            for w, v in zip(writes, versions, strict=True)
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
            row = self._store.version(self._ns, key, validate_int(version, "version", 1))
        now = self._now()
        found = row is not None and is_live(row, now)
        self._guard.observe_read(self._ns, key, row.data if found else None, now)  # type: ignore[union-attr]
        if not found:
            result = RecallResult(key, False)
        else:
            assert row is not None
            result = RecallResult(
                key,
                True,
                decode_stored(row),
                row.version,
                row.created_at,
                row.tags,
                row.expires_at,
                row.seq,
                row.kind,
            )
        self._guard.read_us.append((time.perf_counter() - started) * 1e6)
        return result

    def recall_history(self, key: str, *, limit: int | None = None) -> list[MemoryVersion]:
        """Every version of ``key``, newest first. Expired or erased values read as None."""
        key = validate_key(key)
        limit = checked_limit(limit)
        now = self._now()
        rows = self._store.history(self._ns, key, limit)  # the limit is the statement's
        return [self._version(row, now) for row in rows]

    def _version(self, row: StoredRow, now: float) -> MemoryVersion:
        visible = is_live(row, now)
        return MemoryVersion(
            key=row.key,
            version=row.version,
            value=decode_stored(row) if visible else None,
            created_at=row.created_at,
            tags=row.tags,
            expires_at=row.expires_at,
            seq=row.seq,
            author=row.author,
            tombstone=row.tombstone,
            erased=row.erased,
            kind=row.kind,
        )

    def _listing(
        self,
        prefix: str = "",
        *,
        tags: Iterable[str] | None = None,
        limit: int | None = 50,
        offset: int = 0,
        kinds: Iterable[str] | None = None,
    ) -> list[MemoryItem]:
        """Current values whose key starts with ``prefix`` (exact, case-sensitive), that
        carry every tag in ``tags`` and (``kinds`` given) whose kind is one of ``kinds``,
        ordered by key (``search`` without a query)."""
        rows = self._store.current(
            self._ns,
            prefix=validate_prefix(prefix),
            tags=validate_tags(tags),
            now=self._now(),
            limit=checked_limit(limit),
            offset=checked_limit(offset, "offset") or 0,
            **kind_filter(kinds),
        )
        return [self._item(row) for row in rows]

    @staticmethod
    def _item(row: StoredRow) -> MemoryItem:
        return MemoryItem(
            row.key,
            decode_stored(row),
            row.version,
            row.created_at,
            row.tags,
            row.expires_at,
            row.seq,
            row.kind,
        )

    def keys(self, prefix: str = "") -> list[str]:
        """Keys that currently have a value, ordered."""
        return [item.key for item in self._listing(prefix, limit=None)]

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
            k
            for k in keys
            if (r := self._store.latest(self._ns, k)) is not None and is_live(r, now)
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
        max_age = required_seconds(max_age_seconds, "max_age_seconds")

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
