"""The breaker's controls and an agent's runs: ``guard_tool_call``, ``pause``, ``resume``,
``paused`` and ``runs()``.

A run is what the actions of one ``run_id`` form (a LangGraph thread, an Agents SDK
session, a crew kickoff, a team run); actions without one are the agent's default run,
the agent itself. Loops are detected per run and, with ``LoopPolicy(pause_scope="run")``
(the default), pause only their run: its status is a row of the store's ``runs`` table,
written with the run's ``paused`` or ``resumed`` event, so every process sees it. The
agent's own pause (a loop of the default run, a cap, ``pause()``, or any loop with
``pause_scope="agent"``) stops every run.
"""

from typing import TYPE_CHECKING, NamedTuple

from .._errors import AgentPaused, InvalidInput, NotFound
from .._store import RunActivityRow, SetRunStatus
from .actions import reason_of
from .base import RuntimeBase, checked_limit, checked_run_id

if TYPE_CHECKING:
    from .._loops.runs import RunState


def paused_error(agent: str, reason: str | None, run_id: str | None = None) -> AgentPaused:
    """``_loops.guard.paused_error`` (the guard loads with the first runtime, not here)."""
    from .._loops.guard import paused_error as error

    return error(agent, reason, run_id)


__all__ = ["RunInfo", "RunsMixin"]

RUN_STATUSES = ("active", "paused")


class RunInfo(NamedTuple):
    """One run of an agent, as ``agent.runs()`` lists it: its id, ``active`` or
    ``paused``, its first and last event's time, how many events it has, and why it is
    paused (None when it is not)."""

    id: str
    status: str
    first_seen: float
    last_seen: float
    events: int
    pause_reason: str | None = None


class RunsMixin(RuntimeBase):
    """The breaker's controls of ``AgentRuntime``, per agent and per run."""

    def guard_tool_call(self, name: str, args: object = None, *, run_id: str | None = None) -> None:
        """Call before running a tool: raises :class:`AgentPaused` when the agent or its run
        ``run_id`` is paused (in this or any other process), or when the policy wants a
        pause now (a loop of that run, a cap). One read of the store: the agent's row and
        the run's, in one statement (and, when other processes stored events of the agent
        since this runtime's last, one of those: detection follows the whole chain)."""
        if not isinstance(name, str) or not name:
            raise InvalidInput(f"a tool name must be a non-empty str, not {name!r}")
        guard = self._guard
        state: RunState | None
        if run_id is None:
            row, run, state = self._store.agent(self._agent_id), None, guard.default
        else:
            run_id = checked_run_id(run_id)
            row, run = self._store.agent_and_run(self._agent_id, run_id)
            state = guard.runs.peek(run_id)
        if guard.follow(row):  # (other processes stored events meanwhile)
            state = guard.default if run_id is None else guard.runs.peek(run_id)
        if row is not None and row.status == "paused":
            raise paused_error(self._agent_id, row.status_reason)
        if run is not None and run.status == "paused":
            raise paused_error(self._agent_id, run.status_reason, run_id)
        if run_id is not None and state is not None and state.paused_here:
            guard.resumed_run(state)  # paused here, resumed in another process
        if guard.paused_here:  # paused here, resumed in another process
            guard.resumed()
        tripped = guard.tripped(self._now(), state)
        if tripped is not None:
            reason = self._pause(*tripped)
            raise paused_error(self._agent_id, reason, tripped[2])

    def pause(self, reason: str, *, run_id: str | None = None) -> str:
        """Pause the agent, or only its run ``run_id`` (persisted: every process sees it),
        and record why. Returns the stored reason."""
        return self._pause(reason, None, checked_run_id(run_id))

    def resume(self, run_id: str | None = None) -> bool:
        """Lift a pause (set here or in any other process): the agent's and every paused
        run's, or (``run_id``) that run's only. Detection starts afresh for what resumes.
        Returns False (and records nothing) when nothing was paused."""
        run_id = checked_run_id(run_id)
        if run_id is not None:
            return self._resume_run(run_id)
        resumed = False
        row = self._store.agent(self._agent_id)
        if row is not None and row.status == "paused":
            self._guard.resumed()
            self._after(lambda: self._commit("resumed", {}, status=("active", None)))
            resumed = True
        if row is not None:
            for run in self._store.runs(self._agent_id, status="paused"):
                resumed = self._resume_run(run.run_id) or resumed
        return resumed

    def _resume_run(self, run_id: str) -> bool:
        _, run = self._store.agent_and_run(self._agent_id, run_id)
        if run is None or run.status != "paused":
            return False
        state = self._guard.runs.peek(run_id)
        if state is not None:
            self._guard.resumed_run(state)
        op = SetRunStatus(run_id, "active")
        try:
            self._after(lambda: self._commit("resumed", {"run_id": run_id}, ops=[op]))
        except NotFound:  # resumed in another process meanwhile
            return False
        return True

    @property
    def paused(self) -> bool:
        """Whether a pause is in effect: the agent's, or one of its runs' (then
        ``resume()`` lifts it; ``runs(status="paused")`` says which)."""
        row = self._store.agent(self._agent_id)
        if row is None:
            return False
        return row.status == "paused" or bool(
            self._store.runs(self._agent_id, status="paused", limit=1)
        )

    def runs(self, *, status: str | None = None, limit: int | None = None) -> list[RunInfo]:
        """The agent's runs (every run id its events carry), the most recently active
        first: id, status, first and last activity, events, pause reason. ``status``:
        only ``"active"`` or only ``"paused"`` ones."""
        if status is not None and status not in RUN_STATUSES:
            raise InvalidInput(f"status must be None, 'active' or 'paused', not {status!r}")
        rows = self._store.runs(self._agent_id, status=status, limit=checked_limit(limit))
        return [_run_info(r) for r in rows]

    def run_info(self, run_id: str) -> RunInfo | None:
        """Run ``run_id`` as :meth:`runs` lists it (one indexed read, not the whole list);
        None when no event of the agent carries that run id."""
        row = self._store.run_activity(self._agent_id, checked_run_id(run_id))
        return None if row is None else _run_info(row)


def _run_info(r: RunActivityRow) -> RunInfo:
    return RunInfo(
        r.run_id,
        r.status,
        r.first_seen,
        r.last_seen,
        r.events,
        reason_of(r.status_reason) if r.status == "paused" else None,
    )
