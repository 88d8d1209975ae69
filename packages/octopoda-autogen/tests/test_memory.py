"""OctopodaMemory: every Memory method, every MIME type, metadata, thresholds, clear, the
behaviours autogen-ext's own memory backends are tested for (score in metadata,
update_context adding to a BufferedChatCompletionContext, component round trip), over SQLite
and PostgreSQL."""

from __future__ import annotations

import asyncio
import io
from typing import Any

import pytest
from autogen_core import Image
from autogen_core.memory import Memory, MemoryContent, MemoryMimeType, UpdateContextResult
from autogen_core.model_context import BufferedChatCompletionContext
from autogen_core.models import SystemMessage, UserMessage
from octopoda_autogen import OctopodaMemory

from octopoda import AgentRuntime, InvalidInput, OctopodaError


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def text(content: str, **metadata: Any) -> MemoryContent:
    return MemoryContent(content=content, mime_type=MemoryMimeType.TEXT, metadata=metadata or None)


def _png() -> Image:
    import PIL.Image

    buf = io.BytesIO()
    PIL.Image.new("RGB", (3, 2), (200, 10, 10)).save(buf, format="PNG")
    return Image.from_base64(__import__("base64").b64encode(buf.getvalue()).decode())


def test_is_an_autogen_memory(store: Any) -> None:
    memory = OctopodaMemory("prefs", store)
    assert isinstance(memory, Memory)
    assert memory.name == "prefs"
    assert memory.runtime.agent_id == "autogen-memory:prefs"


def test_every_mime_type_and_metadata_round_trip_in_a_new_object(store: Any) -> None:
    image = _png()
    contents = [
        text("The user likes tea", category="preferences", weight=2),
        MemoryContent(content="# Notes\n*tea* daily", mime_type=MemoryMimeType.MARKDOWN),
        MemoryContent(
            content={"drink": "tea", "sugar": 0, "tags": ["hot"]},
            mime_type=MemoryMimeType.JSON,
            metadata={"source": "form"},
        ),
        MemoryContent(content=b"\x00\xffraw tea bytes", mime_type=MemoryMimeType.BINARY),
        MemoryContent(content=image, mime_type=MemoryMimeType.IMAGE, metadata={"alt": "red"}),
        MemoryContent(content="custom", mime_type="text/x-custom"),
    ]

    async def scenario() -> list[MemoryContent]:
        memory = OctopodaMemory("all-kinds", store)
        for content in contents:
            await memory.add(content)
        return OctopodaMemory("all-kinds", store).contents()  # another object: from the store

    got = run(scenario())
    assert len(got) == len(contents)
    for want, have in zip(contents, got, strict=True):
        assert have.mime_type == want.mime_type
        meta = dict(have.metadata or {})
        assert meta.pop("id").startswith("mem/")
        assert meta == (want.metadata or {})
        if isinstance(want.content, Image):
            assert isinstance(have.content, Image)
            assert have.content.to_base64() == want.content.to_base64()
        else:
            assert have.content == want.content
            assert type(have.content) is type(want.content)
    assert got[-1].mime_type == "text/x-custom"  # unknown types stay strings


def test_query_ranks_by_words_with_score_and_id_in_metadata(store: Any) -> None:
    async def scenario() -> Any:
        memory = OctopodaMemory("facts", store)
        await memory.add(text("Paris is the capital of France", topic="geo"))
        await memory.add(text("The user is vegetarian and likes pasta"))
        await memory.add(text("Berlin is the capital of Germany"))
        return await memory.query("what is the capital of France?")

    results = run(scenario()).results
    assert results[0].content == "Paris is the capital of France"
    assert {r.content for r in results} == {
        "Paris is the capital of France",
        "Berlin is the capital of Germany",
    }
    scores = [r.metadata["score"] for r in results]
    assert all(isinstance(s, float) and 0 < s <= 1 for s in scores)
    assert scores == sorted(scores, reverse=True)
    assert results[0].metadata["topic"] == "geo"
    assert results[0].metadata["id"] != results[1].metadata["id"]


def test_query_by_memory_content_and_json_content_is_searchable(store: Any) -> None:
    async def scenario() -> Any:
        memory = OctopodaMemory("json", store)
        await memory.add(
            MemoryContent(content={"city": "Lisbon", "note": "sunny"}, mime_type="application/json")
        )
        await memory.add(text("rainy London"))
        return await memory.query(MemoryContent(content="Lisbon", mime_type=MemoryMimeType.TEXT))

    results = run(scenario()).results
    assert [r.content for r in results] == [{"city": "Lisbon", "note": "sunny"}]


def test_score_threshold_is_strict_and_k_limits(store: Any) -> None:
    async def scenario() -> tuple[Any, Any, Any, Any]:
        memory = OctopodaMemory("thr", store, k=2)
        for i in range(4):
            await memory.add(text(f"apple number {i}"))
        await memory.add(text("apple banana cherry"))
        top2 = await memory.query("apple banana cherry")
        everything = await memory.query("apple banana cherry", k=10)
        strict = await memory.query("apple banana cherry", k=10, score_threshold=0.9)
        none = await OctopodaMemory("thr", store, score_threshold=1.0).query("banana kiwi")
        return top2, everything, strict, none

    top2, everything, strict, none = run(scenario())
    assert len(top2.results) == 2
    assert top2.results[0].content == "apple banana cherry"
    assert len(everything.results) == 5
    assert [r.content for r in strict.results] == ["apple banana cherry"]
    assert all(r.metadata["score"] >= 0.9 for r in strict.results)
    assert none.results == []  # "banana" is half the query: below 1.0


