"""Crew, task and agent start and finish as events on the chain, from CrewAI's event bus.

Installed and uninstalled with the breaker (:func:`octopoda_crewai.install_breaker`). Each
CrewAI event becomes a decision event (``log_decision``) of the run the breaker uses
(``crew:<crew id>/<kickoff>``, :func:`crew_run_id`; a task run alone: ``task:<task id>``)
with ``context={"crewai":
<kind>, ...}``, kind one of ``crew_started``, ``crew_completed``, ``crew_failed``,
``task_started``, ``task_completed``, ``task_failed``, ``agent_started``,
``agent_completed``, ``agent_failed``. Task and agent events go to the Octopoda agent of the
CrewAI agent (by role); crew events to every agent of the crew, so each agent's timeline of
a run reads from the crew's start to its end.

A decision passes through the run's loop detectors, which compare the decisions on one
subject (``context["subject"]``). Each lifecycle event is its own subject (``crewai <kind>
<CrewAI's event id>``), so a crew that runs the same task again, or whose agent fails and
retries, is never a "restated decision"; and a decision is not new content, so these events
never hide a loop of tool calls either.

Order: CrewAI runs a sync handler on a pool of ten threads, so two events could be recorded
out of order; the handlers here are coroutines that record without awaiting, which CrewAI
runs one after the other on its event loop's thread, in the order they were emitted. The
breaker's hooks flush the bus before recording a call, so a start is on the chain before
the calls it led to.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._breaker import CrewBreaker

__all__ = ["KINDS", "CrewEvents"]

logger = logging.getLogger("octopoda")

KINDS = (
    "crew_started",
    "crew_completed",
    "crew_failed",
    "task_started",
    "task_completed",
    "task_failed",
    "agent_started",
    "agent_completed",
    "agent_failed",
)
"""The ``context["crewai"]`` of the events the listener records."""

_PREVIEW = 200


def _text(value: Any) -> str:
    text = str(getattr(value, "raw", value) or "")
    return text if len(text) <= _PREVIEW else text[: _PREVIEW - 3] + "..."


def _crew_of(event: Any, source: Any) -> Any:
    crew = getattr(event, "crew", None)
    if crew is None and getattr(source, "agents", None) is not None:
        crew = source
    return crew


def _task_of(event: Any, source: Any) -> Any:
    task = getattr(event, "task", None)
    if task is None and getattr(source, "expected_output", None) is not None:
        task = source
    return task


KICKOFF_CHARS = 12  # of CrewAI's kickoff event id, in a run id


def crew_run_id(crew: Any, kickoff: str | None = None) -> str:
    """The run of ``crew``'s current kickoff (or of ``kickoff``, CrewAI's id of a
    kickoff's start event): ``crew:<crew id>/<kickoff>``. Each kickoff is its own run, so a
    loop paused in one user's kickoff of a shared ``Crew`` never stops the next one; a
    kickoff resumed from a checkpoint keeps its id, and its run. Before any kickoff (or on
    a crewai line without kickoff ids): ``crew:<crew id>``."""
    kickoff = kickoff or getattr(crew, "_kickoff_event_id", None)  # (CrewAI sets it first)
    if not isinstance(kickoff, str) or not kickoff:
        return f"crew:{crew.id}"
    return f"crew:{crew.id}/{kickoff[:KICKOFF_CHARS]}"


def _run_of(agent: Any, task: Any) -> str | None:
    crew = getattr(agent, "crew", None)
    if crew is not None and getattr(crew, "id", None) is not None:
        return crew_run_id(crew)
    if task is not None and getattr(task, "id", None) is not None:
        return f"task:{task.id}"
    return None


def _task_name(task: Any) -> str:
    name = getattr(task, "name", None) or getattr(task, "description", None) or "task"
    return _text(name)


class CrewEvents:
    """The event-bus listener of a :class:`CrewBreaker` (see the module's docstring)."""

    def __init__(self, breaker: CrewBreaker) -> None:
        self._breaker = breaker
        self._handlers: list[tuple[type[Any], Callable[..., Any]]] = []

    # -- recording ----------------------------------------------------------------------------

    def _log(
        self, role: str, run_id: str | None, text: str, context: dict[str, Any], event: Any
    ) -> None:
        event_id = str(getattr(event, "event_id", None) or id(event))
        context = {**context, "event_id": event_id}
        context["subject"] = f"crewai {context['crewai']} {event_id}"
        try:
            self._breaker._call(
                role, lambda rt: rt.log_decision(text, context=context, run_id=run_id)
            )
        except Exception:  # an event the store refused must not break the crew
            logger.exception("octopoda-crewai: could not record %s", context.get("crewai"))

    def crew(self, kind: str, source: Any, event: Any, **extra: Any) -> None:
        crew = _crew_of(event, source)
        if crew is None or getattr(crew, "id", None) is None:
            return
        name = str(getattr(event, "crew_name", None) or getattr(crew, "name", None) or "crew")
        kickoff = getattr(event, "event_id", None) if kind == "crew_started" else None
        run_id = crew_run_id(crew, kickoff if isinstance(kickoff, str) else None)
        context = {"crewai": kind, "crew": name, "crew_id": str(crew.id), **extra}
        roles = list(dict.fromkeys(str(a.role) for a in getattr(crew, "agents", None) or []))
        for role in roles:
            self._log(role, run_id, f"crew {name!r} {kind.split('_')[1]}", context, event)
        if kind != "crew_started":
            self._breaker.run_ended(run_id)

    def task(self, kind: str, source: Any, event: Any, **extra: Any) -> None:
        task = _task_of(event, source)
        if task is None:
            return
        agent = getattr(task, "agent", None)
        role = str(getattr(agent, "role", None) or getattr(event, "agent_role", None) or "agent")
        name = _task_name(task)
        context = {"crewai": kind, "task": name, "task_id": str(task.id), **extra}
        text = f"task {name!r} {kind.split('_')[1]} by {role!r}"
        self._log(role, _run_of(agent, task), text, context, event)

    def agent(self, kind: str, source: Any, event: Any, **extra: Any) -> None:
        agent = getattr(event, "agent", None)
        if agent is None:
            return
        task = getattr(event, "task", None)
        role = str(getattr(agent, "role", None) or "agent")
        name = _task_name(task)
        context = {"crewai": kind, "agent": role, "task": name, **extra}
        if task is not None:
            context["task_id"] = str(task.id)
        text = f"agent {role!r} {kind.split('_')[1]} task {name!r}"
        self._log(role, _run_of(agent, task), text, context, event)

    # -- the bus ------------------------------------------------------------------------------

    def install(self) -> None:
        """Register the handlers with CrewAI's event bus (once)."""
        if self._handlers:
            return
        from crewai.events import crewai_event_bus
        from crewai.events.types.agent_events import (
            AgentExecutionCompletedEvent,
            AgentExecutionErrorEvent,
            AgentExecutionStartedEvent,
        )
        from crewai.events.types.crew_events import (
            CrewKickoffCompletedEvent,
            CrewKickoffFailedEvent,
            CrewKickoffStartedEvent,
        )
        from crewai.events.types.task_events import (
            TaskCompletedEvent,
            TaskFailedEvent,
            TaskStartedEvent,
        )

        def output(event: Any) -> dict[str, Any]:
            return {"output": _text(getattr(event, "output", None))}

        def error(event: Any) -> dict[str, Any]:
            return {"error": _text(getattr(event, "error", None))}

        def none(event: Any) -> dict[str, Any]:
            return {}

        table: list[tuple[type[Any], Callable[..., None], str, Callable[[Any], dict[str, Any]]]]
        table = [
            (CrewKickoffStartedEvent, self.crew, "crew_started", none),
            (CrewKickoffCompletedEvent, self.crew, "crew_completed", output),
            (CrewKickoffFailedEvent, self.crew, "crew_failed", error),
            (TaskStartedEvent, self.task, "task_started", none),
            (TaskCompletedEvent, self.task, "task_completed", output),
            (TaskFailedEvent, self.task, "task_failed", error),
            (AgentExecutionStartedEvent, self.agent, "agent_started", none),
            (AgentExecutionCompletedEvent, self.agent, "agent_completed", output),
            (AgentExecutionErrorEvent, self.agent, "agent_failed", error),
        ]
        for event_type, record, kind, extra in table:
            handler = _handler(record, kind, extra)
            crewai_event_bus.on(event_type)(handler)
            self._handlers.append((event_type, handler))

    def uninstall(self) -> None:
        """Unregister the handlers (so another install never records twice)."""
        if not self._handlers:
            return
        from crewai.events import crewai_event_bus

        crewai_event_bus.flush()  # what was emitted is recorded before the runtimes close
        handlers, self._handlers = self._handlers, []
        for event_type, handler in handlers:
            crewai_event_bus.off(event_type, handler)


def flush() -> None:
    """Wait for CrewAI's event bus to run the handlers of what was emitted so far."""
    from crewai.events import crewai_event_bus

    crewai_event_bus.flush()


def _handler(
    record: Callable[..., None], kind: str, extra: Callable[[Any], dict[str, Any]]
) -> Callable[..., Any]:
    # a coroutine that never awaits: CrewAI runs it on its loop's one thread, in emit order
    async def handle(source: Any, event: Any) -> None:
        record(kind, source, event, **extra(event))

    handle.__name__ = f"octopoda_{kind}"
    return handle
