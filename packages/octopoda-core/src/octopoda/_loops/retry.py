"""Retry: the same tool with the same arguments, failing or returning the same result.

Fires when a (tool, arguments) run fails the same way ``max_failures`` (3) times in a row
(error text compared with numbers, UUIDs and hex ids masked), fails in any way
``max_any_failures`` (5) times, or returns the same result ``max_same_results`` (5) times
with no other tool call between. A run is one tool with its arguments in any wording: a
call whose free-text arguments reword an earlier call's (``reworded_similarity``, 0.5: see
``paraphrase``), with the same other arguments, and that got the same result or failure
back (echoes of the arguments masked), joins that call's run. A result restating the
run's last one in other words (``paraphrase_similarity``, 0.6; short texts only) is the
same result. Polling (a wait between the calls, or calls
``poll_interval_seconds`` (30) apart with no LLM call between: a timer's, not a slow
model's) is a loop at ``max_polls`` (10) polls within ``window_seconds`` (300); calls more
than ``window_seconds`` apart do not chain. Confidence 0.8 (0.7 for repeated results) at
the threshold.
"""

from __future__ import annotations

from .._records import Event
from .monitor import Detector, LoopMonitor
from .payloads import ToolCallPayload
from .signals import RefTuple, call_text, confidence
from .streams import CallRun

__all__ = ["RetryDetector"]


class RetryDetector(Detector):
    """The novelty tracker keeps a run per (tool, arguments) and hands each call that is
    not a sleep to ``observe_call``, before it records the call as the run's last."""

    kind = "retry"
    __slots__ = (
        "_first_threshold",
        "max_any_failures",
        "max_failures",
        "max_polls",
        "max_same_results",
        "paraphrase_similarity",
        "poll_interval_seconds",
        "reworded_similarity",
        "window_seconds",
    )

    def __init__(
        self,
        monitor: LoopMonitor,
        *,
        max_failures: int = 3,
        max_any_failures: int = 5,
        max_same_results: int = 5,
        max_polls: int = 10,
        poll_interval_seconds: float = 30.0,
        window_seconds: float = 300.0,
        reworded_similarity: float = 0.5,
        paraphrase_similarity: float = 0.6,
    ) -> None:
        super().__init__(monitor)
        self.max_failures = max_failures
        self.max_any_failures = max_any_failures
        self.max_same_results = max_same_results
        self.max_polls = max_polls
        self.poll_interval_seconds = poll_interval_seconds
        self.window_seconds = window_seconds
        self.reworded_similarity = reworded_similarity
        """Free-text arguments at least this alike (and the same result) are one call: the
        novelty tracker reads it."""
        self.paraphrase_similarity = paraphrase_similarity
        """A result at least this alike to the run's last one is the same result (the
        novelty tracker reads it)."""
        self._first_threshold = min(max_failures, max_any_failures, max_same_results, max_polls)

    def observe_call(
        self, event: Event, p: ToolCallPayload, run: CallRun, failed: bool, outcome: str
    ) -> None:
        """One call of ``run``; ``outcome`` is its error or result digest."""
        monitor = self.monitor
        time = event.time
        if (
            # (a failure after failures: only what taught the agent something is progress)
            (
                run.learned != monitor.before - monitor.minor
                if failed and run.failures
                else monitor.before != run.novelty or run.outcome != outcome
            )
            or time - run.time > self.window_seconds
            # (the same answer again after other calls, not polling: a call asked anew,
            # like a FAQ answered again for the next user, not again and again)
            or (
                not failed
                and monitor.calls - run.at > 1
                and not run.polled
                and not self._polling(run, time)
            )
        ):  # a new result, or progress: not a loop; the stream starts afresh
            if monitor.active:
                monitor.clear(self.kind, f"{run.name}\x00{run.args}")
            run.outcome = outcome
            run.polled = False
            run.calls = [(event.seq, time, p.get("args_preview", "") if run.reworded else "")]
            if failed:
                run.failures = [event.seq]
            elif run.failures:
                run.failures = []
            judge = self._first_threshold <= 1  # (a chain of one call, at most one failure)
        else:
            self._continue(event, p, run, failed, outcome)
            threshold = self._first_threshold
            judge = len(run.calls) >= threshold or len(run.failures) >= threshold
        if failed:
            run.learned = monitor.novelty - monitor.minor
        if judge:
            self._judge(run, p, failed, time)

    def _continue(
        self, event: Event, p: ToolCallPayload, run: CallRun, failed: bool, outcome: str
    ) -> None:
        """The call repeats the run's chain (a failure after failures, or the same result)."""
        if run.outcome != outcome:  # failing again, differently: the any-failure chain
            run.outcome = outcome
            run.calls = []
        calls = run.calls
        if calls and self._polling(run, event.time):
            run.polled = True
        calls.append((event.seq, event.time, p.get("args_preview", "") if run.reworded else ""))
        if len(calls) > 32:
            del calls[0]
        if failed:
            run.failures.append(event.seq)
            if len(run.failures) > 32:
                del run.failures[0]
        elif run.failures:
            run.failures = []

    def _polling(self, run: CallRun, time: float) -> bool:
        """Whether this call of ``run`` polls: a wait since its last call, or a poll
        interval with no model call between (a timer's, not a model's)."""
        monitor = self.monitor
        return run.waits != monitor.waits or (
            time - run.time >= self.poll_interval_seconds and run.thoughts == monitor.thoughts
        )

    def _judge(self, run: CallRun, p: ToolCallPayload, failed: bool, time: float) -> None:
        stream = f"{run.name}\x00{run.args}"
        name = run.name
        chain = run.calls
        if run.polled and not failed:  # polling: how often within the window
            chain = [c for c in chain if time - c[1] <= self.window_seconds]
        same = len(chain)
        calls: list[RefTuple] = [
            (seq, "tool_call", name, args or run.preview) for seq, _, args in chain
        ]
        call = "as " + call_text(name, run.preview)  # (as written: fetch(url="..."))
        if run.reworded and len({c[3] for c in calls}) > 1:  # (other wordings joined)
            worded = list(dict.fromkeys(call_text(name, c[3]) for c in calls))
            more = ", ..." if len(worded) > 3 else ""
            call = f"in {len(worded)} wordings ({', '.join(worded[:3])}{more})"
        if failed and same >= self.max_failures:
            self.report(
                stream,
                confidence(0.8, same - self.max_failures),
                f"tool {name}",
                calls,
                f"{name} was called {same} times {call} and failed the same way each"
                f" time ({p.get('error')})",
                f"stop calling {name} with these arguments: change them, back off, or report"
                " the problem instead of retrying",
                time,
            )
        elif failed and len(run.failures) >= self.max_any_failures:
            n = len(run.failures)
            self.report(
                stream,
                confidence(0.8, n - self.max_any_failures),
                f"tool {name}",
                [(seq, "tool_call", name, run.preview) for seq in run.failures],
                f"{name} was called {n} times in a row {call} and failed every time"
                f" (last: {p.get('error')})",
                f"stop retrying {name} with these arguments; report the failures instead",
                time,
            )
        elif not failed:
            limit = self.max_polls if run.polled else self.max_same_results
            if same >= limit:
                how = "polled" if run.polled else "called"
                self.report(
                    stream,
                    confidence(0.7, same - limit),
                    f"tool {name}",
                    calls,
                    f"{name} was {how} {same} times {call} and returned the same result each time",
                    f"use the result {name} already returned, change the arguments, or give"
                    " up waiting",
                    time,
                )
