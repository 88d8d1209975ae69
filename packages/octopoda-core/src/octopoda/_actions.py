"""Actions adapters report (tool calls, LLM calls, handoffs), the loop policy and the
circuit breaker, and health statistics: the loop-detection face of ``AgentRuntime``."""

from __future__ import annotations

import hashlib
import json
import logging
import math
import re
import time
from collections import Counter, deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, NamedTuple

from ._canonical import canonical_text
from ._detectors import (
    NoveltyTracker,
    OscillationDetector,
    Pass,
    PingPongDetector,
    RecallWriteDetector,
    ReflectionDetector,
    RetryDetector,
    content_gist,
    informative,
    normalize_error,
    volatile_gist,
)
from ._errors import AgentPaused, InvalidInput, LoopDetected
from ._loops import LoopEventRef, LoopMonitor, LoopSignal, LoopStatus
from ._records import Event
from ._store import SendMessage, stored_sha256

if TYPE_CHECKING:
    from ._events import Processor
    from ._store import Store

__all__ = ["ActionsMixin", "LoopGuard", "LoopPolicy", "Stats", "digest_preview"]

logger = logging.getLogger("octopoda")

PREVIEW_CHARS: Final = 120
_ON_LOOP: Final = ("warn", "pause", "raise")
_DETECTOR_NAMES: Final = ("retry", "oscillation", "ping_pong", "reflection", "recall_write")


_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def _digest_text(value: Any) -> tuple[str, str]:
    """SHA-256 of a value's canonical JSON (its repr when not JSON), and that text."""
    if isinstance(value, (bytes, bytearray)):
        raw = bytes(value)
        text = f"<{len(raw)} bytes>"
    else:
        try:
            text = canonical_text(value)
        except (TypeError, ValueError):  # its repr, without the object's memory address
            text = _ADDRESS.sub("", repr(value))
        raw = text.encode("utf-8", "surrogatepass")
    return hashlib.sha256(raw).hexdigest(), text


def _preview(text: str) -> str:
    return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 3] + "..."


def digest_preview(value: Any) -> tuple[str, str]:
    """SHA-256 of a value's canonical JSON (its repr when not JSON) and a short preview."""
    sha, text = _digest_text(value)
    return sha, _preview(text)


def _error_text(error: Any) -> str:
    if isinstance(error, BaseException):
        return f"{type(error).__name__}: {error}"
    return str(error)


def _non_negative(value: Any, what: str, kind: type | tuple[type, ...] = (int, float)) -> Any:
    ok = not isinstance(value, bool) and isinstance(value, kind)
    if not ok or not math.isfinite(float(value)) or float(value) < 0:
        raise InvalidInput(f"{what} must be a finite number >= 0, not {value!r}")
    return value


