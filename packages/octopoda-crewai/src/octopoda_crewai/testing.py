"""Offline stand-ins for CrewAI's models, for tests and examples (no API key, no network).

* :class:`ScriptedLLM`: a ``BaseLLM`` (ReAct text protocol: no function calling) that answers
  with its script, one reply per call, repeating the last one when the script runs out;
  ``usage=(prompt, completion)`` counts those tokens for each call, as CrewAI's own models
  count a provider's usage (``get_token_usage_summary()``).
* :class:`MemoryLLM`: what CrewAI's ``Memory`` asks its own model (extraction, scope and
  category inference, query analysis) answered with one JSON object that fits each of
  those questions (``memories`` is what extraction returns); consolidation: insert.
* :func:`hashed_words`: each word hashed into one of 64 buckets.
"""

from __future__ import annotations

import hashlib
import json
import threading
from typing import Any

from crewai.llms.base_llm import BaseLLM
from pydantic import BaseModel, PrivateAttr

__all__ = ["MemoryLLM", "ScriptedLLM", "action", "final", "hashed_words"]


def hashed_words(texts: list[str], dim: int = 64) -> list[list[float]]:
    """An embedder for ``Memory(embedder=...)``: each word hashed into one of ``dim``
    buckets, so texts that share words are similar."""
    out = []
    for text in texts:
        vector = [0.0] * dim
        for word in text.lower().split():
            word = word.strip(".,!?:;\"'()")
            if word:
                vector[int(hashlib.sha256(word.encode()).hexdigest(), 16) % dim] += 1.0
        out.append(vector)
    return out


def action(tool: str, args: dict[str, Any], thought: str = "I should use a tool") -> str:
    """A ReAct reply that calls ``tool`` with ``args``."""
    return f"Thought: {thought}\nAction: {tool}\nAction Input: {json.dumps(args)}"


def final(answer: str) -> str:
    """A ReAct reply that gives the final answer."""
    return f"Thought: I now know the final answer\nFinal Answer: {answer}"


class _Script:
    def __init__(self, script: list[str]) -> None:
        self.script = list(script)
        self.calls = 0
        self.seen: list[Any] = []
        self.lock = threading.Lock()

    def next(self, messages: Any) -> str:
        with self.lock:
            reply = self.script[min(self.calls, len(self.script) - 1)]
            self.calls += 1
            self.seen.append(messages)
        return reply


# BaseLLM is a pydantic model in crewai 1.15 (a plain ABC in 1.10 and 1.13): the scripted
# state lives in a private attribute there, in an ordinary one before.
_PYDANTIC = issubclass(BaseLLM, BaseModel)


class ScriptedLLM(BaseLLM):
    """Replies from ``script`` in order (the last one again once it runs out); with
    ``usage=(prompt, completion)``, each call counts that many tokens."""

    if _PYDANTIC:
        _state: _Script = PrivateAttr()
        _usage: tuple[int, int] | None = PrivateAttr(default=None)

    def __init__(
        self,
        script: list[str],
        model: str = "scripted",
        *,
        usage: tuple[int, int] | None = None,
    ) -> None:
        super().__init__(model=model)
        self._state = _Script(script)
        self._usage = usage

    @property
    def calls(self) -> int:
        return self._state.calls

    @property
    def seen(self) -> list[Any]:
        """The messages of every call, in order."""
        return self._state.seen

    def call(self, messages: Any, *args: Any, **kwargs: Any) -> str:
        reply = self._state.next(messages)
        if self._usage is not None:
            prompt, completion = self._usage
            self._track_token_usage_internal(
                {
                    "prompt_tokens": prompt,
                    "completion_tokens": completion,
                    "total_tokens": prompt + completion,
                }
            )
        return reply

    def supports_function_calling(self) -> bool:
        return False

    def supports_stop_words(self) -> bool:
        return False

    def get_context_window_size(self) -> int:
        return 8192


class MemoryLLM(BaseLLM):
    """The model of CrewAI's ``Memory``: one JSON answer for all its questions;
    ``memories`` is what extraction returns."""

    if _PYDANTIC:
        _answer: str = PrivateAttr()

    def __init__(
        self,
        memories: list[str] | None = None,
        scope: str = "/",
        categories: list[str] | None = None,
    ) -> None:
        super().__init__(model="memory-scripted")
        self._answer = json.dumps(
            {
                "memories": memories or [],
                "suggested_scope": scope,
                "categories": categories or [],
                "importance": 0.7,
                "extracted_metadata": {"entities": [], "dates": [], "topics": []},
                "keywords": [],
                "suggested_scopes": [scope],
                "complexity": "simple",
                "recall_queries": [],
                "time_filter": None,
            }
        )

    def call(self, messages: Any, *args: Any, **kwargs: Any) -> str:
        # the consolidation plan is the one answer whose model forbids other fields
        if "consolidat" in json.dumps(messages, default=str)[:2000].lower():
            return json.dumps({"actions": [], "insert_new": True, "insert_reason": "new"})
        return self._answer

    def supports_function_calling(self) -> bool:
        return False

    def get_context_window_size(self) -> int:
        return 8192
