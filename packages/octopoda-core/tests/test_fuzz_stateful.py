"""A stateful fuzz of the public API against a reference model (issue 15, acceptance).

Hypothesis drives one agent through random sequences of ``remember``, ``recall``,
``forget``, ``recall_history``, ``as_of``, ``snapshot`` and ``restore`` (with valid and
invalid arguments), and checks every answer against a plain-Python model of versioned
memory: each key a list of versions (a value, or a tombstone), each event seq the state it
left. Nothing but an ``OctopodaError`` may be raised, and only where the model says the call
is refused; at the end of each run the agent's chain verifies. SQLite with a few thousand
calls per run; PostgreSQL with a bounded number of examples.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from octopoda import AgentRuntime, InvalidInput, InvalidKey, NotFound, OctopodaError

TOMBSTONE: Any = object()
KEYS = st.sampled_from(["a", "b", "user name", "é/ü", "k" * 1024])
BAD_KEYS = st.sampled_from(["", "k" * 1025, "bad\x00key"])
NAMES = st.sampled_from(["s1", "s2", "s3"])
JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
VALUES = JSON | st.binary(max_size=64)
_agents = itertools.count()


class MemoryMachine(RuleBasedStateMachine):
    """One agent of ``url`` against the model; subclasses set ``url``."""

    url: str = ""

    def __init__(self) -> None:
        super().__init__()
        self.agent = AgentRuntime(f"fuzz-{next(_agents)}", store=self.url)
        self.versions: dict[str, list[Any]] = {}  # key -> values by version (TOMBSTONE)
        self.states: dict[int, dict[str, Any]] = {0: {}}  # seq -> live values then
        self.snapshots: dict[str, dict[str, Any]] = {}

    # -- the model ----------------------------------------------------------------------

    def current(self) -> dict[str, Any]:
        live = {k: v[-1] for k, v in self.versions.items() if v}
        return {k: v for k, v in live.items() if v is not TOMBSTONE}

    def write(self, key: str, value: Any) -> None:
        self.versions.setdefault(key, []).append(value)

    def settle(self) -> None:
        """After a call: the state at the agent's new head seq."""
        self.states[self.agent.audit.head().seq] = self.current()

    # -- rules --------------------------------------------------------------------------

    @initialize()
    def start(self) -> None:
        assert self.agent.recall("a").found is False

    @rule(key=KEYS, value=VALUES)
    def remember(self, key: str, value: Any) -> None:
        record = self.agent.remember(key, value)
        self.write(key, value)
        assert record.version == len(self.versions[key])
        self.settle()

    @rule(key=BAD_KEYS, value=VALUES)
    def remember_a_bad_key(self, key: str, value: Any) -> None:
        with pytest.raises(InvalidKey):
            self.agent.remember(key, value)

    @rule(key=KEYS)
    def recall(self, key: str) -> None:
        got = self.agent.recall(key)
        expected = self.current()
        assert got.found == (key in expected)
        if got.found:
            assert got.value == expected[key]
            assert got.version == len(self.versions[key])

    @rule(key=KEYS)
    def forget(self, key: str) -> None:
        done = self.agent.forget(key)
        if key in self.current():
            self.write(key, TOMBSTONE)
            assert done is not None and done.version == len(self.versions[key])
        else:
            assert done is None
        self.settle()

    @rule(key=KEYS, limit=st.none() | st.integers(0, 5))
    def history(self, key: str, limit: int | None) -> None:
        got = self.agent.recall_history(key, limit=limit)
        values = list(enumerate(self.versions.get(key, []), start=1))[::-1]
        if limit is not None:
            values = values[:limit]
        assert [(v.version, v.tombstone) for v in got] == [
            (n, value is TOMBSTONE) for n, value in values
        ]
        for v, (_, value) in zip(got, values, strict=True):
            assert v.value == (None if value is TOMBSTONE else value)

    @rule(data=st.data())
    def as_of(self, data: st.DataObject) -> None:
        seq = data.draw(st.sampled_from(sorted(self.states)))
        view = self.agent.as_of(seq)
        expected = self.states[seq]
        assert {k: v for k, v in view.to_dict().items()} == expected
        key = data.draw(KEYS)
        assert view.recall(key).found == (key in expected)

    @rule(name=NAMES, replace=st.booleans())
    def snapshot(self, name: str, replace: bool) -> None:
        if name in self.snapshots and not replace:
            with pytest.raises(InvalidInput, match="already has a snapshot"):
                self.agent.snapshot(name)
            return
        self.agent.snapshot(name, replace=replace)
        self.snapshots[name] = self.current()
        self.settle()

    @rule(name=NAMES)
    def restore(self, name: str) -> None:
        if name not in self.snapshots:
            with pytest.raises(NotFound):
                self.agent.restore(name)
            return
        result = self.agent.restore(name)
        then, now = self.snapshots[name], self.current()
        changed = sorted(k for k, v in then.items() if k not in now or now[k] != v)
        removed = sorted(k for k in now if k not in then)
        assert (sorted(result.restored), sorted(result.removed)) == (changed, removed)
        for key in changed:
            self.write(key, then[key])
        for key in removed:
            self.write(key, TOMBSTONE)
        self.settle()

    @rule(point=st.integers(-3, 2**64) | st.text(max_size=3) | st.none())
    def as_of_anything(self, point: Any) -> None:
        head = self.agent.audit.head().seq
        try:
            view = self.agent.as_of(point)
        except OctopodaError as exc:  # not a seq, or not one of this agent's events
            assert not (type(point) is int and 0 <= point <= head), exc
            return
        assert type(point) is int and 0 <= point <= head
        assert view.to_dict() == self.states.get(point, view.to_dict())

    @invariant()
    def head_is_the_newest_state(self) -> None:
        assert self.agent.audit.head().seq == max(self.states)

    def teardown(self) -> None:
        report = self.agent.audit.verify()
        assert report.ok, report


def _run(url: str, examples: int, steps: int) -> None:
    machine = type("Machine", (MemoryMachine,), {"url": url})
    machine.TestCase.settings = settings(
        max_examples=examples,
        stateful_step_count=steps,
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    machine.TestCase().runTest()


def test_the_api_matches_the_model_on_sqlite(tmp_path: Any) -> None:
    from octopoda._store.config import open_store

    url = str(tmp_path / "fuzz.db")
    try:
        _run(url, examples=80, steps=40)  # about 3,000 calls
    finally:
        open_store(url).close()


def test_the_api_matches_the_model_on_postgresql(postgres_clean_url: str) -> None:
    _run(postgres_clean_url, examples=20, steps=25)  # about 500 calls