class LoopPolicy:
    """What to do about loops and spend (opt-in; the default only detects and warns).

    ``on_loop``: ``"warn"`` logs, ``"pause"`` pauses the agent (persisted in the store, so
    every process sees it) and ``guard_tool_call`` raises ``AgentPaused`` until
    ``resume()``, ``"raise"`` raises ``LoopDetected`` from the call that completed the loop.
    ``min_confidence``: signals below it only warn. ``spend_cap_usd``: pause when reported
    ``cost_usd`` within ``spend_window_seconds`` exceeds it. ``max_tool_calls``: pause
    when this runtime has recorded that many tool calls (since it started or resumed).
    ``detectors``: thresholds per detector, e.g. ``{"retry": {"max_failures": 4}}`` (the
    arguments of the classes in ``octopoda._detectors``).
    """

    __slots__ = (
        "detectors",
        "max_tool_calls",
        "min_confidence",
        "on_loop",
        "spend_cap_usd",
        "spend_window_seconds",
    )

    def __init__(
        self,
        on_loop: str = "warn",
        *,
        min_confidence: float = 0.8,
        spend_cap_usd: float | None = None,
        spend_window_seconds: float = 3600.0,
        max_tool_calls: int | None = None,
        detectors: dict[str, dict[str, Any]] | None = None,
    ) -> None:
        if on_loop not in _ON_LOOP:
            raise InvalidInput(f"on_loop must be one of {', '.join(_ON_LOOP)}, not {on_loop!r}")
        if not 0.0 <= _non_negative(min_confidence, "min_confidence") <= 1.0:
            raise InvalidInput(f"min_confidence must be between 0 and 1, not {min_confidence!r}")
        if spend_cap_usd is not None:
            _non_negative(spend_cap_usd, "spend_cap_usd")
        if _non_negative(spend_window_seconds, "spend_window_seconds") == 0:
            raise InvalidInput("spend_window_seconds must be positive")
        if max_tool_calls is not None:
            _non_negative(max_tool_calls, "max_tool_calls", int)
        self.on_loop = on_loop
        self.min_confidence = float(min_confidence)
        self.spend_cap_usd = spend_cap_usd
        self.spend_window_seconds = float(spend_window_seconds)
        self.max_tool_calls = max_tool_calls
        self.detectors = dict(detectors or {})
        unknown = set(self.detectors) - set(_DETECTOR_NAMES)
        if unknown or not all(isinstance(v, dict) for v in self.detectors.values()):
            raise InvalidInput(
                f"detectors maps detector names ({', '.join(_DETECTOR_NAMES)}) to dicts of"
                f" their thresholds; got {detectors!r}"
            )

    def __repr__(self) -> str:
        return (
            f"LoopPolicy(on_loop={self.on_loop!r}, min_confidence={self.min_confidence},"
            f" spend_cap_usd={self.spend_cap_usd}, spend_window_seconds="
            f"{self.spend_window_seconds}, max_tool_calls={self.max_tool_calls})"
        )


class Stats(NamedTuple):
    """``agent.stats()``: this runtime's operations and latencies, and the agent's totals."""

    operations: dict[str, int]
    read_latency_us: dict[str, float]
    write_latency_us: dict[str, float]
    tool_calls: int
    llm_calls: int
    spend_usd: float
    tokens_in: int
    tokens_out: int
    loops_detected: int
    paused: bool
    pause_reason: str | None


def _percentiles(samples: deque[float]) -> dict[str, float]:
    if not samples:
        return {"p50": 0.0, "p95": 0.0, "p99": 0.0, "count": 0.0}
    ordered = sorted(samples)
    n = len(ordered)

    def at(q: float) -> float:
        return round(ordered[min(n - 1, int(q * n))], 2)

    return {"p50": at(0.5), "p95": at(0.95), "p99": at(0.99), "count": float(n)}


