"""Offline test helpers: a scripted model that works on every supported SDK version.

On openai-agents 0.21+ these are the SDK's own ``agents.testing.ScriptedModel``,
``function_call`` and ``assistant_message``. On older versions they are a small stand-in
with the same call shape (a list of steps, each the output items of one model call)::

    model = ScriptedModel([
        [function_call("add", {"a": 2, "b": 3}, call_id="c1")],
        [assistant_message("The sum is 5.")],
    ])
    agent = Agent(name="calc", model=model, tools=[add])

No network, no API key.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = ["ScriptedModel", "assistant_message", "function_call", "usage"]


def usage(input_tokens: int = 0, output_tokens: int = 0) -> Any:
    """An ``agents.Usage`` for one model call, for scripting token counts."""
    from agents import Usage

    return Usage(
        requests=1,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        total_tokens=input_tokens + output_tokens,
    )


try:  # openai-agents >= 0.21
    from agents.testing import (  # type: ignore[import-not-found,unused-ignore]
        ScriptedModel,
        assistant_message,
        function_call,
    )
except ImportError:  # openai-agents < 0.21: the stand-in
    from agents.items import ModelResponse
    from agents.models.interface import Model
    from openai.types.responses import (
        ResponseFunctionToolCall,
        ResponseOutputMessage,
        ResponseOutputText,
    )

    def function_call(  # type: ignore[misc,unused-ignore]
        name: str,
        arguments: str | Mapping[str, Any],
        *,
        call_id: str,
        item_id: str | None = None,
    ) -> Any:
        """One function-tool call output item (as ``agents.testing.function_call``)."""
        text = (
            arguments
            if isinstance(arguments, str)
            else json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))
        )
        return ResponseFunctionToolCall(
            id=call_id if item_id is None else item_id,
            call_id=call_id,
            type="function_call",
            name=name,
            arguments=text,
        )

    def assistant_message(  # type: ignore[misc,unused-ignore]
        text: str, *, item_id: str = "scripted-message"
    ) -> Any:
        """One assistant text output item (as ``agents.testing.assistant_message``)."""
        return ResponseOutputMessage(
            id=item_id,
            type="message",
            role="assistant",
            status="completed",
            content=[ResponseOutputText(text=text, type="output_text", annotations=[])],
        )

    class ScriptedModel(Model):  # type: ignore[no-redef,unused-ignore]
        """Plays back one step (a list of output items, or a ``ModelResponse``) per call."""

        def __init__(self, steps: Iterable[Any] = (), *, default_usage: Any = None) -> None:
            self._steps: list[Any] = list(steps)
            self._default_usage = default_usage
            self.calls: list[Any] = []

        @property
        def remaining_steps(self) -> int:
            return len(self._steps)

        def assert_complete(self) -> None:
            if self._steps:
                raise AssertionError(f"{len(self._steps)} scripted model step(s) not consumed")

        async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
            self.calls.append((args, kwargs))
            if not self._steps:
                raise AssertionError("the scripted model has no step left for this call")
            step = self._steps.pop(0)
            if isinstance(step, BaseException):
                raise step
            if isinstance(step, ModelResponse):
                return step
            output: Sequence[Any] = step
            return ModelResponse(
                output=list(output),
                usage=self._default_usage if self._default_usage is not None else usage(),
                response_id=None,
            )

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError("the scripted stand-in does not stream")
