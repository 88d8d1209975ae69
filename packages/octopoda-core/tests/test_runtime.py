"""Behaviour of AgentRuntime on real SQLite stores: values, keys, isolation, search, versions,
TTL, forget, snapshots, export/import, health, events and the statements a write issues.

Time is a fake clock passed as ``clock=``; nothing sleeps.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import itertools
import json
import math
import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

import octopoda
from octopoda import (
    AgentRuntime,
    Event,
    InvalidAgentId,
    InvalidBundle,
    InvalidInput,
    InvalidKey,
    InvalidValue,
    MemoryVersion,
    NotFound,
    OctopodaError,
    SnapshotNotFound,
    SqliteStore,
    VersionRecord,
)
from octopoda._store.config import open_store
from octopoda._values import MAX_AGENT_ID_LENGTH, MAX_KEY_LENGTH

T0 = 1_700_000_000.0
DAY = 86_400.0


class FakeClock:
    """A settable clock in Unix seconds."""

    def __init__(self, now: float = T0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


# -- fixtures and helpers -----------------------------------------------------------------------


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def db(tmp_path: Path) -> Iterator[str]:
    """A fresh SQLite file; the process-wide shared store on it is closed afterwards."""
    path = str(tmp_path / "octopoda.db")
    yield path
    open_store(path).close()


@pytest.fixture
def agent(db: str, clock: FakeClock) -> AgentRuntime:
    return AgentRuntime("bot", store=db, clock=clock)


@pytest.fixture
def mem(clock: FakeClock) -> Iterator[AgentRuntime]:
    """An agent on ``:memory:``, where the file is irrelevant."""
    runtime = AgentRuntime("bot", store=":memory:", clock=clock)
    yield runtime
    runtime.store.close()


def events(rt: AgentRuntime) -> list[Event]:
    return list(rt.store.events(rt.agent_id))


def head_seq(rt: AgentRuntime) -> int:
    row = rt.store.agent(rt.agent_id)
    return 0 if row is None else row.head_seq


def state(rt: AgentRuntime) -> tuple[Any, ...]:
    """Everything a failed call must leave alone: memories, head and events."""
    row = rt.store.agent(rt.agent_id)
    head = None if row is None else (row.head_seq, row.head_hash)
    return (
        rt.export_memories()["memories"],
        head,
        [(e.seq, e.kind, e.hash) for e in events(rt)],
        [(s.name, s.seq) for s in rt.store.snapshots(rt.agent_id)],
    )


@contextmanager
def unchanged(*runtimes: AgentRuntime) -> Iterator[None]:
    before = [state(rt) for rt in runtimes]
    yield
    assert [state(rt) for rt in runtimes] == before


@contextmanager
def one_event(rt: AgentRuntime, kind: str) -> Iterator[None]:
    """The block appends exactly one event, of ``kind``, right after the previous head."""
    before = head_seq(rt)
    yield
    new = list(rt.store.events(rt.agent_id, after_seq=before))
    assert [(e.seq, e.kind) for e in new] == [(before + 1, kind)]
    assert head_seq(rt) == before + 1


def history(rt: AgentRuntime, key: str) -> list[tuple[Any, ...]]:
    """A key's history without seq/author (which legitimately differ between agents)."""
    return [
        (v.version, v.value, v.tags, v.created_at, v.expires_at, v.tombstone)
        for v in rt.recall_history(key)
    ]


def all_histories(rt: AgentRuntime) -> dict[str, list[tuple[Any, ...]]]:
    keys = [m["key"] for m in rt.export_memories()["memories"]]
    return {key: history(rt, key) for key in keys}


def search_keys(rt: AgentRuntime, prefix: str = "", **kwargs: Any) -> list[str]:
    return [item.key for item in rt.search(prefix, **kwargs)]


def stored_sha(text_or_bytes: str | bytes) -> str:
    raw = text_or_bytes.encode("utf-8") if isinstance(text_or_bytes, str) else text_or_bytes
    return hashlib.sha256(raw).hexdigest()


def compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def circular_list() -> list[Any]:
    items: list[Any] = [1]
    items.append(items)
    return items


def circular_dict() -> dict[str, Any]:
    d: dict[str, Any] = {}
    d["self"] = d
    return d


def deep_list(depth: int) -> list[Any]:
    root: list[Any] = []
    node = root
    for _ in range(depth):
        child: list[Any] = []
        node.append(child)
        node = child
    return root


# -- values -------------------------------------------------------------------------------------

ROUND_TRIP = [
    pytest.param("hello", id="str"),
    pytest.param("", id="empty-str"),
    pytest.param("héllo 世界 😀 \u2028 \U0010ffff", id="unicode"),
    pytest.param('a\x00b\x01\n\t"\\', id="control-chars-and-nul"),
    pytest.param(0, id="zero"),
    pytest.param(-42, id="negative-int"),
    pytest.param(2**64 + 1, id="int-over-64-bits"),
    pytest.param(-(10**300), id="int-300-digits"),
    pytest.param(2**53 + 1, id="int-beyond-float-precision"),
    pytest.param(3.14, id="float"),
    pytest.param(0.1, id="float-0.1"),
    pytest.param(1e308, id="float-huge"),
    pytest.param(5e-324, id="float-subnormal"),
    pytest.param(1.0, id="float-integral"),
    pytest.param(True, id="true"),
    pytest.param(False, id="false"),
    pytest.param(None, id="none"),
    pytest.param({}, id="empty-dict"),
    pytest.param([], id="empty-list"),
    pytest.param(
        {"b": 1, "a": [1, 2.5, None, True, {"x": ["y", {"z": {}}]}], "é": "ü"}, id="nested"
    ),
    pytest.param(b"", id="empty-bytes"),
    pytest.param(b"\x00\xff\xfe binary", id="bytes"),
]


@pytest.mark.parametrize("value", ROUND_TRIP)
def test_value_round_trips_equal_and_of_same_type(agent: AgentRuntime, value: Any) -> None:
    written = agent.remember("k", value)
    result = agent.recall("k")
    assert result.found
    assert result.value == value
    assert type(result.value) is type(value)
    assert result.version == written.version == 1
    [item] = agent.search("k")
    assert item.value == value and type(item.value) is type(value)
    assert agent.recall_history("k")[0].value == value


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param(bytearray(b"\x01\x02"), b"\x01\x02", id="bytearray"),
        pytest.param(memoryview(b"mv"), b"mv", id="memoryview"),
        pytest.param((1, "a", (2, 3)), [1, "a", [2, 3]], id="tuple-becomes-list"),
        pytest.param({"t": ()}, {"t": []}, id="nested-empty-tuple"),
    ],
)
def test_value_normalised_forms(agent: AgentRuntime, value: Any, expected: Any) -> None:
    agent.remember("k", value)
    got = agent.recall("k").value
    assert got == expected
    assert type(got) is type(expected)


def test_negative_zero_keeps_its_sign(mem: AgentRuntime) -> None:
    mem.remember("z", -0.0)
    assert math.copysign(1.0, mem.recall("z").value) == -1.0


def test_value_passed_in_is_not_mutated(agent: AgentRuntime) -> None:
    value = {"name": "Alice", "prefs": {"tags": ["a"]}, "list": [1, {"x": 2}]}
    pristine = copy.deepcopy(value)
    agent.remember("profile", value, tags=["t"])
    assert value == pristine
    assert list(value) == list(pristine)  # no keys added (3.3.4 leaked _tags, _stored_at ...)


def test_caller_mutation_after_remember_does_not_reach_the_store(agent: AgentRuntime) -> None:
    value = {"items": [1, 2]}
    agent.remember("k", value)
    value["items"].append(3)
    value["new"] = True
    assert agent.recall("k").value == {"items": [1, 2]}


@pytest.mark.parametrize(
    "read",
    [
        pytest.param(lambda rt: rt.recall("k").value, id="recall"),
        pytest.param(lambda rt: rt.recall("k", version=1).value, id="recall-version"),
        pytest.param(lambda rt: rt.search("k")[0].value, id="search"),
        pytest.param(lambda rt: rt.recall_history("k")[0].value, id="history"),
    ],
)
def test_returned_value_is_a_fresh_object_each_time(
    agent: AgentRuntime, read: Callable[[AgentRuntime], Any]
) -> None:
    agent.remember("k", {"items": [1, {"deep": "x"}]})
    first = read(agent)
    first["items"][1]["deep"] = "changed"
    first["added"] = 1
    second = read(agent)
    assert second == {"items": [1, {"deep": "x"}]}
    assert second is not first
    assert second["items"] is not first["items"]


def test_value_key_order_is_kept(mem: AgentRuntime) -> None:
    mem.remember("k", {"b": 1, "a": 2, "c": {"z": 1, "y": 2}})
    value = mem.recall("k").value
    assert list(value) == ["b", "a", "c"]
    assert list(value["c"]) == ["z", "y"]