def test_a_query_without_words_gives_the_most_recent_like_list_memory(store: Any) -> None:
    async def scenario() -> Any:
        memory = OctopodaMemory("recent", store, k=2)
        for word in ("one", "two", "three"):
            await memory.add(text(word))
        return await memory.query("")

    assert [r.content for r in run(scenario()).results] == ["two", "three"]


def test_update_context_adds_a_system_message_to_a_buffered_context(store: Any) -> None:
    async def scenario() -> tuple[UpdateContextResult, list[Any], UpdateContextResult]:
        memory = OctopodaMemory("ctx", store)
        await memory.add(text("The user's name is Alice"))
        await memory.add(text("The user's favourite colour is green"))
        context = BufferedChatCompletionContext(buffer_size=3)
        await context.add_message(UserMessage(content="What is my favourite colour?", source="u"))
        result = await memory.update_context(context)
        messages = await context.get_messages()
        nothing = await memory.update_context(BufferedChatCompletionContext(buffer_size=3))
        return result, messages, nothing

    result, messages, nothing = run(scenario())
    assert isinstance(result, UpdateContextResult)
    assert result.memories.results[0].content == "The user's favourite colour is green"
    assert len(messages) == 2
    assert isinstance(messages[-1], SystemMessage)
    assert "Relevant memory content" in messages[-1].content
    assert "1. The user's favourite colour is green" in messages[-1].content
    assert nothing.memories.results == []


def test_update_context_adds_nothing_when_nothing_matches(store: Any) -> None:
    async def scenario() -> tuple[UpdateContextResult, int]:
        memory = OctopodaMemory("nomatch", store)
        await memory.add(text("cats purr"))
        context = BufferedChatCompletionContext(buffer_size=3)
        await context.add_message(UserMessage(content="quantum physics", source="u"))
        result = await memory.update_context(context)
        return result, len(await context.get_messages())

    result, count = run(scenario())
    assert result.memories.results == []
    assert count == 1


def test_clear_writes_tombstones_and_keeps_history_and_the_chain(store: Any) -> None:
    async def scenario() -> tuple[OctopodaMemory, Any]:
        memory = OctopodaMemory("clr", store)
        await memory.add(text("secret plan"))
        await memory.add(text("second plan"))
        await memory.clear()
        after = await memory.query("plan")
        await memory.add(text("new plan"))
        return memory, after

    memory, after = run(scenario())
    assert after.results == []
    assert [c.content for c in memory.contents()] == ["new plan"]
    runtime = memory.runtime
    kinds = [e.kind for e in runtime.timeline()]
    assert kinds.count("remember") == 3
    assert "forget" in kinds
    assert runtime.audit.verify().ok


def test_history_of_a_cleared_content_is_kept(store: Any) -> None:
    async def scenario() -> str:
        memory = OctopodaMemory("hist", store)
        await memory.add(text("kept in history"))
        key = memory.contents()[0].metadata["id"]  # type: ignore[index]
        await memory.clear()
        return key

    key = run(scenario())
    runtime = AgentRuntime("autogen-memory:hist", store=store)
    history = runtime.recall_history(key)
    assert [v.tombstone for v in history] == [True, False]
    assert history[1].value["content"] == "kept in history"
    assert not runtime.recall(key).found


def test_component_round_trip(store: Any) -> None:
    memory = OctopodaMemory("comp", store, k=7, score_threshold=0.25)
    run(memory.add(text("component memory")))
    config = memory.dump_component()
    assert config.provider == "octopoda_autogen.OctopodaMemory"
    assert config.component_type == "memory"
    assert config.config["k"] == 7 and config.config["score_threshold"] == 0.25
    loader = Memory if hasattr(Memory, "load_component") else OctopodaMemory  # < 0.4.7
    loaded = loader.load_component(config)
    assert isinstance(loaded, OctopodaMemory)
    assert loaded.name == "comp"
    assert [c.content for c in loaded.contents()] == ["component memory"]
    assert loaded.dump_component().model_dump() == config.model_dump()
    run(loaded.close())


def test_two_memories_on_one_store_are_separate(store: Any) -> None:
    async def scenario() -> tuple[Any, Any]:
        a, b = OctopodaMemory("a", store), OctopodaMemory("b", store)
        await a.add(text("alpha fact"))
        await b.add(text("beta fact"))
        return await a.query("fact"), await b.query("fact")

    a, b = run(scenario())
    assert [r.content for r in a.results] == ["alpha fact"]
    assert [r.content for r in b.results] == ["beta fact"]


def test_bad_arguments_say_what_to_do(store: Any) -> None:
    with pytest.raises(InvalidInput, match="k must be a positive int"):
        OctopodaMemory("x", store, k=0)
    with pytest.raises(InvalidInput, match=r"score_threshold must be None or a number in \[0, 1\]"):
        OctopodaMemory("x", store, score_threshold=2)
    memory = OctopodaMemory("x", store)
    with pytest.raises(InvalidInput, match="takes k and score_threshold"):
        run(memory.query("q", n_results=3))
    with pytest.raises(InvalidInput, match="pass a store"):
        OctopodaMemory("x", AgentRuntime("y", store=store))


def test_a_private_memory_store_closes_with_the_memory() -> None:
    memory = OctopodaMemory("mem", ":memory:")
    run(memory.add(text("gone after close")))
    run(memory.close())
    with pytest.raises(OctopodaError):
        memory.contents()
