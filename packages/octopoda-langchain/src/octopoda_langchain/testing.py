"""Test helpers: a scripted chat model that calls tools, for offline agent tests.

``ScriptedChatModel`` answers by turn: the response is ``script[n]`` where ``n`` is the
number of AI messages already in the conversation (the last entry repeats). So a run that
is killed and resumed from a checkpoint continues the script where the conversation is,
which an iterator-based fake cannot do. Tool-call ids are made unique per turn.

    model = ScriptedChatModel(script=[
        tool_call("add", {"a": 2, "b": 3}),
        "The sum is 5.",
    ])
    agent = create_agent(model, tools=[add], checkpointer=OctopodaSaver("agent.db"))
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

__all__ = ["ScriptedChatModel", "tool_call"]


def tool_call(
    name: str, args: dict[str, Any] | None = None, *more: tuple[str, dict[str, Any]]
) -> AIMessage:
    """An AI message calling ``name(**args)`` (and, in parallel, each ``(name, args)`` of
    ``more``)."""
    calls = [(name, args or {}), *more]
    return AIMessage(
        content="",
        tool_calls=[
            {"name": n, "args": dict(a), "id": f"call-{i}", "type": "tool_call"}
            for i, (n, a) in enumerate(calls)
        ],
    )


class ScriptedChatModel(BaseChatModel):
    """A chat model that plays ``script`` by turn (see the module docstring). It reports token
    usage (words in and out) and ``response_metadata["model_name"]``."""

    script: list[Any]
    model_name: str = "scripted"

    @property
    def _llm_type(self) -> str:
        return "octopoda-scripted"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        if not self.script:
            raise ValueError("ScriptedChatModel has an empty script")
        turn = sum(1 for m in messages if isinstance(m, AIMessage))
        step = self.script[min(turn, len(self.script) - 1)]
        template = step if isinstance(step, AIMessage) else AIMessage(content=str(step))
        words_in = sum(len(str(m.content).split()) for m in messages)
        words_out = max(1, len(str(template.content).split()))
        message = AIMessage(
            content=template.content,
            tool_calls=[
                {**call, "id": f"{call.get('id') or 'call'}-t{turn}"}
                for call in template.tool_calls
            ],
            response_metadata={"model_name": self.model_name},
            usage_metadata={
                "input_tokens": words_in,
                "output_tokens": words_out,
                "total_tokens": words_in + words_out,
            },
        )
        return ChatResult(generations=[ChatGeneration(message=message)])
