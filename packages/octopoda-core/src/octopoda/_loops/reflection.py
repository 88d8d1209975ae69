"""Reflection: the same decision, plan or self-critique restated with nothing new.

Fires when ``min_repeats`` (3) decisions on one subject (``context["subject"]``) say the
same (their word gists, reasoning included, at ``similarity`` >= 0.8, or one only adds
words) with nothing new in between (minor progress, an acknowledged new call, does not
count), at most ``window_seconds`` (180) apart. Decisions with a wait between them and
``check_interval_seconds`` (30) apart are a periodic check (the same verdict each time), not
a loop. Statements that name different numbers or identifiers ("order 42", "order 43") are
never the same; random hex ids (a trace id) may differ. Confidence 0.8 at the threshold.
"""

from __future__ import annotations

from collections import deque

from .._records import Event
from .chain import Bounded
from .gists import Gist
from .monitor import Detector, LoopMonitor
from .signals import RefTuple, confidence

__all__ = ["ReflectionDetector"]


class _Said:
    """What was said on one subject since the last progress."""

    __slots__ = ("novelty", "said", "time", "waits")

    def __init__(self) -> None:  # (the detector sets novelty, time and waits)
        self.novelty = 0
        self.time = 0.0
        self.waits = 0
        self.said: deque[tuple[Gist, RefTuple]] = deque(maxlen=24)


class ReflectionDetector(Detector):
    """The novelty tracker hands it each decision (``observe_decision``)."""

    kind = "reflection"
    __slots__ = (
        "_subjects",
        "check_interval_seconds",
        "min_repeats",
        "similarity",
        "window_seconds",
    )

    def __init__(
        self,
        monitor: LoopMonitor,
        *,
        min_repeats: int = 3,
        similarity: float = 0.8,
        window_seconds: float = 180.0,
        check_interval_seconds: float = 30.0,
    ) -> None:
        super().__init__(monitor)
        self.min_repeats = min_repeats
        self.similarity = similarity
        self.window_seconds = window_seconds
        self.check_interval_seconds = check_interval_seconds
        self._subjects: Bounded[_Said] = Bounded(256)

    def observe_decision(self, event: Event, subject: str, text: str, gist: Gist) -> None:
        """A decision on ``subject`` saying ``text``; ``gist`` is the word gist of it with
        its reasoning."""
        stream = "decisions " + subject
        monitor = self.monitor
        time = event.time
        said = self._subjects.get(stream)
        if said is None:
            said = self._subjects.put(stream, _Said())
        elif (
            monitor.before - monitor.minor != said.novelty
            or time - said.time > self.window_seconds
            or (monitor.waits != said.waits and time - said.time >= self.check_interval_seconds)
        ):  # something new since (or a periodic check): a new chain
            self.clear(stream)
            said.said.clear()
        said.novelty, said.time = monitor.novelty - monitor.minor, time
        said.waits = monitor.waits
        ref = (event.seq, "decision", subject or "decision", text[:80])
        similar = [r for g, r in said.said if gist.similarity(g) >= self.similarity]
        said.said.append((gist, ref))
        n = len(similar) + 1
        if n >= self.min_repeats:
            self.report(
                stream,
                confidence(0.8, n - self.min_repeats),
                f"decisions {subject}".strip(),
                [*similar, ref],
                f"the agent restated the same decision {n} times with nothing new in between",
                "act on the decision, or gather new information before deciding again",
                time,
            )
