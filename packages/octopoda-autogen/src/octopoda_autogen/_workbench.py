"""GuardedWorkbench: an AutoGen ``Workbench`` (``AssistantAgent(workbench=...)``) whose tool
calls an :class:`OctopodaGuard` guards and records the way its guarded tools are: a paused
run's call is refused (the agent gets an error result that says why), and each call that ran
is recorded with its arguments, result or error, duration and call id. Everything else
(listing tools, start/stop/reset, save/load state) is the wrapped workbench's.

``autogen_core.tools.Workbench`` exists from autogen-core 0.5 on; this module is imported
only by :meth:`OctopodaGuard.workbench`, so the package still imports on 0.4.x.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from autogen_core import CancellationToken
from autogen_core.tools import TextResultContent, ToolResult, ToolSchema, Workbench

from octopoda.integrations import parse_arguments

if TYPE_CHECKING:
    from ._guard import OctopodaGuard

__all__ = ["GuardedWorkbench"]


class GuardedWorkbench(Workbench):
    """``inner`` with each ``call_tool`` guarded and recorded as ``agent_name``'s call."""

    def __init__(self, guard: OctopodaGuard, agent_name: str, inner: Workbench) -> None:
        self._octopoda = guard
        self._agent = agent_name
        self.inner = inner

    async def list_tools(self) -> list[ToolSchema]:
        return list(await self.inner.list_tools())

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        cancellation_token: CancellationToken | None = None,
        call_id: str | None = None,
    ) -> ToolResult:
        from ._guard import blocked_text

        guard, args = self._octopoda, dict(arguments or {})
        verdict = await guard.guard(self._agent, name, parse_arguments(args))
        if verdict is not None:
            text = blocked_text(verdict, name)
            return ToolResult(name=name, result=[TextResultContent(content=text)], is_error=True)
        started = time.perf_counter()
        try:
            if call_id is None:
                result = await self.inner.call_tool(name, arguments, cancellation_token)
            else:
                result = await self.inner.call_tool(
                    name, arguments, cancellation_token, call_id=call_id
                )
        except Exception as exc:
            elapsed = (time.perf_counter() - started) * 1000
            await guard.record_tool(
                self._agent, name, args, error=exc, duration_ms=elapsed, call_id=call_id
            )
            raise
        elapsed = (time.perf_counter() - started) * 1000
        text = result.to_text(replace_image="[image]")
        await guard.record_tool(
            self._agent,
            name,
            args,
            result=None if result.is_error else text,
            error=text if result.is_error else None,
            duration_ms=elapsed,
            call_id=call_id,
        )
        return result

    async def start(self) -> None:
        await self.inner.start()

    async def stop(self) -> None:
        await self.inner.stop()

    async def reset(self) -> None:
        await self.inner.reset()

    async def save_state(self) -> Mapping[str, Any]:
        return await self.inner.save_state()

    async def load_state(self, state: Mapping[str, Any]) -> None:
        await self.inner.load_state(state)
