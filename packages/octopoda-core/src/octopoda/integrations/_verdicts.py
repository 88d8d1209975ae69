"""The breaker's verdict as text a framework can show: to the model instead of a tool's
result, as the run's final answer, as a note on a result, or as an exception message."""

from typing import Any, NamedTuple

from .._errors import AgentPaused

__all__ = ["FrameworkCall", "Verdict", "blocked_tool_text", "paused_note", "stopped_text"]


class FrameworkCall(NamedTuple):
    """One call as the framework named it: the tool (or what was done, such as "handoff to
    billing"), the framework's call id ("" when it has none) and the arguments' text."""

    name: str
    call_id: str
    arguments: str

    def text(self) -> str:
        """``fetch({"url": "..."}) call_id=call_1``."""
        return f"{self.name}({self.arguments})" + (
            f" call_id={self.call_id}" if self.call_id else ""
        )


def _paused_what(agent_id: str, run_id: str | None) -> str:
    return f"agent {agent_id!r}" if run_id is None else f"run {run_id!r} of agent {agent_id!r}"


def _resume_call(run_id: str | None) -> str:
    return "agent.resume()" if run_id is None else f"agent.resume(run_id={run_id!r})"


def paused_note(agent_id: str, reason: str, run_id: str | None = None) -> str:
    """What to append to the result of the call that paused the agent (or its run)."""
    if run_id is None:
        return (
            f"[octopoda] Agent {agent_id!r} is now paused: {reason}. Further tool calls are"
            " blocked until the agent is resumed (agent.resume())."
        )
    return (
        f"[octopoda] Run {run_id!r} of agent {agent_id!r} is now paused: {reason}. Further"
        f" tool calls in this run are blocked until it is resumed ({_resume_call(run_id)})."
    )


def blocked_tool_text(tool: str, exc: AgentPaused) -> str:
    """What the model (and the user) sees instead of the result of a tool call the breaker
    refused."""
    return (
        f"[octopoda] The tool {tool!r} was not run: {exc} Do not call tools again;"
        " tell the user what happened."
    )


def stopped_text(agent_id: str, exc: AgentPaused | None, reason: str = "paused") -> str:
    """The final answer to give instead of calling the model while paused (``exc``: the
    refusal, whose reason and run it names; else ``reason``)."""
    why = exc.reason if exc is not None and exc.reason else reason
    run_id = exc.run_id if exc is not None else None
    return (
        f"Stopped: Octopoda paused {_paused_what(agent_id, run_id)} ({why}). No more model or"
        f" tool calls were made. Fix the cause, then call {_resume_call(run_id)} and run the"
        " agent again."
    )


class Verdict(NamedTuple):
    """The breaker refused an action: which agent and run, why, the loop signal (a dict,
    or None for a cap or a pause by hand), the framework's calls that formed the loop
    (when the recorder saw them), and the core's :class:`~octopoda.AgentPaused`."""

    agent_id: str
    run_id: str | None
    reason: str
    signal: dict[str, Any] | None
    calls: tuple[FrameworkCall, ...]
    error: AgentPaused

    @property
    def message(self) -> str:
        """The refusal with the framework's calls named: for an exception a framework
        shows (``"... The calls: fetch({...}) call_id=c1; ..."``)."""
        text = str(self.error)
        if self.calls:
            text = f"{text} The calls: {'; '.join(c.text() for c in self.calls)}."
        return text

    def blocked_tool_text(self, tool: str) -> str:
        return blocked_tool_text(tool, self.error)

    def stopped_text(self) -> str:
        return stopped_text(self.agent_id, self.error)
