"""The runtime's base: one agent on a store, and the commit path every verb goes through.

``RuntimeBase._commit`` turns a verb into an event, commits it with its memory writes in one
transaction (the store runs the events pipeline inside it: loop detectors, the user's
processors, the audit chainer), then applies the loop policy (``_after_commit``) to the run
the event belongs to (``payload["run_id"]``; none: the agent's default run). The verbs
live in the mixins beside this module (memory, history, decisions, actions, runs, collab),
each a subclass of this base; ``AgentRuntime`` (``runtime.py``) puts them together.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Literal, overload

from .._errors import AuditChainBroken, InvalidInput, StorageError, VersionConflict
from .._log import warn as _warn
from .._loops import LoopPolicy, LoopSignal, describe, describe_outage
from .._records import (
    Event,
)
from .._search.embedders import Embedder, embedder_from_env, resolve_embedder
from .._store import (
    MemoryWrite,
    Op,
    SetRunStatus,
    Store,
    StoredRow,
    agent_namespace,
)
from .._store.config import open_store
from .._values import max_value_bytes as value_limit
from .._values import validate_agent_id, validate_limit, validate_seconds
from .pipeline import Pipeline, Processor
from .views import RecentDecisions

if TYPE_CHECKING:
    from datetime import timedelta

    from .._loops.guard import Tripped
    from .._loops.runs import RunState


__all__ = [
    "RuntimeBase",
    "checked_call_id",
    "checked_limit",
    "checked_run_id",
    "is_live",
    "optional_seconds",
    "required_seconds",
]


MAX_ID_CHARS = 512
"""The longest run id or framework call id (a thread id, a session id, a UUID fit easily)."""

REPEAT_WINDOW_EVENTS = 200
"""A decision is compared with the decisions among this agent's last 200 events."""


def optional_seconds(value: float | timedelta | None, what: str) -> float | None:
    """A positive number of seconds (or a timedelta) up to ``MAX_SECONDS``, or None."""
    return None if value is None else validate_seconds(value, what)


def required_seconds(value: float | timedelta, what: str) -> float:
    seconds = optional_seconds(value, what)
    if seconds is None:
        raise InvalidInput(f"{what} is required: a number of seconds or a timedelta")
    return seconds


def checked_limit(limit: int | None, what: str = "limit") -> int | None:
    return validate_limit(limit, what)


