"""What the middleware and the callback handler share: reading tool results and model usage
out of LangChain objects, pricing, and the messages that explain a pause."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from octopoda import AgentPaused, InvalidInput

__all__ = [
    "Prices",
    "blocked_tool_message",
    "cost_usd",
    "is_blocked_tool_message",
    "is_control_flow",
    "model_name",
    "paused_note",
    "text_of",
    "token_usage",
    "tool_outcome",
]

Prices = Mapping[str, tuple[float, float]]
"""USD per million input tokens and per million output tokens, by model name."""


def check_prices(prices: Prices | None) -> dict[str, tuple[float, float]]:
    out: dict[str, tuple[float, float]] = {}
    for name, pair in (prices or {}).items():
        try:
            per_in, per_out = (float(p) for p in pair)
        except (TypeError, ValueError):
            raise InvalidInput(
                f"prices[{name!r}] must be (usd per 1M input tokens, usd per 1M output tokens),"
                f" not {pair!r}"
            ) from None
        if per_in < 0 or per_out < 0:
            raise InvalidInput(f"prices[{name!r}] must not be negative, got {pair!r}")
        out[str(name)] = (per_in, per_out)
    return out


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
    token usage), else ``prices`` times the tokens, else 0."""
    meta = getattr(message, "response_metadata", None) or {}
    for source in (meta, meta.get("token_usage") or {}, meta.get("usage") or {}):
        if isinstance(source, Mapping):
            for key in ("cost_usd", "cost", "total_cost"):
                value = source.get(key)
                if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
                    return float(value)
    if name in prices:
        per_in, per_out = prices[name]
        return (tokens[0] * per_in + tokens[1] * per_out) / 1e6
    return 0.0


def paused_note(agent_id: str, reason: str) -> str:
    return (
        f"[octopoda] Agent {agent_id!r} is now paused: {reason}. Further tool calls are"
        " blocked until the agent is resumed (agent.resume())."
    )


def blocked_tool_message(tool_call: Mapping[str, Any], exc: AgentPaused) -> ToolMessage:
    """What the model (and the user) sees instead of the result of a blocked tool call."""
    name = str(tool_call.get("name") or "tool")
    return ToolMessage(
        content=(
            f"[octopoda] The tool {name!r} was not run: {exc} Do not call tools again;"
            " tell the user what happened."
        ),
        tool_call_id=str(tool_call.get("id") or ""),
        name=name,
        status="error",
        response_metadata={"octopoda": {"blocked": True}},
    )


def is_blocked_tool_message(message: Any) -> bool:
    """Whether ``message`` is a :func:`blocked_tool_message` (also once checkpointed)."""
    meta = getattr(message, "response_metadata", None) or {}
    octopoda = meta.get("octopoda") if isinstance(meta, dict) else None
    return isinstance(octopoda, dict) and octopoda.get("blocked") is True


def stopped_message(agent_id: str, exc: AgentPaused | None, reason: str) -> AIMessage:
    """The final answer the middleware gives instead of calling the model while paused."""
    why = exc.reason if exc is not None and exc.reason else reason
    return AIMessage(
        content=(
            f"Stopped: Octopoda paused agent {agent_id!r} ({why}). No more model or tool calls"
            " were made. Fix the cause, then call agent.resume() and run the agent again."
        ),
        response_metadata={"octopoda": {"paused": True, "reason": why}},
    )
