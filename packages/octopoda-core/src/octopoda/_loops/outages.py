"""Outages: the same failure in many runs at once.

When one tool fails the same way (its name and error digest, the error text with numbers
and ids masked) in ``min_runs`` (3) distinct runs within ``window_seconds`` (600), the
tool's upstream is down: every user hits it once, and none of them is looping. Per-run
detection keeps each run's retry loop to that run; :class:`OutageWatch` sees the failures
across runs and reports an :class:`~.signals.Outage`. It ends when the tool succeeds again
(in any run) or after ``window_seconds`` without the failure. An outage is reported, never
a pause by itself: a run that keeps failing is still its own retry loop.

Only actions with a run id count (the default run is one run, and an outage is about
many).
"""

from __future__ import annotations

from collections import deque
from typing import Final

from .._records import Event
from .signals import Outage

__all__ = ["OutageWatch"]

_FAILURES_KEPT: Final = 64  # per (tool, error): the newest failures
_KEYS_KEPT: Final = 1024  # (tool, error) pairs followed at once; the oldest is dropped

_Failure = tuple[float, str, int, str]  # (time, run id, seq, error preview)


class OutageWatch:
    """Failures of run-scoped tool calls, by (tool, error digest); the active outages."""

    __slots__ = (
        "_active",
        "_announced",
        "_failures",
        "_tools",
        "min_runs",
        "pending",
        "window_seconds",
    )

    def __init__(self, min_runs: int = 3, window_seconds: float = 600.0) -> None:
        self.min_runs = min_runs
        self.window_seconds = window_seconds
        self._failures: dict[tuple[str, str], deque[_Failure]] = {}
        self._active: dict[tuple[str, str], Outage] = {}
        self._announced: set[tuple[str, str]] = set()
        self._tools: dict[str, int] = {}  # tool -> how many of its (tool, error) are followed
        self.pending = False
        """Whether an outage may not be recorded yet (checked after every commit)."""

    def observe(self, event: Event, run_id: str) -> None:
        """A tool call of run ``run_id`` (the pipeline calls this for run-scoped calls)."""
        p = event.payload
        name = p.get("name")
        if not isinstance(name, str):
            return
        sha = p.get("error_sha256")
        if not isinstance(sha, str):
            if name in self._tools:  # the tool works again: its outages are over
                self._recovered(name)
            return
        key = (name, sha)
        failures = self._failures.pop(key, None)  # (re-inserted: the newest last)
        if failures is None:
            failures = deque(maxlen=_FAILURES_KEPT)
            self._tools[name] = self._tools.get(name, 0) + 1
            if len(self._failures) >= _KEYS_KEPT:
                self._forget(next(iter(self._failures)))
        self._failures[key] = failures
        time = event.time
        while failures and time - failures[0][0] > self.window_seconds:
            failures.popleft()
        failures.append((time, run_id, event.seq, str(p.get("error", ""))))
        runs = tuple(dict.fromkeys(f[1] for f in failures))
        if len(runs) >= self.min_runs:
            seqs = tuple(f[2] for f in failures)
            self._active[key] = Outage(name, failures[-1][3], sha, runs, seqs, failures[0][0], time)
            self.pending = self.pending or key not in self._announced

    def _recovered(self, tool: str) -> None:
        for key in [k for k in self._failures if k[0] == tool]:
            self._forget(key)

    def _forget(self, key: tuple[str, str]) -> None:
        del self._failures[key]
        self._active.pop(key, None)
        self._announced.discard(key)
        left = self._tools[key[0]] - 1
        if left:
            self._tools[key[0]] = left
        else:
            del self._tools[key[0]]

    def outages(self, now: float, run_id: str | None = None) -> tuple[Outage, ...]:
        """The active outages, the most recent first (those ``run_id`` is in, when given);
        one whose failure was last seen more than ``window_seconds`` ago is over."""
        for key, outage in list(self._active.items()):
            if now - outage.last_seen > self.window_seconds:
                del self._active[key]
                self._announced.discard(key)
        found = [o for o in self._active.values() if run_id is None or run_id in o.runs]
        return tuple(sorted(found, key=lambda o: -o.last_seen))

    def unannounced(self) -> list[Outage]:
        """Outages not yet recorded (marks them recorded)."""
        self.pending = False
        out = []
        for key, outage in self._active.items():
            if key not in self._announced:
                self._announced.add(key)
                out.append(outage)
        return out
