"""Test helpers for Octopoda users and backends.

* :class:`FrozenClock`: a clock to pass as ``AgentRuntime(..., clock=...)``.
* :func:`capture_events`: record every event an agent commits, in a ``with`` block.
* :func:`memory_store`: a fresh in-memory SQLite store.
* :class:`FakeEmbedder`: a deterministic embedder (hashed bag of words, with synonyms you
  choose) for testing search by meaning without a model.
* :func:`run_script_with_init`: run an unmodified script after ``octopoda.init()`` (or
  init twice, init then shutdown, or an integration's ``activate`` twice), for an
  adapter's init tests in a subprocess.
* :class:`StoreConformance`: the contract every store backend passes. A backend's test
  module subclasses it and provides a ``store`` fixture::

      class TestMyStore(StoreConformance):
          @pytest.fixture
          def store(self, tmp_path):
              s = MyStore(...)
              yield s
              s.close()

This module imports pytest; import it from tests only.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pytest

from ._audit.chain import GENESIS_HASH, event_hash
from ._errors import AccessDenied, InvalidInput, NotFound, VersionConflict
from ._instrument.script import run_script_with_init
from ._records import Event
from ._runtime.pipeline import Pipeline
from ._runtime.runtime import AgentRuntime
from ._search.conformance import SearchConformance, VectorConformance
from ._search.lexical import STOPWORDS, tokenize
from ._store.kind_conformance import KindConformance
from ._store.ops import (
    CreateSpace,
    EraseKey,
    MarkRead,
    MemoryWrite,
    ResolveConflict,
    SendMessage,
    SetRunStatus,
    agent_namespace,
    space_namespace,
)
from ._store.protocol import Store
from ._store.sqlite.store import SqliteStore

__all__ = [
    "FakeEmbedder",
    "FrozenClock",
    "StoreConformance",
    "capture_events",
    "memory_store",
    "run_script_with_init",
]


class FrozenClock:
    """A clock that only moves when told: ``clock.advance(seconds)``."""

    def __init__(self, start: float = 1_750_000_000.0) -> None:
        self.now = float(start)

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> float:
        self.now += seconds
        return self.now


class FakeEmbedder:
    """A deterministic :class:`~octopoda.Embedder`: each word (lower-cased, plural and verb
    endings folded, as the lexical search reads it) is hashed to one of ``dimension``
    coordinates with a sign, and a text's vector is the sum over its words, unit length.
    ``synonyms`` maps words to a shared concept (``{"eat": "food", "diet": "food"}``) so
    that texts with no word in common can still be close: search by meaning without a
    model. ``calls`` records every batch it was asked to embed."""

    def __init__(
        self, dimension: int = 64, *, synonyms: dict[str, str] | None = None, name: str = ""
    ) -> None:
        self.dimension = dimension
        self.name = name or f"fake-hashing-{dimension}"
        self._synonyms = {tokenize(k)[0]: v for k, v in (synonyms or {}).items()}
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        return [self._vector(text) for text in texts]

    def _vector(self, text: str) -> list[float]:
        out = [0.0] * self.dimension
        for word in tokenize(text):
            if word in STOPWORDS:
                continue
            concept = self._synonyms.get(word, word)
            digest = hashlib.blake2b(concept.encode(), digest_size=8).digest()
            index = int.from_bytes(digest[:4], "little") % self.dimension
            out[index] += 1.0 if digest[4] & 1 else -1.0
        norm = math.sqrt(sum(x * x for x in out))
        return [x / norm for x in out] if norm else out


def memory_store() -> SqliteStore:
    """A new, private, in-memory SQLite store."""
    return SqliteStore(":memory:")


@contextmanager
def capture_events(agent: AgentRuntime) -> Iterator[list[Event]]:
    """Collect the events ``agent`` commits inside the block (after they are chained)."""
    captured: list[Event] = []

    def record(event: Event) -> Event:
        captured.append(event)
        return event

    agent.pipeline.processors.append(record)
    try:
        yield captured
    finally:
        agent.pipeline.processors.remove(record)


# -- the conformance suite ----------------------------------------------------------------

_NS = agent_namespace("a")


def _json_write(key: str, value: str, namespace: str = _NS, **kw: Any) -> MemoryWrite:
    return MemoryWrite(
        namespace, key, "json", value, hashlib.sha256(value.encode()).hexdigest(), **kw
    )


def _tombstone(key: str, namespace: str = _NS) -> MemoryWrite:
    return MemoryWrite(namespace, key, "tombstone", None, None)


class StoreConformance(SearchConformance, VectorConformance, KindConformance):
    """The store contract. Subclass it and provide a ``store`` fixture."""

    pipeline = Pipeline()

    def commit(
        self,
        store: Store,
        writes: list[MemoryWrite],
        *,
        agent: str = "a",
        kind: str = "t",
        time: float = 1000.0,
        **kw: Any,
    ) -> tuple[Event, list[int]]:
        return store.commit(Event(agent, kind, {}, time), writes, self.pipeline, **kw)

    # -- writes and versions ------------------------------------------------------------------

    def test_versions_are_gapless_per_key(self, store: Store) -> None:
        for i in range(3):
            _, versions = self.commit(store, [_json_write("k", f'"{i}"')])
            assert versions == [i + 1]
        _, versions = self.commit(store, [_json_write("other", "1")])
        assert versions == [1]
        assert [r.version for r in store.history(_NS, "k")] == [3, 2, 1]

    def test_one_commit_many_versions_of_one_key(self, store: Store) -> None:
        event, versions = self.commit(store, [_json_write("k", "1"), _json_write("k", "2")])
        assert versions == [1, 2]
        assert [w["version"] for w in event.payload["writes"]] == [1, 2]
        row = store.latest(_NS, "k")
        assert row is not None and row.data == "2" and row.seq == event.seq

    def test_rows_come_back_as_written(self, store: Store) -> None:
        self.commit(
            store,
            [
                _json_write("j", '{"a":[1,"é"]}', tags=("x", "y"), expires_at=5000.5),
                MemoryWrite(
                    _NS, "b", "bytes", b"\x00\xff", hashlib.sha256(b"\x00\xff").hexdigest()
                ),
            ],
            time=1234.5,
        )
        j = store.latest(_NS, "j")
        b = store.latest(_NS, "b")
        assert j is not None and b is not None
        assert (j.encoding, j.data, j.tags, j.expires_at, j.created_at, j.author) == (
            "json",
            '{"a":[1,"é"]}',
            ("x", "y"),
            5000.5,
            1234.5,
            "a",
        )
        assert (b.encoding, bytes(b.data), b.tags, b.expires_at) == ("bytes", b"\x00\xff", (), None)

    def test_created_at_override(self, store: Store) -> None:
        self.commit(store, [_json_write("k", "1", created_at=10.25)], time=99.0)
        row = store.latest(_NS, "k")
        assert row is not None and row.created_at == 10.25

    def test_keys_are_exact_and_case_sensitive(self, store: Store) -> None:
        self.commit(store, [_json_write("user_name", '"Bob"')])
        assert store.latest(_NS, "user") is None
        assert store.latest(_NS, "USER_NAME") is None
        assert store.latest(_NS, "user_name%") is None
        assert store.history(_NS, "user_") == []

    def test_namespaces_are_isolated(self, store: Store) -> None:
        self.commit(store, [_json_write("k", "1", namespace=agent_namespace("Bot"))], agent="Bot")
        self.commit(store, [_json_write("k", "2", namespace=agent_namespace("bot"))], agent="bot")
        upper = store.latest(agent_namespace("Bot"), "k")
        lower = store.latest(agent_namespace("bot"), "k")
        assert upper is not None and upper.data == "1" and upper.version == 1
        assert lower is not None and lower.data == "2" and lower.version == 1
        assert [r.key for r in store.current(agent_namespace("Bot"))] == ["k"]

    # -- events and the chain -------------------------------------------------------------

    def test_commit_appends_one_chained_event(self, store: Store) -> None:
        e1, _ = self.commit(store, [_json_write("k", "1")])
        e2, _ = self.commit(store, [], kind="note")
        assert (e1.seq, e2.seq) == (1, 2)
        assert e1.prev_hash == GENESIS_HASH and e2.prev_hash == e1.hash
        stored = list(store.events("a"))
        assert [(e.seq, e.kind, e.hash) for e in stored] == [
            (1, "t", e1.hash),
            (2, "note", e2.hash),
        ]
        assert stored[0].payload == e1.payload
        for e in stored:
            assert e.hash == event_hash(e.agent, e.kind, e.payload_text, e.prev_hash, e.seq, e.time)
        head = store.agent("a")
        assert head is not None and (head.head_seq, head.head_hash) == (2, e2.hash)

    def test_writes_are_recorded_in_the_payload(self, store: Store) -> None:
        w = _json_write("k", '"v"', tags=("t",), expires_at=2000.0)
        event, _ = self.commit(store, [w])
        assert event.payload["writes"] == [
            {
                "encoding": "json",
                "expires_at": 2000.0,
                "key": "k",
                "sha256": w.sha256,
                "tags": ["t"],
                "version": 1,
            }
        ]

    def test_a_failing_pipeline_stores_nothing(self, store: Store) -> None:
        self.commit(store, [_json_write("k", "1")])

        def refuse(event: Event) -> Event:
            raise RuntimeError("refused")

        with pytest.raises(RuntimeError):
            store.commit(Event("a", "t", {}, 1.0), [_json_write("k", "2")], Pipeline([refuse]))
        row = store.latest(_NS, "k")
        assert row is not None and row.version == 1
        assert [e.seq for e in store.events("a")] == [1]
        head = store.agent("a")
        assert head is not None and head.head_seq == 1

    def test_events_filters(self, store: Store) -> None:
        for i, kind in enumerate(["x", "y", "x", "z"]):
            self.commit(store, [], kind=kind, time=100.0 + i)
        assert [e.seq for e in store.events("a", kinds=["x"])] == [1, 3]
        assert [e.seq for e in store.events("a", after_seq=1, until_seq=3)] == [2, 3]
        assert [e.seq for e in store.events("a", since=101.0, until=103.0)] == [2, 3]
        assert [e.seq for e in store.events("a", limit=2)] == [1, 2]
        assert list(store.events("nobody")) == []

    def test_agents_are_listed(self, store: Store) -> None:
        self.commit(store, [], agent="b")
        self.commit(store, [], agent="a")
        assert [a.id for a in store.agents()] == ["a", "b"]
        assert store.agent("missing") is None

    # -- current state ----------------------------------------------------------------------

    def test_current_is_the_latest_live_version_per_key(self, store: Store) -> None:
        self.commit(store, [_json_write("a1", "1"), _json_write("a2", "2"), _json_write("b1", "3")])
        self.commit(store, [_json_write("a1", "10"), _tombstone("a2")])
        self.commit(store, [_json_write("ttl", "4", expires_at=50.0)])
        rows = store.current(_NS, now=40.0)
        assert [(r.key, r.data) for r in rows] == [("a1", "10"), ("b1", "3"), ("ttl", "4")]
        assert [r.key for r in store.current(_NS, now=60.0)] == ["a1", "b1"]
        assert [r.key for r in store.current(_NS, prefix="a")] == ["a1"]
        dead = store.current(_NS, include_dead=True, now=60.0)
        assert [r.key for r in dead] == ["a1", "a2", "b1", "ttl"]

    def test_current_as_of_a_seq(self, store: Store) -> None:
        e1, _ = self.commit(store, [_json_write("k", "1")])
        self.commit(store, [_json_write("k", "2"), _json_write("new", "3")])
        then = store.current(_NS, as_of_seq=e1.seq)
        assert [(r.key, r.data) for r in then] == [("k", "1")]

    def test_current_prefix_is_exact(self, store: Store) -> None:
        keys = ["user", "user_name", "User", "use", "usera", "user\U0010ffff", "userb\u00e9"]
        self.commit(store, [_json_write(k, "1") for k in keys])
        assert [r.key for r in store.current(_NS, prefix="user")] == sorted(
            k for k in keys if k.startswith("user")
        )
        assert [r.key for r in store.current(_NS, prefix="user\U0010ffff")] == ["user\U0010ffff"]
        assert store.current(_NS, prefix="x") == []

    def test_current_tags_limit_offset(self, store: Store) -> None:
        self.commit(
            store,
            [
                _json_write("a", "1", tags=("p", "q")),
                _json_write("b", "1", tags=("p",)),
                _json_write("c", "1", tags=("p", "q")),
            ],
        )
        assert [r.key for r in store.current(_NS, tags=["p", "q"])] == ["a", "c"]
        assert [r.key for r in store.current(_NS, tags=["p"], limit=1, offset=1)] == ["b"]
        assert [r.key for r in store.current(_NS, limit=0)] == []

    def test_all_versions_in_key_then_version_order(self, store: Store) -> None:
        self.commit(store, [_json_write("b", "1"), _json_write("a", "1"), _json_write("b", "2")])
        rows = list(store.all_versions(_NS))
        assert [(r.key, r.version) for r in rows] == [("a", 1), ("b", 1), ("b", 2)]
        assert store.value_bytes(_NS) == 3

    # -- the commit planner's rules, as each store executes them ----------------------------

    def test_a_refused_compare_and_set_stores_nothing(self, store: Store) -> None:
        self.commit(store, [_json_write("k", "1")])
        with pytest.raises(VersionConflict) as caught:
            self.commit(store, [_json_write("j", "1"), _json_write("k", "2", expected_version=0)])
        assert (caught.value.expected, caught.value.actual) == (0, 1)
        assert store.latest(_NS, "j") is None and self._head(store) == 1
        _, versions = self.commit(store, [_json_write("k", "2", expected_version=1)])
        assert versions == [2]

    def test_a_stale_shared_write_records_a_conflict(self, store: Store) -> None:
        team = space_namespace("team")
        self.commit(store, [_json_write("plan", '"b"', team)], agent="b", time=10.0)
        stale = _json_write("plan", '"a"', team, seen_version=None, check_stale=True)
        event, versions = self.commit(store, [stale], time=11.0)
        [conflict] = store.conflicts(team)
        assert event.payload["writes"][0]["conflict_id"] == conflict.id
        assert conflict == conflict._replace(
            namespace=team,
            key="plan",
            version=2,
            author="a",
            head_version=1,
            head_author="b",
            seen_version=None,
            created_at=11.0,
            seq=event.seq,
            status="open",
        )
        assert versions == [2] and store.conflict(conflict.id) == conflict
        seen = _json_write("plan", '"c"', team, seen_version=2, check_stale=True)
        event, _ = self.commit(store, [seen], agent="c")
        assert "conflict_id" not in event.payload["writes"][0]
        event, _ = self.commit(store, [], ops=[ResolveConflict(conflict.id, "mine")])
        assert store.conflicts(team) == [] and store.conflict(conflict.id).status == "resolved"  # type: ignore[union-attr]
        with pytest.raises(InvalidInput, match="already resolved"):
            self.commit(store, [], ops=[ResolveConflict(conflict.id, "theirs")])

    def test_members_only_spaces(self, store: Store) -> None:
        self.commit(store, [], agent="owner", ops=[CreateSpace("club", ("owner", "a"))])
        row = store.space("club")
        assert row is not None and (row.members, row.created_by) == (("owner", "a"), "owner")
        with pytest.raises(InvalidInput, match="already exists"):
            self.commit(store, [], ops=[CreateSpace("club", None)])
        club = space_namespace("club")
        with pytest.raises(AccessDenied, match="not a member of space 'club'"):
            self.commit(store, [_json_write("k", "1", club)], agent="outsider")
        with pytest.raises(AccessDenied):
            send = SendMessage(None, "club", "info", '"hi"', "x")
            self.commit(store, [], agent="outsider", ops=[send])
        assert store.latest(club, "k") is None and store.agent("outsider") is None
        _, versions = self.commit(store, [_json_write("k", "1", club)])
        assert versions == [1]

    def test_messages_get_their_ids_in_the_payload(self, store: Store) -> None:
        sends = [SendMessage("b", None, "info", f'"{n}"', f"h{n}") for n in range(2)]
        event, _ = self.commit(store, [], ops=sends, time=5.0)
        messages = store.messages(recipient="b")
        assert [m.body for m in messages] == ['"0"', '"1"']
        assert event.payload["message_id"] == messages[-1].id > messages[0].id
        assert (messages[0].sender, messages[0].seq, messages[0].created_at) == ("a", 1, 5.0)
        read = MarkRead(messages[0].id)
        with pytest.raises(NotFound):
            self.commit(store, [], agent="b", ops=[read, read])
        with pytest.raises(NotFound):
            self.commit(store, [], agent="c", ops=[read])  # not addressed to c
        self.commit(store, [], agent="b", ops=[read], time=6.0)
        assert [m.id for m in store.messages(recipient="b", unread_only=True)] == [messages[1].id]
        with pytest.raises(NotFound, match="no unread message"):
            self.commit(store, [], agent="b", ops=[read])

    def test_a_taken_snapshot_name_is_refused_before_the_pipeline_runs(self, store: Store) -> None:
        self.commit(store, [], snapshot="s")
        seen: list[Event] = []

        def record(event: Event) -> Event:
            seen.append(event)
            return event

        with pytest.raises(InvalidInput, match="already has a snapshot named 's'"):
            store.commit(Event("a", "t", {}, 1.0), [], Pipeline([record]), snapshot="s")
        assert seen == [] and self._head(store) == 1

    # -- snapshots --------------------------------------------------------------------------

    def test_snapshots(self, store: Store) -> None:
        e1, _ = self.commit(store, [], snapshot="s")
        with pytest.raises(InvalidInput):
            self.commit(store, [], snapshot="s")
        assert [e.seq for e in store.events("a")] == [1]  # the refused one left no event
        e2, _ = self.commit(store, [], snapshot="s", replace_snapshot=True)
        snap = store.snapshot("a", "s")
        assert snap is not None and snap.seq == e2.seq != e1.seq
        assert store.snapshot("a", "S") is None
        assert [s.name for s in store.snapshots("a")] == ["s"]

    # -- erasure ----------------------------------------------------------------------------

    def test_erase_key_removes_every_value_and_keeps_the_versions(self, store: Store) -> None:
        blob = b"\x00secret"
        self.commit(store, [_json_write("k", '"one"', tags=("p",))], time=10.0)
        self.commit(
            store,
            [MemoryWrite(_NS, "k", "bytes", blob, hashlib.sha256(blob).hexdigest())],
            time=11.0,
        )
        self.commit(store, [_tombstone("k")], time=12.0)
        self.commit(store, [_json_write("k", '"four"', expires_at=5.0)], time=13.0)
        self.commit(store, [_json_write("other", '"kept"')], time=14.0)
        before = {(r.key, r.version): r for r in store.all_versions(_NS)}
        event, versions = self.commit(store, [], kind="erase", ops=[EraseKey(_NS, "k")])
        assert versions == []
        assert event.payload["erased"] == [{"key": "k", "versions": [1, 2, 4]}]
        stored = list(store.events("a"))[-1]
        assert (stored.seq, stored.kind, stored.payload) == (6, "erase", event.payload)
        after = {(r.key, r.version): r for r in store.all_versions(_NS)}
        assert after.keys() == before.keys()
        for (key, version), row in after.items():
            old = before[(key, version)]
            if key == "k" and version != 3:
                assert (row.data, row.erased) == (None, True)
                assert row._replace(data=old.data, erased=False) == old
            else:
                assert row == old and not row.erased  # the tombstone and "other" as they were
        assert store.value_bytes(_NS) == len('"kept"')
        assert [r.key for r in store.current(_NS)] == ["other"]
        assert [r.key for r in store.current(_NS, as_of_seq=2)] == []  # gone at every point
        dead = {r.key: r for r in store.current(_NS, include_dead=True)}
        assert dead["k"].version == 4 and dead["k"].erased
        # A later write is the next version, as usual.
        _, versions = self.commit(store, [_json_write("k", '"five"')])
        assert versions == [5]
        assert [(r.version, r.data) for r in store.current(_NS)] == [(5, '"five"'), (1, '"kept"')]

    def test_erase_key_with_nothing_to_erase_stores_nothing(self, store: Store) -> None:
        writes = [_json_write(k, '"v"') for k in ("once", "gone", "twice")]
        self.commit(store, [*writes, _tombstone("only-tombstone")])
        self.commit(store, [], ops=[EraseKey(_NS, "once")])
        self.commit(store, [], ops=[EraseKey(_NS, "gone")])
        self.commit(store, [_tombstone("gone")])
        seq, rows = self._head(store), list(store.all_versions(_NS))
        for key in ("missing", "once", "gone", "only-tombstone", "ONCE"):
            with pytest.raises(NotFound, match=f"'{key}'"):
                self.commit(store, [], ops=[EraseKey(_NS, key)])
        with pytest.raises(NotFound, match="'twice'"):  # the second finds nothing: all undone
            self.commit(store, [], ops=[EraseKey(_NS, "twice"), EraseKey(_NS, "twice")])
        assert self._head(store) == seq
        assert [e.seq for e in store.events("a")][-1] == seq
        assert list(store.all_versions(_NS)) == rows

    def test_erase_key_is_exact_and_stays_in_its_namespace(self, store: Store) -> None:
        keys = ["user", "user_name", "User", "use"]
        self.commit(store, [_json_write(k, '"v"') for k in keys])
        other = agent_namespace("Bot")
        self.commit(store, [_json_write("user", '"v"', namespace=other)], agent="Bot")
        event, _ = self.commit(store, [], ops=[EraseKey(_NS, "user")])
        assert event.payload["erased"] == [{"key": "user", "versions": [1]}]
        assert {r.key: r.erased for r in store.all_versions(_NS)} == {
            "use": False,
            "user": True,
            "user_name": False,
            "User": False,
        }
        row = store.latest(other, "user")
        assert row is not None and (row.data, row.erased) == ('"v"', False)

    def test_erase_key_refuses_another_agents_memory(self, store: Store) -> None:
        other = agent_namespace("b")
        self.commit(store, [_json_write("k", '"v"', namespace=other)], agent="b")
        self.commit(store, [])
        with pytest.raises(InvalidInput, match="own memory"):
            self.commit(store, [], ops=[EraseKey(other, "k")])
        row = store.latest(other, "k")
        assert row is not None and (row.data, row.erased) == ('"v"', False)
        assert self._head(store) == 1

    def test_a_failing_pipeline_erases_nothing(self, store: Store) -> None:
        self.commit(store, [_json_write("k", '"v"')])

        def refuse(event: Event) -> Event:
            raise RuntimeError("refused")

        with pytest.raises(RuntimeError):
            store.commit(
                Event("a", "erase", {}, 1.0), [], Pipeline([refuse]), ops=[EraseKey(_NS, "k")]
            )
        row = store.latest(_NS, "k")
        assert row is not None and (row.data, row.erased) == ('"v"', False)
        assert self._head(store) == 1

    # -- runs -------------------------------------------------------------------------------

    def test_events_and_messages_keep_their_run(self, store: Store) -> None:
        for run, time in (("r1", 1.0), (None, 2.0), ("r2", 3.0), ("r1", 4.0)):
            payload = {} if run is None else {"run_id": run}
            store.commit(Event("a", "t", payload, time), [], self.pipeline)
        assert [e.seq for e in store.events("a", run_id="r1")] == [1, 4]
        assert [e.seq for e in store.events("a", run_id="r1", after_seq=1)] == [4]
        assert list(store.events("a", run_id="R1")) == []  # exact
        assert [
            (r.run_id, r.first_seen, r.last_seen, r.events, r.status) for r in store.runs("a")
        ] == [
            ("r1", 1.0, 4.0, 2, "active"),
            ("r2", 3.0, 3.0, 1, "active"),
        ]
        assert [r.run_id for r in store.runs("a", limit=1)] == ["r1"]
        for listed in store.runs("a"):  # one run alone reads as the list has it
            assert store.run_activity("a", listed.run_id) == listed
        assert store.run_activity("a", "R1") is None and store.run_activity("a", "r") is None
        assert store.run_activity("b", "r1") is None
        assert store.runs("b") == [] and store.agent_and_run("b", "r1") == (None, None)
        row, run_row = store.agent_and_run("a", "r1")
        assert row is not None and row.head_seq == 4 and run_row is None
        self.commit(store, [], ops=[SendMessage("b", None, "info", '"x"', "h", "r2")])
        assert [m.run_id for m in store.messages(recipient="b")] == ["r2"]

    def test_a_run_status_changes_only_with_an_event_of_that_run(self, store: Store) -> None:
        def status(kind: str, run: str, op: SetRunStatus, time: float = 1.0) -> Event:
            event = Event("a", kind, {"run_id": run}, time)
            return store.commit(event, [], self.pipeline, ops=[op])[0]

        paused = status("paused", "r1", SetRunStatus("r1", "paused", '{"reason": "loop"}'))
        _, run_row = store.agent_and_run("a", "r1")
        assert run_row is not None
        assert (run_row.status, run_row.status_reason) == ("paused", '{"reason": "loop"}')
        assert (run_row.changed_at, run_row.changed_seq) == (1.0, paused.seq)
        assert [(r.run_id, r.status) for r in store.runs("a", status="paused")] == [
            ("r1", "paused")
        ]
        one = store.run_activity("a", "r1")
        assert one is not None and (one.status, one.status_reason, one.events) == (
            "paused",
            '{"reason": "loop"}',
            1,
        )
        assert store.runs("a", status="active") == []
        with pytest.raises(InvalidInput, match="only with an event of that run"):
            status("paused", "r2", SetRunStatus("r1", "paused"))
        with pytest.raises(NotFound, match="not paused"):
            status("resumed", "r2", SetRunStatus("r2", "active"))
        assert self._head(store) == 1  # refused: nothing stored
        status("resumed", "r1", SetRunStatus("r1", "active"), 2.0)
        _, run_row = store.agent_and_run("a", "r1")
        assert run_row is not None and (run_row.status, run_row.changed_seq) == ("active", 2)
        assert store.runs("a", status="paused") == []
        assert [r.status for r in store.runs("a", status="active")] == ["active"]
        with pytest.raises(NotFound):
            status("resumed", "r1", SetRunStatus("r1", "active"))

    @staticmethod
    def _head(store: Store, agent: str = "a") -> int:
        row = store.agent(agent)
        return 0 if row is None else row.head_seq
