"""Decisions, points in time, the timeline and diffs: the decision verbs of ``AgentRuntime``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from .._canonical import canonical_text
from .._errors import (
    InvalidInput,
    InvalidValue,
    NotFound,
)
from .._records import (
    Event,
)
from .._values import MAX_INT, check_depth, validate_int, validate_time
from .base import RuntimeBase, checked_limit, checked_run_id
from .views import Decision, MemoryDiff, MemoryView, diff_rows

if TYPE_CHECKING:
    pass


__all__ = ["DecisionsMixin"]

REPEAT_SIMILARITY = 0.8
"""Text similarity (Jaccard overlap of case-folded words and word pairs) at or above which
a decision counts as a repeat, unless the two name different numbers or identifiers
("order 42" and "order 43" are two decisions)."""


def _kinds(kinds: Iterable[str] | None) -> tuple[str, ...]:
    """``timeline(kinds=)``: None or event kinds (strings), not one string."""
    if kinds is None:
        return ()
    if isinstance(kinds, (str, bytes, dict)) or not isinstance(kinds, Iterable):
        raise InvalidInput(f"kinds must be a list of event kinds or None, not {kinds!r:.60}")
    out = tuple(kinds)
    if not all(type(k) is str for k in out):
        raise InvalidInput(f"every kind must be a str, not {out!r:.60}")
    return out


class DecisionsMixin(RuntimeBase):
    # -- decisions, points in time, timeline ------------------------------------------------

    def log_decision(
        self,
        decision: str,
        reasoning: str | None = None,
        context: dict[str, Any] | None = None,
        *,
        run_id: str | None = None,
    ) -> Decision:
        """Record a decision as an audited event, in run ``run_id`` (None: the agent's
        default run). What the agent knew then is ``as_of`` its seq (no copy of memory is
        made). The result flags a restated recent decision of the same run."""
        if not isinstance(decision, str) or not decision.strip():
            raise InvalidInput("decision must be a non-empty str describing what was decided")
        if reasoning is not None and not isinstance(reasoning, str):
            raise InvalidInput(f"reasoning must be a str or None, not {type(reasoning).__name__}")
        if context is not None and not isinstance(context, dict):
            raise InvalidInput(f"context must be a dict or None, not {type(context).__name__}")
        run_id = checked_run_id(run_id)
        payload: dict[str, Any] = {"decision": decision, "reasoning": reasoning, "context": context}
        if run_id is not None:
            payload["run_id"] = run_id
        try:
            text = canonical_text(payload)
        except (TypeError, ValueError) as exc:
            raise InvalidValue(f"decision context cannot be recorded as JSON: {exc}") from None
        check_depth(context, text, "the decision's context")
        repeat = self._recent_repeat(decision, run_id)
        if repeat is not None:
            payload["repeats_seq"], payload["similarity"] = repeat[0], round(repeat[1], 4)
        event, _ = self._commit("decision", payload)
        return Decision(
            event.seq,
            event.time,
            decision,
            reasoning,
            context,
            repeat[0] if repeat else None,
            round(repeat[1], 4) if repeat else None,
            MemoryView(self._store, self._ns, event.seq, event.time),
        )

    def _recent_repeat(self, decision: str, run_id: str | None) -> tuple[int, float] | None:
        head = self.audit.head().seq
        return self._decisions.most_similar(
            self._store, self._agent_id, head, decision, REPEAT_SIMILARITY, run_id
        )

    def decisions(self, *, limit: int | None = None) -> list[Decision]:
        """Logged decisions, oldest first (with those an ``octopoda migrate`` imported: at
        the seq of their ``import`` event, with their original time)."""
        out: list[Decision] = []
        limit = checked_limit(limit)
        for e in self._store.events(self._agent_id, kinds=["decision", "import"]):
            entries = [e.payload] if e.kind == "decision" else e.payload.get("decisions", ())
            for p in entries:
                out.append(
                    Decision(
                        e.seq,
                        p.get("decided_at", e.time),
                        p["decision"],
                        p.get("reasoning"),
                        p.get("context"),
                        p.get("repeats_seq"),
                        p.get("similarity"),
                        MemoryView(self._store, self._ns, e.seq, e.time),
                    )
                )
            if limit is not None and len(out) >= limit:
                return out[:limit]
        return out

    def as_of(self, point: int | Decision) -> MemoryView:
        """This agent's memory as it was right after event ``point`` (a seq or a decision)."""
        if isinstance(point, Decision):
            return point.memory()
        if isinstance(point, bool) or not isinstance(point, int) or not 0 <= point <= MAX_INT:
            raise InvalidInput(
                f"as_of takes an event seq (an int from 0 to 2**63 - 1) or a Decision,"
                f" not {point!r:.60}"
            )
        return MemoryView(self._store, self._ns, point, self._event_time(point))

    def _event_time(self, seq: int) -> float | None:
        if seq == 0:
            return None
        for event in self._store.events(self._agent_id, after_seq=seq - 1, limit=1):
            if event.seq == seq:
                return event.time
        raise NotFound(
            f"agent {self._agent_id!r} has no event {seq} (its last is {self.audit.head().seq})"
        )

    def timeline(
        self,
        *,
        since: float | None = None,
        until: float | None = None,
        kinds: Iterable[str] | None = None,
        after_seq: int = 0,
        limit: int | None = None,
        run_id: str | None = None,
    ) -> list[Event]:
        """This agent's events in order, filtered by time (Unix seconds), kind, seq and
        run (``run_id``: one conversation's events only)."""
        return list(
            self._store.events(
                self._agent_id,
                after_seq=validate_int(after_seq, "after_seq"),
                since=validate_time(since, "since"),
                until=validate_time(until, "until"),
                kinds=_kinds(kinds),
                limit=checked_limit(limit),
                run_id=checked_run_id(run_id),
            )
        )

    def diff(self, seq_a: int, seq_b: int | None = None) -> MemoryDiff:
        """Keys added, changed and removed between event ``seq_a`` and ``seq_b`` (default:
        now)."""
        b = self.audit.head().seq if seq_b is None else seq_b
        for seq in (seq_a, b):
            if isinstance(seq, bool) or not isinstance(seq, int) or not 0 <= seq <= MAX_INT:
                raise InvalidInput(
                    f"diff takes event seqs (ints from 0 to 2**63 - 1), not {seq!r:.60}"
                )
        # Each side as the agent saw it then: TTL expiry judged at that point's time.
        time_b = self._now() if seq_b is None else self._event_time(b)
        before = self._store.current(self._ns, as_of_seq=seq_a, now=self._event_time(seq_a))
        after = self._store.current(self._ns, as_of_seq=b, now=time_b)
        return diff_rows(seq_a, b, before, after)