INVALID_VALUES = [
    pytest.param(object(), "object", id="object"),
    pytest.param({1, 2}, "set", id="set"),
    pytest.param({"a": [1, {"b": frozenset()}]}, "frozenset", id="nested-frozenset"),
    pytest.param({"blob": b"x"}, "bytes", id="bytes-inside-dict"),
    pytest.param(float("nan"), "nan", id="nan"),
    pytest.param(float("inf"), "inf", id="inf"),
    pytest.param({"a": [1.0, float("-inf")]}, "-inf", id="nested-neg-inf"),
    pytest.param([float("nan")], "nan", id="nan-in-list"),
    pytest.param({1: "one"}, "dict key 1", id="int-dict-key"),
    pytest.param({"ok": {None: 1}}, "dict key None", id="nested-none-dict-key"),
    pytest.param({True: 1}, "dict key True", id="bool-dict-key"),
    pytest.param(circular_list(), "circular", id="circular-list"),
    pytest.param(circular_dict(), "circular", id="circular-dict"),
    pytest.param(deep_list(100_000), "depth", id="too-deep"),
    pytest.param("\ud800", "surrogate", id="lone-surrogate"),
    pytest.param({"k": ["ok", "x\udfffy"]}, "surrogate", id="nested-lone-surrogate"),
    pytest.param({"\udc00": 1}, "surrogate", id="lone-surrogate-dict-key"),
    pytest.param(10**5000, "digits", id="int-too-many-digits"),
]


@pytest.mark.parametrize(("value", "message"), INVALID_VALUES)
def test_unstorable_value_raises_invalid_value_and_changes_nothing(
    mem: AgentRuntime, value: Any, message: str
) -> None:
    mem.remember("k", "before")
    with unchanged(mem), pytest.raises(InvalidValue) as info:
        mem.remember("k", value)
    assert isinstance(info.value, OctopodaError)
    assert message.lower() in str(info.value).lower()
    assert mem.recall("k").value == "before"


def test_unstorable_value_on_a_new_agent_creates_no_agent(mem: AgentRuntime) -> None:
    with pytest.raises(InvalidValue):
        mem.remember("k", object())
    assert mem.store.agent(mem.agent_id) is None
    assert events(mem) == []


# -- keys ---------------------------------------------------------------------------------------


@pytest.fixture
def users(agent: AgentRuntime) -> AgentRuntime:
    agent.remember("user", "Alice")
    agent.remember("user_name", "Bob")
    return agent


@pytest.mark.parametrize("key", ["USER", "User", "use", "u", "user_", "user_name ", " user"])
def test_recall_is_exact_and_case_sensitive(users: AgentRuntime, key: str) -> None:
    result = users.recall(key)
    assert not result.found
    assert result.value is None
    assert not result


def test_recall_does_not_match_a_longer_key(users: AgentRuntime) -> None:
    assert users.recall("user").value == "Alice"
    assert users.recall("user_name").value == "Bob"


@pytest.mark.parametrize("key", ["use", "USER", "User", "user_nam"])
def test_forget_of_an_unwritten_key_writes_nothing(users: AgentRuntime, key: str) -> None:
    with unchanged(users):
        assert users.forget(key) is None
    assert users.recall("user").value == "Alice"
    assert users.recall("user_name").value == "Bob"


INVALID_KEYS = [
    pytest.param("", id="empty"),
    pytest.param(None, id="none"),
    pytest.param(1, id="int"),
    pytest.param(b"user", id="bytes"),
    pytest.param(["user"], id="list"),
    pytest.param("k" * (MAX_KEY_LENGTH + 1), id="too-long"),
    pytest.param("é" * (MAX_KEY_LENGTH + 1), id="too-long-non-ascii"),
    pytest.param("a\x00b", id="nul"),
    pytest.param("\ud800", id="lone-surrogate"),
]

KEY_OPERATIONS = [
    pytest.param(lambda rt, k: rt.remember(k, 1), id="remember"),
    pytest.param(lambda rt, k: rt.recall(k), id="recall"),
    pytest.param(lambda rt, k: rt.recall(k, version=1), id="recall-version"),
    pytest.param(lambda rt, k: rt.recall_history(k), id="recall_history"),
    pytest.param(lambda rt, k: rt.forget(k), id="forget"),
]


@pytest.mark.parametrize("operation", KEY_OPERATIONS)
@pytest.mark.parametrize("key", INVALID_KEYS)
def test_invalid_key_raises_invalid_key_and_changes_nothing(
    users: AgentRuntime, key: Any, operation: Callable[[AgentRuntime, Any], Any]
) -> None:
    with unchanged(users), pytest.raises(InvalidKey) as info:
        operation(users, key)
    assert isinstance(info.value, InvalidInput)
    assert "key" in str(info.value)


@pytest.mark.parametrize("key", ["k" * MAX_KEY_LENGTH, "é" * MAX_KEY_LENGTH, "😀", " ", "a/b:c"])
def test_unusual_but_valid_keys_work(mem: AgentRuntime, key: str) -> None:
    mem.remember(key, "v")
    assert mem.recall(key).value == "v"
    assert search_keys(mem) == [key]


# -- agents -------------------------------------------------------------------------------------

AGENT_PAIRS = [
    pytest.param(("Bot", "bot"), id="case"),
    pytest.param(("bot", "bo"), id="prefix"),
    pytest.param(("bot", "bot_2"), id="underscore-suffix"),
    pytest.param(("bot", "bot "), id="trailing-space"),
    pytest.param(("agent:bot", "bot"), id="namespace-like"),
]


@pytest.fixture(params=AGENT_PAIRS)
def pair(request: pytest.FixtureRequest, db: str, clock: FakeClock) -> tuple[AgentRuntime, ...]:
    """Two agents on one file, each with a shared-name key and a private key."""
    first, second = (AgentRuntime(name, store=db, clock=clock) for name in request.param)
    for rt in (first, second):
        rt.remember("secret", f"{rt.agent_id}-secret", tags=["t"])
        rt.remember(f"own-{rt.agent_id}", rt.agent_id, tags=["t"])
    clock.advance(10)
    return first, second


def own_view(rt: AgentRuntime) -> dict[str, Any]:
    return {item.key: item.value for item in rt.search(limit=None)}


def test_agents_differing_slightly_never_see_each_other_recall_search(
    pair: tuple[AgentRuntime, AgentRuntime],
) -> None:
    for rt, other in (pair, pair[::-1]):
        expected = {"secret": f"{rt.agent_id}-secret", f"own-{rt.agent_id}": rt.agent_id}
        assert own_view(rt) == expected
        assert {i.key for i in rt.search("", tags=["t"])} == set(expected)
        assert {i.key for i in rt.search("own")} == {f"own-{rt.agent_id}"}
        assert rt.keys() == sorted(expected)
        assert not rt.recall(f"own-{other.agent_id}").found
        assert rt.recall_history(f"own-{other.agent_id}") == []
        assert [v.value for v in rt.recall_history("secret")] == [f"{rt.agent_id}-secret"]


def test_agents_differing_slightly_export_only_their_own(
    pair: tuple[AgentRuntime, AgentRuntime],
) -> None:
    for rt in pair:
        bundle = rt.export_memories()
        assert bundle["agent"] == rt.agent_id
        assert {m["key"]: m["versions"][-1]["value"] for m in bundle["memories"]} == {
            "secret": f"{rt.agent_id}-secret",
            f"own-{rt.agent_id}": rt.agent_id,
        }


def test_agents_differing_slightly_keep_snapshots_and_restores_apart(
    pair: tuple[AgentRuntime, AgentRuntime],
) -> None:
    first, second = pair
    first.snapshot("s1")
    assert second.snapshots() == []
    with unchanged(first, second), pytest.raises(SnapshotNotFound):
        second.restore("s1")
    second.remember("created-later", 1)
    second.remember("secret", "changed")
    with unchanged(second):
        result = first.restore("s1")
    assert (result.restored, result.removed) == ((), ())
    assert second.recall("created-later").found
    assert second.recall("secret").value == "changed"


def test_agents_differing_slightly_forget_stale_and_health_apart(
    pair: tuple[AgentRuntime, AgentRuntime], clock: FakeClock
) -> None:
    first, second = pair
    second.remember("fresh", 1)  # second now has three keys, first two
    clock.advance(1)
    assert first.memory_health().keys == 2
    assert second.memory_health().keys == 3
    assert first.memory_health(stale_after_seconds=5).stale_keys == 2
    with unchanged(second):
        tombstones = first.forget_stale(5)
    assert sorted(t.key for t in tombstones) == sorted(["secret", f"own-{first.agent_id}"])
    assert own_view(first) == {}
    assert own_view(second) == {
        "secret": f"{second.agent_id}-secret",
        f"own-{second.agent_id}": second.agent_id,
        "fresh": 1,
    }
    assert first.memory_health().forgotten_keys == 2
    assert second.memory_health().forgotten_keys == 0


def test_agents_on_separate_connections_to_one_file_are_isolated(
    tmp_path: Path, clock: FakeClock
) -> None:
    path = tmp_path / "two.db"
    with SqliteStore(path) as s1, SqliteStore(path) as s2:
        upper = AgentRuntime("Bot", store=s1, clock=clock)
        lower = AgentRuntime("bot", store=s2, clock=clock)
        upper.remember("k", "upper")
        lower.remember("k", "lower")
        assert upper.recall("k").value == "upper"
        assert lower.recall("k").value == "lower"
        assert [i.value for i in upper.search()] == ["upper"]


