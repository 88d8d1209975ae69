"""Ping-pong: agents passing the same thing back and forth.

Fires when two agents hand over or message each other alternately ``min_passes`` (4) times
with at most half as many distinct contents, or alternately rewrite one shared key, while
neither brings anything new (the partner's new tool calls between its passes count when
they tell it something: read from the store, so other processes count; reading the
partner's messages does not, since they are what the exchange is judged by); or when a
content goes around a ring of agents back to its sender ``min_returns`` (2) times. Short
contents (a preview held whole) that say the same in other words are one content
(``paraphrase_similarity``, 0.6: the same non-text parts, paraphrased texts: see
``paraphrase``), so a planner and an executor handing one task back and forth in reworded
messages, or a writer resubmitting one draft after each reworded review comment, are
caught. Passes more than ``window_seconds`` (600) apart do not chain. Confidence 0.8 at
the threshold.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial

from .._records import Event
from .chain import Bounded
from .monitor import Detector, LoopMonitor
from .paraphrase import Statement, same_statement, statement
from .payloads import PassPayload, writes_of
from .signals import AgentRefTuple, confidence

__all__ = ["Pass", "PingPongDetector"]

Pass = tuple[str, str, str, float, AgentRefTuple]
"""One pass: (sender, receiver, content, time, ref); content is the ``content_gist`` of a
message or handoff, the SHA-256 of a shared value; ref names its event (a
``LoopEventRef`` as a tuple, whose preview is the content's preview: its canonical JSON,
cut at 120 characters)."""
_REPRESENTATIVES = 16  # the contents of a stream that stand for their paraphrases


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
        "_clusters",
        "_my_novelty",
        "_representatives",
        "exchange",
        "heard",
        "key_history",
        "min_passes",
        "min_returns",
        "paraphrase_similarity",
        "paraphrases",
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
        paraphrase_similarity: float = 0.6,
    ) -> None:
        super().__init__(monitor)
        self.min_passes = min_passes
        self.min_returns = min_returns
        self.window_seconds = window_seconds
        self.paraphrase_similarity = paraphrase_similarity
        self.paraphrases = 0
        """How many contents were compared as paraphrases (the paraphrase path's count)."""
        self.heard = 0
        """How many messages the agent read that were new to it (the novelty tracker
        counts them): not what makes an exchange productive."""
        # (stream, content) -> the content that stands for it there; a stream's contents
        # that stand for others (its last 16)
        self._clusters: Bounded[str] = Bounded(1024)
        self._representatives: Bounded[list[tuple[str, Statement]]] = Bounded(256)
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
        self._my_novelty.put(event.seq, self.monitor.novelty - self.heard)

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
        self._my_novelty.put(event.seq, self.monitor.novelty - self.heard)

    def _since_my_last(self, agent: str, run: list[Pass]) -> bool:
        """Whether this agent brought something new since its previous pass of ``run``."""
        for sender, _, _, _, ref in reversed(run[:-1]):
            if sender == agent and ref[0] in self._my_novelty:
                return self._my_novelty[ref[0]] != self.monitor.before - self.heard
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

    def _repeating_tail(
        self, run: list[Pass], same: Callable[[Pass], str] | None = None
    ) -> tuple[list[Pass], int]:
        """The longest newest tail of ``run`` (at least ``min_passes``) in which every
        content repeats on average (at most half as many distinct contents as passes), and
        how many distinct contents it has; ``same`` gives the content that stands for a
        pass's (its paraphrases')."""
        best: list[Pass] = []
        distinct = 0
        seen: set[str] = set()
        for length, item in enumerate(reversed(run), 1):
            seen.add(item[2] if same is None else same(item))
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
            if not best and any(" " in p[4][3] for p in run[-self.min_passes :]):
                # (the paraphrase path, for texts: the same said in other words?)
                best, distinct = self._repeating_tail(run, partial(self._cluster, stream))
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

    def _cluster(self, stream: str, item: Pass) -> str:
        """The content that stands for ``item``'s in ``stream`` (two agents' exchange, or
        one agent's ring): the first of the stream's last 16 such contents that says the
        same in other words, or its own. Each content is compared once; only short ones
        (a preview held whole) can be paraphrases."""
        content = item[2]
        found = self._clusters.get((stream, content))
        if found is None:
            found = content
            preview = item[4][3]
            said = statement(preview) if " " in preview else None  # (free text?)
            if said is not None:
                representatives = self._representatives.get(stream)
                if representatives is None:
                    representatives = self._representatives.put(stream, [])
                for other, other_said in reversed(representatives):
                    self.paraphrases += 1
                    if same_statement(said, other_said, self.paraphrase_similarity):
                        found = other
                        break
                else:
                    representatives.append((content, said))
                    if len(representatives) > _REPRESENTATIVES:
                        del representatives[0]
            self._clusters.put((stream, content), found)
        return found

    def _task(self, agent: str, item: Pass) -> str:
        """What a pass going around a ring is about: the task its content names (a content
        whose non-text parts name a number or an id, such as ``{"ticket": 4211, "note":
        ...}``, is about that, whatever its notes say), else its content as ``_cluster``
        gives it."""
        preview = item[4][3]
        said = statement(preview) if " " in preview else None
        if said is not None and any(c.isdigit() for c in said.shape):
            return "task\x00" + said.shape
        return self._cluster(f"ring\x00{agent}", item)

    def _ring(self, event: Event, p: PassPayload, passes: Sequence[Pass]) -> None:
        """The same content handed on by this agent, going around other agents and coming
        back: ``min_returns`` returns with nothing new. When it came back in other words
        (the pass before this one is from a third agent, with other content), passes about
        the same task (``_task``) count as the same."""
        content = str(p.get("content_gist") or p.get("content_sha256"))
        chain, returns, agents = self._around(event.agent, passes, None, content)
        if returns < self.min_returns and len(passes) > 1 and passes[-1][2] == content:
            before = passes[-2]
            if before[1] == event.agent and before[0] != p.get("to") and before[2] != content:
                task = partial(self._task, event.agent)
                content = task(passes[-1])
                chain, returns, agents = self._around(event.agent, passes, task, content)
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

    def _around(
        self,
        agent: str,
        passes: Sequence[Pass],
        key: Callable[[Pass], str] | None,
        content: str,
    ) -> tuple[list[Pass], int, set[str]]:
        """The newest passes (newest first) whose content is ``content`` (that ``key``
        gives, if any), how many of them came back to ``agent``, and the agents they went
        through."""
        chain: list[Pass] = []
        returns = 0
        agents: set[str] = set()
        for item in reversed(passes):
            if (item[2] if key is None else key(item)) != content or (
                chain and chain[-1][3] - item[3] > self.window_seconds
            ):
                break
            chain.append(item)
            agents.update(item[:2])
            if item[1] == agent:
                returns += 1
        return chain, returns, agents