def _checked_id(value: Any, what: str, example: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value or len(value) > MAX_ID_CHARS:
        raise InvalidInput(
            f"{what} must be None or a non-empty str of at most {MAX_ID_CHARS} characters"
            f" ({example}), not {value!r:.80}"
        )
    if "\x00" in value:  # (PostgreSQL cannot store it)
        raise InvalidInput(f"{what} {value!r:.80} contains a NUL character; remove it")
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidInput(f"{what} {value!r:.80} is not valid Unicode") from None
    return value


@overload
def checked_run_id(run_id: str) -> str: ...
@overload
def checked_run_id(run_id: str | None) -> str | None: ...
def checked_run_id(run_id: Any) -> str | None:
    """A run id as an action carries it (None: the agent's default run)."""
    return _checked_id(run_id, "run_id", "a thread, session or run id")


def checked_call_id(call_id: Any) -> str | None:
    """A framework's id of one call (a tool call id), or None."""
    return _checked_id(call_id, "call_id", "the framework's tool call id")


def is_live(row: StoredRow, now: float) -> bool:
    return not row.tombstone and not row.erased and (row.expires_at is None or row.expires_at > now)


class RuntimeBase:
    """What every verb of ``AgentRuntime`` needs: the agent, its store, clock, loop guard and
    pipeline, and the commit path."""

    def __init__(
        self,
        agent_id: str,
        *,
        store: Store | str | None = None,
        durability: Literal["normal", "full"] | None = None,
        processors: Iterable[Processor] = (),
        policy: LoopPolicy | None = None,
        clock: Callable[[], float] | None = None,
        embedder: Any = None,
        max_value_bytes: int | None = None,
    ) -> None:
        self._agent_id = validate_agent_id(agent_id)
        self._max_value_bytes = value_limit(max_value_bytes)
        self._store = open_store(store, durability=durability)
        # None: OCTOPODA_EMBEDDER, if set; "" or False: none (lexical search only)
        self._embedder: Embedder | None = (
            embedder_from_env() if embedder is None else resolve_embedder(embedder)
        )
        self._ns = agent_namespace(self._agent_id)
        self._clock = clock or time.time
        # (the detectors and the audit trail's reader load with the first runtime)
        from .._audit.trail import AuditTrail
        from .._loops.guard import LoopGuard

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
    def embedder(self) -> Embedder | None:
        """The embedder of ``recall_similar`` (None: search is lexical)."""
        return self._embedder

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
        if self._guard.damaged is not None:
            raise AuditChainBroken(str(self._guard.damaged))
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

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"AgentRuntime({self._agent_id!r}, store={self._store.url!r})"

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

    # -- the loop policy after each commit ------------------------------------------------

    def _after(self, action: Any) -> None:
        """Run a bookkeeping commit without re-entering the post-commit checks."""
        busy, self._in_after_commit = self._in_after_commit, True
        try:
            action()
        finally:
            self._in_after_commit = busy

    def _after_commit(self, event: Event) -> None:
        """After an action is stored: record new detections (of the event's run) and
        outages, apply the policy."""
        guard = self._guard
        guard.account(event)
        if self._in_after_commit:
            return
        run = event.payload.get("run_id")
        state = guard.default if run is None else guard.state_of(event)
        default = guard.default
        if (
            state.monitor.pending
            or guard.outages.pending
            or (state is not default and default.monitor.pending)
        ):
            self._announce(state)
        policy = guard.policy
        if (
            policy.on_loop == "warn"
            and policy.spend_cap_usd is None
            and (policy.max_tool_calls is None)
        ):
            return
        tripped = guard.tripped(event.time, state)
        if tripped is not None and self._trip(event.time, state, tripped):
            paused = guard if tripped[2] is None else guard.runs.get(tripped[2])
            paused.paused_after = event.seq
        guard.raise_for_loop(event, state)

    def _announce(self, state: RunState) -> None:
        """Record (and log) the new detections of ``state``'s run and of the default run
        (reads), and new outages."""
        guard = self._guard
        states = (state,) if state is guard.default else (state, guard.default)
        for each in states:
            for signal in each.monitor.unannounced():
                _warn(
                    "octopoda: agent %r%s: %s",
                    self._agent_id,
                    "" if signal.run_id is None else f" run {signal.run_id!r}",
                    describe(signal, self._agent_id),
                )
                self._after(lambda s=signal: self._commit("loop_detected", s.to_dict()))
        if guard.outages.pending:
            for outage in guard.outages.unannounced():
                _warn("octopoda: agent %r: %s", self._agent_id, describe_outage(outage))
                self._after(lambda o=outage: self._commit("outage_detected", o.to_dict()))

    def _trip(self, now: float, state: RunState, tripped: Tripped) -> bool:
        """Apply a pause the policy wants (``tripped``), unless it is in effect already; a
        pause set here and lifted in another process meanwhile starts detection afresh.
        True when it paused."""
        run = tripped[2]
        if run is None:
            row = self._store.agent(self._agent_id)
            if row is None or row.status == "paused":
                return False
            if self._guard.paused_here:  # resumed in another process meanwhile
                self._guard.resumed()
                found = self._guard.tripped(now, state)
                if found is None:
                    return False
                tripped = found
        else:
            row, run_row = self._store.agent_and_run(self._agent_id, run)
            if row is None or row.status == "paused":
                return False  # (the whole agent is paused: so is the run)
            if run_row is not None and run_row.status == "paused":
                return False
            if state.paused_here:  # resumed in another process meanwhile
                self._guard.resumed_run(state)
                found = self._guard.tripped(now, state)
                if found is None:
                    return False
                tripped = found
        self._pause(*tripped)
        return True

    def _paused_by(self, event: Event) -> str | None:
        """Why committing ``event`` here paused its run or the agent; None when it did not
        (no store read: for ``octopoda.integrations.ActionRecorder.paused_by``)."""
        guard = self._guard
        run = event.payload.get("run_id")
        state = guard.runs.peek(run) if type(run) is str else None
        if state is not None and state.paused_after == event.seq:
            return state.pause_reason
        return guard.pause_reason if guard.paused_after == event.seq else None

    def _pause(self, reason: str, signal: LoopSignal | None, run_id: str | None = None) -> str:
        """Pause the agent, or its run ``run_id`` (persisted: every process sees it),
        recording why and the signal that tripped the breaker, if one did. Returns the
        stored reason (JSON)."""
        if not isinstance(reason, str) or not reason:
            raise InvalidInput("pause needs a reason (a non-empty str)")
        info: dict[str, Any] = {"reason": reason, "signal": signal.to_dict() if signal else None}
        if run_id is None:
            text = json.dumps(info, ensure_ascii=False)
            self._after(lambda: self._commit("paused", info, status=("paused", text)))
            self._guard.paused_here, self._guard.pause_reason = True, reason
            _warn("octopoda: agent %r paused: %s", self._agent_id, reason)
            return text
        info["run_id"] = run_id
        text = json.dumps(info, ensure_ascii=False)
        op = SetRunStatus(run_id, "paused", text)
        self._after(lambda: self._commit("paused", info, ops=[op]))
        paused = self._guard.runs.get(run_id)
        paused.paused_here, paused.pause_reason = True, reason
        _warn("octopoda: agent %r run %r paused: %s", self._agent_id, run_id, reason)
        return text