@pytest.mark.parametrize(
    "agent_id",
    [
        pytest.param("", id="empty"),
        pytest.param(None, id="none"),
        pytest.param(7, id="int"),
        pytest.param(b"bot", id="bytes"),
        pytest.param("b" * (MAX_AGENT_ID_LENGTH + 1), id="too-long"),
        pytest.param("bo\x00t", id="nul"),
        pytest.param("\udfff", id="lone-surrogate"),
    ],
)
def test_invalid_agent_id_raises(db: str, agent_id: Any) -> None:
    with pytest.raises(InvalidAgentId) as info:
        AgentRuntime(agent_id, store=db)
    assert isinstance(info.value, InvalidInput)
    assert "agent id" in str(info.value)


def test_agent_id_at_max_length_works(mem: AgentRuntime) -> None:
    rt = AgentRuntime("a" * MAX_AGENT_ID_LENGTH, store=mem.store)
    rt.remember("k", 1)
    assert rt.recall("k").value == 1
    assert not mem.recall("k").found


# -- search -------------------------------------------------------------------------------------

MAX = "\U0010ffff"
PREFIX_CASES = [
    pytest.param(
        ["user", "user_name", "username", "User", "USER_X", "us", "u", "usera"], "user", id="ascii"
    ),
    pytest.param(["user", "User", "USER", "UserX"], "User", id="case"),
    pytest.param(["a%b", "a_c", "abc", "axc", "a"], "a%", id="like-percent"),
    pytest.param(["a%b", "a_c", "abc", "axc", "a"], "a_", id="like-underscore"),
    pytest.param(["a[b", "a]b", "a*b", "a?b"], "a[", id="glob-chars"),
    pytest.param(["é", "ée", "éz", "e", "f", "ê", "É"], "é", id="non-ascii"),
    pytest.param(["日本", "日本語", "日", "本"], "日本", id="cjk"),
    pytest.param(
        [f"a{MAX}", f"a{MAX}z", f"a{MAX}{MAX}", "a\U0010fffe", "a", "b", "b0"],
        f"a{MAX}",
        id="last-char-max-code-point",
    ),
    pytest.param([MAX, f"{MAX}x", "\U0010fffe", "z"], MAX, id="only-max-code-point"),
    pytest.param([f"{MAX}{MAX}", f"{MAX}{MAX}a", MAX, "\U0010fffe"], MAX * 2, id="two-max"),
    pytest.param(["\ud7ff", "\ud7ffa", "\ue000", "\ud7fe"], "\ud7ff", id="before-surrogates"),
    pytest.param(["\uffff", "\uffffa", "\U00010000", "\ufffe"], "\uffff", id="bmp-end"),
    pytest.param(["\U0001f600", "\U0001f600!", "\U0001f601", "\uffff"], "\U0001f600", id="emoji"),
    pytest.param(["a", "b", "c"], "", id="empty-prefix"),
    pytest.param(["ab", "abc"], "abcd", id="prefix-longer-than-keys"),
]


@pytest.mark.parametrize(("keys", "prefix"), PREFIX_CASES)
def test_search_prefix_is_exact_and_case_sensitive(
    mem: AgentRuntime, keys: list[str], prefix: str
) -> None:
    for i, key in enumerate(random.Random(7).sample(keys, len(keys))):
        mem.remember(key, i)
    expected = sorted(k for k in keys if k.startswith(prefix))
    assert search_keys(mem, prefix) == expected
    assert mem.keys(prefix) == expected


def test_search_is_ordered_by_code_point(mem: AgentRuntime) -> None:
    keys = ["b", "a", "B", "aa", "a b", "é", "z", "\uffff", "\U0001f600", "10", "9", "_", "~"]
    for key in keys:
        mem.remember(key, key)
    items = mem.search(limit=None)
    assert [i.key for i in items] == sorted(keys)
    assert all(i.value == i.key for i in items)


@pytest.mark.parametrize("prefix", ["\ud800", "a\udfff"])
def test_search_with_a_lone_surrogate_prefix_raises_invalid_input(
    mem: AgentRuntime, prefix: str
) -> None:
    mem.remember("a", 1)
    with pytest.raises(InvalidInput):
        mem.search(prefix)


@pytest.fixture
def tagged(mem: AgentRuntime) -> AgentRuntime:
    mem.remember("both", 1, tags=["x", "y"])
    mem.remember("x-only", 2, tags=["x"])
    mem.remember("y-only", 3, tags=["y"])
    mem.remember("none", 4)
    mem.remember("was-x", 5, tags=["x"])
    mem.remember("was-x", 6, tags=["z"])  # only the current version's tags count
    return mem


@pytest.mark.parametrize(
    ("tags", "expected"),
    [
        (None, ["both", "none", "was-x", "x-only", "y-only"]),
        ([], ["both", "none", "was-x", "x-only", "y-only"]),
        (["x"], ["both", "x-only"]),
        (["y"], ["both", "y-only"]),
        (["x", "y"], ["both"]),
        (["y", "x"], ["both"]),
        (["x", "x"], ["both", "x-only"]),
        (["z"], ["was-x"]),
        (["x", "z"], []),
        (["X"], []),
        (["missing"], []),
    ],
)
def test_search_requires_every_tag(
    tagged: AgentRuntime, tags: list[str] | None, expected: list[str]
) -> None:
    assert search_keys(tagged, tags=tags) == expected


def test_search_returns_tags_of_the_item(tagged: AgentRuntime) -> None:
    assert {i.key: i.tags for i in tagged.search(tags=["x"])} == {
        "both": ("x", "y"),
        "x-only": ("x",),
    }


@pytest.fixture
def ten(mem: AgentRuntime) -> AgentRuntime:
    for i in range(10):
        mem.remember(f"k{i}", i)
    return mem


@pytest.mark.parametrize(
    ("limit", "offset", "expected"),
    [
        (3, 0, range(0, 3)),
        (3, 3, range(3, 6)),
        (3, 8, range(8, 10)),
        (5, 10, range(0)),
        (0, 0, range(0)),
        (None, 0, range(10)),
        (None, 7, range(7, 10)),
        (100, 0, range(10)),
    ],
)
def test_search_limit_and_offset(
    ten: AgentRuntime, limit: int | None, offset: int, expected: range
) -> None:
    assert search_keys(ten, limit=limit, offset=offset) == [f"k{i}" for i in expected]


def test_search_default_limit_is_50(mem: AgentRuntime) -> None:
    for i in range(60):
        mem.remember(f"k{i:02d}", i)
    assert search_keys(mem) == [f"k{i:02d}" for i in range(50)]
    assert len(mem.keys()) == 60


@pytest.mark.parametrize(
    "kwargs",
    [
        {"prefix": 1},
        {"prefix": None},
        {"limit": -1},
        {"limit": True},
        {"limit": 1.5},
        {"offset": -1},
        {"tags": "x"},
        {"tags": [1]},
        {"tags": [""]},
    ],
)
def test_search_rejects_bad_arguments(ten: AgentRuntime, kwargs: dict[str, Any]) -> None:
    with pytest.raises(InvalidInput):
        ten.search(**kwargs)


def test_search_excludes_expired_and_forgotten(mem: AgentRuntime, clock: FakeClock) -> None:
    mem.remember("live", 1)
    mem.remember("forgotten", 2)
    mem.forget("forgotten")
    mem.remember("expiring", 3, ttl=10)
    mem.remember("reborn", 4)
    mem.forget("reborn")
    mem.remember("reborn", 5)
    assert search_keys(mem) == ["expiring", "live", "reborn"]
    clock.advance(10)
    assert search_keys(mem) == ["live", "reborn"]
    assert [i.value for i in mem.search()] == [1, 5]


# -- versions and history -----------------------------------------------------------------------


@pytest.fixture
def five(agent: AgentRuntime, clock: FakeClock) -> list[VersionRecord]:
    """Five versions of "k", written one second apart (values 0..4)."""
    records = []
    for i in range(5):
        records.append(agent.remember("k", i))
        clock.advance(1)
    return records


def test_versions_are_gapless_from_one(five: list[VersionRecord]) -> None:
    assert [r.version for r in five] == [1, 2, 3, 4, 5]
    assert [r.created_at for r in five] == [T0 + i for i in range(5)]
    seqs = [r.seq for r in five]
    assert seqs == sorted(seqs) and len(set(seqs)) == 5


def test_recall_a_given_version(agent: AgentRuntime, five: list[VersionRecord]) -> None:
    for i, record in enumerate(five):
        result = agent.recall("k", version=record.version)
        assert (result.found, result.value, result.version) == (True, i, i + 1)
        assert result.created_at == T0 + i
        assert result.seq == record.seq
    current = agent.recall("k")
    assert (current.value, current.version) == (4, 5)
    assert not agent.recall("k", version=6).found
    assert not agent.recall("other", version=1).found


@pytest.mark.parametrize("version", [0, -1, True, 1.0, "1"])
def test_recall_rejects_bad_version_numbers(
    agent: AgentRuntime, five: list[VersionRecord], version: Any
) -> None:
    with pytest.raises(InvalidInput):
        agent.recall("k", version=version)


