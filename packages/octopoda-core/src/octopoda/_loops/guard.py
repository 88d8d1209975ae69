"""The loop guard of one agent runtime: the detection state of each of its runs (a novelty
tracker and its detectors per run, ``runs.py``), the pass log they read, the outage watch
across runs, the circuit breaker (the policy applied), accounting, and the warm-up replay.

The pipeline processor (``processors()``) routes each event by its ``payload["run_id"]``
(None: the agent's default run) to that run's novelty tracker: one dictionary lookup."""

from __future__ import annotations

import json
import math
from collections import Counter, deque
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any, Final

from .._errors import AgentPaused, AuditChainBroken, InvalidInput, LoopDetected, UndecodableText
from .._records import Event
from .monitor import Detector, LoopMonitor
from .oscillation import OscillationDetector
from .outages import OutageWatch
from .passes import PassLog, key_history, partner_work
from .ping_pong import PingPongDetector
from .policy import LoopPolicy
from .recall_write import RecallWriteDetector
from .reflection import ReflectionDetector
from .retry import RetryDetector
from .runs import RunState, RunStates
from .signals import LoopSignal, LoopStatus, describe

if TYPE_CHECKING:
    from .._runtime.pipeline import Processor
    from .._store import AgentRow, Store

__all__ = ["CATCH_UP_EVENTS", "DETECTORS", "WARM_UP_EVENTS", "LoopGuard", "paused_error"]

DETECTORS: Final[dict[str, Callable[..., Detector]]] = {
    "retry": RetryDetector,
    "oscillation": OscillationDetector,
    "ping_pong": PingPongDetector,
    "reflection": ReflectionDetector,
    "recall_write": RecallWriteDetector,
}
WARM_UP_EVENTS: Final = 256
"""At start, a runtime replays the agent's last 256 events through its detectors (about a
millisecond), so a loop that spans restarts (a crash loop, even after a long start-up) is
still seen."""
CATCH_UP_EVENTS: Final = WARM_UP_EVENTS
"""At most the last 256 of the events other writers stored since this runtime's last one
are observed before its next (``LoopGuard.caught_up``): what the detectors' windows need."""
_PAUSES: Final = frozenset({"paused", "resumed"})

Tripped = tuple[str, LoopSignal | None, str | None]
"""Why the policy wants a pause, the signal that tripped it (None: a cap), and the run to
pause (None: the agent)."""


