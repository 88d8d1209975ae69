"""The kind part of the store contract (``MemoryWrite.kind``, ``StoredRow.kind`` and the
``kinds`` filter of ``current``, ``search`` and ``search_vectors``), mixed into
``octopoda.testing.StoreConformance``: every backend keeps and filters kinds the same way."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from .._records import Event
from .._runtime.pipeline import Pipeline
from .ops import MemoryWrite, agent_namespace
from .protocol import Store

__all__ = ["KindConformance"]

_NS = agent_namespace("a")


def _write(key: str, value: Any, kind: str | None = None, **kw: Any) -> MemoryWrite:
    text = json.dumps(value, ensure_ascii=False)
    digest = hashlib.sha256(text.encode()).hexdigest()
    return MemoryWrite(_NS, key, "json", text, digest, kind=kind, **kw)


class KindConformance:
    """A version's kind: stored with it, returned by every read, recorded in its event's
    write entry, and filtered on (the current version's kind) by ``kinds``."""

    def _commit_kinds(self, store: Store, writes: list[MemoryWrite]) -> Event:
        event, _ = store.commit(Event("a", "t", {}, 1000.0), writes, Pipeline())
        return event

    def test_a_kind_is_kept_per_version(self, store: Store) -> None:
        self._commit_kinds(store, [_write("k", "one", "fact"), _write("plain", "x")])
        self._commit_kinds(store, [_write("k", "two", "préférence ✓", tags=("t",))])
        self._commit_kinds(store, [_write("k", "three")])
        self._commit_kinds(store, [MemoryWrite(_NS, "k", "tombstone", None, None)])
        assert [r.kind for r in store.history(_NS, "k")] == [None, None, "préférence ✓", "fact"]
        assert [(v, store.version(_NS, "k", v).kind) for v in (1, 2)] == [  # type: ignore[union-attr]
            (1, "fact"),
            (2, "préférence ✓"),
        ]
        assert store.latest(_NS, "k", as_of_seq=2).kind == "préférence ✓"  # type: ignore[union-attr]
        assert store.latest(_NS, "plain").kind is None  # type: ignore[union-attr]
        every = [(r.key, r.version, r.kind) for r in store.all_versions(_NS)]
        assert every[:2] == [("k", 1, "fact"), ("k", 2, "préférence ✓")]
        assert [r.kind for r in store.current(_NS, as_of_seq=2)] == ["préférence ✓", None]

    def test_the_write_entry_records_a_kind(self, store: Store) -> None:
        event = self._commit_kinds(store, [_write("k", 1, "summary"), _write("j", 2)])
        entries = {w["key"]: w for w in event.payload["writes"]}
        assert entries["k"]["kind"] == "summary" and "kind" not in entries["j"]
        (stored,) = store.events("a")
        assert stored.payload == event.payload

    def test_current_keeps_the_kinds_asked_for(self, store: Store) -> None:
        self._commit_kinds(
            store,
            [
                _write("a", 1, "fact", tags=("p",)),
                _write("b", 2, "preference"),
                _write("c", 3, "fact"),
                _write("d", 4),
                _write("e", 5, "summary", expires_at=500.0),
            ],
        )
        mid = store.agent("a").head_seq  # type: ignore[union-attr]
        self._commit_kinds(store, [_write("c", 30, "summary")])  # its current kind changes

        def keys(**kw: Any) -> list[str]:
            return [r.key for r in store.current(_NS, now=1000.0, **kw)]

        assert keys(kinds=("fact",)) == ["a"]
        assert keys(kinds=("fact", "preference")) == ["a", "b"]
        assert keys(kinds=("summary",)) == ["c"]  # (e expired)
        assert keys(kinds=("fact",), as_of_seq=mid) == ["a", "c"]
        assert keys(kinds=("fact", "summary"), tags=("p",)) == ["a"]
        assert keys(kinds=("fact", "preference", "summary"), limit=1, offset=1) == ["b"]
        assert keys(kinds=("fact",), prefix="b") == [] and keys(kinds=("none",)) == []
        assert keys() == ["a", "b", "c", "d"]
        assert [r.key for r in store.current(_NS, kinds=("summary",))] == ["c", "e"]

    def test_search_keeps_the_kinds_asked_for(self, store: Store) -> None:
        self._commit_kinds(
            store,
            [
                _write("a", "green tea", "fact"),
                _write("b", "tea and more tea", "preference", tags=("t",)),
                _write("c", "tea", None),
            ],
        )
        self._commit_kinds(store, [_write("a", "tea again", "summary")])

        def keys(**kw: Any) -> list[str]:
            return sorted(r.key for r, _ in store.search(_NS, ["tea"], now=1000.0, **kw))

        assert keys() == ["a", "b", "c"]
        assert keys(kinds=("preference",)) == ["b"]
        assert keys(kinds=("fact",)) == []  # a's current kind is summary
        assert keys(kinds=("summary", "preference")) == ["a", "b"]
        assert keys(kinds=("summary", "preference"), tags=("t",)) == ["b"]
        assert keys(kinds=("summary", "preference"), prefix="a") == ["a"]
        found = store.search(_NS, ["tea"], kinds=("preference",))
        assert [(r.key, r.kind) for r, _ in found] == [("b", "preference")]

    def test_search_vectors_keeps_the_kinds_asked_for(self, store: Store) -> None:
        self._commit_kinds(
            store, [_write("a", "x", "fact"), _write("b", "y", "note"), _write("c", "z")]
        )
        vectors = [("a", 1, [1.0, 0.0]), ("b", 1, [0.8, 0.6]), ("c", 1, [0.6, 0.8])]
        store.put_vectors(_NS, vectors, model="m")

        def keys(**kw: Any) -> list[str]:
            return [r.key for r, _ in store.search_vectors(_NS, [1.0, 0.0], **kw)]

        assert keys() == ["a", "b", "c"]
        assert keys(kinds=("note",)) == ["b"]
        assert keys(kinds=("note", "fact"), limit=1) == ["a"]
        assert keys(kinds=("fact",), prefix="b") == []
        found = store.search_vectors(_NS, [1.0, 0.0], kinds=("note",))
        assert [r.kind for r, _ in found] == ["note"]