def test_history_is_newest_first_with_tombstones(
    agent: AgentRuntime, five: list[VersionRecord], clock: FakeClock
) -> None:
    forgotten = agent.forget("k")
    clock.advance(1)
    again = agent.remember("k", "again", tags=["t"])
    assert forgotten is not None and forgotten.tombstone and forgotten.version == 6
    assert again.version == 7
    hist = agent.recall_history("k")
    assert all(isinstance(v, MemoryVersion) for v in hist)
    assert [v.version for v in hist] == [7, 6, 5, 4, 3, 2, 1]
    assert [v.value for v in hist] == ["again", None, 4, 3, 2, 1, 0]
    assert [v.tombstone for v in hist] == [False, True] + [False] * 5
    assert [v.created_at for v in hist] == [T0 + 6, T0 + 5, T0 + 4, T0 + 3, T0 + 2, T0 + 1, T0]
    assert hist[0].tags == ("t",)
    seqs = [v.seq for v in reversed(hist)]
    assert all(a < b for a, b in itertools.pairwise(seqs))
    assert all(v.author == "bot" for v in hist)
    assert [v.version for v in agent.recall_history("k", limit=2)] == [7, 6]
    assert agent.recall_history("k", limit=0) == []


def test_history_of_unknown_key_is_empty(agent: AgentRuntime) -> None:
    assert agent.recall_history("nope") == []


@pytest.mark.parametrize("limit", [-1, True, 2.0, "3"])
def test_history_rejects_bad_limit(agent: AgentRuntime, limit: Any) -> None:
    with pytest.raises(InvalidInput):
        agent.recall_history("k", limit=limit)


def test_versions_are_per_key(mem: AgentRuntime) -> None:
    assert [mem.remember(k, 0).version for k in ("a", "b", "a", "c", "a", "b")] == [
        1,
        1,
        2,
        1,
        3,
        2,
    ]


def test_created_at_is_unix_seconds_from_the_clock(mem: AgentRuntime, clock: FakeClock) -> None:
    clock.now = T0 + 12.345678
    record = mem.remember("k", 1)
    assert record.created_at == T0 + 12.345678
    assert mem.recall("k").created_at == T0 + 12.345678
    assert mem.search()[0].created_at == T0 + 12.345678
    assert events(mem)[-1].time == T0 + 12.345678


def test_versions_survive_reopening_the_file(tmp_path: Path, clock: FakeClock) -> None:
    path = tmp_path / "reopen.db"
    with SqliteStore(path) as store:
        rt = AgentRuntime("bot", store=store, clock=clock)
        for i in range(3):
            rt.remember("k", {"i": i})
        rt.forget("k")
    with SqliteStore(path) as store:
        rt = AgentRuntime("bot", store=store, clock=clock)
        assert [v.version for v in rt.recall_history("k")] == [4, 3, 2, 1]
        assert rt.remember("k", "next").version == 5
        assert rt.recall("k", version=2).value == {"i": 1}


# -- TTL ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("ttl", [10, 10.0, timedelta(seconds=10)])
def test_ttl_value_is_returned_before_expiry_only(
    mem: AgentRuntime, clock: FakeClock, ttl: float | timedelta
) -> None:
    mem.remember("k", "v", ttl=ttl)
    clock.advance(9.999)
    result = mem.recall("k")
    assert (result.found, result.value, result.expires_at) == (True, "v", T0 + 10)
    assert mem.recall("k", version=1).value == "v"
    assert search_keys(mem) == ["k"]
    assert mem.recall_history("k")[0].value == "v"
    clock.advance(0.001)
    assert not mem.recall("k").found
    assert mem.recall("k").value is None
    assert not mem.recall("k", version=1).found
    assert search_keys(mem) == []
    [entry] = mem.recall_history("k")
    assert (entry.version, entry.value, entry.expires_at, entry.tombstone) == (
        1,
        None,
        T0 + 10,
        False,
    )


def test_ttl_as_timedelta_uses_its_total_seconds(mem: AgentRuntime) -> None:
    mem.remember("k", 1, ttl=timedelta(days=1, minutes=1, microseconds=500))
    assert mem.recall("k").expires_at == round(T0 + DAY + 60 + 0.0005, 6)


def test_new_version_after_expiry_is_live_again(mem: AgentRuntime, clock: FakeClock) -> None:
    mem.remember("k", "old", ttl=1)
    clock.advance(5)
    assert mem.forget("k") is None  # nothing live to forget
    record = mem.remember("k", "new")
    assert record.version == 2
    assert mem.recall("k").value == "new"
    assert mem.recall("k").expires_at is None
    assert not mem.recall("k", version=1).found


def test_ttl_only_applies_to_its_version(mem: AgentRuntime, clock: FakeClock) -> None:
    mem.remember("k", "permanent")
    mem.remember("k", "temporary", ttl=5)
    clock.advance(6)
    assert not mem.recall("k").found  # the current version expired; no fallback to v1
    assert mem.recall("k", version=1).value == "permanent"


def test_forget_expired_tombstones_only_expired_values(mem: AgentRuntime, clock: FakeClock) -> None:
    mem.remember("cache/a", 1, ttl=5)
    mem.remember("cache/b", 2, ttl=50)
    mem.remember("cache/c", 3)
    mem.remember("other/d", 4, ttl=5)
    mem.remember("cache/gone", 5, ttl=5)
    mem.forget("cache/gone")
    clock.advance(5)  # a value expires at its expiry time
    head = head_seq(mem)
    swept = mem.forget_expired("cache/")
    assert [(t.key, t.version, t.tombstone) for t in swept] == [("cache/a", 2, True)]
    assert head_seq(mem) == head + 1
    event = events(mem)[-1]
    assert (event.kind, event.payload["reason"]) == ("forget", "expired")
    assert [h.tombstone for h in mem.recall_history("cache/a")] == [True, False]
    assert mem.recall("cache/b").value == 2 and mem.recall("cache/c").value == 3
    with unchanged(mem):
        assert mem.forget_expired("cache/") == []  # nothing new has expired
    assert [t.key for t in mem.forget_expired()] == ["other/d"]
    assert mem.audit.verify().ok


@pytest.mark.parametrize(
    "ttl",
    [
        0,
        0.0,
        -1,
        -0.5,
        float("nan"),
        float("inf"),
        float("-inf"),
        timedelta(0),
        timedelta(seconds=-1),
        "10",
        True,
        [10],
    ],
)
def test_bad_ttl_raises_invalid_input(mem: AgentRuntime, ttl: Any) -> None:
    mem.remember("k", "before")
    with unchanged(mem), pytest.raises(InvalidInput, match="ttl"):
        mem.remember("k", "after", ttl=ttl)


# -- forget and forget_stale --------------------------------------------------------------------


def test_forget_keeps_history_and_next_remember_continues(
    agent: AgentRuntime, clock: FakeClock
) -> None:
    agent.remember("k", "v1")
    agent.remember("k", {"v": 2})
    clock.advance(3)
    with one_event(agent, "forget"):
        tomb = agent.forget("k")
    assert tomb == VersionRecord("k", 3, T0 + 3, head_seq(agent), True)
    assert not agent.recall("k").found
    assert agent.recall("k", version=1).value == "v1"
    assert agent.recall("k", version=2).value == {"v": 2}
    assert not agent.recall("k", version=3).found
    assert [v.tombstone for v in agent.recall_history("k")] == [True, False, False]
    assert search_keys(agent) == []
    with unchanged(agent):
        assert agent.forget("k") is None  # already forgotten
    assert agent.remember("k", "v4").version == 4
    assert agent.recall("k").value == "v4"


@pytest.fixture
def aged(mem: AgentRuntime, clock: FakeClock) -> AgentRuntime:
    """ "old" written at T0, "mid" at T0+100, "new" at T0+140; the clock at T0+150."""
    mem.remember("old", 1)
    clock.advance(100)
    mem.remember("mid", 2)
    clock.advance(40)
    mem.remember("new", 3)
    clock.advance(10)
    return mem


@pytest.mark.parametrize(
    ("max_age", "stale"),
    [
        (120, ["old"]),
        (timedelta(seconds=120), ["old"]),
        (49.999, ["mid", "old"]),
        (50, ["old"]),  # exactly max_age old is not older than it
        (1, ["mid", "new", "old"]),
        (151, []),
        (30 * DAY, []),
    ],
)
def test_forget_stale_tombstones_only_keys_older_than_the_threshold(
    aged: AgentRuntime, max_age: float | timedelta, stale: list[str]
) -> None:
    before = head_seq(aged)
    records = aged.forget_stale(max_age)
    assert sorted(r.key for r in records) == stale
    assert all(r.tombstone and r.version == 2 and r.created_at == T0 + 150 for r in records)
    assert search_keys(aged) == sorted({"old", "mid", "new"} - set(stale))
    for key in stale:
        assert [v.tombstone for v in aged.recall_history(key)] == [True, False]
    new_events = list(aged.store.events(aged.agent_id, after_seq=before))
    if stale:
        [event] = new_events
        assert event.kind == "forget"
        assert event.payload["reason"] == "stale"
        assert event.payload["max_age_seconds"] == float(
            max_age.total_seconds() if isinstance(max_age, timedelta) else max_age
        )
        assert sorted(w["key"] for w in event.payload["writes"]) == stale
        assert {r.seq for r in records} == {event.seq}
    else:
        assert new_events == []


