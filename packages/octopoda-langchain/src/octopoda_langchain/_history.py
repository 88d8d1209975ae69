"""OctopodaChatMessageHistory: LangChain chat history as Octopoda memory."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Sequence

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import BaseMessage, message_to_dict, messages_from_dict

from octopoda import AgentRuntime, InvalidInput
from octopoda.integrations import Target, resolve_runtime, run_blocking

from ._keys import chat_prefix

__all__ = ["OctopodaChatMessageHistory"]


class OctopodaChatMessageHistory(BaseChatMessageHistory):
    """The messages of one chat session, for chains still on ``RunnableWithMessageHistory``
    (LangChain deprecates that path in favour of a checkpointer: see :class:`OctopodaSaver`).

    Each message is one key ``chat/<session>/<time>-<pid>-<n>`` of the agent's memory; a call
    to ``add_messages`` is one audited event, ``clear`` tombstones them in one event (the
    history stays on record). Keys sort by time, and a new history object continues after
    the newest stored key, so the order holds across restarts and processes.
    """

    def __init__(
        self, session_id: str, store: Target = None, *, agent_id: str = "langchain"
    ) -> None:
        if not isinstance(session_id, str) or not session_id:
            raise InvalidInput(f"session_id must be a non-empty str, not {session_id!r}")
        self.session_id = session_id
        self.agent: AgentRuntime
        """The Octopoda agent whose memory holds the messages."""
        self.agent, self._owns_agent = resolve_runtime(store, agent_id)
        self._prefix = chat_prefix(session_id)
        self._last = -1  # the newest time stamp used or seen; -1: not read yet
        self._counter = 0
        self._lock = threading.Lock()

    def close(self) -> None:
        if self._owns_agent:
            self.agent.close()

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        """Every message of the session, oldest first."""
        items = self.agent.search(self._prefix, limit=None)
        return messages_from_dict([item.value for item in items])

    def _next_keys(self, count: int) -> list[str]:
        with self._lock:
            if self._last < 0:
                stored = self.agent.keys(self._prefix)
                last = stored[-1][len(self._prefix) :].split("-", 1)[0] if stored else ""
                self._last = int(last) if last.isdigit() else 0
            stamp = max(time.time_ns(), self._last + 1)
            self._last = stamp
            out = []
            for _ in range(count):
                self._counter += 1
                out.append(f"{self._prefix}{stamp:020d}-{os.getpid():07d}-{self._counter:06d}")
            return out

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Append messages, in order, as one audited event."""
        messages = list(messages)
        if not messages:
            return
        values = [message_to_dict(m) for m in messages]
        self.agent.remember_many(list(zip(self._next_keys(len(values)), values, strict=True)))

    def clear(self) -> None:
        """Remove every message of the session (tombstones; one audited event)."""
        self.agent.forget_many(self.agent.keys(self._prefix))

    async def aget_messages(self) -> list[BaseMessage]:
        return await run_blocking(lambda: self.messages)

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        await run_blocking(self.add_messages, messages)

    async def aclear(self) -> None:
        await run_blocking(self.clear)
