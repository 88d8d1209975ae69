"""The monitor the detectors report to, and the base of every detector.

The five detectors (one module each in this package) are processors in the agent's events
pipeline: the novelty tracker (``novelty.py``) sees every event as it is committed (and
reads, in memory only), keeps small bounded state per stream (``streams.py``: a tool call
with its arguments, a memory key), and hands each event to the detectors' ``observe_*``
methods; they report to the :class:`LoopMonitor`. A detection names the exact events that
form the loop. Progress in a stream (a new result, a new value) clears its signal, and a
signal also clears by itself once the agent has moved on: after ``clear_after_actions``
further actions, or ``clear_after_seconds``, without the loop continuing.
"""

from __future__ import annotations

from collections.abc import Iterable

from .signals import AgentRefTuple, LoopEventRef, LoopSignal, RefTuple

__all__ = ["Detector", "LoopMonitor"]


class _Active:
    __slots__ = ("action_index", "announced", "novelty", "signal", "time")

    def __init__(self, signal: LoopSignal, action_index: int, time: float, novelty: int) -> None:
        self.signal = signal
        self.action_index = action_index
        self.time = time
        self.novelty = novelty
        self.announced = False


class LoopMonitor:
    """Holds the active signals of one run of an agent (``run_id``; None: its default run)
    and what is still to be recorded; the signals it reports name that run.

    A signal is over when its stream makes progress (the detector clears it), or once the
    agent has moved on: ``clear_after_progress`` events that brought something new,
    ``clear_after_actions`` actions or ``clear_after_seconds`` since it was last seen."""

    __slots__ = (
        "_actions",
        "_due_actions",
        "_due_novelty",
        "_due_time",
        "_now",
        "_unannounced",
        "active",
        "before",
        "calls",
        "clear_after_actions",
        "clear_after_progress",
        "clear_after_seconds",
        "detections",
        "event_novel",
        "minor",
        "novelty",
        "run_id",
        "thoughts",
        "waits",
    )

    def __init__(
        self,
        *,
        clear_after_actions: int = 25,
        clear_after_seconds: float = 600.0,
        clear_after_progress: int = 3,
        run_id: str | None = None,
    ) -> None:
        self.run_id = run_id
        self.clear_after_actions = clear_after_actions
        self.clear_after_seconds = clear_after_seconds
        self.clear_after_progress = clear_after_progress
        self.active: dict[tuple[str, str], _Active] = {}
        """The active signals by (kind, stream): a detector clears its stream only when this
        is not empty (most progress ends no loop)."""
        self._actions = 0
        self._now = 0.0
        self.detections = 0
        self.novelty = 0
        """How many events so far brought something new (see ``NoveltyTracker``)."""
        self.event_novel = False
        """Whether the event being processed is itself new."""
        self.minor = 0
        """How many of those were only a call with new arguments that acknowledged ("ok"):
        the agent did something it had not done, which ends most chains, but it learned
        nothing, so a failing call retried or a decision restated meanwhile still repeat
        (they compare ``novelty - minor``)."""
        self.waits = 0
        """How many waiting calls (sleep, wait, backoff, ...) there were so far."""
        self.calls = 0
        """How many tool calls (not sleeps) there were so far."""
        self.thoughts = 0
        """How many LLM calls there were so far: calls a model made between are not a
        timer's polls, however far apart."""
        self.before = 0
        """The novelty count before the event being processed: a stream whose last link
        stored another value saw progress in between."""
        self._unannounced = 0
        # no active signal can expire before these (recomputed by _expire): ticks stay O(1)
        self._due_actions = 0
        self._due_time = 0.0
        self._due_novelty = 0

    def tick(self, time: float) -> None:
        """Count one action at ``time``, and let signals expire once the agent has moved on.
        Only active signals need the count (each expires ``clear_after_actions`` actions
        after it was last seen), so the novelty tracker ticks only while ``active`` is not
        empty: ``report`` takes its time from the signal."""
        self._actions += 1
        self._now = time
        if self.active and (
            self._actions > self._due_actions
            or time > self._due_time
            or self.novelty >= self._due_novelty
        ):
            self._expire()

    def _expire(self) -> None:
        stale = [
            key
            for key, a in self.active.items()
            if self._actions - a.action_index > self.clear_after_actions
            or self._now - a.time > self.clear_after_seconds
            or self.novelty - a.novelty >= self.clear_after_progress
        ]
        for key in stale:
            if not self.active.pop(key).announced:
                self._unannounced -= 1
        if self.active:
            self._due_actions = (
                min(a.action_index for a in self.active.values()) + self.clear_after_actions
            )
            self._due_time = min(a.time for a in self.active.values()) + self.clear_after_seconds
            self._due_novelty = (
                min(a.novelty for a in self.active.values()) + self.clear_after_progress
            )

    def report(self, stream: str, signal: LoopSignal) -> None:
        """A detector saw a loop in ``stream`` (again): keep the strongest, newest view."""
        key = (signal.kind, stream)
        now = signal.detected_at  # (the event's time)
        if self.run_id is not None:
            signal = signal._replace(run_id=self.run_id)
        current = self.active.get(key)
        if current is None:
            self.active[key] = _Active(signal, self._actions, now, self.novelty)
            self.detections += 1
            self._unannounced += 1
            if len(self.active) == 1:
                self._due_actions = self._actions + self.clear_after_actions
                self._due_time = now + self.clear_after_seconds
                self._due_novelty = self.novelty + self.clear_after_progress
        else:
            current.signal = signal
            current.action_index = self._actions
            current.time = now
            current.novelty = self.novelty

    def clear(self, kind: str, stream: str) -> None:
        """Progress in ``stream``: its signal of ``kind`` is over."""
        if self.active:
            gone = self.active.pop((kind, stream), None)
            if gone is not None and not gone.announced:
                self._unannounced -= 1

    def reset(self) -> None:
        """Forget every active signal, and start a new epoch of progress so that no chain
        that began before continues."""
        self.active.clear()
        self._unannounced = 0
        self.novelty += 1
        self.before = self.novelty

    def signals(self, now: float | None = None) -> tuple[LoopSignal, ...]:
        if now is not None:
            self._now = max(self._now, now)
            self._expire()
        return tuple(sorted((a.signal for a in self.active.values()), key=lambda s: -s.confidence))

    def unannounced(self) -> list[LoopSignal]:
        """Signals not yet recorded as ``loop_detected`` events (marks them recorded)."""
        if not self._unannounced:
            return []
        self._unannounced = 0
        out = []
        for active in self.active.values():
            if not active.announced:
                active.announced = True
                out.append(active.signal)
        return out

    @property
    def pending(self) -> bool:
        return self._unannounced > 0

    def unannounced_keys(self) -> frozenset[tuple[str, str]]:
        """The (kind, stream) of the signals not yet recorded (none: no loop to walk)."""
        if not self._unannounced:
            return frozenset()
        return frozenset(k for k, a in self.active.items() if not a.announced)

    def recorded_except(self, keep: frozenset[tuple[str, str]]) -> None:
        """Mark every active signal recorded but those of ``keep``: the signals events of
        other processes formed, which the process that stored them recorded (the guard's
        catch-up)."""
        left = 0
        for key, active in self.active.items():
            active.announced = key not in keep
            left += key in keep
        self._unannounced = left


class Detector:
    """The base of the five detectors: a kind, the monitor it reports to, and ``report``.
    The novelty tracker hands each detector the events it judges through its
    ``observe_*`` methods."""

    kind = ""
    __slots__ = ("monitor",)

    def __init__(self, monitor: LoopMonitor) -> None:
        self.monitor = monitor

    def report(
        self,
        stream: str,
        confidence: float,
        subject: str,
        events: Iterable[LoopEventRef | RefTuple | AgentRefTuple],
        explanation: str,
        suggestion: str,
        time: float,
    ) -> None:
        refs = tuple(e if isinstance(e, LoopEventRef) else LoopEventRef(*e) for e in events)
        self.monitor.report(
            stream, LoopSignal(self.kind, confidence, subject, refs, explanation, suggestion, time)
        )

    def clear(self, stream: str) -> None:
        """Progress in ``stream``: this detector's signal there (if any) is over."""
        monitor = self.monitor
        if monitor.active:
            monitor.clear(self.kind, stream)
