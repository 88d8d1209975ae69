"""Actions adapters report (tool calls, LLM calls, handoffs, each optionally in a run and
with the framework's call id), loop status and history, and health statistics: the
loop-detection face of ``AgentRuntime``. The breaker's controls (``guard_tool_call``,
pause, resume, runs) are in ``runs.py``; the detectors, the policy and the breaker's rules
in ``octopoda._loops``."""

import hashlib
import json
import time
from collections import deque
from typing import Any, Final, NamedTuple

from .._canonical import canonical_text
from .._errors import InvalidInput
from .._loops import LoopEventRef, LoopSignal, LoopStatus
from .._loops.gists import content_gist, normalize_error, volatile_gist
from .._loops.policy import non_negative
from .._records import Event
from .._regex import lazy_pattern
from .._store import SendMessage
from .base import RuntimeBase, checked_call_id, checked_run_id

__all__ = ["ActionsMixin", "Stats", "digest_preview", "reason_of"]

PREVIEW_CHARS: Final = 120


_ADDRESS = lazy_pattern(r" at 0x[0-9a-fA-F]+")


def _digest_text(value: Any) -> tuple[str, str]:
    """SHA-256 of a value's canonical JSON (its repr when not JSON), and that text."""
    if isinstance(value, (bytes, bytearray)):
        raw = bytes(value)
        text = f"<{len(raw)} bytes>"
    else:
        try:
            text = canonical_text(value)
        except (TypeError, ValueError):  # its repr, without the object's memory address
            try:
                text = _ADDRESS.sub("", repr(value))
            except RecursionError:
                text = f"<a {type(value).__name__} nested too deeply to show>"
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
    paused_runs: tuple[str, ...] = ()
    """The agent's paused runs (``paused`` is True when the agent or any run is paused;
    ``pause_reason`` is the agent's, else the most recently paused run's)."""


def _percentiles(samples: deque[float]) -> dict[str, float]:
    if not samples:
        return {"p50": 0.0, "p95": 0.0, "p99": 0.0, "count": 0.0}
    ordered = sorted(samples)
    n = len(ordered)

    def at(q: float) -> float:
        return round(ordered[min(n - 1, int(q * n))], 2)

    return {"p50": at(0.5), "p95": at(0.95), "p99": at(0.99), "count": float(n)}


def now_us(start: float) -> float:
    return (time.perf_counter() - start) * 1e6


