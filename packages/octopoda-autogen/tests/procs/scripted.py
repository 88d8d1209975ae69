"""Scripted models and tools for the tests and their child processes (offline: AutoGen's
ReplayChatCompletionClient plays the model's answers)."""

from __future__ import annotations

import inspect
import json
from typing import Any

from autogen_core import FunctionCall
from autogen_core.models import CreateResult, RequestUsage
from autogen_ext.models.replay import ReplayChatCompletionClient

MODEL_INFO: Any = {
    "vision": False,
    "function_calling": True,
    "json_output": False,
    "family": "unknown",
    "structured_output": False,
}


def call(name: str, call_id: str, **arguments: Any) -> CreateResult:
    """A model answer that calls one tool."""
    return CreateResult(
        finish_reason="function_calls",
        content=[FunctionCall(id=call_id, name=name, arguments=json.dumps(arguments))],
        usage=RequestUsage(prompt_tokens=10, completion_tokens=5),
        cached=False,
    )


def client(
    *answers: str | CreateResult, cls: type[ReplayChatCompletionClient] = ReplayChatCompletionClient
) -> ReplayChatCompletionClient:
    if "model_info" in inspect.signature(ReplayChatCompletionClient).parameters:
        return cls(list(answers), model_info=MODEL_INFO)
    # autogen-ext 0.4.x's replay client takes no model_info and says it cannot call tools
    replay = cls(list(answers))
    replay._model_info = {k: v for k, v in MODEL_INFO.items() if k != "structured_output"}
    return replay


async def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


async def fetch(url: str) -> str:
    """Fetch a URL (this one always fails)."""
    raise RuntimeError(f"HTTP 503 from {url}")


async def lookup(city: str) -> str:
    """Look up the weather of a city."""
    return f"sunny in {city}"


class LoggingClient(ReplayChatCompletionClient):
    """A replay client that logs each call's ``LLMCallEvent`` (model ``gpt-test``, 200 prompt
    and 30 completion tokens) to ``autogen_core.events``, as autogen-ext's API clients do."""

    async def create(self, messages: Any, **kwargs: Any) -> CreateResult:
        import logging

        from autogen_core import EVENT_LOGGER_NAME
        from autogen_core.logging import LLMCallEvent

        result = await super().create(messages, **kwargs)
        event = LLMCallEvent(
            messages=[], response={"model": "gpt-test"}, prompt_tokens=200, completion_tokens=30
        )
        logging.getLogger(EVENT_LOGGER_NAME).info(event)
        return result
