"""Detection state per run: each run of an agent (a LangGraph thread, an Agents SDK
session, a crew kickoff, a team run: the ``run_id`` its actions carry) has its own novelty
tracker, monitor and detectors, so that three users hitting the same failing tool once each
are three runs with one failure each, not one agent failing three times.

``RunStates`` keeps them: the default run (actions without a run id, the agent's own) is
always there; the others are created on a run's first action and kept in least-recently-
used order, at most ``max_runs`` (512) of them. Past that the oldest idle run (no active
signal, not paused here) is dropped; a run that comes back after that starts its
detection afresh (a pause is in the store and still holds). Finding a run's state is one
dictionary lookup.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Final

from .monitor import Detector, LoopMonitor
from .novelty import NoveltyTracker

if TYPE_CHECKING:
    from .._runtime.pipeline import Processor

__all__ = ["MAX_RUN_STATES", "RunState", "RunStates"]

MAX_RUN_STATES: Final = 512
"""Runs whose detection state an agent runtime keeps at once (the least recently used idle
one is dropped past this)."""


class RunState:
    """The detection state of one run: its monitor (active signals), novelty tracker and
    detectors, and whether this runtime paused it (``paused_here``; ``paused_after``: the
    seq of the action whose commit tripped the pause, 0 if none did, and ``pause_reason``)."""

    __slots__ = (
        "detectors",
        "monitor",
        "novelty",
        "pause_reason",
        "paused_after",
        "paused_here",
        "process",
        "run_id",
    )

    def __init__(
        self,
        run_id: str | None,
        detectors: Callable[[LoopMonitor, str | None], list[Detector]],
    ) -> None:
        self.run_id = run_id
        self.monitor = LoopMonitor(run_id=run_id)
        self.novelty = NoveltyTracker(self.monitor)
        self.detectors = detectors(self.monitor, run_id)
        self.novelty.attach(self.detectors)
        self.process: Processor = self.novelty.process
        self.paused_here = False
        self.paused_after = 0
        self.pause_reason: str | None = None

    @property
    def idle(self) -> bool:
        return not self.monitor.active and not self.paused_here


class RunStates:
    """The default run's state and the other runs' (least recently used first)."""

    __slots__ = ("_factory", "_runs", "default", "dropped_detections", "max_runs")

    def __init__(
        self,
        detectors: Callable[[LoopMonitor, str | None], list[Detector]],
        max_runs: int = MAX_RUN_STATES,
    ) -> None:
        self._factory = detectors
        self.default = RunState(None, detectors)
        self._runs: OrderedDict[str, RunState] = OrderedDict()
        self.max_runs = max_runs
        self.dropped_detections = 0

    def get(self, run_id: str) -> RunState:
        """The state of run ``run_id``, created on its first action."""
        runs = self._runs
        state = runs.get(run_id)
        if state is not None:
            runs.move_to_end(run_id)
            return state
        state = runs[run_id] = RunState(run_id, self._factory)
        if len(runs) > self.max_runs:
            self._drop_one()
        return state

    def peek(self, run_id: str | None) -> RunState | None:
        """The state of a run if this runtime has one (None: the default run's)."""
        return self.default if run_id is None else self._runs.get(run_id)

    def _drop_one(self) -> None:
        victim = next((r for r, s in self._runs.items() if s.idle), None)
        if victim is None:  # every run is looping or paused here: the oldest goes
            victim = next(iter(self._runs))
        self.dropped_detections += self._runs.pop(victim).monitor.detections

    def __iter__(self) -> Iterator[RunState]:
        """Every state: the default run's first, then the others, oldest first."""
        yield self.default
        yield from list(self._runs.values())

    def __len__(self) -> int:
        return 1 + len(self._runs)