def test_forget_stale_default_is_thirty_days(mem: AgentRuntime, clock: FakeClock) -> None:
    mem.remember("ancient", 1)
    clock.advance(29 * DAY)
    mem.remember("recent", 2)
    clock.advance(2 * DAY)
    assert [r.key for r in mem.forget_stale()] == ["ancient"]
    assert search_keys(mem) == ["recent"]


def test_forget_stale_ignores_already_dead_keys(mem: AgentRuntime, clock: FakeClock) -> None:
    mem.remember("forgotten", 1)
    mem.forget("forgotten")
    mem.remember("expired", 1, ttl=5)
    clock.advance(100)
    with unchanged(mem):
        assert mem.forget_stale(10) == []


@pytest.mark.parametrize("max_age", [0, -5, float("nan"), float("inf"), "60", None])
def test_forget_stale_rejects_bad_thresholds(aged: AgentRuntime, max_age: Any) -> None:
    with unchanged(aged), pytest.raises(InvalidInput):
        aged.forget_stale(max_age)


# -- snapshot and restore -----------------------------------------------------------------------


@pytest.fixture
def snapped(agent: AgentRuntime, clock: FakeClock) -> AgentRuntime:
    """Snapshot "s1" of a, blob, temp, same; then every kind of change after it."""
    agent.remember("a", 1)
    agent.remember("blob", b"\x00bytes\xff", tags=["bin", "x"])
    agent.remember("temp", {"t": 1}, tags=["ttl"], ttl=1000)
    agent.remember("same", "unchanged")
    clock.advance(1)
    agent.snapshot("s1")
    clock.advance(1)
    agent.remember("a", 2)
    agent.forget("blob")
    agent.remember("temp", {"t": 2})  # no TTL any more
    agent.remember("later", "created after the snapshot")
    agent.remember("gone-later", 1)
    agent.forget("gone-later")
    clock.advance(1)
    return agent


SNAPSHOT_STATE = {
    "a": 1,
    "blob": b"\x00bytes\xff",
    "same": "unchanged",
    "temp": {"t": 1},
}


def test_restore_brings_back_the_snapshot_state(snapped: AgentRuntime) -> None:
    with one_event(snapped, "restore"):
        result = snapped.restore("s1")
    assert result.snapshot == "s1"
    assert result.restored == ("a", "blob", "temp")
    assert result.removed == ("later",)
    assert result.seq == head_seq(snapped)
    assert own_view(snapped) == SNAPSHOT_STATE
    blob = snapped.recall("blob")
    assert blob.tags == ("bin", "x")
    assert type(blob.value) is bytes
    temp = snapped.recall("temp")
    assert (temp.tags, temp.expires_at) == (("ttl",), T0 + 1000)
    assert not snapped.recall("later").found


def test_restore_writes_new_versions_and_keeps_history(snapped: AgentRuntime) -> None:
    snapped.restore("s1")
    assert [(v.version, v.value) for v in snapped.recall_history("a")] == [(3, 1), (2, 2), (1, 1)]
    assert [(v.version, v.tombstone) for v in snapped.recall_history("blob")] == [
        (3, False),
        (2, True),
        (1, False),
    ]
    assert [(v.version, v.tombstone) for v in snapped.recall_history("later")] == [
        (2, True),
        (1, False),
    ]
    assert snapped.recall("later", version=1).value == "created after the snapshot"
    assert [v.version for v in snapped.recall_history("same")] == [1]  # untouched
    assert [v.version for v in snapped.recall_history("gone-later")] == [2, 1]


def test_restore_twice_is_idempotent_but_audited(snapped: AgentRuntime) -> None:
    snapped.restore("s1")
    memories = snapped.export_memories()["memories"]
    with one_event(snapped, "restore"):
        again = snapped.restore("s1")
    assert (again.restored, again.removed) == ((), ())
    assert snapped.export_memories()["memories"] == memories
    assert events(snapped)[-1].payload.get("writes", []) == []


def test_restore_event_records_snapshot_and_writes(snapped: AgentRuntime) -> None:
    snap = snapped.store.snapshot("bot", "s1")
    assert snap is not None
    result = snapped.restore("s1")
    event = events(snapped)[-1]
    assert event.seq == result.seq
    assert event.payload["snapshot"] == "s1"
    assert event.payload["snapshot_seq"] == snap.seq == result.snapshot_seq
    writes = {w["key"]: w for w in event.payload["writes"]}
    assert set(writes) == {"a", "blob", "temp", "later"}
    assert writes["later"]["encoding"] == "tombstone"
    assert writes["blob"]["sha256"] == stored_sha(b"\x00bytes\xff")
    assert writes["a"]["sha256"] == stored_sha("1")
    assert writes["temp"]["expires_at"] == T0 + 1000


def test_restore_to_a_snapshot_before_any_memory_tombstones_everything(
    mem: AgentRuntime,
) -> None:
    mem.snapshot("empty")
    mem.remember("a", 1)
    mem.remember("b", 2)
    result = mem.restore("empty")
    assert (result.restored, result.removed) == ((), ("a", "b"))
    assert own_view(mem) == {}


@pytest.mark.parametrize("name", ["s2", "S1", "s", "s1 "])
def test_restore_unknown_snapshot_raises(snapped: AgentRuntime, name: str) -> None:
    with unchanged(snapped), pytest.raises(SnapshotNotFound, match=repr(name)) as info:
        snapped.restore(name)
    assert isinstance(info.value, NotFound)
    assert isinstance(info.value, LookupError)
    assert "'s1'" in str(info.value)  # lists the snapshots that do exist


def test_duplicate_snapshot_name_raises_unless_replaced(
    snapped: AgentRuntime, clock: FakeClock
) -> None:
    with unchanged(snapped), pytest.raises(InvalidInput, match="replace=True"):
        snapped.snapshot("s1")
    old = snapped.store.snapshot("bot", "s1")
    assert old is not None
    with one_event(snapped, "snapshot"):
        new = snapped.snapshot("s1", replace=True)
    assert new.seq == head_seq(snapped) > old.seq
    assert new.created_at == clock.now
    assert events(snapped)[-1].payload == {"name": "s1", "replaces_seq": old.seq}
    assert [(s.name, s.seq) for s in snapped.snapshots()] == [("s1", new.seq)]
    result = snapped.restore("s1")  # now a no-op: the snapshot is the current state
    assert (result.restored, result.removed) == ((), ())


def test_snapshot_records_name_seq_time_and_key_count(snapped: AgentRuntime) -> None:
    [s1] = snapped.snapshots()
    assert (s1.name, s1.created_at, s1.keys) == ("s1", T0 + 1, 4)
    with one_event(snapped, "snapshot"):
        s2 = snapped.snapshot("s2")
    assert s2.keys == 4  # a, temp, same, later
    assert s2.seq == head_seq(snapped)
    assert [s.name for s in snapped.snapshots()] == ["s1", "s2"]


def test_snapshot_without_name_gets_a_timestamped_name(mem: AgentRuntime) -> None:
    snap = mem.snapshot()
    assert snap.name == "snapshot-20231114T221320.000000Z"
    assert [s.name for s in mem.snapshots()] == [snap.name]
    assert mem.restore(snap.name).snapshot == snap.name


def test_restore_keeps_ttl_absolute(snapped: AgentRuntime, clock: FakeClock) -> None:
    clock.now = T0 + 999
    snapped.restore("s1")
    assert snapped.recall("temp").value == {"t": 1}
    clock.now = T0 + 1000
    assert not snapped.recall("temp").found


# -- export and import --------------------------------------------------------------------------


@pytest.fixture
def rich(agent: AgentRuntime, clock: FakeClock) -> AgentRuntime:
    """Every kind of version: json, bytes, tags, TTL, tombstones, unicode keys."""
    agent.remember("a", "first", tags=["t1"])
    clock.advance(1.5)
    agent.remember("a", b"\x00\x01binary", tags=["bin", "t2"])
    clock.advance(0.000001)
    agent.forget("a")
    clock.advance(2)
    agent.remember("a", {"nested": [1, 2.5, None, {"é": "😀"}]}, ttl=3600)
    agent.remember("big", 2**70)
    agent.remember("ключ 😀", ["unicode", "key"])
    agent.remember("gone", 0)
    agent.forget("gone")
    agent.remember("float", 0.1 + 0.2)
    clock.advance(1)
    return agent


def bundle_forms(bundle: dict[str, Any]) -> dict[str, Any]:
    return {
        "dict": bundle,
        "json-round-trip": json.loads(json.dumps(bundle)),
        "str": json.dumps(bundle),
        "bytes": json.dumps(bundle).encode("utf-8"),
    }


