"""Reflection: the same decision, plan or self-critique restated with nothing new.

Fires when ``min_repeats`` (3) decisions on one subject (``context["subject"]``) say the
same (their word gists, reasoning included, at ``similarity`` >= 0.8, or one only adds
words) with nothing new in between (minor progress, an acknowledged new call, does not
count), at most ``window_seconds`` (180) apart. The same holds outside decisions, for
statements said in other words (``paraphrase_similarity`` >= 0.6: see ``paraphrase``): a
memory key rewritten with its last value restated (a plan or a self-critique in a
scratchpad key; the novelty tracker finds the rewrite, and it is not new), and calls of a
thinking tool (``think``, ``reflect``, ``sequential_thinking``: ``tool_kind``) thinking
the same thought. Decisions with a wait between them and
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
from .paraphrase import Statement, restates
from .signals import RefTuple, confidence

__all__ = ["ReflectionDetector"]


class _Said:
    """What was said on one subject since the last progress: decisions (``said``) or
    other statements (``statements``: rewrites of a key, thoughts)."""

    __slots__ = ("novelty", "said", "statements", "time", "waits")

    def __init__(self) -> None:  # (the detector sets novelty, time and waits)
        self.novelty = 0
        self.time = 0.0
        self.waits = 0
        self.said: deque[tuple[Gist, RefTuple]] = deque(maxlen=24)
        self.statements: deque[tuple[Statement, RefTuple]] = deque(maxlen=24)


class ReflectionDetector(Detector):
    """The novelty tracker hands it each decision (``observe_decision``), each rewrite of
    a key that restates its last value (``observe_rewrite``) and each thinking call
    (``observe_thought``)."""

    kind = "reflection"
    __slots__ = (
        "_subjects",
        "check_interval_seconds",
        "min_repeats",
        "paraphrase_similarity",
        "paraphrases",
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
        paraphrase_similarity: float = 0.6,
    ) -> None:
        super().__init__(monitor)
        self.min_repeats = min_repeats
        self.similarity = similarity
        self.window_seconds = window_seconds
        self.check_interval_seconds = check_interval_seconds
        self.paraphrases = 0
        """How many statements were compared as paraphrases (the paraphrase path's count)."""
        self.paraphrase_similarity = paraphrase_similarity
        """Statements outside decisions (rewritten keys, thoughts) at least this alike say
        the same (the novelty tracker reads it for rewrites)."""
        self._subjects: Bounded[_Said] = Bounded(256)

    def observe_decision(self, event: Event, subject: str, gist: Gist, ref: RefTuple) -> None:
        """A decision on ``subject`` (``ref`` names it); ``gist`` is the word gist of it
        with its reasoning."""
        stream = "decisions " + subject
        said = self._chain(stream, event.time)
        similar = (  # (a new chain is empty: no comprehension, which is a call, then)
            [r for g, r in said.said if gist.similarity(g) >= self.similarity] if said.said else []
        )
        said.said.append((gist, ref))
        if len(similar) + 1 >= self.min_repeats:
            self._judge(
                stream,
                f"decisions {subject}".strip(),
                [*similar, ref],
                "restated the same decision {n} times",
                "act on the decision, or gather new information before deciding again",
                event.time,
            )

    def observe_rewrite(
        self,
        key: str,
        said: Statement,
        ref: RefTuple,
        earlier: tuple[Statement, RefTuple],
        time: float,
    ) -> None:
        """Memory key ``key`` rewritten with nothing new since its last write, saying what
        ``earlier`` (that write) said in other words (the novelty tracker found so)."""
        stream = "key " + key
        chain = self._chain(stream, time)
        if not chain.statements:
            chain.statements.append(earlier)
        self._restated(stream, f"key {key}", chain, said, ref, f"rewrote {key} {{n}} times")

    def observe_thought(self, event: Event, tool: str, text: str, ref: RefTuple) -> None:
        """A call of a thinking tool (``think``, ``reflect``, ...) thinking ``text``."""
        stream = "tool " + tool
        chain = self._chain(stream, event.time)
        what = f"called {tool} {{n}} times"
        self._restated(stream, f"tool {tool}", chain, Statement("", text), ref, what)

    def _restated(
        self, stream: str, subject: str, chain: _Said, said: Statement, ref: RefTuple, what: str
    ) -> None:
        threshold = self.paraphrase_similarity
        self.paraphrases += len(chain.statements)
        similar = [r for s, r in chain.statements if restates(said, s, threshold)]
        chain.statements.append((said, ref))
        self._judge(
            stream,
            subject,
            [*similar, ref],
            what + " saying the same in other words",
            "act on it, or gather new information before restating it",
            chain.time,
        )

    def _chain(self, stream: str, time: float) -> _Said:
        """What was said in ``stream`` since the last progress (a new chain when something
        new happened since, too long ago, or after a wait a check interval later)."""
        monitor = self.monitor
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
            if said.statements:
                said.statements.clear()
        said.novelty, said.time = monitor.novelty - monitor.minor, time
        said.waits = monitor.waits
        return said

    def _judge(
        self,
        stream: str,
        subject: str,
        refs: list[RefTuple],
        what: str,
        suggestion: str,
        time: float,
    ) -> None:
        n = len(refs)
        if n >= self.min_repeats:
            self.report(
                stream,
                confidence(0.8, n - self.min_repeats),
                subject,
                refs,
                f"the agent {what.replace('{n}', str(n))} with nothing new in between",
                suggestion,
                time,
            )
