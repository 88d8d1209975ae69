"""OctopodaChatCompletionContext: a model context that writes every message through.

``AssistantAgent`` adds each message to its ``model_context`` as it happens (the user's
message, the model's tool calls and thoughts, the tools' results, the answer), and reads
the context back before every model call. This context commits each message to Octopoda
before ``add_message`` returns, so a process killed mid-run loses nothing it had added: a
new process that opens the same ``context_id`` sees the conversation exactly.

Layout in the store: each conversation is an Octopoda agent, ``"autogen-context:" +
context_id`` (``agent_prefix``); message ``n`` (0, 1, 2, ... in the order added) is the key
``message/000000000042``, its value the message as AutoGen serialises it
(``LLMMessage``, JSON). ``clear`` and ``load_state`` write tombstones and record the next
index in the key ``meta``, so indexes are never reused and history stays whole.

``get_messages`` gives the whole conversation (``UnboundedChatCompletionContext``), or with
``buffer_size`` the last messages (``BufferedChatCompletionContext``), or with
``token_limit``/``model_client`` as many recent messages as fit
(``TokenLimitedChatCompletionContext``); the store always keeps every message.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from autogen_core import Component, ComponentModel
from autogen_core.model_context import ChatCompletionContext
from autogen_core.models import ChatCompletionClient, FunctionExecutionResultMessage, LLMMessage
from pydantic import BaseModel, TypeAdapter
from typing_extensions import Self

from octopoda import InvalidInput
from octopoda.integrations import run_blocking, run_settled

from ._common import StoreArg, open_runtime, store_url

__all__ = [
    "CONTEXT_AGENT_PREFIX",
    "OctopodaChatCompletionContext",
    "OctopodaChatCompletionContextConfig",
]

CONTEXT_AGENT_PREFIX = "autogen-context:"
"""The default agent-id prefix: conversation ``c1`` is Octopoda agent ``autogen-context:c1``."""

MESSAGE_PREFIX = "message/"
META_KEY = "meta"
_DIGITS = 12
_MESSAGES: TypeAdapter[Any] = TypeAdapter(LLMMessage)


def message_key(index: int) -> str:
    return f"{MESSAGE_PREFIX}{index:0{_DIGITS}d}"


class OctopodaChatCompletionContextConfig(BaseModel):
    """The declarative form of :class:`OctopodaChatCompletionContext`."""

    context_id: str
    store: str | None = None
    buffer_size: int | None = None
    token_limit: int | None = None
    model_client: ComponentModel | None = None
    initial_messages: list[LLMMessage] | None = None
    agent_prefix: str = CONTEXT_AGENT_PREFIX


class OctopodaChatCompletionContext(
    ChatCompletionContext, Component[OctopodaChatCompletionContextConfig]
):
    """``AssistantAgent(model_context=OctopodaChatCompletionContext("conversation-1", store))``.

    ``context_id`` names the conversation; the same id on the same store (in any process)
    is the same conversation. ``buffer_size``: ``get_messages`` gives the last that many
    messages (never starting on a tool result), as ``BufferedChatCompletionContext``.
    ``model_client`` (and optionally ``token_limit``): as many recent messages as fit, as
    ``TokenLimitedChatCompletionContext``. ``initial_messages`` start a conversation that
    the store does not hold yet.

    ``runtime`` is the conversation's :class:`octopoda.AgentRuntime`.
    """

    component_type = "chat_completion_context"
    component_config_schema = OctopodaChatCompletionContextConfig
    component_provider_override = "octopoda_autogen.OctopodaChatCompletionContext"

    def __init__(
        self,
        context_id: str,
        store: StoreArg = None,
        *,
        buffer_size: int | None = None,
        token_limit: int | None = None,
        model_client: ChatCompletionClient | None = None,
        initial_messages: list[LLMMessage] | None = None,
        agent_prefix: str = CONTEXT_AGENT_PREFIX,
    ) -> None:
        if not isinstance(context_id, str) or not context_id:
            raise InvalidInput(f"context_id must be a non-empty str, not {context_id!r}")
        _check_positive(buffer_size, "buffer_size")
        _check_positive(token_limit, "token_limit")
        if buffer_size is not None and (token_limit is not None or model_client is not None):
            raise InvalidInput("give buffer_size or a token limit (model_client), not both")
        if token_limit is not None and model_client is None:
            raise InvalidInput("token_limit needs model_client, whose count_tokens counts them")
        super().__init__(None)
        self._initial = list(initial_messages) if initial_messages else None
        self._initial_messages = self._initial
        self.context_id = context_id
        self._buffer = buffer_size
        self._limit = token_limit
        self._client = model_client
        self._prefix = agent_prefix
        self.runtime, self._owns_store = open_runtime(store, agent_prefix + context_id)
        """The conversation's :class:`octopoda.AgentRuntime`."""
        self._next = 0
        self._loaded = False
        self._lock = asyncio.Lock()

    def __repr__(self) -> str:
        url = self.runtime.store.url
        return f"OctopodaChatCompletionContext({self.context_id!r}, store={url!r})"

    # -- loading ----------------------------------------------------------------------------

    def _read(self) -> tuple[list[LLMMessage], int]:
        runtime = self.runtime
        items = runtime.search(MESSAGE_PREFIX, limit=None)
        messages = [_MESSAGES.validate_python(item.value) for item in items]
        next_index = int(items[-1].key[len(MESSAGE_PREFIX) :]) + 1 if items else 0
        meta = runtime.recall(META_KEY)
        if meta.found and isinstance(meta.value, dict):
            next_index = max(next_index, int(meta.value.get("next_index", 0)))
        return messages, next_index

    async def _ensure_loaded(self) -> None:
        if self._loaded:
            return
        messages, self._next = await run_blocking(self._read)
        self._messages = messages
        self._loaded = True
        if not messages and self._next == 0 and self._initial:
            await self._append(self._initial)

    async def _append(self, messages: Sequence[LLMMessage]) -> None:
        first = self._next
        items = [
            (message_key(first + i), _MESSAGES.dump_python(m, mode="json"))
            for i, m in enumerate(messages)
        ]
        if len(items) == 1:
            await run_settled(self.runtime.remember, *items[0])
        else:
            await run_settled(self.runtime.remember_many, items)
        self._next = first + len(items)
        self._messages.extend(messages)

    async def reload(self) -> None:
        """Read the conversation from the store again (after another process added to it)."""
        async with self._lock:
            self._loaded = False
            await self._ensure_loaded()

    # -- the ChatCompletionContext interface --------------------------------------------------

    async def add_message(self, message: LLMMessage) -> None:
        """Add ``message``: committed to the store before this returns."""
        async with self._lock:
            await self._ensure_loaded()
            await self._append([message])

    async def get_messages(self) -> list[LLMMessage]:
        """The view the model sees: all messages, or the buffered / token-limited window."""
        async with self._lock:
            await self._ensure_loaded()
            messages = list(self._messages)
        if self._buffer is not None:
            messages = messages[-self._buffer :]
        elif self._client is not None:
            messages = self._fit_tokens(messages)
        else:
            return messages  # unbounded: the whole conversation, as it is
        # a window never starts on tool results whose call it cut off (AutoGen's rule)
        if messages and isinstance(messages[0], FunctionExecutionResultMessage):
            messages = messages[1:]
        return messages

    async def all_messages(self) -> list[LLMMessage]:
        """Every message of the conversation, whatever the window."""
        async with self._lock:
            await self._ensure_loaded()
            return list(self._messages)

    def _fit_tokens(self, messages: list[LLMMessage]) -> list[LLMMessage]:
        """TokenLimitedChatCompletionContext's rule: drop from the middle until it fits."""
        client = self._client
        assert client is not None
        if self._limit is None:
            while messages and client.remaining_tokens(messages) < 0:
                messages.pop(len(messages) // 2)
        else:
            while messages and client.count_tokens(messages) > self._limit:
                messages.pop(len(messages) // 2)
        return messages

    async def clear(self) -> None:
        """Empty the conversation (tombstones; the history and audit trail stay)."""
        async with self._lock:
            await self._ensure_loaded()
            await run_settled(self._replace, [])
            self._messages = []

    async def save_state(self) -> Mapping[str, Any]:
        async with self._lock:
            await self._ensure_loaded()
        return await super().save_state()

    async def load_state(self, state: Mapping[str, Any]) -> None:
        """Replace the conversation by ``state`` (from ``save_state``), in one transaction."""
        async with self._lock:
            await self._ensure_loaded()
            await super().load_state(state)
            messages = list(self._messages)
            await run_settled(self._replace, messages)

    def _replace(self, messages: list[LLMMessage]) -> None:
        runtime = self.runtime
        old = runtime.keys(MESSAGE_PREFIX)
        if old:
            runtime.forget_many(old)
        first = self._next
        writes: list[tuple[str, Any]] = [
            (message_key(first + i), _MESSAGES.dump_python(m, mode="json"))
            for i, m in enumerate(messages)
        ]
        self._next = first + len(writes)
        writes.append((META_KEY, {"next_index": self._next}))
        runtime.remember_many(writes)

    async def close(self) -> None:
        """Release the runtime; a private ``":memory:"`` store closes with it."""
        self.runtime.close()
        if self._owns_store:
            self.runtime.store.close()

    # -- component config -----------------------------------------------------------------

    def _to_config(self) -> OctopodaChatCompletionContextConfig:
        return OctopodaChatCompletionContextConfig(
            context_id=self.context_id,
            store=store_url(self.runtime),
            buffer_size=self._buffer,
            token_limit=self._limit,
            model_client=None if self._client is None else self._client.dump_component(),
            initial_messages=self._initial,
            agent_prefix=self._prefix,
        )

    @classmethod
    def _from_config(cls, config: OctopodaChatCompletionContextConfig) -> Self:
        client = (
            None
            if config.model_client is None
            else ChatCompletionClient.load_component(config.model_client)
        )
        return cls(
            config.context_id,
            config.store,
            buffer_size=config.buffer_size,
            token_limit=config.token_limit,
            model_client=client,
            initial_messages=config.initial_messages,
            agent_prefix=config.agent_prefix,
        )


def _check_positive(value: Any, name: str) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise InvalidInput(f"{name} must be a positive int or None, not {value!r}")