@pytest.mark.parametrize("form", ["dict", "json-round-trip", "str", "bytes"])
@pytest.mark.parametrize("where", ["same-file", "other-file"])
def test_export_import_round_trip_keeps_full_history(
    rich: AgentRuntime, tmp_path: Path, clock: FakeClock, where: str, form: str
) -> None:
    bundle = rich.export_memories()
    json.dumps(bundle, allow_nan=False)  # JSON-safe
    if where == "same-file":
        target = AgentRuntime("copy", store=rich.store, clock=clock)
    else:
        target = AgentRuntime("copy", store=tmp_path / "other.db", clock=clock)
    result = target.import_memories(bundle_forms(bundle)[form])
    assert (result.keys, result.versions, result.skipped_keys) == (5, 9, ())
    assert result.seq == head_seq(target) == 1
    assert all_histories(target) == all_histories(rich)
    assert own_view(target) == own_view(rich)
    assert target.export_memories()["memories"] == bundle["memories"]
    if where == "other-file":
        target.store.close()


def test_export_bundle_format(rich: AgentRuntime, clock: FakeClock) -> None:
    bundle = rich.export_memories()
    assert bundle["format"] == "octopoda.memories"
    assert bundle["format_version"] == 1
    assert bundle["agent"] == "bot"
    assert bundle["octopoda_version"] == octopoda.__version__
    assert bundle["exported_at"] == round(clock.now, 6)
    memories = {m["key"]: m["versions"] for m in bundle["memories"]}
    assert [m["key"] for m in bundle["memories"]] == sorted(memories)
    a = memories["a"]
    assert [v["version"] for v in a] == [1, 2, 3, 4]  # oldest first
    assert [v["encoding"] for v in a] == ["json", "bytes", "tombstone", "json"]
    assert a[0] == {
        "version": 1,
        "created_at": T0,
        "encoding": "json",
        "value": "first",
        "tags": ["t1"],
        "expires_at": None,
    }
    assert base64.b64decode(a[1]["value"]) == b"\x00\x01binary"
    assert "value" not in a[2]
    assert a[3]["expires_at"] == a[3]["created_at"] + 3600
    assert memories["big"][0]["value"] == 2**70


def test_export_of_an_agent_without_memory(mem: AgentRuntime) -> None:
    bundle = mem.export_memories()
    assert bundle["memories"] == []
    assert mem.store.agent("bot") is None  # reading wrote nothing


def test_export_pages_through_many_versions(mem: AgentRuntime) -> None:
    count = 5003  # more than one chunk of the store's paging
    versions = [
        {"version": i, "created_at": T0 + i, "encoding": "json", "value": i} for i in range(count)
    ]
    bundle = {
        "format": "octopoda.memories",
        "format_version": 1,
        "memories": [
            {"key": "a", "versions": versions[:3]},
            {"key": "m", "versions": versions},
            {"key": "z", "versions": versions[:2]},
        ],
    }
    mem.import_memories(bundle)
    exported = mem.export_memories()["memories"]
    assert [(m["key"], len(m["versions"])) for m in exported] == [("a", 3), ("m", count), ("z", 2)]
    assert [v["value"] for v in exported[1]["versions"]] == list(range(count))


def test_import_into_the_same_agent_appends_versions(rich: AgentRuntime) -> None:
    before = all_histories(rich)
    bundle = rich.export_memories()
    result = rich.import_memories(bundle)
    assert result.skipped_keys == ()
    after = all_histories(rich)
    for key, old in before.items():
        n = len(old)
        assert [v[0] for v in after[key]] == list(range(2 * n, 0, -1))
        assert [v[1:] for v in after[key][:n]] == [v[1:] for v in old]


@pytest.fixture
def target(rich: AgentRuntime, clock: FakeClock) -> AgentRuntime:
    """Another agent on the same file that already has "a" and a key of its own."""
    rt = AgentRuntime("target", store=rich.store, clock=clock)
    rt.remember("a", "mine")
    rt.remember("own", "own")
    return rt


def test_import_on_existing_append(rich: AgentRuntime, target: AgentRuntime) -> None:
    result = target.import_memories(rich.export_memories(), on_existing="append")
    assert (result.keys, result.versions, result.skipped_keys) == (5, 9, ())
    hist = target.recall_history("a")
    assert [v.version for v in hist] == [5, 4, 3, 2, 1]
    assert hist[-1].value == "mine"
    assert [v[1:] for v in history(target, "a")[:4]] == [v[1:] for v in history(rich, "a")]
    assert target.recall("own").value == "own"


def test_import_on_existing_skip(rich: AgentRuntime, target: AgentRuntime) -> None:
    result = target.import_memories(rich.export_memories(), on_existing="skip")
    assert (result.keys, result.versions, result.skipped_keys) == (4, 5, ("a",))
    assert [v.value for v in target.recall_history("a")] == ["mine"]
    assert target.recall("big").value == 2**70


def test_import_on_existing_skip_counts_forgotten_keys_as_existing(
    rich: AgentRuntime, target: AgentRuntime
) -> None:
    target.remember("gone", "x")
    target.forget("gone")
    result = target.import_memories(rich.export_memories(), on_existing="skip")
    assert set(result.skipped_keys) == {"a", "gone"}


def test_import_on_existing_error_writes_nothing(rich: AgentRuntime, target: AgentRuntime) -> None:
    with unchanged(target), pytest.raises(InvalidInput, match="'a'"):
        target.import_memories(rich.export_memories(), on_existing="error")


def test_import_on_existing_error_succeeds_without_conflicts(
    rich: AgentRuntime, clock: FakeClock
) -> None:
    fresh = AgentRuntime("fresh", store=rich.store, clock=clock)
    assert fresh.import_memories(rich.export_memories(), on_existing="error").versions == 9


def test_import_that_writes_nothing_records_no_event(
    rich: AgentRuntime, target: AgentRuntime
) -> None:
    bundle = rich.export_memories()
    bundle["memories"] = [m for m in bundle["memories"] if m["key"] == "a"]
    with unchanged(target):
        result = target.import_memories(bundle, on_existing="skip")
    assert (result.keys, result.versions, result.skipped_keys, result.seq) == (0, 0, ("a",), None)


@pytest.mark.parametrize("on_existing", ["overwrite", "APPEND", None, True])
def test_import_rejects_unknown_on_existing(
    rich: AgentRuntime, target: AgentRuntime, on_existing: Any
) -> None:
    with unchanged(target), pytest.raises(InvalidInput, match="on_existing"):
        target.import_memories(rich.export_memories(), on_existing=on_existing)


def _bytes_version(bundle: dict[str, Any]) -> dict[str, Any]:
    return next(v for m in bundle["memories"] for v in m["versions"] if v["encoding"] == "bytes")


def _last_version(bundle: dict[str, Any]) -> dict[str, Any]:
    # the last key, so that a store writing before validating would already have written others
    return bundle["memories"][-1]["versions"][-1]


def _set(getter: Callable[[dict[str, Any]], dict[str, Any]], field: str, value: Any) -> Any:
    def mutate(bundle: dict[str, Any]) -> None:
        getter(bundle)[field] = value

    return mutate


def _delete(getter: Callable[[dict[str, Any]], dict[str, Any]], field: str) -> Any:
    def mutate(bundle: dict[str, Any]) -> None:
        del getter(bundle)[field]

    return mutate


def _top(bundle: dict[str, Any]) -> dict[str, Any]:
    return bundle


def _last_entry(bundle: dict[str, Any]) -> dict[str, Any]:
    return bundle["memories"][-1]


def _duplicate_key(bundle: dict[str, Any]) -> None:
    bundle["memories"].append(copy.deepcopy(bundle["memories"][0]))


MALFORMED = [
    pytest.param(_set(_top, "format", "octopoda.other"), "format", id="wrong-format"),
    pytest.param(_delete(_top, "format"), "format", id="no-format"),
    pytest.param(_set(_top, "format_version", 2), "format_version", id="format-version-2"),
    pytest.param(_set(_top, "format_version", "1"), "format_version", id="format-version-str"),
    pytest.param(_set(_top, "format_version", True), "format_version", id="format-version-bool"),
    pytest.param(_delete(_top, "format_version"), "format_version", id="no-format-version"),
    pytest.param(_set(_top, "memories", {"a": []}), "memories", id="memories-not-list"),
    pytest.param(_set(_bytes_version, "value", "@@not base64@@"), "base64", id="bad-base64"),
    pytest.param(_set(_bytes_version, "value", "AAA"), "base64", id="base64-bad-padding"),
    pytest.param(_delete(_last_version, "value"), "no value", id="missing-value"),
    pytest.param(_duplicate_key, "twice", id="duplicate-key"),
    pytest.param(_set(_last_version, "created_at", "yesterday"), "created_at", id="created-str"),
    pytest.param(_set(_last_version, "created_at", None), "created_at", id="created-null"),
    pytest.param(_set(_last_version, "created_at", True), "created_at", id="created-bool"),
    pytest.param(_set(_last_version, "created_at", float("nan")), "created_at", id="created-nan"),
    pytest.param(_delete(_last_version, "created_at"), "created_at", id="created-missing"),
    pytest.param(_set(_last_version, "expires_at", "soon"), "expires_at", id="bad-expires-at"),
    pytest.param(_set(_last_version, "encoding", "pickle"), "encoding", id="unknown-encoding"),
    pytest.param(_set(_last_version, "value", float("nan")), "nan", id="nan-value"),
    pytest.param(_set(_last_version, "tags", "tag"), "tags", id="tags-a-string"),
    pytest.param(_set(_last_version, "tags", [1]), "tag", id="tag-not-str"),
    pytest.param(_set(_last_entry, "key", ""), "key", id="empty-key"),
    pytest.param(_set(_last_entry, "key", "a\x00"), "key", id="nul-key"),
    pytest.param(_delete(_last_entry, "key"), "key", id="no-key"),
    pytest.param(_set(_last_entry, "versions", None), "versions", id="versions-not-list"),
    pytest.param(_set(_last_entry, "versions", ["v"]), "object", id="version-not-object"),
]


