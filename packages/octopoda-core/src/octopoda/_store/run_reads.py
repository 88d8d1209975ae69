"""The reads of runs, for every SQL backend: a run's status beside its agent's in one
statement (the breaker's hot path), and an agent's runs with their activity.

A run is what the events of one ``payload["run_id"]`` form (the ``events.run_id`` column,
indexed for the events that have one). Its status lives in the ``runs`` table, written
only with the ``paused`` or ``resumed`` event of that run (:class:`~.ops.SetRunStatus`);
a run without a row there is active. Activity (first and last event, how many) is read
from the events themselves, so it is never stale and costs nothing per action.
"""

from __future__ import annotations

from typing import Any, ClassVar

from .._records import Event
from .reads import AGENT_COLS, Dialect
from .rows import AgentRow, RunActivityRow, RunRow, agent_row

__all__ = ["RunReads", "RunSql", "run_of"]

RUN_COLS = "run_id, status, status_reason, changed_at, changed_seq"


def run_of(event: Event) -> str | None:
    """The run an event belongs to (its ``events.run_id``): ``payload["run_id"]`` when it
    is a str, else None."""
    run = event.payload.get("run_id")
    return run if type(run) is str else None


class RunSql:
    """One dialect's statements about runs, built once."""

    def __init__(self, dialect: Dialect) -> None:
        q = dialect.sql
        agent_cols = ", ".join("a." + c for c in AGENT_COLS.split(", "))
        run_cols = ", ".join("r." + c for c in RUN_COLS.split(", "))
        # params: run_id, agent
        self.agent_and_run = q(
            f"SELECT {agent_cols}, {run_cols} FROM agents a"
            " LEFT JOIN runs r ON r.agent = a.id AND r.run_id = ? WHERE a.id = ?"
        )
        activity = (
            "SELECT run_id, MIN(time) AS first_seen, MAX(time) AS last_seen,"
            " COUNT(*) AS events, MAX(seq) AS last_seq FROM events"
            " WHERE agent = ? AND run_id IS NOT NULL GROUP BY run_id"
        )
        listed = (
            "SELECT x.run_id, x.first_seen, x.last_seen, x.events, x.last_seq,"
            f" COALESCE(r.status, 'active'), r.status_reason FROM ({activity}) x"
            " LEFT JOIN runs r ON r.agent = ? AND r.run_id = x.run_id"
        )
        # params: agent, agent[, status]
        self.runs = q(listed + " ORDER BY x.last_seq DESC")
        # params: agent, run_id, agent. One run's activity (the run_id index, not a scan).
        self.run = q(
            listed.replace(
                "WHERE agent = ? AND run_id IS NOT NULL", "WHERE agent = ? AND run_id = ?"
            )
        )
        self.runs_with_status = q(
            listed + " WHERE COALESCE(r.status, 'active') = ? ORDER BY x.last_seq DESC"
        )
        # params: agent, status. The runs of one stored status (paused): from their rows.
        self.runs_in_table = q(
            "SELECT r.run_id, MIN(e.time), MAX(e.time), COUNT(e.seq), MAX(e.seq), r.status,"
            " r.status_reason FROM runs r"
            " LEFT JOIN events e ON e.agent = r.agent AND e.run_id = r.run_id"
            " WHERE r.agent = ? AND r.status = ?"
            " GROUP BY r.run_id, r.status, r.status_reason ORDER BY MAX(e.seq) DESC"
        )
        self.limit = f" LIMIT {dialect.param}"


class RunReads:
    """The run reads of the ``Store`` protocol. A backend sets ``_run_sql`` (its dialect's
    :class:`RunSql`) and provides ``_fetchone`` and ``_fetchall``."""

    _run_sql: ClassVar[RunSql]

    def _fetchone(self, sql: str, params: Any) -> Any:
        raise NotImplementedError

    def _fetchall(self, sql: str, params: Any) -> list[Any]:
        raise NotImplementedError

    def agent_and_run(self, agent: str, run_id: str) -> tuple[AgentRow | None, RunRow | None]:
        """The agent's row and its run ``run_id``'s status row (None: never paused), in
        one statement."""
        r = self._fetchone(self._run_sql.agent_and_run, (run_id, agent))
        if r is None:
            return None, None
        return agent_row(r[:7]), (None if r[7] is None else RunRow(*r[7:]))

    def run_activity(self, agent: str, run_id: str) -> RunActivityRow | None:
        """Run ``run_id`` of the agent with its activity and status (None: no event of the
        agent carries that run id)."""
        r = self._fetchone(self._run_sql.run, (agent, run_id, agent))
        return None if r is None else RunActivityRow(*r)

    def runs(
        self, agent: str, *, status: str | None = None, limit: int | None = None
    ) -> list[RunActivityRow]:
        """The agent's runs, the most recently active first (``status``: only those)."""
        sql = self._run_sql
        params: list[Any]
        if status == "paused":  # few: read from their rows
            query, params = sql.runs_in_table, [agent, status]
        elif status is not None:
            query, params = sql.runs_with_status, [agent, agent, status]
        else:
            query, params = sql.runs, [agent, agent]
        if limit is not None:
            query += sql.limit
            params.append(limit)
        return [RunActivityRow(*r) for r in self._fetchall(query, params)]
