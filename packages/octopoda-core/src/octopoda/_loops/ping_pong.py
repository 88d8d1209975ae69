"""Ping-pong: agents passing the same thing back and forth.

Fires when two agents hand over or message each other alternately ``min_passes`` (4) times
with at most half as many distinct contents, or alternately rewrite one shared key, while
neither brings anything new (the partner's new tool calls between its passes count when
they tell it something: read from the store, so other processes count); or when a content
goes around a ring of agents back to its sender ``min_returns`` (2) times. Passes more than
``window_seconds`` (600) apart do not chain. Confidence 0.8 at the threshold.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .._records import Event
from .chain import Bounded
from .monitor import Detector, LoopMonitor
from .payloads import PassPayload, writes_of
from .signals import AgentRefTuple, confidence

__all__ = ["Pass", "PingPongDetector"]

Pass = tuple[str, str, str, float, AgentRefTuple]
"""One pass: (sender, receiver, content, time, ref); content is the ``content_gist`` of a
message or handoff, the SHA-256 of a shared value; ref names its event (a
``LoopEventRef`` as a tuple)."""


class PingPongDetector(Detector):
    """Handoffs and messages between two agents or around a ring (``observe_pass``), and
    two agents alternately rewriting one shared key (``observe_shared_write``).

    ``exchange(event)`` returns the recent passes sent or received by the agent of
    ``event`` (a handoff or message it is storing) in store order, oldest first, that
    event's own pass last among its peers; ``key_history(namespace, key)`` the recent
    writes of a shared key, oldest first, as ``(author, "", value_sha256, time, ref)``.
    ``partner_work(agent, start, middle, end)`` says whether ``agent`` made a successful
    tool call between its events ``middle`` and ``end`` that it had not made between
    ``start`` (or ``middle``) and ``middle``: then the exchange is productive however alike
    the passes. The runtime reads all three from the store, so agents in other processes
    count.
    """

    kind = "ping_pong"
    __slots__ = (
        "_my_novelty",
        "exchange",
        "key_history",
        "min_passes",
        "min_returns",
        "partner_work",
        "window_seconds",
    )

    def __init__(
        self,
        monitor: LoopMonitor,
        exchange: Callable[[Event], Sequence[Pass]],
        key_history: Callable[[str, str], list[Pass]] | None = None,
        partner_work: Callable[[str, int | None, int, int], bool] | None = None,
        *,
        min_passes: int = 4,
        min_returns: int = 2,
        window_seconds: float = 600.0,
    ) -> None:
        super().__init__(monitor)
        self.min_passes = min_passes
        self.min_returns = min_returns
        self.window_seconds = window_seconds
        self.exchange = exchange
        self.key_history = key_history
        self.partner_work = partner_work
        self._my_novelty: Bounded[int] = Bounded(256)  # my earlier passes -> novelty then

    def observe_pass(self, event: Event, p: PassPayload) -> None:
        """A handoff or message this agent is sending."""
        agent, partner = event.agent, str(p.get("to"))
        passes = self.exchange(event)
        if agent == partner:
            stream = agent
        else:
            stream = f"{agent}\x00{partner}" if agent < partner else f"{partner}\x00{agent}"
        run = self._alternating(passes, {agent, partner})
        found = self._judge_pair(stream, agent, run)
        if found is not None:
            subject = f"agents {agent} and {partner}"
            self._report_pair(stream, *found, subject, "passed", event.time)
        self._ring(event, p, passes)
        self._my_novelty.put(event.seq, self.monitor.novelty)

    def observe_shared_write(self, event: Event) -> None:
        """A write to a shared space: two agents alternately rewriting one key."""
        if self.key_history is None:
            return
        for entry in writes_of(event):
            namespace = entry.get("namespace", "")
            passes = self.key_history(namespace, entry["key"])
            sha = str(entry.get("sha256"))
            ref = (event.seq, event.kind, entry["key"], sha[:12], event.agent)
            passes.append((event.agent, "", sha, event.time, ref))
            stream = f"key\x00{namespace}\x00{entry['key']}"
            found = self._judge_pair(stream, event.agent, self._alternating(passes))
            if found is not None:
                subject = f"shared key {entry['key']} ({namespace})"
                self._report_pair(stream, *found, subject, "rewrote", event.time)
        self._my_novelty.put(event.seq, self.monitor.novelty)

    def _since_my_last(self, agent: str, run: list[Pass]) -> bool:
        """Whether this agent brought something new since its previous pass of ``run``."""
        for sender, _, _, _, ref in reversed(run[:-1]):
            if sender == agent and ref[0] in self._my_novelty:
                return self._my_novelty[ref[0]] != self.monitor.before
            if sender == agent:
                return False
        return False

    def _alternating(self, passes: Sequence[Pass], pair: set[str] | None = None) -> list[Pass]:
        """The newest run of ``passes`` (of those between the two agents of ``pair``)
        alternating between two senders, oldest first."""
        run: list[Pass] = []
        for item in reversed(passes):
            if pair is not None and (
                item[0] not in pair or item[1] not in pair or item[0] == item[1]
            ):
                continue
            if run and (
                item[0] == run[-1][0]
                or (len(run) > 1 and item[0] != run[-2][0])
                or run[-1][3] - item[3] > self.window_seconds
            ):
                break
            run.append(item)
        run.reverse()
        return run

    def _repeating_tail(self, run: list[Pass]) -> tuple[list[Pass], int]:
        """The longest newest tail of ``run`` (at least ``min_passes``) in which every
        content repeats on average (at most half as many distinct contents as passes), and
        how many distinct contents it has."""
        best: list[Pass] = []
        distinct = 0
        seen: set[str] = set()
        for length, item in enumerate(reversed(run), 1):
            seen.add(item[2])
            if len(seen) * 2 > len(run):
                break  # no longer tail can repeat enough
            if length >= self.min_passes and len(seen) * 2 <= length:
                best, distinct = run[-length:], len(seen)
        return best, distinct

    def _judge_pair(
        self, stream: str, agent: str, run: list[Pass]
    ) -> tuple[list[Pass], int] | None:
        """The passes of ``run`` (the newest alternating run of ``stream``, ending with
        ``agent``'s) that form a ping-pong, and how many distinct contents they have; or
        None (and the stream's signal is over)."""
        best: list[Pass] = []
        distinct = 0
        if len(run) >= self.min_passes and not self._since_my_last(agent, run):
            best, distinct = self._repeating_tail(run)
        if best and self.partner_work is not None:  # (rare: a ping-pong so far)
            theirs = [p for p in best if p[0] != agent]
            seqs = [p[4][0] for p in theirs]
            if len(seqs) >= 2 and self.partner_work(
                theirs[-1][0], seqs[-3] if len(seqs) >= 3 else None, seqs[-2], seqs[-1]
            ):
                best = []
        if not best:
            if self.monitor.active:
                self.monitor.clear(self.kind, stream)
            return None
        return best, distinct

    def _report_pair(
        self, stream: str, best: list[Pass], distinct: int, subject: str, verb: str, time: float
    ) -> None:
        agents = " and ".join(dict.fromkeys(p[0] for p in best))
        self.report(
            stream,
            confidence(0.8, (len(best) - self.min_passes) // 2),
            subject,
            [p[4] for p in best],
            f"{agents} {verb} the same content back and forth {len(best)} times"
            f" ({distinct} distinct)",
            "give one agent the final say, or change what is handed over",
            time,
        )

    def _ring(self, event: Event, p: PassPayload, passes: Sequence[Pass]) -> None:
        """The same content handed on by this agent, going around other agents and coming
        back: ``min_returns`` returns with nothing new."""
        content = str(p.get("content_gist") or p.get("content_sha256"))
        chain: list[Pass] = []
        returns = 0
        agents: set[str] = set()
        for item in reversed(passes):
            if item[2] != content or (chain and chain[-1][3] - item[3] > self.window_seconds):
                break
            chain.append(item)
            agents.update(item[:2])
            if item[1] == event.agent:
                returns += 1
        if (
            returns < self.min_returns
            or len(agents) < 3
            or self._since_my_last(event.agent, chain[::-1])
        ):
            return
        chain.reverse()
        self.report(
            f"ring\x00{content}",
            confidence(0.8, returns - self.min_returns),
            f"agents {', '.join(sorted(agents))}",
            [p[4] for p in chain],
            f"the same content went around {len(agents)} agents and back to {event.agent}"
            f" {returns} times",
            "give one agent ownership of the task instead of passing it on",
            event.time,
        )