@pytest.mark.parametrize(("mutate", "message"), MALFORMED)
def test_malformed_bundle_raises_invalid_bundle_and_writes_nothing(
    rich: AgentRuntime, target: AgentRuntime, mutate: Callable[[dict[str, Any]], None], message: str
) -> None:
    bundle = copy.deepcopy(rich.export_memories())
    mutate(bundle)
    with unchanged(target), pytest.raises(InvalidBundle) as info:
        target.import_memories(bundle)
    assert message.lower() in str(info.value).lower()


@pytest.mark.parametrize(
    "bundle",
    [
        pytest.param("not json", id="not-json"),
        pytest.param(b"\xff\xfe", id="not-utf8"),
        pytest.param("[]", id="json-list"),
        pytest.param([], id="list"),
        pytest.param(None, id="none"),
        pytest.param(42, id="int"),
    ],
)
def test_non_bundle_raises_invalid_bundle(target: AgentRuntime, bundle: Any) -> None:
    with unchanged(target), pytest.raises(InvalidBundle):
        target.import_memories(bundle)


# -- memory_health ------------------------------------------------------------------------------


@pytest.fixture
def health_agent(mem: AgentRuntime, clock: FakeClock) -> AgentRuntime:
    """At T0: a (3 versions), old (1), blob (bytes); forgotten c (2); expired d (1).
    At T0 + 100: fresh (2). The clock ends at T0 + 200."""
    for value in ("a1", "a2", {"a": 3}):
        mem.remember("a", value)
    mem.remember("old", "é")
    mem.remember("blob", b"\x00" * 10)
    mem.remember("c", 1)
    mem.forget("c")
    mem.remember("d", [1, 2], ttl=50)
    clock.advance(100)
    mem.remember("fresh", 1)
    mem.remember("fresh", 22)
    clock.advance(100)
    return mem


def test_memory_health_counts(health_agent: AgentRuntime) -> None:
    health = health_agent.memory_health(stale_after_seconds=150)
    assert health.keys == 4  # a, old, blob, fresh
    assert health.forgotten_keys == 1
    assert health.expired_keys == 1
    assert health.versions == 3 + 1 + 1 + 2 + 1 + 2
    assert health.stale_keys == 3  # a, old, blob: written 200 s ago
    assert health.stale_share == 3 / 4
    assert health.stale_after_seconds == 150.0
    stored = ['"a1"', '"a2"', '{"a":3}', '"é"', "1", "[1,2]", "1", "22"]
    assert health.size_bytes == sum(len(s.encode()) for s in stored) + 10
    assert health.versions_per_key_mean == 10 / 6
    assert health.versions_per_key_max == 3
    assert health.busiest_keys[:3] == (("a", 3), ("c", 2), ("fresh", 2))


@pytest.mark.parametrize(
    ("stale_after", "stale"),
    [(1, 4), (99.999, 4), (100, 3), (199.999, 3), (200, 0), (timedelta(days=30), 0)],
)
def test_memory_health_stale_uses_seconds(
    health_agent: AgentRuntime, stale_after: float | timedelta, stale: int
) -> None:
    health = health_agent.memory_health(stale_after_seconds=stale_after)
    assert health.stale_keys == stale
    assert health.stale_share == stale / 4


def test_memory_health_of_an_empty_agent(mem: AgentRuntime) -> None:
    health = mem.memory_health()
    assert (health.keys, health.forgotten_keys, health.expired_keys, health.versions) == (0,) * 4
    assert (health.stale_keys, health.stale_share, health.size_bytes) == (0, 0.0, 0)
    assert (health.versions_per_key_mean, health.versions_per_key_max) == (0.0, 0)
    assert health.stale_after_seconds == 30 * DAY


@pytest.mark.parametrize("stale_after", [0, -1, float("nan"), "1", None])
def test_memory_health_rejects_bad_threshold(mem: AgentRuntime, stale_after: Any) -> None:
    with pytest.raises(InvalidInput):
        mem.memory_health(stale_after_seconds=stale_after)


# -- events -------------------------------------------------------------------------------------


@pytest.fixture
def busy(agent: AgentRuntime, clock: FakeClock) -> AgentRuntime:
    agent.remember("a", 1)
    agent.remember("b", "x", tags=["t"])
    agent.snapshot("base")
    agent.remember("c", 3)
    clock.advance(100)
    return agent


def _import_copy(rt: AgentRuntime) -> Any:
    other = AgentRuntime("other", store=rt.store)
    other.remember("imported", [1])
    return rt.import_memories(other.export_memories())


WRITES = [
    pytest.param(lambda rt: rt.remember("a", 2), "remember", id="remember-existing"),
    pytest.param(lambda rt: rt.remember("new", b"\x01", ttl=5), "remember", id="remember-new"),
    pytest.param(lambda rt: rt.forget("a"), "forget", id="forget"),
    pytest.param(lambda rt: rt.forget_stale(50), "forget", id="forget_stale"),
    pytest.param(lambda rt: rt.snapshot("next"), "snapshot", id="snapshot"),
    pytest.param(lambda rt: rt.snapshot("base", replace=True), "snapshot", id="snapshot-replace"),
    pytest.param(lambda rt: rt.restore("base"), "restore", id="restore"),
    pytest.param(_import_copy, "import", id="import"),
]


@pytest.mark.parametrize(("operation", "kind"), WRITES)
def test_each_write_appends_exactly_one_chained_event(
    busy: AgentRuntime, clock: FakeClock, operation: Callable[[AgentRuntime], Any], kind: str
) -> None:
    with one_event(busy, kind):
        operation(busy)
    chain = events(busy)
    assert [e.seq for e in chain] == list(range(1, len(chain) + 1))
    assert chain[0].prev_hash == "0" * 64
    assert all(e.prev_hash == p.hash for p, e in itertools.pairwise(chain))
    assert busy.store.agent("bot").head_hash == chain[-1].hash
    assert chain[-1].time == clock.now
    assert chain[-1].agent == "bot"


READS = [
    pytest.param(lambda rt: rt.recall("a"), id="recall"),
    pytest.param(lambda rt: rt.recall("missing"), id="recall-missing"),
    pytest.param(lambda rt: rt.recall("a", version=1), id="recall-version"),
    pytest.param(lambda rt: rt.recall_history("a"), id="recall_history"),
    pytest.param(lambda rt: rt.search(""), id="search"),
    pytest.param(lambda rt: rt.search("a", tags=["t"]), id="search-tags"),
    pytest.param(lambda rt: rt.keys(), id="keys"),
    pytest.param(lambda rt: rt.export_memories(), id="export"),
    pytest.param(lambda rt: rt.memory_health(), id="memory_health"),
    pytest.param(lambda rt: rt.snapshots(), id="snapshots"),
    pytest.param(lambda rt: rt.forget("missing"), id="forget-missing"),
    pytest.param(lambda rt: rt.forget_stale(10 * DAY), id="forget_stale-nothing-stale"),
]


@pytest.mark.parametrize("operation", READS)
def test_reads_append_no_event(
    busy: AgentRuntime, operation: Callable[[AgentRuntime], Any]
) -> None:
    with unchanged(busy):
        operation(busy)


@pytest.mark.parametrize("operation", READS)
def test_reads_on_a_new_agent_create_nothing(
    busy: AgentRuntime, operation: Callable[[AgentRuntime], Any]
) -> None:
    newcomer = AgentRuntime("newcomer", store=busy.store)
    operation(newcomer)
    assert newcomer.store.agent("newcomer") is None
    assert [a.id for a in newcomer.store.agents()] == ["bot"]


@pytest.mark.parametrize(
    ("value", "stored"),
    [
        pytest.param("Alice", '"Alice"', id="str"),
        pytest.param({"b": 1, "a": [1, 2.5, None]}, '{"b":1,"a":[1,2.5,null]}', id="dict"),
        pytest.param("é😀\u2028", '"é😀\u2028"', id="non-ascii-literal"),
        pytest.param(2**70, str(2**70), id="big-int"),
        pytest.param((1, "x"), '[1,"x"]', id="tuple"),
        pytest.param(b"\x00\xff", b"\x00\xff", id="bytes"),
        pytest.param(bytearray(b"ab"), b"ab", id="bytearray"),
    ],
)
def test_remember_event_records_the_sha256_of_the_stored_bytes(
    mem: AgentRuntime, value: Any, stored: str | bytes
) -> None:
    record = mem.remember("k", value)
    [event] = events(mem)
    assert isinstance(event, Event)
    assert (event.kind, event.seq) == ("remember", record.seq)
    encoding = "bytes" if isinstance(stored, bytes) else "json"
    assert event.payload["writes"] == [
        {"key": "k", "version": 1, "encoding": encoding, "sha256": stored_sha(stored)}
    ]


