"""The loop breaker for crews: CrewAI's global hooks record every tool and model call, and
a paused run's next model call is refused, so the crew stops.

CrewAI's ``before_tool_call`` returning False only tells the model "Tool execution blocked by
hook" and the agent carries on; a hard stop needs the model call blocked. So:

* ``before_tool_call``: the breaker's guard; a paused run's tool is not run (False);
* ``after_tool_call``: the call recorded (its result, or CrewAI's error text as the error)
  through the loop detectors of its run; the call that paused the run gets a note;
* ``before_llm_call``: a paused run raises :class:`CrewPaused` (CrewAI's ``HookAborted``,
  crewai 1.15), which ends ``crew.kickoff()`` with a message that names the loop and its
  calls. Older crewai swallows a hook's exceptions, so there the hook refuses the call
  (False: ``kickoff`` raises CrewAI's "LLM call blocked" error) and
  :meth:`CrewBreaker.kickoff` turns that into :class:`CrewPaused`;
* ``after_llm_call``: the model call recorded (model, duration, and the tokens the LLM
  counted during the call, from its ``get_token_usage_summary()``, priced by ``prices``).

With the breaker, crew, task and agent start and finish are events of the same runs, from
CrewAI's event bus (``_events.py``).

Runs: each kickoff of a crew is a run, ``crew:<crew id>/<kickoff>`` (:func:`crew_run_id`; a
task run alone: ``task:<task id>``), so two crews, or two kickoffs of one crew, never see
each other's pauses. Each CrewAI agent (by role) is the Octopoda agent
``agent_prefix + role``.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from octopoda import AgentRuntime, InvalidInput, LoopDetected, LoopPolicy, OctopodaError
from octopoda.integrations import (
    ActionRecorder,
    AgentRuntimes,
    Prices,
    Target,
    Verdict,
    check_prices,
    cost_of,
    paused_note,
)

from ._events import CrewEvents, crew_run_id, flush

logger = logging.getLogger("octopoda")

# crewai with hooks.dispatch (1.15; not 1.13): a hook aborts with HookAborted, which
# reaches the caller of kickoff().
try:
    from crewai.hooks.dispatch import HookAborted as _Abort

    ABORTS = True
except ImportError:  # pragma: no cover - depends on the crewai line
    # Without it (1.13 and older) an exception in a hook is swallowed; returning False makes
    # the executor raise a ValueError ("LLM call blocked by before_llm_call hook"), which
    # CrewBreaker.kickoff turns into CrewPaused.
    _Abort = Exception  # type: ignore[misc,assignment]
    ABORTS = False

__all__ = [
    "TOOL_ERROR_PREFIX",
    "CrewBreaker",
    "CrewLoopDetected",
    "CrewPaused",
    "install_breaker",
    "uninstall_breaker",
]

TOOL_ERROR_PREFIX = "I encountered an error while trying to use the tool."
"""How CrewAI's text of a failed tool call begins (what the model sees instead of a result)."""


class CrewPaused(OctopodaError, _Abort):
    """A crew's run is paused by the loop breaker; raised from the next model call, so it
    ends ``crew.kickoff()``. ``verdict`` names the run, the reason and the loop's calls."""

    def __init__(self, verdict: Verdict) -> None:
        message = f"{verdict.message} {verdict.stopped_text()}"
        Exception.__init__(self, message)
        self.verdict = verdict
        self.reason = message  # HookAborted's fields
        self.source = "octopoda"


class CrewLoopDetected(LoopDetected, _Abort):
    """``LoopPolicy("raise")``: the loop a tool call of the crew completed. CrewAI swallows
    what its tool hooks raise, so it is raised from the crew's next model call and ends
    ``crew.kickoff()`` (on crewai lines without hook aborts, :meth:`CrewBreaker.kickoff`
    raises it). ``signal`` is the loop's :class:`~octopoda.LoopSignal`."""

    def __init__(self, detected: LoopDetected) -> None:
        LoopDetected.__init__(self, str(detected), detected.signal)
        self.reason = str(detected)  # HookAborted's fields
        self.source = "octopoda"


