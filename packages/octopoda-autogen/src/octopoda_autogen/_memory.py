"""OctopodaMemory: AutoGen's ``Memory`` on Octopoda's versioned, audited memory.

Layout in the store: each memory ``name`` is its own Octopoda agent,
``"autogen-memory:" + name`` (``agent_prefix``), with its own audit chain. Every ``add`` is
one key, ``mem/<time in ns>-<random>`` (chronological, never reused), whose value is
``{"content": ..., "metadata": ...}``; the MIME type and the content's kind are tags
(``mime_type:text/plain``, ``content:text``). Text is stored as text, JSON content as its
object, bytes and images as base64. ``clear`` writes tombstones: the contents leave the
memory, their history and the audit chain stay.

``query`` is the core's search (``recall_similar``: lexical BM25 today, hybrid with an
embedder), over the content's text and the metadata's strings; each result carries
``metadata["score"]`` (in [0, 1]) and ``metadata["id"]`` (the key).
"""

from __future__ import annotations

import base64
import json
import secrets
import time
from typing import Any

from autogen_core import CancellationToken, Component, ComponentBase, Image
from autogen_core.memory import (
    Memory,
    MemoryContent,
    MemoryMimeType,
    MemoryQueryResult,
    UpdateContextResult,
)
from autogen_core.model_context import ChatCompletionContext
from autogen_core.models import SystemMessage
from pydantic import BaseModel
from typing_extensions import Self

from octopoda import InvalidInput, MemoryItem
from octopoda.integrations import run_blocking, run_settled

from ._common import StoreArg, open_runtime, store_url

__all__ = ["MEMORY_AGENT_PREFIX", "OctopodaMemory", "OctopodaMemoryConfig"]

MEMORY_AGENT_PREFIX = "autogen-memory:"
"""The default agent-id prefix: memory ``notes`` is Octopoda agent ``autogen-memory:notes``."""

PREFIX = "mem/"
MIME_TAG = "mime_type:"
KIND_TAG = "content:"
CONTEXT_HEADER = "\nRelevant memory content (most relevant first):\n"


class OctopodaMemoryConfig(BaseModel):
    """The declarative form of :class:`OctopodaMemory` (``dump_component``)."""

    name: str = "default"
    store: str | None = None
    """The store's URL; None: the default store."""
    k: int = 5
    score_threshold: float | None = None
    agent_prefix: str = MEMORY_AGENT_PREFIX


def _encode(content: MemoryContent) -> tuple[Any, str]:
    """The stored form of the content and its kind (text, json, bytes, image)."""
    value = content.content
    if isinstance(value, str):
        return value, "text"
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii"), "bytes"
    if isinstance(value, Image):
        return value.to_base64(), "image"
    if isinstance(value, dict):
        return value, "json"
    raise InvalidInput(
        f"MemoryContent.content must be str, bytes, dict or Image, not {type(value).__name__}"
    )


def _decode(stored: Any, kind: str) -> Any:
    if kind == "bytes":
        return base64.b64decode(stored)
    if kind == "image":
        return Image.from_base64(stored)
    return stored


def _mime(mime_type: MemoryMimeType | str) -> str:
    return mime_type.value if isinstance(mime_type, MemoryMimeType) else str(mime_type)


def _as_mime(text: str) -> MemoryMimeType | str:
    try:
        return MemoryMimeType(text)
    except ValueError:
        return text


def _tag(tags: tuple[str, ...], prefix: str, default: str) -> str:
    return next((t[len(prefix) :] for t in tags if t.startswith(prefix)), default)


def query_text(query: str | MemoryContent) -> str:
    """The words to search for: a string as is, a content's text (JSON as its text)."""
    if isinstance(query, str):
        return query
    if isinstance(query.content, str):
        return query.content
    if isinstance(query.content, dict):
        return json.dumps(query.content, ensure_ascii=False)
    raise InvalidInput(
        f"cannot search by {type(query.content).__name__} content; query with text or JSON"
    )


def render(content: MemoryContent) -> str:
    """One memory as a line of the system message ``update_context`` adds."""
    value = content.content
    if isinstance(value, bytes):
        return f"[{_mime(content.mime_type)}: {len(value)} bytes]"
    if isinstance(value, Image):
        return f"[image {_mime(content.mime_type)}]"
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


