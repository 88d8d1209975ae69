"""What ``octopoda.init()`` installs in the Agents SDK: run hooks in every run.

``RunHooks`` are the SDK's seam that sees, and can stop, every tool call, model call and
handoff of a run, but they are passed per run (``Runner.run(..., hooks=)``). The one
process-wide place every ``Runner.run``, ``run_sync`` and ``run_streamed`` goes through
is the default agent runner (``agents.run.set_default_agent_runner``, exported by the
SDK from 0.8 to 0.24 and marked experimental there). ``activate`` puts a runner there
that hands each run to the runner it replaced with :class:`OctopodaRunHooks` added: as
the run's hooks when it has none, joined with them when it has (the run's own hooks
still get every call), and not at all when they already are ``OctopodaRunHooks`` (a
program that wires its own records once, where it says). ``Deactivate`` puts the
replaced runner back, and if another runner has wrapped ours meanwhile, ours passes
runs through untouched from then on.

Every SDK agent is the one Octopoda agent of the :class:`InitContext`; each action's
run is its conversation (the session's id, the trace's group id, else one run per
``Runner.run``), as with hand-wired hooks.
"""

from __future__ import annotations

import threading
from typing import Any

from agents import RunHooks
from agents.run import AgentRunner, get_default_agent_runner, set_default_agent_runner

from octopoda.integrations import Deactivate, InitContext

from ._hooks import OctopodaRunHooks

__all__ = ["InitAgentRunner", "JoinedRunHooks", "activate"]

_LOCK = threading.Lock()


class JoinedRunHooks(RunHooks[Any]):
    """Octopoda's hooks, then a run's own hooks, for every hook of a run. Octopoda's come
    first so that a paused run stops before the run's own hooks see the call."""

    def __init__(self, octopoda: OctopodaRunHooks, own: RunHooks[Any]) -> None:
        self.octopoda = octopoda
        self.own = own

    async def on_llm_start(self, *args: Any, **kwargs: Any) -> None:
        await self.octopoda.on_llm_start(*args, **kwargs)
        await self.own.on_llm_start(*args, **kwargs)

    async def on_llm_end(self, *args: Any, **kwargs: Any) -> None:
        await self.octopoda.on_llm_end(*args, **kwargs)
        await self.own.on_llm_end(*args, **kwargs)

    async def on_agent_start(self, *args: Any, **kwargs: Any) -> None:
        await self.octopoda.on_agent_start(*args, **kwargs)
        await self.own.on_agent_start(*args, **kwargs)

    async def on_agent_end(self, *args: Any, **kwargs: Any) -> None:
        await self.octopoda.on_agent_end(*args, **kwargs)
        await self.own.on_agent_end(*args, **kwargs)

    async def on_handoff(self, *args: Any, **kwargs: Any) -> None:
        await self.octopoda.on_handoff(*args, **kwargs)
        await self.own.on_handoff(*args, **kwargs)

    async def on_tool_start(self, *args: Any, **kwargs: Any) -> None:
        await self.octopoda.on_tool_start(*args, **kwargs)
        await self.own.on_tool_start(*args, **kwargs)

    async def on_tool_end(self, *args: Any, **kwargs: Any) -> None:
        await self.octopoda.on_tool_end(*args, **kwargs)
        await self.own.on_tool_end(*args, **kwargs)


def _records(hooks: Any) -> bool:
    """Whether a run's hooks already record into Octopoda."""
    return isinstance(hooks, OctopodaRunHooks) or (
        isinstance(hooks, JoinedRunHooks) and isinstance(hooks.octopoda, OctopodaRunHooks)
    )


class InitAgentRunner(AgentRunner):
    """The default runner while ``init`` is active: each run goes to ``inner`` (the runner
    it replaced) with ``hooks`` added; with ``hooks`` None it passes runs through."""

    def __init__(self, inner: AgentRunner, hooks: OctopodaRunHooks) -> None:
        super().__init__()
        self.inner = inner
        self.hooks: OctopodaRunHooks | None = hooks

    def _options(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        hooks, own = self.hooks, kwargs.get("hooks")
        if hooks is None or _records(own):
            return kwargs
        return {**kwargs, "hooks": hooks if own is None else JoinedRunHooks(hooks, own)}

    async def run(self, starting_agent: Any, input: Any, **kwargs: Any) -> Any:
        return await self.inner.run(starting_agent, input, **self._options(kwargs))

    def run_sync(self, starting_agent: Any, input: Any, **kwargs: Any) -> Any:
        return self.inner.run_sync(starting_agent, input, **self._options(kwargs))

    def run_streamed(self, starting_agent: Any, input: Any, **kwargs: Any) -> Any:
        return self.inner.run_streamed(starting_agent, input, **self._options(kwargs))


def _unwrapped(runner: AgentRunner) -> AgentRunner:
    """``runner`` without the deactivated ``InitAgentRunner``s on top of it."""
    while isinstance(runner, InitAgentRunner) and runner.hooks is None:
        runner = runner.inner
    return runner


def activate(context: InitContext) -> Deactivate:
    """Make the default runner add hooks recording into ``context``'s agent; the returned
    function undoes exactly this activation. A second activation's runner wraps the
    first's and its hooks win (the first runner sees them and adds none): each call is
    recorded once."""
    hooks = OctopodaRunHooks._of(context.runtimes, context.prices)
    with _LOCK:
        runner = InitAgentRunner(get_default_agent_runner(), hooks)
        set_default_agent_runner(runner)

    def deactivate() -> None:
        with _LOCK:
            runner.hooks = None  # inert wherever it still is
            current = get_default_agent_runner()
            if isinstance(current, InitAgentRunner):
                set_default_agent_runner(_unwrapped(current))

    return deactivate
