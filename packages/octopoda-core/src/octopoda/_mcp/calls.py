"""How a tool call runs: its agent's runtime, one call at a time, the call itself recorded
as a ``tool_call`` event (so a client repeating a failing call is a detected loop), and
errors turned into tool errors carrying the :class:`~octopoda.OctopodaError` message."""

import inspect
import logging
import os
import threading
from collections.abc import Callable
from typing import Any, Final, NamedTuple

from mcp.server.mcpserver.exceptions import ToolError

from .._errors import OctopodaError
from .._runtime.client import Octopoda
from .._runtime.runtime import AgentRuntime
from .._store.protocol import Store

__all__ = ["DEFAULT_AGENT", "MCP_RUN", "Calls", "ToolSpec"]

log = logging.getLogger("octopoda.mcp")

DEFAULT_AGENT: Final = "mcp"
"""The agent of calls without ``agent_id`` when ``OCTOPODA_AGENT_ID`` is not set."""
MCP_RUN: Final = "mcp"
"""The run the MCP server records its tool calls in (loop detection is per run)."""


class ToolSpec(NamedTuple):
    """A tool: ``fn(runtime, **arguments)`` (or ``fn(calls, **arguments)`` for store-wide
    tools, ``per_agent=False``) and its MCP annotations."""

    name: str
    fn: Callable[..., dict[str, Any]]
    read_only: bool
    destructive: bool
    idempotent: bool
    per_agent: bool = True
    title: str | None = None
    output: Any = None
    """The result's type for its output schema (a TypedDict); None: any object."""


class Calls:
    """The server's store and agents. Calls run one at a time (the runtime's caches and
    the store's writer are per process): a second client waits, it never interleaves."""

    def __init__(self, store: Store | str | None = None, agent_id: str | None = None) -> None:
        self.client = Octopoda(store)
        self.default_agent = agent_id or os.environ.get("OCTOPODA_AGENT_ID") or DEFAULT_AGENT
        self.lock = threading.Lock()
        self._specs: list[ToolSpec] = []

    @property
    def store(self) -> Store:
        return self.client.store

    def runtime(self, agent_id: str | None) -> AgentRuntime:
        return self.client.agent(self.default_agent if agent_id is None else agent_id)

    def close(self) -> None:
        self.client.close()

    def call(self, spec: ToolSpec, arguments: dict[str, Any]) -> dict[str, Any]:
        agent_id = arguments.pop("agent_id", None)
        with self.lock:
            try:
                runtime = self.runtime(agent_id)
            except OctopodaError as exc:
                self._record(self.runtime(None), spec, arguments, None, exc)
                raise ToolError(_message(exc)) from None
            try:
                target: Any = runtime if spec.per_agent else self
                result = spec.fn(target, **arguments)
            except OctopodaError as exc:
                loop = self._record(runtime, spec, arguments, None, exc)
                raise ToolError(_message(exc) + _loop_text(loop)) from None
            except Exception as exc:
                self._record(runtime, spec, arguments, None, exc)
                raise
            loop = self._record(runtime, spec, arguments, result, None)
            if loop is not None:
                result = {**result, "loop": loop}
            return result

    def rejected(self, name: str, arguments: dict[str, Any], message: str) -> str:
        """Record a call whose arguments failed the tool's schema (it never ran); the loop
        text to add to its error, if the client keeps sending it."""
        spec = next((s for s in self._specs if s.name == name), None)
        if spec is None:
            return ""
        args = dict(arguments)
        agent_id = args.pop("agent_id", None)
        with self.lock:
            try:
                runtime = self.runtime(agent_id if isinstance(agent_id, str) else None)
            except OctopodaError:
                runtime = self.runtime(None)
            return _loop_text(self._record(runtime, spec, args, None, ValueError(message)))

    def _record(
        self,
        runtime: AgentRuntime,
        spec: ToolSpec,
        arguments: dict[str, Any],
        result: dict[str, Any] | None,
        error: BaseException | None,
    ) -> dict[str, Any] | None:
        """Record the call in the agent's chain; the loop report of the MCP run, if any."""
        try:
            runtime.record_tool_call(
                spec.name,
                arguments,
                result=None if error is not None else _result_digest(result),
                error=None if error is None else _message(error),
                run_id=MCP_RUN,
            )
            status = runtime.loop_status(MCP_RUN)
        except OctopodaError as exc:  # a paused agent, a damaged chain: the call stands
            log.warning("could not record MCP tool call %s: %s", spec.name, exc)
            return None
        if status.state == "ok":
            return None
        return {
            "state": status.state,
            "signals": [
                {
                    "kind": s.kind,
                    "confidence": s.confidence,
                    "explanation": s.explanation,
                    "suggestion": s.suggestion,
                    "seqs": list(s.seqs),
                }
                for s in status.signals[:3]
            ],
        }

    def tool_function(self, spec: ToolSpec, agent_param: inspect.Parameter) -> Callable[..., Any]:
        """The function MCPServer registers: ``spec.fn``'s parameters (without its first),
        plus ``agent_id`` for per-agent tools; each call goes through :meth:`call`."""
        self._specs.append(spec)
        sig = inspect.signature(spec.fn, eval_str=True)
        params = [
            p.replace(kind=inspect.Parameter.KEYWORD_ONLY)
            for p in list(sig.parameters.values())[1:]
        ]
        if spec.per_agent:
            params.append(agent_param)

        def tool(**arguments: Any) -> dict[str, Any]:
            return self.call(spec, arguments)

        tool.__name__ = spec.name
        tool.__doc__ = spec.fn.__doc__
        tool.__signature__ = sig.replace(  # type: ignore[attr-defined]
            parameters=params,
            return_annotation=dict[str, Any] if spec.output is None else spec.output,
        )
        return tool


def _message(error: BaseException) -> str:
    if type(error) is ValueError:  # arguments the schema refused (see Calls.rejected)
        return str(error)
    return f"{type(error).__name__}: {error}"


def _loop_text(loop: dict[str, Any] | None) -> str:
    if loop is None:
        return ""
    lines = [f"{s['kind']}: {s['explanation']} {s['suggestion']}" for s in loop["signals"]]
    return f"\n\nOctopoda loop detection ({loop['state']}): " + " | ".join(lines)


_VOLATILE: Final = frozenset({"seq", "hash", "created_at", "time", "next_cursor", "loop"})


def _result_digest(result: dict[str, Any] | None) -> Any:
    """What a call returned, without the fields that differ on every call (seqs, hashes,
    times): two calls that wrote or read the same thing then look the same to the
    retry detector."""
    if not isinstance(result, dict):
        return result
    return {k: v for k, v in result.items() if k not in _VOLATILE}