_DETECTORS: Final[dict[str, Callable[..., Processor]]] = {
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


class LoopGuard:
    """Detectors, breaker and statistics of one agent runtime."""

    def __init__(self, agent: str, store: Store, policy: LoopPolicy | None, now: float) -> None:
        if policy is not None and not isinstance(policy, LoopPolicy):
            raise InvalidInput(
                f"policy must be a LoopPolicy, not {type(policy).__name__};"
                " e.g. LoopPolicy('pause', spend_cap_usd=5.0)"
            )
        self.agent = agent
        self.store = store
        self.policy = policy or LoopPolicy()
        self.monitor = LoopMonitor()
        self.novelty = NoveltyTracker(self.monitor)
        self.detectors: list[Processor] = []
        self._gists: dict[str, str] = {}  # message body digest -> content gist
        for kind, cls in _DETECTORS.items():
            options = self.policy.detectors.get(kind, {})
            args: tuple[Any, ...] = (
                (self._exchange, self._key_history, self._partner_work)
                if kind == "ping_pong"
                else ()
            )
            try:
                self.detectors.append(cls(self.monitor, *args, **options))
            except TypeError as exc:
                raise InvalidInput(f"LoopPolicy(detectors={{{kind!r}: ...}}): {exc}") from None
        self.novelty.attach(self.detectors)
        self._detect: Processor = self.novelty.process
        self.operations: Counter[str] = Counter()
        self.read_us: deque[float] = deque(maxlen=2048)
        self.write_us: deque[float] = deque(maxlen=2048)
        self.spend: deque[tuple[float, float]] = deque()
        self.totals = {"tool_calls": 0, "llm_calls": 0, "tokens_in": 0, "tokens_out": 0}
        self.spend_total = 0.0
        self.capped_calls = 0  # tool calls since start or resume (for max_tool_calls)
        self.paused_here = False
        self._warm_up(now)

    def _warm_up(self, now: float) -> None:
        """Replay recent history (detection only: nothing is recorded or announced), and
        count the spend already reported within the policy's window."""
        row = self.store.agent(self.agent)
        if row is None:
            return
        for event in self.store.events(self.agent, after_seq=max(0, row.head_seq - WARM_UP_EVENTS)):
            self._detect(event)
        self.monitor.unannounced()  # already recorded by the process that saw them
        self.monitor.detections = 0
        if self.policy.spend_cap_usd is not None:
            since = now - self.policy.spend_window_seconds
            for event in self.store.events(
                self.agent, since=since, kinds=("tool_call", "llm_call")
            ):
                cost = float(event.payload.get("cost_usd", 0.0))
                if cost:
                    self.spend.append((event.time, cost))

    # -- the pipeline side ------------------------------------------------------------------

    def processors(self) -> list[Processor]:
        """One pipeline processor: the novelty tracker, which counts the action and runs
        the detectors (routing by kind saves a call per detector)."""
        return [self._detect]

    def observe_read(self, namespace: str, key: str, data: Any, now: float) -> None:
        """A read: through the read-aware detectors, in memory only."""
        self._detect(
            Event(self.agent, "read", {"namespace": namespace, "key": key, "data": data}, now)
        )

    def _exchange(self, agent: str) -> list[Pass]:
        """Recent handoffs and messages sent or received by ``agent``, in store order."""
        rows = self.store.messages(party=agent, limit=48)
        gists = self._gists
        if len(gists) > 4096:
            gists.clear()
        for r in rows:
            if r.body_sha256 not in gists:
                gists[str(r.body_sha256)] = content_gist(r.body)
        return [
            (
                r.sender,
                str(r.recipient),
                gists[str(r.body_sha256)],
                r.created_at,
                LoopEventRef(
                    r.seq,
                    "handoff" if r.message_type == "handoff" else "message_sent",
                    str(r.recipient),
                    r.body[:60],
                    r.sender,
                ),
            )
            for r in rows
        ]

    def _partner_work(self, agent: str, start: int | None, middle: int, end: int) -> bool:
        """Whether ``agent`` made a tool call that told it something (a result more than
        an acknowledgement or the time: ``informative``) between its events ``middle``
        and ``end`` that it had not made between ``start`` and ``middle``."""

        def calls(after: int, until: int) -> set[tuple[str, str, str]]:
            return {
                (
                    e.payload["name"],
                    e.payload.get("args_gist") or e.payload["args_sha256"],
                    str(e.payload.get("result_gist") or e.payload.get("result_sha256")),
                )
                for e in self.store.events(
                    agent, after_seq=after, until_seq=until, kinds=("tool_call",), limit=128
                )
                if "error_sha256" not in e.payload
                and informative(str(e.payload.get("result_preview")), e.time)
            }

        earlier = calls(start, middle) if start is not None else set()
        return not calls(middle, end) <= earlier

    def _key_history(self, namespace: str, key: str) -> list[Pass]:
        rows = self.store.history(namespace, key, 12)
        return [
            (
                str(r.author),
                "",
                str(stored_sha256(r)),
                r.created_at,
                LoopEventRef(r.seq, "shared_write", key, f"v{r.version}", str(r.author)),
            )
            for r in reversed(rows)
        ]

    # -- accounting -------------------------------------------------------------------------

    def account(self, kind: str, payload: dict[str, Any], now: float) -> None:
        self.operations[kind] += 1
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

    def tripped(self, now: float) -> tuple[str, LoopSignal | None] | None:
        """Why the policy wants the agent paused now, or None."""
        policy = self.policy
        if policy.on_loop == "pause":
            for signal in self.monitor.signals(now):
                if signal.confidence >= policy.min_confidence:
                    return describe(signal), signal
        if policy.spend_cap_usd is not None:
            spent = self.spend_in_window(now)
            if spent > policy.spend_cap_usd:
                return (
                    f"spend cap: ${spent:.4f} reported in the last"
                    f" {policy.spend_window_seconds:g}s exceeds ${policy.spend_cap_usd:g}",
                    None,
                )
        if policy.max_tool_calls is not None and self.capped_calls >= policy.max_tool_calls:
            return f"tool-call cap: {self.capped_calls} tool calls recorded", None
        return None

    def raise_for_loop(self, event: Event) -> None:
        """With ``on_loop="raise"``: raise if ``event`` completed (or continued) a loop."""
        if self.policy.on_loop != "raise":
            return
        for signal in self.monitor.signals(event.time):
            if signal.confidence >= self.policy.min_confidence and any(
                e.seq == event.seq and e.agent in ("", self.agent) for e in signal.events
            ):
                raise LoopDetected(f"agent {self.agent!r}: {describe(signal)}", signal)

    def resumed(self) -> None:
        """Start afresh after a resume (here or in another process)."""
        self.monitor.reset()
        self.spend.clear()
        self.capped_calls = 0
        self.paused_here = False

    def status(self, now: float) -> LoopStatus:
        signals = self.monitor.signals(now)
        if not signals:
            return LoopStatus("ok", ())
        looping = any(s.confidence >= self.policy.min_confidence for s in signals)
        return LoopStatus("looping" if looping else "warning", signals)


def describe(signal: LoopSignal) -> str:
    seqs = ", ".join(str(s) for s in signal.seqs) or "reads"
    return (
        f"{signal.kind} loop ({signal.confidence:.0%}): {signal.explanation} (events {seqs});"
        f" suggestion: {signal.suggestion}"
    )


def paused_error(agent: str, reason: str | None) -> AgentPaused:
    text = reason or "paused"
    try:
        info = json.loads(text)
        text = str(info.get("reason", text))
    except ValueError:
        info = None
    return AgentPaused(
        f"agent {agent!r} is paused: {text}. Fix the cause, then call agent.resume().",
        text,
        info.get("signal") if isinstance(info, dict) else None,
    )


def now_us(start: float) -> float:
    return (time.perf_counter() - start) * 1e6


class ActionsMixin:
    """The loop-detection methods of ``AgentRuntime`` (tool and LLM calls, handoffs,
    the breaker, status and statistics)."""

    _agent_id: str
    _store: Store
    _guard: LoopGuard
    _in_after_commit: bool

    def _now(self) -> float:
        raise NotImplementedError

    def _commit(self, kind: str, payload: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    # -- recording --------------------------------------------------------------------------

    def record_tool_call(
        self,
        name: str,
        args: Any = None,
        *,
        result: Any = None,
        error: Any = None,
        cost_usd: float = 0.0,
        tokens_in: int = 0,
        tokens_out: int = 0,
        duration_ms: float | None = None,
    ) -> Event:
        """Record a tool call after it ran (``result``, or ``error``: an exception or text).

        Arguments and results are kept as SHA-256 digests plus a short preview. The call
        goes through the loop detectors; with a pause policy a loop pauses the agent.
        """
        if not isinstance(name, str) or not name:
            raise InvalidInput(f"a tool name must be a non-empty str, not {name!r}")
        args_sha, args_text = _digest_text(args)
        payload: dict[str, Any] = {
            "name": name,
            "args_sha256": args_sha,
            "args_preview": _preview(args_text),
        }
        args_gist = volatile_gist(args_text, arguments=True)
        if args_gist is not None:  # the same call, whatever its nonce or idempotency key
            payload["args_gist"] = args_gist
        if error is not None:
            text = _error_text(error)
            payload["error"] = text[:PREVIEW_CHARS]
            payload["error_sha256"] = hashlib.sha256(
                normalize_error(text).encode("utf-8", "surrogatepass")
            ).hexdigest()
        else:
            sha, text = _digest_text(result)
            payload["result_sha256"], payload["result_preview"] = sha, _preview(text)
            gist = volatile_gist(text)
            if gist is not None:  # what the result says, without its timestamps and ids
                payload["result_gist"] = gist
        self._usage(payload, cost_usd, tokens_in, tokens_out, duration_ms)
        event, _ = self._commit("tool_call", payload)
        return event  # type: ignore[no-any-return]

    def record_llm_call(
        self,
        model: str,
        *,
        cost_usd: float = 0.0,
        tokens_in: int = 0,
        tokens_out: int = 0,
        duration_ms: float | None = None,
    ) -> Event:
        """Record an LLM call with its token usage and cost (counted by the spend cap)."""
        if not isinstance(model, str) or not model:
            raise InvalidInput(f"a model name must be a non-empty str, not {model!r}")
        payload: dict[str, Any] = {"model": model}
        self._usage(payload, cost_usd, tokens_in, tokens_out, duration_ms)
        event, _ = self._commit("llm_call", payload)
        return event  # type: ignore[no-any-return]

    def record_handoff(self, to_agent: str, content: Any = None) -> Event:
        """Record that this agent handed work (``content``) to ``to_agent``. The handoff is
        also delivered as a message of type ``handoff``; handoffs going back and forth (or
        around a ring of agents) with nothing new are a ping-pong loop, across processes too."""
        if not isinstance(to_agent, str) or not to_agent:
            raise InvalidInput(f"to_agent must be a non-empty agent id, not {to_agent!r}")
        sha, preview = digest_preview(content)
        try:
            body = canonical_text(content)
        except (TypeError, ValueError):
            body = canonical_text(preview)
        payload = {
            "to": to_agent,
            "content_sha256": sha,
            "content_gist": content_gist(body),
            "preview": preview,
        }
        op = SendMessage(to_agent, None, "handoff", body, sha)
        event, _ = self._commit("handoff", payload, ops=[op])
        return event  # type: ignore[no-any-return]

    @staticmethod
    def _usage(
        payload: dict[str, Any],
        cost_usd: float,
        tokens_in: int,
        tokens_out: int,
        duration_ms: float | None,
    ) -> None:
        if _non_negative(cost_usd, "cost_usd"):
            payload["cost_usd"] = float(cost_usd)
        if _non_negative(tokens_in, "tokens_in", int):
            payload["tokens_in"] = tokens_in
        if _non_negative(tokens_out, "tokens_out", int):
            payload["tokens_out"] = tokens_out
        if duration_ms is not None:
            payload["duration_ms"] = float(_non_negative(duration_ms, "duration_ms"))

    # -- the breaker ------------------------------------------------------------------------

    def guard_tool_call(self, name: str, args: Any = None) -> None:
        """Call before running a tool: raises :class:`AgentPaused` when the agent is paused
        (in this or any other process), or when the policy's caps are reached."""
        if not isinstance(name, str) or not name:
            raise InvalidInput(f"a tool name must be a non-empty str, not {name!r}")
        row = self._store.agent(self._agent_id)
        if row is not None and row.status == "paused":
            raise paused_error(self._agent_id, row.status_reason)
        if self._guard.paused_here:  # paused here, resumed in another process
            self._guard.resumed()
        tripped = self._guard.tripped(self._now())
        if tripped is not None:
            reason = self.pause(tripped[0], _signal=tripped[1])
            raise paused_error(self._agent_id, reason)

    def pause(self, reason: str, *, _signal: LoopSignal | None = None) -> str:
        """Pause the agent (persisted: every process sees it) and record why."""
        if not isinstance(reason, str) or not reason:
            raise InvalidInput("pause needs a reason (a non-empty str)")
        info = {"reason": reason, "signal": _signal.to_dict() if _signal else None}
        text = json.dumps(info, ensure_ascii=False)
        self._after(lambda: self._commit("paused", info, status=("paused", text)))
        self._guard.paused_here = True
        logger.warning("octopoda: agent %r paused: %s", self._agent_id, reason)
        return text

    def resume(self) -> bool:
        """Lift a pause (set here or in any other process). Detection starts afresh. Returns
        False (and records nothing) when the agent was not paused."""
        row = self._store.agent(self._agent_id)
        if row is None or row.status != "paused":
            return False
        self._guard.resumed()
        self._after(lambda: self._commit("resumed", {}, status=("active", None)))
        return True

    @property
    def paused(self) -> bool:
        row = self._store.agent(self._agent_id)
        return row is not None and row.status == "paused"

    def _after(self, action: Any) -> None:
        """Run a bookkeeping commit without re-entering the post-commit checks."""
        busy, self._in_after_commit = self._in_after_commit, True
        try:
            action()
        finally:
            self._in_after_commit = busy

    def _after_commit(self, event: Event) -> None:
        """After an action is stored: record new detections, apply the policy."""
        guard = self._guard
        guard.account(event.kind, event.payload, event.time)
        if self._in_after_commit:
            return
        for signal in guard.monitor.unannounced():
            logger.warning("octopoda: agent %r: %s", self._agent_id, describe(signal))
            self._after(lambda s=signal: self._commit("loop_detected", s.to_dict()))
        if (
            guard.policy.on_loop == "warn"
            and guard.policy.spend_cap_usd is None
            and (guard.policy.max_tool_calls is None)
        ):
            return
        tripped = guard.tripped(event.time)
        if tripped is not None:
            row = self._store.agent(self._agent_id)
            if row is not None and row.status != "paused":
                if guard.paused_here:  # resumed in another process meanwhile
                    guard.resumed()
                    tripped = guard.tripped(event.time)
                if tripped is not None:
                    self.pause(tripped[0], _signal=tripped[1])
        guard.raise_for_loop(event)

    # -- status -----------------------------------------------------------------------------

    def loop_status(self) -> LoopStatus:
        """``ok``, ``warning`` or ``looping``, with the active signals (kind, confidence, the
        events that form the loop, an explanation and a suggested fix). A signal ends with
        progress in its own stream, or once the agent has moved on: three events that
        brought something new, 25 actions or 600 seconds since the loop was last seen."""
        return self._guard.status(self._now())

    def loop_history(
        self, *, since: float | None = None, limit: int | None = None
    ) -> list[LoopSignal]:
        """Past detections (``loop_detected`` events), oldest first, from every process."""
        out = []
        for e in self._store.events(
            self._agent_id, since=since, kinds=("loop_detected",), limit=limit
        ):
            p = e.payload
            refs = tuple(LoopEventRef(**r) for r in p.get("events", ()))
            out.append(
                LoopSignal(
                    p["kind"],
                    p["confidence"],
                    p["subject"],
                    refs,
                    p["explanation"],
                    p["suggestion"],
                    p["detected_at"],
                )
            )
        return out

    def stats(self) -> Stats:
        """Operations, latencies (this runtime), tool and LLM calls, spend, loops, pause."""
        guard = self._guard
        row = self._store.agent(self._agent_id)
        paused = row is not None and row.status == "paused"
        reason = None
        if paused and row is not None and row.status_reason:
            try:
                reason = str(json.loads(row.status_reason).get("reason"))
            except ValueError:
                reason = row.status_reason
        return Stats(
            operations=dict(guard.operations),
            read_latency_us=_percentiles(guard.read_us),
            write_latency_us=_percentiles(guard.write_us),
            tool_calls=guard.totals["tool_calls"],
            llm_calls=guard.totals["llm_calls"],
            spend_usd=round(guard.spend_total, 6),
            tokens_in=guard.totals["tokens_in"],
            tokens_out=guard.totals["tokens_out"],
            loops_detected=guard.monitor.detections,
            paused=paused,
            pause_reason=reason,
        )