class ActionsMixin(RuntimeBase):
    """The loop-detection methods of ``AgentRuntime`` (tool and LLM calls, handoffs,
    status and statistics)."""

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
        run_id: str | None = None,
        call_id: str | None = None,
    ) -> Event:
        """Record a tool call after it ran (``result``, or ``error``: an exception or text).

        Arguments and results are kept as SHA-256 digests plus a short preview. The call
        goes through the loop detectors of its run (``run_id``: a thread, session or run
        id; None: the agent's default run); with a pause policy a loop pauses that run (or
        the agent: ``LoopPolicy(pause_scope=...)``). ``call_id`` is the framework's id of
        the call, kept in the event so a timeline names it.
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
                normalize_error(text, args).encode("utf-8", "surrogatepass")
            ).hexdigest()
        else:
            sha, text = _digest_text(result)
            payload["result_sha256"], payload["result_preview"] = sha, _preview(text)
            gist = volatile_gist(text, echoes=args)
            if gist is not None:  # what the result says, without its timestamps and ids
                payload["result_gist"] = gist
        self._usage(payload, cost_usd, tokens_in, tokens_out, duration_ms)
        _scope(payload, run_id, call_id)
        event, _ = self._commit("tool_call", payload)
        return event

    def record_llm_call(
        self,
        model: str,
        *,
        cost_usd: float = 0.0,
        tokens_in: int = 0,
        tokens_out: int = 0,
        duration_ms: float | None = None,
        run_id: str | None = None,
        call_id: str | None = None,
    ) -> Event:
        """Record an LLM call with its token usage and cost (counted by the spend cap), in
        run ``run_id`` (None: the default run), with the framework's ``call_id``."""
        if not isinstance(model, str) or not model:
            raise InvalidInput(f"a model name must be a non-empty str, not {model!r}")
        payload: dict[str, Any] = {"model": model}
        self._usage(payload, cost_usd, tokens_in, tokens_out, duration_ms)
        _scope(payload, run_id, call_id)
        event, _ = self._commit("llm_call", payload)
        return event

    def record_handoff(
        self,
        to_agent: str,
        content: Any = None,
        *,
        run_id: str | None = None,
        call_id: str | None = None,
    ) -> Event:
        """Record that this agent handed work (``content``) to ``to_agent``, in run
        ``run_id``. The handoff is also delivered as a message of type ``handoff``;
        handoffs going back and forth (or around a ring of agents) within one run with
        nothing new are a ping-pong loop, across processes too."""
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
        _scope(payload, run_id, call_id)
        op = SendMessage(to_agent, None, "handoff", body, sha, run_id)
        event, _ = self._commit("handoff", payload, ops=[op])
        return event

    @staticmethod
    def _usage(
        payload: dict[str, Any],
        cost_usd: float,
        tokens_in: int,
        tokens_out: int,
        duration_ms: float | None,
    ) -> None:
        if non_negative(cost_usd, "cost_usd"):
            payload["cost_usd"] = float(cost_usd)
        if non_negative(tokens_in, "tokens_in", int):
            payload["tokens_in"] = tokens_in
        if non_negative(tokens_out, "tokens_out", int):
            payload["tokens_out"] = tokens_out
        if duration_ms is not None:
            payload["duration_ms"] = float(non_negative(duration_ms, "duration_ms"))

    # -- status -----------------------------------------------------------------------------

    def loop_status(self, run_id: str | None = None) -> LoopStatus:
        """``ok``, ``warning`` or ``looping``, with the active signals (kind, confidence, the
        events that form the loop, an explanation, a suggested fix, and the run it is in)
        of every run (``run_id``: of that run only), and the outages: the same failure in
        several runs (``LoopStatus.outages``). A signal ends with progress in its own
        stream, or once the run has moved on: three events that brought something new, 25
        actions or 600 seconds since the loop was last seen. Other processes' and
        clients' events of the agent are taken in first (one read of the agent's row, and
        of their events when there are any): every process reports one state."""
        run_id = checked_run_id(run_id)
        guard = self._guard
        guard.follow(self._store.agent(self._agent_id))
        return guard.status(self._now(), run_id)

    def loop_history(
        self, *, since: float | None = None, limit: int | None = None, run_id: str | None = None
    ) -> list[LoopSignal]:
        """Past detections (``loop_detected`` events), oldest first, from every process
        (``run_id``: of that run only)."""
        out = []
        for e in self._store.events(
            self._agent_id,
            since=since,
            kinds=("loop_detected",),
            limit=limit,
            run_id=checked_run_id(run_id),
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
                    p.get("run_id"),
                )
            )
        return out

    def stats(self) -> Stats:
        """Operations, latencies (this runtime), tool and LLM calls, spend, loops, pause."""
        guard = self._guard
        row = self._store.agent(self._agent_id)
        paused = row is not None and row.status == "paused"
        stored = row.status_reason if paused and row is not None else None
        runs = self._store.runs(self._agent_id, status="paused") if row is not None else []
        if not paused and runs:
            stored = runs[0].status_reason
        return Stats(
            operations=dict(guard.operations),
            read_latency_us=_percentiles(guard.read_us),
            write_latency_us=_percentiles(guard.write_us),
            tool_calls=guard.totals["tool_calls"],
            llm_calls=guard.totals["llm_calls"],
            spend_usd=round(guard.spend_total, 6),
            tokens_in=guard.totals["tokens_in"],
            tokens_out=guard.totals["tokens_out"],
            loops_detected=guard.detections,
            paused=paused or bool(runs),
            pause_reason=reason_of(stored) if paused or runs else None,
            paused_runs=tuple(r.run_id for r in runs),
        )


def reason_of(stored: str | None) -> str | None:
    """The reason of a stored pause (its JSON's ``reason``, or the text as it is)."""
    if not stored:
        return None
    try:
        return str(json.loads(stored).get("reason"))
    except (ValueError, AttributeError):
        return stored


def _scope(payload: dict[str, Any], run_id: str | None, call_id: str | None) -> None:
    """Put an action's run and the framework's call id into its payload (when given:
    checked, before anything is committed)."""
    if run_id is not None:
        payload["run_id"] = checked_run_id(run_id)
    if call_id is not None:
        payload["call_id"] = checked_call_id(call_id)