def _run_id(ctx: Any) -> str | None:
    crew = getattr(ctx, "crew", None)
    if crew is not None and getattr(crew, "id", None) is not None:
        return crew_run_id(crew)
    task = getattr(ctx, "task", None)
    if task is not None and getattr(task, "id", None) is not None:
        return f"task:{task.id}"
    return None


def _role(ctx: Any) -> str:
    agent = getattr(ctx, "agent", None)
    return str(getattr(agent, "role", None) or "agent")


def _usage(llm: Any) -> tuple[int, int] | None:
    """The prompt and completion tokens ``llm`` counted so far (CrewAI's per-instance
    totals), or None for a model that does not count."""
    summary = getattr(llm, "get_token_usage_summary", None)
    if summary is None:
        return None
    try:
        metrics = summary()
        return int(metrics.prompt_tokens or 0), int(metrics.completion_tokens or 0)
    except Exception:  # a model whose counting is broken still has its call recorded
        return None


def _is_error(result: Any) -> bool:
    return isinstance(result, str) and result.lstrip().startswith(TOOL_ERROR_PREFIX)


class CrewBreaker:
    """Records every tool and model call of every crew in the process and stops a crew whose
    run the loop policy paused. Use :func:`install_breaker`; ``runtimes`` and ``recorder``
    are the kit's, so ``breaker.runtime(role)`` is the Octopoda agent of a CrewAI agent.
    ``runtimes``: an :class:`~octopoda.integrations.AgentRuntimes` to record into (what
    ``octopoda.init`` passes: every role one Octopoda agent, its policy); then ``store``,
    ``policy`` and ``agent_prefix`` are not used, and :meth:`close` leaves its runtimes open
    (their owner closes them)."""

    def __init__(
        self,
        store: Target = None,
        *,
        policy: LoopPolicy | None = None,
        agent_prefix: str = "crewai-",
        prices: Prices | None = None,
        runtimes: AgentRuntimes | None = None,
    ) -> None:
        self.prices = check_prices(prices)
        if runtimes is not None and (store is not None or policy is not None):
            raise InvalidInput("pass store and policy to the AgentRuntimes, not to the breaker")
        self._owns_runtimes = runtimes is None
        self.runtimes = runtimes or AgentRuntimes(
            store, policy=policy or LoopPolicy("pause"), agent_prefix=agent_prefix
        )
        self.recorder = ActionRecorder()
        self._llm_started: dict[tuple[int, str | None], tuple[float, tuple[int, int] | None]] = {}
        self.events = CrewEvents(self)
        self._lock = threading.Lock()
        self._roles: set[str] = set()
        self._stopped: dict[str | None, Verdict] = {}
        # a loop the raise policy detected, by run: until the run's next model call ...
        self._detected: dict[str | None, LoopDetected] = {}
        # ... and the loops whose model call was refused (older crewai lines), for kickoff
        self._refused: dict[str | None, LoopDetected] = {}

    def runtime(self, role: str) -> AgentRuntime:
        """The Octopoda agent of the CrewAI agent ``role``, with every crew, task and agent
        event emitted so far recorded (CrewAI's bus delivers them after ``kickoff`` returns:
        its handlers are flushed first)."""
        flush()
        return self.runtimes.runtime(role)

    def _call(self, role: str, func: Any) -> Any:
        with self._lock:
            self._roles.add(role)
        return self.runtimes.call(role, func)

    # -- hooks --------------------------------------------------------------------------------

    def before_tool_call(self, ctx: Any) -> bool | None:
        role, run_id = _role(ctx), _run_id(ctx)
        flush()  # the crew's, task's and agent's start on the chain before this call
        verdict = self._call(
            role, lambda rt: self.recorder.guard(rt, ctx.tool_name, ctx.tool_input, run_id=run_id)
        )
        if verdict is not None:
            return False
        self.recorder.start((role, run_id, ctx.tool_name))
        return None

    def after_tool_call(self, ctx: Any) -> str | None:
        role, run_id = _role(ctx), _run_id(ctx)
        result = ctx.tool_result
        error = result if _is_error(result) else None

        def record(rt: AgentRuntime) -> str | None:
            try:
                event = self.recorder.tool_call(
                    rt,
                    ctx.tool_name,
                    ctx.tool_input,
                    result=None if error else result,
                    error=error,
                    duration_ms=self.recorder.elapsed_ms((role, run_id, ctx.tool_name)),
                    run_id=run_id,
                )
            except LoopDetected as exc:  # (recorded; CrewAI would swallow it here)
                with self._lock:
                    self._detected[run_id] = exc
                return f"Octopoda: {exc}; the crew stops at its next model call."
            paused = self.recorder.paused_by(rt, event)
            return None if paused is None else paused_note(rt.agent_id, paused, run_id)

        note = self._call(role, record)
        if note is None:
            return None
        return f"{result}\n\n{note}"

    def before_llm_call(self, ctx: Any) -> bool | None:
        role, run_id = _role(ctx), _run_id(ctx)
        flush()
        with self._lock:  # (the abort ends the kickoff; a refusal, the rest of it, which
            # older crewai lines retry task by task: until the crew's run ends)
            detected = self._detected.pop(run_id, None) if ABORTS else self._detected.get(run_id)
        if detected is not None:
            if ABORTS:
                raise CrewLoopDetected(detected)
            with self._lock:  # (for CrewBreaker.kickoff, on CrewAI's own error)
                self._refused[run_id] = detected
            logger.warning("octopoda-crewai: %s; the crew is stopped", detected)
            return False
        verdict = self._call(
            role, lambda rt: self.recorder.guard(rt, "model call", None, run_id=run_id)
        )
        if verdict is not None:
            with self._lock:
                self._stopped[run_id] = verdict
            if ABORTS:
                raise CrewPaused(verdict)
            # CrewAI raises its own "LLM call blocked" error: say here what stopped the crew
            logger.warning("octopoda-crewai: %s %s", verdict.message, verdict.stopped_text())
            return False
        with self._lock:
            key = (id(getattr(ctx, "executor", None)), run_id)
            self._llm_started[key] = (time.perf_counter(), _usage(getattr(ctx, "llm", None)))
        return None

    def after_llm_call(self, ctx: Any) -> str | None:
        role, run_id = _role(ctx), _run_id(ctx)
        with self._lock:
            started = self._llm_started.pop((id(getattr(ctx, "executor", None)), run_id), None)
        duration = None if started is None else (time.perf_counter() - started[0]) * 1000
        llm = getattr(ctx, "llm", None)
        model = str(getattr(llm, "model", None) or type(llm).__name__)
        tokens_in = tokens_out = 0
        before, after = (started[1] if started else None), _usage(llm)
        if before is not None and after is not None:
            tokens_in, tokens_out = max(0, after[0] - before[0]), max(0, after[1] - before[1])
        cost = cost_of(self.prices, model, tokens_in, tokens_out)
        self._call(
            role,
            lambda rt: self.recorder.llm_call(
                rt,
                model,
                tokens_in=tokens_in,
                tokens_out=tokens_out,
                cost_usd=cost,
                duration_ms=duration,
                run_id=run_id,
            ),
        )
        return None

    def run_ended(self, run_id: str) -> None:
        """A crew's kickoff completed or failed: a loop it raised about stops it no more."""
        with self._lock:
            self._detected.pop(run_id, None)

    def stopped(self, crew: Any) -> Verdict | None:
        """The verdict that stopped ``crew``'s run (its last model call refused), or None."""
        with self._lock:
            return self._stopped.get(crew_run_id(crew))

    def kickoff(self, crew: Any, *args: Any, **kwargs: Any) -> Any:
        """``crew.kickoff(...)``; a crew the breaker stopped raises :class:`CrewPaused` on
        every crewai line (1.15 raises it from ``kickoff`` itself; 1.13 and older: CrewAI raises its
        own "LLM call blocked" error, which this turns into CrewPaused)."""
        try:
            return crew.kickoff(*args, **kwargs)
        except (CrewPaused, CrewLoopDetected):
            raise
        except Exception as exc:
            with self._lock:
                detected = self._refused.pop(crew_run_id(crew), None)
            if detected is not None:
                raise CrewLoopDetected(detected) from exc
            verdict = self.stopped(crew)
            if verdict is None:
                raise
            raise CrewPaused(verdict) from exc

    def close(self) -> None:
        """Close the runtimes the breaker opened (not those it was given)."""
        with self._lock:
            roles, self._roles = self._roles, set()
        if not self._owns_runtimes:
            return
        for role in roles:
            self.runtimes.runtime(role).close()


