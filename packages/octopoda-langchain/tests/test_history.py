"""OctopodaChatMessageHistory: ordered across objects and processes; clear works."""

from __future__ import annotations

import asyncio
import warnings
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from octopoda_langchain import OctopodaChatMessageHistory

from octopoda import AgentRuntime, InvalidInput


def test_messages_keep_their_order_across_objects(db_path: str) -> None:
    first = OctopodaChatMessageHistory("s1", db_path)
    first.add_messages([SystemMessage("be brief"), HumanMessage("hi")])
    first.add_ai_message("hello")
    second = OctopodaChatMessageHistory("s1", db_path)  # as after a restart
    second.add_user_message("how are you?")
    expected = ["be brief", "hi", "hello", "how are you?"]
    assert [m.content for m in second.messages] == expected
    assert [type(m) for m in first.messages] == [
        SystemMessage,
        HumanMessage,
        AIMessage,
        HumanMessage,
    ]
    assert OctopodaChatMessageHistory("other", db_path).messages == []


def test_order_holds_even_when_the_clock_goes_back(db_path: str, monkeypatch: Any) -> None:
    import time

    history = OctopodaChatMessageHistory("s", db_path)
    history.add_user_message("first")
    monkeypatch.setattr(time, "time_ns", lambda: 1)  # a clock set far back
    later = OctopodaChatMessageHistory("s", db_path)
    later.add_user_message("second")
    later.add_user_message("third")
    assert [m.content for m in history.messages] == ["first", "second", "third"]


def test_add_is_one_event_and_clear_keeps_the_record(db_path: str) -> None:
    agent = AgentRuntime("chat-bot", store=db_path)
    history = OctopodaChatMessageHistory("s", agent)
    head = agent.audit.head().seq
    history.add_messages([HumanMessage("a"), AIMessage("b")])
    history.add_messages([])
    assert [e.kind for e in agent.timeline(after_seq=head)] == ["remember"]
    history.clear()
    assert history.messages == []
    history.add_user_message("again")
    assert [m.content for m in history.messages] == ["again"]
    assert [e.kind for e in agent.timeline(after_seq=head)] == ["remember", "forget", "remember"]
    assert agent.audit.verify().ok


def test_async_methods(db_path: str) -> None:
    history = OctopodaChatMessageHistory("s", db_path)

    async def scenario() -> Any:
        await history.aadd_messages([HumanMessage("x"), AIMessage("y")])
        got = await history.aget_messages()
        await history.aclear()
        return got, await history.aget_messages()

    got, after = asyncio.run(scenario())
    assert [m.content for m in got] == ["x", "y"] and after == []


def test_session_id_is_checked() -> None:
    with pytest.raises(InvalidInput):
        OctopodaChatMessageHistory("", ":memory:")


def test_with_runnable_with_message_history(db_path: str) -> None:
    from langchain_core.runnables import RunnableLambda
    from langchain_core.runnables.history import RunnableWithMessageHistory

    def reply(messages: list[Any]) -> AIMessage:
        return AIMessage(f"seen {len(messages)} messages")

    with warnings.catch_warnings():
        # LangChain deprecates RunnableWithMessageHistory (pending in 0.3, deprecated in
        # 1.3.3+) in favour of a LangGraph checkpointer; this history exists for code still on
        # it, so the warning is expected here.
        warnings.filterwarnings("ignore", message=r"RunnableWithMessageHistory is deprecated")
        chain = RunnableWithMessageHistory(
            RunnableLambda(reply), lambda sid: OctopodaChatMessageHistory(sid, db_path)
        )
        config: Any = {"configurable": {"session_id": "chat-1"}}
        assert chain.invoke([HumanMessage("one")], config).content == "seen 1 messages"
        assert chain.invoke([HumanMessage("two")], config).content == "seen 3 messages"
    assert len(OctopodaChatMessageHistory("chat-1", db_path).messages) == 4