class LoopGuard:
    """Detectors (per run), breaker and statistics of one agent runtime."""

    def __init__(self, agent: str, store: Store, policy: LoopPolicy | None, now: float) -> None:
        if policy is not None and not isinstance(policy, LoopPolicy):
            raise InvalidInput(
                f"policy must be a LoopPolicy, not {type(policy).__name__};"
                " e.g. LoopPolicy('pause', spend_cap_usd=5.0)"
            )
        self.agent = agent
        self.store = store
        self.policy = policy or LoopPolicy()
        self.passes = PassLog(agent, store)
        self.runs = RunStates(self._detectors)
        self.default = self.runs.default
        self.outages = OutageWatch(self.policy.outage_runs, self.policy.outage_window_seconds)
        self.through = [0]
        """The agent's events are observed here up to this seq (its own as it commits them,
        the others' caught up): a list, read by the processor without a lookup."""
        self._detect: Processor = self._dispatcher()
        self.operations: Counter[str] = Counter()
        self.read_us: deque[float] = deque(maxlen=2048)
        self.write_us: deque[float] = deque(maxlen=2048)
        self.spend: deque[tuple[float, float]] = deque()
        self.totals = {"tool_calls": 0, "llm_calls": 0, "tokens_in": 0, "tokens_out": 0}
        self.spend_total = 0.0
        self.capped_calls = 0  # tool calls since start or resume (for max_tool_calls)
        self.paused_here = False
        self.paused_after = 0  # the agent's pause: the seq of the action that tripped it
        self.pause_reason: str | None = None
        self.damaged: AuditChainBroken | None = None
        """Why this agent's events cannot be read back (set at start): writes refuse."""
        self._warm_up(now)

    def _detectors(self, monitor: LoopMonitor, run_id: str | None) -> list[Detector]:
        """The five detectors of one run with the policy's thresholds (ping-pong reads the
        store: the agent's passes of that run)."""
        detectors = []
        for kind, cls in DETECTORS.items():
            options = self.policy.detectors.get(kind, {})
            args: tuple[Any, ...] = ()
            if kind == "ping_pong":
                store = self.store
                args = (
                    self.passes.of_run(run_id),
                    partial(key_history, store),
                    partial(partner_work, store),
                )
            try:
                detectors.append(cls(monitor, *args, **options))
            except TypeError as exc:
                raise InvalidInput(f"LoopPolicy(detectors={{{kind!r}: ...}}): {exc}") from None
        return detectors

    def _warm_up(self, now: float) -> None:
        """Replay recent history (detection only: nothing is recorded or announced), and
        count the spend already reported within the policy's window. An event that cannot
        be read back (changed outside Octopoda) stops the replay and is kept as
        ``damaged``: the runtime opens, and refuses to write."""
        try:
            self._replay(now)
        except AuditChainBroken as exc:
            self.damaged = exc
        except UndecodableText as exc:
            self.damaged = AuditChainBroken(
                f"the events of agent {self.agent!r} cannot be read back: {exc}"
            )

    def _replay(self, now: float) -> None:
        row = self.store.agent(self.agent)
        if row is None:
            return
        head = self.through[0] = row.head_seq
        after = max(0, head - WARM_UP_EVENTS)
        for event in self.store.events(self.agent, after_seq=after, until_seq=head):
            self._detect(event)
            if event.kind in _PAUSES:
                self._replay_pause(event)
        for state in self.runs:  # already recorded by the process that saw them
            state.monitor.unannounced()
            state.monitor.detections = 0
        self.outages.unannounced()
        if self.policy.spend_cap_usd is not None:
            since = now - self.policy.spend_window_seconds
            for event in self.store.events(
                self.agent, since=since, kinds=("tool_call", "llm_call")
            ):
                cost = event.payload.get("cost_usd", 0.0)
                if type(cost) in (int, float) and math.isfinite(cost) and cost:
                    self.spend.append((event.time, cost))

    def _replay_pause(self, event: Event) -> None:
        """A replayed pause is one this runtime knows of (``paused_here``: lifted in
        another process later, its run starts afresh here too); a replayed resume starts
        its run (the agent's: every run) afresh, as it did where it was called."""
        run = event.payload.get("run_id")
        state = self.runs.get(run) if type(run) is str else None
        if event.kind == "paused":
            if state is None:
                self.paused_here = True
            else:
                state.paused_here = True
        elif state is None:
            self.resumed()
        else:
            self.resumed_run(state)

    # -- the pipeline side ------------------------------------------------------------------

    def processors(self) -> list[Processor]:
        """One pipeline processor: it hands each event to its run's novelty tracker, which
        counts the action and runs the detectors."""
        return [self._detect]

    def _dispatcher(self) -> Processor:
        """The processor, specialised once: it runs on every event inside the write, where
        each attribute lookup counts (bench 7), so what it needs is bound here."""
        default = self.default.process
        state_of_run = self.runs.get
        observe = self.outages.observe
        through = self.through
        caught_up = self.caught_up

        def dispatch(event: Event) -> Event:
            # (another writer stored events of the agent since the last one seen here)
            if event.seq > through[0] + 1 and caught_up(event):
                return event
            run = event.payload.get("run_id")
            if run is None or type(run) is not str:  # (not a str: not a runtime's; the agent's)
                return default(event)
            if event.kind == "tool_call":
                observe(event, run)
            return state_of_run(run).process(event)

        return dispatch

    def caught_up(self, event: Event) -> bool:
        """Before ``event`` (stamped with its seq), observe the events other writers stored
        since the last one seen here (``catch_up``). True when ``event`` itself was
        observed already: its commit is being retried (the head moved on a server after
        the pipeline ran; the chainer had given it a hash)."""
        self.catch_up(event.seq - 1)
        return bool(event.hash)

    def follow(self, row: AgentRow | None) -> bool:
        """Catch up to the head of the agent's stored row (``catch_up``) when other writers
        stored events since the last one seen here; True if it did. Not on a damaged
        chain (the runtime refuses to write; its events cannot be trusted)."""
        if row is None or row.head_seq <= self.through[0] or self.damaged is not None:
            return False
        self.catch_up(row.head_seq)
        return True

    def catch_up(self, head: int) -> None:
        """Observe the agent's events up to seq ``head`` that other writers (processes
        sharing the store, clients of one server) stored since the last one seen here, at
        most the last ``CATCH_UP_EVENTS``: detection follows the agent's whole chain. They
        update detection only: their loops and outages were recorded, and their pauses
        applied, by the process that stored them."""
        after = max(self.through[0], head - CATCH_UP_EVENTS)
        if head <= after:
            return
        self.through[0] = head  # (first: the events below pass the processor's check)
        others = list(self.store.events(self.agent, after_seq=after, until_seq=head))
        runs: set[str | None] = {None}
        runs.update(r for r in (e.payload.get("run_id") for e in others) if type(r) is str)
        marks = {run: self._mark(run) for run in runs}
        outages = self.outages.pending
        for other in others:
            self._detect(other)
            if other.kind in _PAUSES:
                self._replay_pause(other)
            self._count_spend(other)
        for run, (before, detections, keep) in marks.items():
            state = self.runs.peek(run)
            if state is not None:  # (new here, or dropped and back: all theirs)
                fresh = state is not before
                state.monitor.recorded_except(frozenset() if fresh else keep)
                state.monitor.detections = 0 if fresh else detections
        if not outages:
            self.outages.unannounced()

    def _mark(self, run: str | None) -> tuple[RunState | None, int, frozenset[tuple[str, str]]]:
        """A run's state before a catch-up: its loops counted and those still to record."""
        state = self.runs.peek(run)
        if state is None:
            return None, 0, frozenset()
        return state, state.monitor.detections, state.monitor.unannounced_keys()

    def _count_spend(self, event: Event) -> None:
        """Another writer's call counts towards the spend cap (as the warm-up counts it)."""
        if self.policy.spend_cap_usd is None or event.kind not in ("tool_call", "llm_call"):
            return
        cost = event.payload.get("cost_usd", 0.0)
        if type(cost) in (int, float) and math.isfinite(cost) and cost:
            self.spend.append((event.time, cost))

    def state_of(self, event: Event) -> RunState:
        """The detection state of the run ``event`` belongs to."""
        run = event.payload.get("run_id")
        return self.runs.get(run) if type(run) is str else self.default

    @property
    def detections(self) -> int:
        """Loops detected by this runtime (in every run)."""
        return sum(s.monitor.detections for s in self.runs) + self.runs.dropped_detections

    def observe_read(self, namespace: str, key: str, data: Any, now: float) -> None:
        """A read (the agent's, in its default run): through the read-aware detectors, in
        memory only."""
        self.default.novelty.observe_read(self.agent, namespace, key, data, now)

    # -- accounting -------------------------------------------------------------------------

    def account(self, event: Event) -> None:
        """An event this runtime committed: operations, calls, tokens and spend."""
        kind, payload, now = event.kind, event.payload, event.time
        self.through[0] = event.seq
        self.operations[kind] += 1
        self.passes.committed(event)
        if kind in ("tool_call", "llm_call"):
            self.totals[kind + "s"] += 1
            self.capped_calls += kind == "tool_call"
            self.totals["tokens_in"] += int(payload.get("tokens_in", 0))
            self.totals["tokens_out"] += int(payload.get("tokens_out", 0))
            cost = float(payload.get("cost_usd", 0.0))
            if cost:
                self.spend.append((now, cost))
                self.spend_total += cost

    def spend_in_window(self, now: float) -> float:
        cutoff = now - self.policy.spend_window_seconds
        while self.spend and self.spend[0][0] < cutoff:
            self.spend.popleft()
        return sum(cost for _, cost in self.spend)

    # -- the breaker ------------------------------------------------------------------------

    def tripped(self, now: float, state: RunState | None) -> Tripped | None:
        """Why the policy wants a pause now (a loop of run ``state``, or a cap), or None.
        A loop pauses its run with ``pause_scope="run"`` (the agent for the default run);
        the caps, which count every run, pause the agent."""
        policy = self.policy
        if policy.on_loop == "pause" and state is not None:
            for signal in state.monitor.signals(now):
                if signal.confidence >= policy.min_confidence:
                    run = state.run_id if policy.pause_scope == "run" else None
                    return describe(signal, self.agent), signal, run
        if policy.spend_cap_usd is not None:
            spent = self.spend_in_window(now)
            if spent > policy.spend_cap_usd:
                return (
                    f"spend cap: ${spent:.4f} reported in the last"
                    f" {policy.spend_window_seconds:g}s exceeds ${policy.spend_cap_usd:g}",
                    None,
                    None,
                )
        if policy.max_tool_calls is not None and self.capped_calls >= policy.max_tool_calls:
            return f"tool-call cap: {self.capped_calls} tool calls recorded", None, None
        return None

    def raise_for_loop(self, event: Event, state: RunState) -> None:
        """With ``on_loop="raise"``: raise if ``event`` completed (or continued) a loop."""
        if self.policy.on_loop != "raise":
            return
        for signal in state.monitor.signals(event.time):
            if signal.confidence >= self.policy.min_confidence and any(
                e.seq == event.seq and e.agent in ("", self.agent) for e in signal.events
            ):
                raise LoopDetected(f"agent {self.agent!r}: {describe(signal, self.agent)}", signal)

    def resumed(self) -> None:
        """Start afresh after the agent's resume (here or in another process): every run."""
        for state in self.runs:
            self.resumed_run(state)
        self.spend.clear()
        self.capped_calls = 0
        self.paused_here = False
        self.paused_after, self.pause_reason = 0, None

    @staticmethod
    def resumed_run(state: RunState) -> None:
        """Start one run afresh after its resume."""
        state.monitor.reset()
        state.paused_here = False
        state.paused_after, state.pause_reason = 0, None

    def status(self, now: float, run_id: str | None = None) -> LoopStatus:
        """Every run's signals (``run_id``: that run's), strongest first, and the outages."""
        if run_id is None:
            states = list(self.runs)
        else:
            found = self.runs.peek(run_id)
            states = [] if found is None else [found]
        signals = sorted(
            (s for state in states for s in state.monitor.signals(now)),
            key=lambda s: -s.confidence,
        )
        outages = self.outages.outages(now, run_id)
        if not signals:
            return LoopStatus("warning" if outages else "ok", (), outages)
        looping = any(s.confidence >= self.policy.min_confidence for s in signals)
        return LoopStatus("looping" if looping else "warning", tuple(signals), outages)


def paused_error(agent: str, reason: str | None, run_id: str | None = None) -> AgentPaused:
    """The error for a paused agent (or its run ``run_id``), from the stored pause reason
    (JSON with the reason and the signal, or plain text)."""
    text = reason or "paused"
    try:
        info = json.loads(text)
        text = str(info.get("reason", text))
    except ValueError:
        info = None
    signal = info.get("signal") if isinstance(info, dict) else None
    if run_id is None:
        message = f"agent {agent!r} is paused: {text}. Fix the cause, then call agent.resume()."
    else:
        message = (
            f"run {run_id!r} of agent {agent!r} is paused: {text}. Fix the cause, then call"
            f" agent.resume(run_id={run_id!r})."
        )
    return AgentPaused(message, text, signal, run_id=run_id)
