"""The search part of the store contract (``Store.search``), mixed into
``octopoda.testing.StoreConformance``: every backend's index is checked the same way."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from .._records import Event
from .._runtime.pipeline import Pipeline
from .._store.ops import EraseKey, MemoryWrite, agent_namespace
from .._store.protocol import Store

__all__ = ["SearchConformance"]

_NS = agent_namespace("a")


def _write(key: str, value: Any, namespace: str = _NS, **kw: Any) -> MemoryWrite:
    text = json.dumps(value, ensure_ascii=False)
    return MemoryWrite(
        namespace, key, "json", text, hashlib.sha256(text.encode()).hexdigest(), **kw
    )


def _tombstone(key: str) -> MemoryWrite:
    return MemoryWrite(_NS, key, "tombstone", None, None)


def _keys(found: list[Any]) -> list[str]:
    return [row.key for row, _ in found]


class SearchConformance:
    """``Store.search``: what a commit makes findable, and what it takes away."""

    def _commit(self, store: Store, writes: list[MemoryWrite], **kw: Any) -> None:
        agent = kw.pop("agent", "a")
        store.commit(Event(agent, "t", {}, 1000.0), writes, Pipeline(), **kw)

    def test_search_finds_a_committed_write_at_once(self, store: Store) -> None:
        self._commit(store, [_write("user/diet", {"likes": ["green tea"], "n": 1})])
        found = store.search(_NS, ["tea"])
        assert _keys(found) == ["user/diet"] and found[0][1] > 0
        row = found[0][0]
        assert (row.version, json.loads(str(row.data))) == (1, {"likes": ["green tea"], "n": 1})
        assert _keys(store.search(_NS, ["diet"])) == ["user/diet"]  # the key's words too
        self._commit(store, [_write("user/diet", "coffee")])
        assert store.search(_NS, ["tea"]) == []
        assert [(r.key, r.version) for r, _ in store.search(_NS, ["coffee"])] == [("user/diet", 2)]

    def test_search_ranks_filters_and_pages(self, store: Store) -> None:
        self._commit(
            store,
            [
                _write("a", "tea", tags=("t",)),
                _write("b", "tea tea tea and tea", tags=("t", "u")),
                _write("c", "coffee"),
                _write("d", "tea", expires_at=500.0),
            ],
        )
        assert _keys(store.search(_NS, ["tea"], now=1000.0)) == ["b", "a"]
        assert set(_keys(store.search(_NS, ["tea"]))) == {"a", "b", "d"}  # no now: no expiry
        assert _keys(store.search(_NS, ["tea", "coffee"], now=1000.0, limit=None)) in (
            ["b", "a", "c"],
            ["b", "c", "a"],
            ["c", "b", "a"],
        )
        assert _keys(store.search(_NS, ["tea"], tags=["u"], now=1000.0)) == ["b"]
        assert _keys(store.search(_NS, ["tea"], prefix="a", now=1000.0)) == ["a"]
        assert _keys(store.search(_NS, ["tea"], now=1000.0, limit=1, offset=1)) == ["a"]
        assert store.search(_NS, [], now=1000.0) == []

    def test_search_forgets_tombstones_and_erasures(self, store: Store) -> None:
        self._commit(store, [_write("k1", "plan alpha"), _write("k2", "plan beta")])
        self._commit(store, [_tombstone("k1")])
        assert _keys(store.search(_NS, ["plan"])) == ["k2"]
        self._commit(store, [], ops=[EraseKey(_NS, "k2")])
        assert store.search(_NS, ["plan"]) == [] and store.search(_NS, ["beta"]) == []

    def test_search_never_crosses_namespaces(self, store: Store) -> None:
        other = agent_namespace("b")
        self._commit(store, [_write("k", "shared word")])
        self._commit(store, [_write("k", "shared word", namespace=other)], agent="b")
        assert [(r.key, r.author) for r, _ in store.search(_NS, ["shared"])] == [("k", "a")]
        self._commit(store, [_tombstone("k")])
        assert _keys(store.search(other, ["shared"])) == ["k"]
        assert store.search(_NS, ["shared"]) == []

    def test_search_terms_are_words_not_syntax(self, store: Store) -> None:
        self._commit(store, [_write("q", 'O\'Reilly said "near" AND or NOT; -- 100% ünïcödé')])
        for term in ["near", "and", "or", "not", "reilly", "100", "ünïcödé", "unicode"]:
            assert _keys(store.search(_NS, [term])) in (["q"], []), term
        assert _keys(store.search(_NS, ["reilly"])) == ["q"]
        assert _keys(store.search(_NS, ["ünïcödé"])) == ["q"]
