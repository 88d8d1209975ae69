"""What the middleware and the callback handler share: reading tool results, model usage and
the thread out of LangChain objects, and the messages that explain a pause (their texts are
the adapter kit's, ``octopoda.integrations``)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any, Final

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from octopoda import AgentPaused
from octopoda.integrations import Verdict, cost_of, stopped_text

__all__ = [
    "blocked_tool_message",
    "call_id_of_message",
    "cost_usd",
    "is_blocked_tool_message",
    "is_control_flow",
    "model_name",
    "run_of_thread",
    "stopped_message",
    "text_of",
    "thread_of_config",
    "token_usage",
    "tool_outcome",
]

MAX_RUN_CHARS: Final = 512  # what the core takes as a run id
_LC_RUN_ID = re.compile(r"^(?:lc_)?run-+([0-9a-fA-F-]{36})(?:-\d+)?$")


def run_of_thread(thread_id: Any) -> str | None:
    """The run id of a LangGraph thread id (any str, int or UUID as LangGraph takes it);
    None when there is none (the agent's default run). A thread id longer than the core
    takes is kept as its start and a digest of the whole."""
    if thread_id is None:
        return None
    text = str(thread_id)
    if not text:
        return None
    if len(text) > MAX_RUN_CHARS or "\x00" in text:
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        text = f"{text[:400].replace(chr(0), '')}~{digest}"
    return text


def thread_of_config(config: Any) -> str | None:
    """The run id of a runnable config: its ``configurable.thread_id`` (None: no thread)."""
    if not isinstance(config, Mapping):
        return None
    configurable = config.get("configurable")
    if not isinstance(configurable, Mapping):
        return None
    return run_of_thread(configurable.get("thread_id"))


def call_id_of_message(message: Any) -> str | None:
    """The LLM run id behind an AIMessage (LangChain ids its messages ``lc_run--<run id>-0``
    or ``run-<run id>``), else the message's own id, else None."""
    message_id = getattr(message, "id", None)
    if not isinstance(message_id, str) or not message_id:
        return None
    found = _LC_RUN_ID.match(message_id)
    return found.group(1) if found else message_id[:MAX_RUN_CHARS]


def is_control_flow(exc: BaseException) -> bool:
    """LangGraph's interrupts and other bubble-up signals: not tool failures."""
    try:
        from langgraph.errors import GraphBubbleUp
    except ImportError:  # pragma: no cover - langgraph is always there with the checkpointer
        return False
    return isinstance(exc, GraphBubbleUp)


def text_of(content: Any) -> str:
    """A message's content as text (list content: its text parts joined)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and isinstance(block.get("text"), str):
                parts.append(block["text"])
        return "".join(parts)
    return str(content)


def tool_outcome(result: Any) -> tuple[Any, str | None]:
    """``(result, error)`` of what a tool call returned: a ``ToolMessage`` with
    ``status="error"`` is a failure; a ``Command`` is summarised by its messages."""
    if isinstance(result, ToolMessage):
        text = text_of(result.content)
        return (None, text or "error") if result.status == "error" else (text, None)
    update = getattr(result, "update", None)  # langgraph.types.Command
    if update is not None or type(result).__name__ == "Command":
        messages = update.get("messages") if isinstance(update, dict) else None
        if isinstance(messages, list):
            for message in messages:
                if isinstance(message, ToolMessage):
                    return tool_outcome(message)
        return {"command": repr(result)[:200]}, None
    if isinstance(result, BaseMessage):
        return text_of(result.content), None
    return result, None


def token_usage(message: Any, llm_output: Mapping[str, Any] | None = None) -> tuple[int, int]:
    """``(input tokens, output tokens)`` a model response reports (0 when it does not)."""
    usage = getattr(message, "usage_metadata", None)
    if usage:
        return int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0)
    for source in (getattr(message, "response_metadata", None), llm_output):
        if not source:
            continue
        raw = source.get("token_usage") or source.get("usage")
        if isinstance(raw, Mapping):
            tokens_in = raw.get("prompt_tokens", raw.get("input_tokens", 0))
            tokens_out = raw.get("completion_tokens", raw.get("output_tokens", 0))
            return int(tokens_in or 0), int(tokens_out or 0)
    return 0, 0


def model_name(message: Any, model: Any = None, fallback: str | None = None) -> str:
    """The model's name from the response metadata, the model object, or ``fallback``."""
    meta = getattr(message, "response_metadata", None) or {}
    for key in ("model_name", "model", "model_id"):
        if isinstance(meta.get(key), str) and meta[key]:
            return str(meta[key])
    for attr in ("model_name", "model", "model_id"):
        value = getattr(model, attr, None)
        if isinstance(value, str) and value:
            return value
    if fallback:
        return fallback
    return type(model).__name__ if model is not None else "unknown"


def cost_usd(
    message: Any,
    name: str,
    tokens: tuple[int, int],
    prices: Mapping[str, tuple[float, float]],
) -> float:
    """The response's own cost when it reports one (``cost``/``cost_usd`` in its metadata or
    token usage), else ``cost_of`` the price table (0 for a model it does not name)."""
    meta = getattr(message, "response_metadata", None) or {}
    for source in (meta, meta.get("token_usage") or {}, meta.get("usage") or {}):
        if isinstance(source, Mapping):
            for key in ("cost_usd", "cost", "total_cost"):
                value = source.get(key)
                if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
                    return float(value)
    return cost_of(prices, name, tokens[0], tokens[1])


def blocked_tool_message(tool_call: Mapping[str, Any], verdict: Verdict) -> ToolMessage:
    """What the model (and the user) sees instead of the result of a blocked tool call."""
    name = str(tool_call.get("name") or "tool")
    return ToolMessage(
        content=verdict.blocked_tool_text(name),
        tool_call_id=str(tool_call.get("id") or ""),
        name=name,
        status="error",
        response_metadata={"octopoda": {"blocked": True, "run_id": verdict.run_id}},
    )


def is_blocked_tool_message(message: Any) -> bool:
    """Whether ``message`` is a :func:`blocked_tool_message` (also once checkpointed)."""
    meta = getattr(message, "response_metadata", None) or {}
    octopoda = meta.get("octopoda") if isinstance(meta, dict) else None
    return isinstance(octopoda, dict) and octopoda.get("blocked") is True


def stopped_message(agent_id: str, exc: AgentPaused, reason: str | None = None) -> AIMessage:
    """The final answer the middleware gives instead of calling the model while the agent or
    the run ``exc`` names is paused (``reason``: what to say instead of ``exc``'s)."""
    if reason is not None:
        exc = AgentPaused(str(exc), reason, exc.signal, run_id=exc.run_id)
    why = exc.reason or "paused"
    return AIMessage(
        content=stopped_text(agent_id, exc),
        response_metadata={"octopoda": {"paused": True, "reason": why, "run_id": exc.run_id}},
    )