class OctopodaMemory(
    Memory,
    Component[OctopodaMemoryConfig],
    ComponentBase[OctopodaMemoryConfig],  # before autogen-core 0.4.7 Memory is not one
):
    """An AutoGen ``Memory`` kept in Octopoda: ``AssistantAgent(memory=[OctopodaMemory(...)])``.

    ``name``: which memory (its Octopoda agent is ``agent_prefix + name``). ``store``: a path,
    URL or open :class:`octopoda.Store` (see :data:`StoreArg`). ``k``: how many results
    ``query`` and ``update_context`` return; ``score_threshold``: leave out results scoring
    below it (scores are in [0, 1]). Both can be overridden per ``query(..., k=,
    score_threshold=)``.

    Every ``add`` is durable, versioned and audited when it returns (a new process sees it);
    ``runtime`` is the memory's :class:`octopoda.AgentRuntime` (``audit.verify()``,
    ``timeline()``, ``recall_history(key)``).
    """

    component_type = "memory"
    component_config_schema = OctopodaMemoryConfig
    component_provider_override = "octopoda_autogen.OctopodaMemory"

    def __init__(
        self,
        name: str = "default",
        store: StoreArg = None,
        *,
        k: int = 5,
        score_threshold: float | None = None,
        agent_prefix: str = MEMORY_AGENT_PREFIX,
    ) -> None:
        if not isinstance(name, str) or not name:
            raise InvalidInput(f"name must be a non-empty str, not {name!r}")
        _check_k(k)
        _check_threshold(score_threshold)
        self._name = name
        self._k = k
        self._threshold = score_threshold
        self._prefix = agent_prefix
        self.runtime, self._owns_store = open_runtime(store, agent_prefix + name)
        """The memory's :class:`octopoda.AgentRuntime`."""

    @property
    def name(self) -> str:
        return self._name

    def __repr__(self) -> str:
        return f"OctopodaMemory({self._name!r}, store={self.runtime.store.url!r})"

    # -- the Memory interface ----------------------------------------------------------------

    async def add(
        self, content: MemoryContent, cancellation_token: CancellationToken | None = None
    ) -> None:
        """Store ``content`` (durable when this returns; a cancelled caller still knows
        the write committed or did not)."""
        if not isinstance(content, MemoryContent):
            raise InvalidInput(f"add takes a MemoryContent, not {type(content).__name__}")
        stored, kind = _encode(content)
        value = {"content": stored, "metadata": content.metadata}
        tags = [MIME_TAG + _mime(content.mime_type), KIND_TAG + kind]
        key = f"{PREFIX}{time.time_ns():020d}-{secrets.token_hex(4)}"
        await run_settled(self.runtime.remember, key, value, tags=tags)

    async def query(
        self,
        query: str | MemoryContent = "",
        cancellation_token: CancellationToken | None = None,
        **kwargs: Any,
    ) -> MemoryQueryResult:
        """The memories closest to ``query``, best first, each with ``metadata["score"]``
        and ``metadata["id"]``. A query without words gives the ``k`` most recent memories
        (oldest first, no score), as ``ListMemory`` gives its contents.

        ``k`` and ``score_threshold`` keyword arguments override the memory's own."""
        k = kwargs.pop("k", self._k)
        threshold = kwargs.pop("score_threshold", self._threshold)
        if kwargs:
            raise InvalidInput(
                f"OctopodaMemory.query takes k and score_threshold; got {', '.join(kwargs)}"
            )
        _check_k(k)
        _check_threshold(threshold)
        text = query_text(query)
        results = await run_blocking(self._search, text, k, threshold)
        return MemoryQueryResult(results=results)

    async def update_context(self, model_context: ChatCompletionContext) -> UpdateContextResult:
        """Add the memories matching the context's last message to it, as one system
        message (nothing is added when none match)."""
        messages = await model_context.get_messages()
        if not messages:
            return UpdateContextResult(memories=MemoryQueryResult(results=[]))
        last = messages[-1]
        text = last.content if isinstance(last.content, str) else str(last.content)
        found = await self.query(text)
        if found.results:
            lines = [f"{i}. {render(m)}" for i, m in enumerate(found.results, 1)]
            message = SystemMessage(content=CONTEXT_HEADER + "\n".join(lines))
            await model_context.add_message(message)
        return UpdateContextResult(memories=found)

    async def clear(self) -> None:
        """Remove every content (tombstones: history and audit are kept)."""

        def forget_all() -> None:
            keys = self.runtime.keys(PREFIX)
            if keys:
                self.runtime.forget_many(keys)

        await run_settled(forget_all)

    async def close(self) -> None:
        """Release the runtime; a private ``":memory:"`` store closes with it."""
        self.runtime.close()
        if self._owns_store:
            self.runtime.store.close()

    # -- reading ----------------------------------------------------------------------------

    def contents(self) -> list[MemoryContent]:
        """Every current content, oldest first (what ``ListMemory.content`` holds)."""
        items = self.runtime.search(PREFIX, limit=None)
        return [self._content(item) for item in items]

    def _search(self, text: str, k: int, threshold: float | None) -> list[MemoryContent]:
        found = self.runtime.recall_similar(text, limit=k, min_score=threshold, prefix=PREFIX)
        if not found.matches:
            if any(ch.isalnum() for ch in text):
                return []
            return self.contents()[-k:]
        return [self._content(m.item, m.score) for m in found.matches]

    @staticmethod
    def _content(item: MemoryItem, score: float | None = None) -> MemoryContent:
        kind = _tag(item.tags, KIND_TAG, "text")
        value = item.value if isinstance(item.value, dict) else {"content": item.value}
        metadata = dict(value.get("metadata") or {})
        metadata["id"] = item.key
        if score is not None:
            metadata["score"] = score
        return MemoryContent(
            content=_decode(value.get("content"), kind),
            mime_type=_as_mime(_tag(item.tags, MIME_TAG, MemoryMimeType.TEXT.value)),
            metadata=metadata,
        )

    # -- component config -----------------------------------------------------------------

    def _to_config(self) -> OctopodaMemoryConfig:
        return OctopodaMemoryConfig(
            name=self._name,
            store=store_url(self.runtime),
            k=self._k,
            score_threshold=self._threshold,
            agent_prefix=self._prefix,
        )

    @classmethod
    def _from_config(cls, config: OctopodaMemoryConfig) -> Self:
        return cls(
            config.name,
            config.store,
            k=config.k,
            score_threshold=config.score_threshold,
            agent_prefix=config.agent_prefix,
        )


def _check_k(k: Any) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InvalidInput(f"k must be a positive int, not {k!r}")


def _check_threshold(value: Any) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise InvalidInput(f"score_threshold must be None or a number in [0, 1], not {value!r}")
