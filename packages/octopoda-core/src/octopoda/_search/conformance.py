"""The search part of the store contract (``Store.search``), mixed into
``octopoda.testing.StoreConformance``: every backend's index is checked the same way."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from .._errors import EmbedderMismatch
from .._records import Event
from .._runtime.pipeline import Pipeline
from .._store.ops import EraseKey, MemoryWrite, agent_namespace
from .._store.protocol import Store

__all__ = ["SearchConformance", "VectorConformance"]

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


class _Words:
    """A tiny deterministic embedder: one coordinate per known word (and its synonyms)."""

    def __init__(self, words: str, name: str = "words") -> None:
        self.axes = [w.split("=") for w in words.split()]
        self.dimension = len(self.axes)
        self.name = name
        self.calls = 0

    def embed(self, texts: Any) -> list[list[float]]:
        self.calls += 1
        out = []
        for text in texts:
            found = set(text.lower().replace(".", " ").replace("/", " ").split())
            out.append([1.0 if found & set(axis) else 0.0 for axis in self.axes] or [0.0])
        return out


_AXES = "tea=drink=beverage coffee=espresso city=town user plan"


class VectorConformance:
    """``Store.index_vectors`` / ``search_vectors`` / ``put_vectors``: what a commit makes
    findable by meaning once indexed, and what it takes away."""

    def _put(self, store: Store, writes: list[MemoryWrite], **kw: Any) -> None:
        agent = kw.pop("agent", "a")
        store.commit(Event(agent, "t", {}, 1000.0), writes, Pipeline(), **kw)

    def _found(self, store: Store, words: str, embedder: Any, **kw: Any) -> list[tuple[str, int]]:
        store.index_vectors(embedder)
        (query,) = embedder.embed([words])
        return [(r.key, r.version) for r, _ in store.search_vectors(_NS, query, **kw)]

    def test_vectors_rank_by_cosine_after_indexing(self, store: Store) -> None:
        e = _Words(_AXES)
        self._put(store, [_write("k1", "green tea"), _write("k2", "a cup of espresso")])
        self._put(store, [_write("k3", "tea and coffee", tags=("x",))])
        assert store.index_vectors(e) == 3 and store.index_vectors(e) == 0
        (q,) = e.embed(["a hot beverage"])
        found = store.search_vectors(_NS, q, limit=5)
        assert [r.key for r, _ in found] == ["k1", "k3", "k2"]
        assert abs(found[0][1] - 1.0) < 1e-6 and abs(found[1][1] - 0.5**0.5) < 1e-6
        assert self._found(store, "drink", e, limit=1) == [("k1", 1)]
        assert self._found(store, "drink", e, tags=["x"]) == [("k3", 1)]
        assert self._found(store, "drink", e, prefix="k2") == [("k2", 1)]
        assert store.vector_model() == ("words", 5)

    def test_a_new_version_replaces_its_vector_and_a_forget_removes_it(self, store: Store) -> None:
        e = _Words(_AXES)
        self._put(store, [_write("k1", "green tea"), _write("k2", "the city")])
        store.index_vectors(e)
        self._put(store, [_write("k1", "espresso")])
        # not yet indexed: the old vector is of an old version, so k1 is not found by it
        (q,) = e.embed(["tea"])
        assert [r.key for r, _ in store.search_vectors(_NS, q)] == ["k2"]
        assert self._found(store, "coffee", e, limit=1) == [("k1", 2)]
        self._put(store, [_tombstone("k1")])
        assert ("k1", 2) not in self._found(store, "coffee", e)
        self._put(store, [], ops=[EraseKey(_NS, "k2")])
        assert self._found(store, "city", e) == []

    def test_vectors_never_cross_namespaces_and_expire(self, store: Store) -> None:
        e = _Words(_AXES)
        other = agent_namespace("b")
        self._put(store, [_write("k", "tea", expires_at=1500.0)])
        self._put(store, [_write("k", "tea", namespace=other)], agent="b")
        assert self._found(store, "tea", e) == [("k", 1)]
        assert self._found(store, "tea", e, now=2000.0) == []
        store.index_vectors(e)
        (q,) = e.embed(["tea"])
        assert [r.author for r, _ in store.search_vectors(other, q)] == ["b"]

    def test_another_model_is_refused_until_reset(self, store: Store) -> None:
        self._put(store, [_write("k", "green tea")])
        store.index_vectors(_Words(_AXES))
        self._put(store, [_write("j", "coffee")])
        for other in (_Words(_AXES, name="other"), _Words("tea coffee")):
            try:
                store.index_vectors(other)
            except EmbedderMismatch as exc:
                assert "octopoda reindex" in str(exc) and "'words' (5 dimensions)" in str(exc)
            else:  # pragma: no cover - the test fails
                raise AssertionError("a changed model was not refused")
        store.reset_vectors()
        assert store.vector_model() is None
        e = _Words("tea coffee", name="small")
        assert store.index_vectors(e) == 2 and store.vector_model() == ("small", 2)
        assert self._found(store, "coffee", e, limit=1) == [("j", 1)]

    def test_put_vectors_of_the_callers_model(self, store: Store) -> None:
        self._put(store, [_write("k1", "x"), _write("k2", "y")])
        store.put_vectors(_NS, [("k1", 1, [1.0, 0.0]), ("k2", 1, [0.6, 0.8])], model="mine")
        found = store.search_vectors(_NS, [0.0, 1.0], model="mine")
        assert [r.key for r, _ in found] == ["k2", "k1"] and abs(found[0][1] - 0.8) < 1e-6
        self._put(store, [_write("k2", "z")])  # version 2 has no vector: not found by one
        assert [r.key for r, _ in store.search_vectors(_NS, [0.0, 1.0])] == ["k1"]
        try:
            store.search_vectors(_NS, [1.0, 0.0, 0.0])
        except EmbedderMismatch:
            pass
        else:  # pragma: no cover - the test fails
            raise AssertionError("a vector of another dimension was not refused")

    def test_nearer_vectors_of_another_namespace_never_hide_ours(self, store: Store) -> None:
        other = agent_namespace("b")
        self._put(store, [_write(f"b{i}", "tea", namespace=other) for i in range(200)], agent="b")
        store.put_vectors(other, [(f"b{i}", 1, [1.0, 0.0]) for i in range(200)], model="m")
        self._put(store, [_write("mine", "x"), _write("gone", "x")])
        store.put_vectors(_NS, [("mine", 1, [0.6, 0.8]), ("gone", 1, [0.8, 0.6])], model="m")
        self._put(store, [_tombstone("gone")])
        assert [r.key for r, _ in store.search_vectors(_NS, [1.0, 0.0], limit=3)] == ["mine"]
