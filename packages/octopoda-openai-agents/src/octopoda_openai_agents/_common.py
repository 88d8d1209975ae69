"""Pieces shared by the session, the run hooks and the tracing processor (the rest is the
core's adapter kit, ``octopoda.integrations``)."""

from __future__ import annotations

from typing import Any

from agents import AgentsException

from octopoda import AgentPaused, Store

__all__ = ["RunPaused", "StoreArg"]

StoreArg = Store | str | None
"""What ``store=`` accepts: an open store, a path or ``sqlite:///`` URL, or None for the
default store (``$OCTOPODA_DATABASE_URL``, else ``$OCTOPODA_HOME/octopoda.db``, else
``~/.octopoda/octopoda.db``)."""


class RunPaused(AgentPaused, AgentsException):
    """:class:`octopoda.AgentPaused`, raised from inside an Agents SDK run.

    It is also an ``agents.AgentsException``, which the SDK re-raises unchanged (it wraps
    other exceptions from hooks in ``UserError``), so ``Runner.run`` ends with it and
    ``except AgentPaused`` catches it. ``reason``, ``signal`` and ``run_id`` (the paused
    conversation; None when the whole agent is paused) are the core's; ``calls`` names the
    SDK tool calls (name, call id, arguments) that formed the loop, when known.
    """

    def __init__(
        self,
        message: str,
        reason: str = "",
        signal: Any = None,
        calls: tuple[tuple[str, str, str], ...] = (),
        *,
        run_id: str | None = None,
    ) -> None:
        super().__init__(message, reason, signal, run_id=run_id)
        self.calls = calls