_state: dict[str, Any] = {}
_state_lock = threading.Lock()


def _hooks() -> Any:
    import crewai.hooks as hooks

    return hooks


def install_breaker(
    store: Target = None,
    *,
    policy: LoopPolicy | None = None,
    agent_prefix: str = "crewai-",
    prices: Prices | None = None,
    runtimes: AgentRuntimes | None = None,
) -> CrewBreaker:
    """Register the loop breaker's hooks and its event-bus listener with CrewAI
    (process-wide, as CrewAI's hooks are) and return it. ``policy``: the loop policy
    (default ``LoopPolicy("pause")``); ``prices``: USD per million input and output tokens
    by model (``{"gpt-4.1": (2.0, 8.0)}``), the cost of each model call; ``runtimes``: the
    runtimes to record into instead of ``store`` and ``policy`` (see :class:`CrewBreaker`;
    ``octopoda.init`` passes its own). Idempotent:
    the same arguments again return the installed breaker; other arguments replace it.
    :func:`uninstall_breaker` removes the hooks."""
    with _state_lock:
        key = (
            store if isinstance(store, str) else id(store),
            repr(policy),
            agent_prefix,
            repr(sorted(check_prices(prices).items())),
            id(runtimes),
        )
        if _state.get("key") == key:
            breaker: CrewBreaker = _state["breaker"]
            return breaker
        _uninstall_locked()
        breaker = CrewBreaker(
            store, policy=policy, agent_prefix=agent_prefix, prices=prices, runtimes=runtimes
        )
        hooks = _hooks()
        hooks.register_before_tool_call_hook(breaker.before_tool_call)
        hooks.register_after_tool_call_hook(breaker.after_tool_call)
        hooks.register_before_llm_call_hook(breaker.before_llm_call)
        hooks.register_after_llm_call_hook(breaker.after_llm_call)
        breaker.events.install()
        _state.update(key=key, breaker=breaker)
        return breaker


def _uninstall_locked() -> bool:
    breaker: CrewBreaker | None = _state.get("breaker")
    if breaker is None:
        return False
    hooks = _hooks()
    hooks.unregister_before_tool_call_hook(breaker.before_tool_call)
    hooks.unregister_after_tool_call_hook(breaker.after_tool_call)
    hooks.unregister_before_llm_call_hook(breaker.before_llm_call)
    hooks.unregister_after_llm_call_hook(breaker.after_llm_call)
    breaker.events.uninstall()
    breaker.close()
    _state.clear()
    return True


def uninstall_breaker(breaker: CrewBreaker | None = None) -> bool:
    """Remove the breaker's hooks and listener (and close the runtimes it opened); whether
    one was removed. With ``breaker``: only if that one is the installed breaker (so undoing
    one installation never removes another's)."""
    with _state_lock:
        if breaker is not None and _state.get("breaker") is not breaker:
            return False
        return _uninstall_locked()


def installed_breaker() -> CrewBreaker | None:
    """The breaker :func:`install_breaker` registered, or None."""
    with _state_lock:
        current: CrewBreaker | None = _state.get("breaker")
        return current
