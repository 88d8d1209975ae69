"""OctopodaChatCompletionContext: write-through, a new object (or process) sees the
conversation exactly, the buffered and token-limited views, save_state/load_state, clear,
initial messages and the component round trip, over SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from autogen_core import FunctionCall
from autogen_core.model_context import (
    BufferedChatCompletionContext,
    ChatCompletionContext,
    UnboundedChatCompletionContext,
)
from autogen_core.models import (
    AssistantMessage,
    FunctionExecutionResult,
    FunctionExecutionResultMessage,
    LLMMessage,
    SystemMessage,
    UserMessage,
)
from octopoda_autogen import OctopodaChatCompletionContext

from octopoda import InvalidInput


def run(coro: Any) -> Any:
    return asyncio.run(coro)


HAS_THOUGHT = "thought" in AssistantMessage.model_fields  # autogen-core 0.4.6+
THOUGHT: dict[str, Any] = {"thought": "I should call add."} if HAS_THOUGHT else {}


def conversation() -> list[LLMMessage]:
    return [
        SystemMessage(content="You add numbers."),
        UserMessage(content="What is 2 + 3?", source="user"),
        AssistantMessage(
            content=[FunctionCall(id="c1", name="add", arguments='{"a": 2, "b": 3}')],
            source="assistant",
            **THOUGHT,
        ),
        FunctionExecutionResultMessage(
            content=[FunctionExecutionResult(call_id="c1", content="5", is_error=False, name="add")]
        ),
        AssistantMessage(content="The sum is 5.", source="assistant"),
    ]


def dumped(messages: list[LLMMessage]) -> list[dict[str, Any]]:
    return [m.model_dump(mode="json") for m in messages]


def test_is_a_chat_completion_context(store: Any) -> None:
    context = OctopodaChatCompletionContext("c", store)
    assert isinstance(context, ChatCompletionContext)
    assert context.runtime.agent_id == "autogen-context:c"


def test_every_message_is_written_through_and_a_new_object_sees_it_exactly(store: Any) -> None:
    async def scenario() -> tuple[list[int], list[LLMMessage]]:
        context = OctopodaChatCompletionContext("conv", store)
        writes = []
        for message in conversation():
            await context.add_message(message)
            # committed before add_message returned: another object reads it at once
            writes.append(len(await OctopodaChatCompletionContext("conv", store).get_messages()))
        return writes, await OctopodaChatCompletionContext("conv", store).get_messages()

    writes, messages = run(scenario())
    assert writes == [1, 2, 3, 4, 5]
    assert dumped(messages) == dumped(conversation())
    assert [type(m) for m in messages] == [type(m) for m in conversation()]
    if HAS_THOUGHT:
        assert messages[2].thought == "I should call add."  # type: ignore[union-attr]


def test_buffered_view_matches_autogens_buffered_context(store: Any) -> None:
    async def scenario(size: int) -> tuple[list[LLMMessage], list[LLMMessage], int]:
        ours = OctopodaChatCompletionContext(f"buf{size}", store, buffer_size=size)
        theirs = BufferedChatCompletionContext(buffer_size=size)
        for message in conversation():
            await ours.add_message(message)
            await theirs.add_message(message)
        return (
            await ours.get_messages(),
            await theirs.get_messages(),
            len(await ours.all_messages()),
        )

    for size in (1, 2, 3, 10):
        ours, theirs, everything = run(scenario(size))
        assert dumped(ours) == dumped(theirs), size
        assert everything == 5  # the store keeps every message


@pytest.mark.replay
def test_token_limited_view_matches_autogens_token_limited_context(store: Any) -> None:
    import autogen_core.model_context as contexts

    if not hasattr(contexts, "TokenLimitedChatCompletionContext"):
        pytest.skip("TokenLimitedChatCompletionContext arrived in autogen-core 0.4.10")
    TokenLimitedChatCompletionContext = contexts.TokenLimitedChatCompletionContext
    from autogen_ext.models.replay import ReplayChatCompletionClient

    client = ReplayChatCompletionClient(["unused"])

    async def scenario(limit: int) -> tuple[list[LLMMessage], list[LLMMessage]]:
        ours = OctopodaChatCompletionContext(
            f"tok{limit}", store, token_limit=limit, model_client=client
        )
        theirs = TokenLimitedChatCompletionContext(client, token_limit=limit)
        for message in conversation():
            await ours.add_message(message)
            await theirs.add_message(message)
        return await ours.get_messages(), await theirs.get_messages()

    for limit in (5, 12, 30, 1000):
        ours, theirs = run(scenario(limit))
        assert dumped(ours) == dumped(theirs), limit
        assert len(ours) == {5: 1, 1000: 5}.get(limit, len(ours)), limit


def test_unbounded_view_is_the_conversation_as_is(store: Any) -> None:
    async def scenario() -> tuple[list[LLMMessage], list[LLMMessage]]:
        ours = OctopodaChatCompletionContext("unbounded", store)
        theirs = UnboundedChatCompletionContext()
        for message in conversation()[3:]:  # starts on a tool result
            await ours.add_message(message)
            await theirs.add_message(message)
        return await ours.get_messages(), await theirs.get_messages()

    ours, theirs = run(scenario())
    assert dumped(ours) == dumped(theirs) == dumped(conversation()[3:])


def test_save_state_and_load_state(store: Any) -> None:
    async def scenario() -> tuple[Any, Any, list[LLMMessage], list[LLMMessage]]:
        source = UnboundedChatCompletionContext()
        for message in conversation()[:2]:
            await source.add_message(message)
        state = await source.save_state()
        ours = OctopodaChatCompletionContext("state", store)
        for message in conversation():
            await ours.add_message(message)
        await ours.load_state(state)  # replaces the conversation, durably
        again = await OctopodaChatCompletionContext("state", store).get_messages()
        return state, await ours.save_state(), await ours.get_messages(), again

    theirs, state, messages, again = run(scenario())
    assert state == theirs
    assert dumped(messages) == dumped(conversation()[:2])
    assert dumped(again) == dumped(conversation()[:2])


def test_load_state_and_clear_write_tombstones_and_never_reuse_keys(store: Any) -> None:
    async def scenario() -> OctopodaChatCompletionContext:
        context = OctopodaChatCompletionContext("clr", store)
        for message in conversation():
            await context.add_message(message)
        await context.clear()
        assert await context.get_messages() == []
        assert await OctopodaChatCompletionContext("clr", store).get_messages() == []
        await context.add_message(UserMessage(content="again", source="user"))
        return context

    context = run(scenario())
    runtime = context.runtime
    assert runtime.keys("message/") == ["message/000000000005"]
    assert runtime.recall_history("message/000000000001")[0].tombstone
    assert runtime.audit.verify().ok
    fresh = OctopodaChatCompletionContext("clr", store)
    run(fresh.add_message(AssistantMessage(content="next", source="a")))
    assert runtime.keys("message/") == ["message/000000000005", "message/000000000006"]


def test_initial_messages_start_a_new_conversation_only(store: Any) -> None:
    system = [SystemMessage(content="Be brief.")]

    async def scenario() -> tuple[list[LLMMessage], list[LLMMessage]]:
        first = OctopodaChatCompletionContext("init", store, initial_messages=system)
        await first.add_message(UserMessage(content="hi", source="user"))
        again = OctopodaChatCompletionContext("init", store, initial_messages=system)
        return await first.get_messages(), await again.get_messages()

    first, again = run(scenario())
    assert dumped(first) == dumped([*system, UserMessage(content="hi", source="user")])
    assert dumped(again) == dumped(first)  # not added twice


def test_component_round_trip(store: Any) -> None:
    context = OctopodaChatCompletionContext("comp", store, buffer_size=4)
    run(context.add_message(UserMessage(content="remember me", source="user")))
    config = context.dump_component()
    assert config.provider == "octopoda_autogen.OctopodaChatCompletionContext"
    assert config.component_type == "chat_completion_context"
    loaded = ChatCompletionContext.load_component(config)
    assert isinstance(loaded, OctopodaChatCompletionContext)
    assert [m.content for m in run(loaded.get_messages())] == ["remember me"]
    assert loaded.dump_component().model_dump() == config.model_dump()


def test_bad_arguments_say_what_to_do(store: Any) -> None:
    with pytest.raises(InvalidInput, match="context_id must be a non-empty str"):
        OctopodaChatCompletionContext("", store)
    with pytest.raises(InvalidInput, match="buffer_size must be a positive int"):
        OctopodaChatCompletionContext("x", store, buffer_size=0)
    with pytest.raises(InvalidInput, match="token_limit needs model_client"):
        OctopodaChatCompletionContext("x", store, token_limit=10)