def test_remember_event_records_tags_and_expiry(mem: AgentRuntime) -> None:
    mem.remember("k", 1, tags=["b", "a"], ttl=30)
    [write] = events(mem)[0].payload["writes"]
    assert write["tags"] == ["b", "a"]
    assert write["expires_at"] == T0 + 30


def test_forget_event_records_a_tombstone(mem: AgentRuntime) -> None:
    mem.remember("k", 1)
    mem.forget("k")
    assert events(mem)[-1].payload == {
        "writes": [{"key": "k", "version": 2, "encoding": "tombstone", "sha256": None}]
    }


def test_import_event_records_source_and_original_times(
    rich: AgentRuntime, clock: FakeClock
) -> None:
    copy_rt = AgentRuntime("copy", store=rich.store, clock=clock)
    copy_rt.import_memories(rich.export_memories())
    [event] = events(copy_rt)
    assert event.kind == "import"
    assert event.payload["source_agent"] == "bot"
    writes = event.payload["writes"]
    assert len(writes) == 9
    assert writes[0] == {
        "key": "a",
        "version": 1,
        "encoding": "json",
        "sha256": stored_sha('"first"'),
        "tags": ["t1"],
        "created_at": T0,
    }


@pytest.mark.parametrize("form", ["str", "bytes"])
def test_import_event_records_the_source_agent_of_a_serialised_bundle(
    rich: AgentRuntime, clock: FakeClock, form: str
) -> None:
    copy_rt = AgentRuntime("copy", store=rich.store, clock=clock)
    copy_rt.import_memories(bundle_forms(rich.export_memories())[form])
    assert events(copy_rt)[0].payload["source_agent"] == "bot"


def test_a_refusing_processor_rolls_the_write_back(mem: AgentRuntime) -> None:
    mem.remember("k", "kept")

    def refuse(event: Event) -> Event:
        if event.kind == "remember":
            raise PermissionError("no")
        return event

    strict = AgentRuntime("bot", store=mem.store, processors=[refuse])
    with unchanged(mem), pytest.raises(PermissionError):
        strict.remember("k", "refused")
    assert mem.recall("k").value == "kept"
    assert strict.forget("k") is not None  # other kinds pass


def test_processor_sees_the_event_before_it_is_chained(mem: AgentRuntime) -> None:
    seen: list[tuple[int, str, str]] = []

    def spy(event: Event) -> Event:
        seen.append((event.seq, event.kind, event.hash))
        event.payload["note"] = "added by processor"
        return event

    mem.pipeline.processors.append(spy)
    mem.remember("k", 1)
    assert seen == [(1, "remember", "")]
    assert events(mem)[0].payload["note"] == "added by processor"


@pytest.mark.parametrize(
    "tags",
    [pytest.param(["\ud800"], id="lone-surrogate"), pytest.param(["ok", "x\udfff"], id="second")],
)
def test_unstorable_tag_raises_invalid_input_and_changes_nothing(
    mem: AgentRuntime, tags: list[str]
) -> None:
    mem.remember("k", "before")
    with unchanged(mem), pytest.raises(InvalidInput):
        mem.remember("k", "after", tags=tags)


@pytest.mark.parametrize(
    "tags",
    [
        pytest.param("tag", id="a-string"),
        pytest.param([1], id="int"),
        pytest.param([""], id="empty"),
        pytest.param([None], id="none"),
        pytest.param([str(i) for i in range(65)], id="too-many"),
    ],
)
def test_bad_tags_raise_invalid_input(mem: AgentRuntime, tags: Any) -> None:
    with unchanged(mem), pytest.raises(InvalidInput, match="tag"):
        mem.remember("k", 1, tags=tags)


def test_duplicate_tags_are_kept_once_in_order(mem: AgentRuntime) -> None:
    mem.remember("k", 1, tags=["b", "a", "b"])
    assert mem.recall("k").tags == ("b", "a")


# -- statements ---------------------------------------------------------------------------------

REMEMBER_STATEMENTS = [
    "BEGIN IMMEDIATE",
    "SELECT head_seq, head_hash, (SELECT MAX(version)",
    "INSERT INTO memories",
    "INSERT INTO events",
    "UPDATE agents",
    "COMMIT",
]


def _shape(statements: list[str], prefixes: list[str]) -> list[str]:
    """Each statement as the expected prefix it starts with, else in full (for the diff)."""
    return [next((p for p in prefixes if s.startswith(p)), s) for s in statements]


@pytest.fixture
def traced(tmp_path: Path, clock: FakeClock) -> Iterator[tuple[AgentRuntime, list[str]]]:
    statements: list[str] = []
    with SqliteStore(tmp_path / "traced.db", tracer=statements.append) as store:
        rt = AgentRuntime("bot", store=store, clock=clock)
        rt.remember("k", "warm-up")
        statements.clear()
        yield rt, statements


@pytest.mark.parametrize("key", ["k", "new-key"])
def test_remember_issues_exactly_the_pinned_statements(
    traced: tuple[AgentRuntime, list[str]], key: str
) -> None:
    rt, statements = traced
    rt.remember(key, {"v": 1}, tags=["t"], ttl=60)
    assert _shape(statements, REMEMBER_STATEMENTS) == REMEMBER_STATEMENTS


@pytest.mark.parametrize(
    "read",
    [
        pytest.param(lambda rt: rt.recall("k"), id="found"),
        pytest.param(lambda rt: rt.recall("missing"), id="missing"),
        pytest.param(lambda rt: rt.recall("k", version=1), id="version"),
    ],
)
def test_recall_issues_exactly_one_select(
    traced: tuple[AgentRuntime, list[str]], read: Callable[[AgentRuntime], Any]
) -> None:
    rt, statements = traced
    read(rt)
    assert _shape(statements, ["SELECT "]) == ["SELECT "]


# -- import is idempotent ------------------------------------------------------------------


def test_importing_the_same_bundle_twice_writes_it_once(rich: AgentRuntime) -> None:
    copy = AgentRuntime("copy", store=rich.store)
    bundle = rich.export_memories()
    first = copy.import_memories(bundle)
    before = all_histories(copy)
    again = copy.import_memories(json.dumps(bundle, indent=1))  # same content, other text
    assert (again.keys, again.versions, again.seq) == (0, 0, None)
    assert again.already_imported == first.seq
    assert all_histories(copy) == before
    [event] = copy.timeline(kinds=["import"])
    assert len(event.payload["bundle_sha256"]) == 64
    assert copy.audit.verify().ok


def test_a_later_export_of_the_same_agent_is_a_new_bundle(rich: AgentRuntime) -> None:
    copy = AgentRuntime("copy", store=rich.store)
    copy.import_memories(rich.export_memories())
    rich.remember("fresh", 1)
    second = copy.import_memories(rich.export_memories(), on_existing="skip")
    assert second.already_imported is None and second.keys == 1
    assert copy.recall("fresh").value == 1


def test_allow_duplicate_appends_a_second_copy(rich: AgentRuntime) -> None:
    copy = AgentRuntime("copy", store=rich.store)
    bundle = rich.export_memories()
    first = copy.import_memories(bundle)
    second = copy.import_memories(bundle, allow_duplicate=True)
    assert second.already_imported is None and second.versions == first.versions
    assert len(copy.recall_history("a")) == 2 * len(rich.recall_history("a"))
    # the newest import of the bundle is the one reported next time
    assert copy.import_memories(bundle).already_imported == second.seq


def test_a_334_bundle_is_rejected_with_the_migrate_command() -> None:
    agent = AgentRuntime("x", store=":memory:")
    legacy = {"meta": {"agent_id": "x", "version": "1.0"}, "memories": {}, "count": 0}
    with pytest.raises(InvalidBundle, match="octopoda migrate --from FILE"):
        agent.import_memories(legacy)


def test_open_reader_reads_the_file_on_its_own_connection(tmp_path: Path) -> None:
    # what a server's snapshot session reads through: the same file, read-only, its own
    # connection (a snapshot held on it leaves the writer's connection free)
    from octopoda.store import SqliteStore

    path = tmp_path / "reader.db"
    agent = AgentRuntime("owner", store=str(path))
    agent.remember("k", "v1")
    store = agent.store
    assert isinstance(store, SqliteStore)
    reader = store.open_reader()
    assert reader is not None and reader is not store and reader.read_only
    try:
        with reader.read_snapshot():
            before = reader.agent("owner")
            agent.remember("k", "v2")  # the writer goes on while the snapshot is open
            assert reader.agent("owner") == before
        after = reader.agent("owner")
        assert before is not None and after is not None and after.head_seq > before.head_seq
        with pytest.raises(octopoda.StorageError, match="read-only"):
            AgentRuntime("other", store=reader).remember("x", 1)
    finally:
        reader.close()
    assert agent.recall("k").value == "v2"
    assert SqliteStore(":memory:").open_reader() is None
