"""The MCP server through the mcp package's in-process client: every tool with valid and
invalid arguments, receipts against reads, pages, loop reports, annotations."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the MCP tests need the mcp extra (nox -s mcp)")

from mcp import Client

from octopoda import AgentRuntime, SqliteStore
from octopoda._mcp.server import build_server, tool_names

pytestmark = pytest.mark.anyio

PREDECESSOR_TOOLS = [
    "octopoda_remember",
    "octopoda_recall",
    "octopoda_search",
    "octopoda_recall_similar",
    "octopoda_recall_history",
    "octopoda_related",
    "octopoda_snapshot",
    "octopoda_restore",
    "octopoda_share",
    "octopoda_read_shared",
    "octopoda_list_agents",
    "octopoda_agent_stats",
    "octopoda_process_conversation",
    "octopoda_get_context",
    "octopoda_log_decision",
    "octopoda_forget",
    "octopoda_forget_stale",
    "octopoda_memory_health",
    "octopoda_consolidate",
    "octopoda_loop_status",
    "octopoda_loop_history",
    "octopoda_send_message",
    "octopoda_read_messages",
    "octopoda_broadcast",
    "octopoda_set_goal",
    "octopoda_get_goal",
    "octopoda_update_progress",
    "octopoda_search_filtered",
]
NEW_TOOLS = [
    "octopoda_audit_verify",
    "octopoda_timeline",
    "octopoda_diff",
    "octopoda_as_of",
    "octopoda_shared_conflicts",
    "octopoda_resolve_conflict",
]
DESTRUCTIVE = {
    "octopoda_forget",
    "octopoda_forget_stale",
    "octopoda_erase",
    "octopoda_restore",
    "octopoda_consolidate",
}

# One valid call per tool, made after seed() (in this order: some use what earlier ones did).
VALID: dict[str, dict[str, Any]] = {
    "octopoda_remember": {"key": "user.name", "value": "Alice", "tags": ["profile"]},
    "octopoda_recall": {"key": "user.name"},
    "octopoda_search": {"query": "Alice"},
    "octopoda_recall_similar": {"query": "what is the user's name?"},
    "octopoda_recall_history": {"key": "user.name"},
    "octopoda_related": {"entity": "Alice"},
    "octopoda_snapshot": {"name": "before"},
    "octopoda_list_snapshots": {},
    "octopoda_restore": {"name": "before"},
    "octopoda_forget": {"key": "plan"},
    "octopoda_forget_stale": {"max_age_days": 365},
    "octopoda_erase": {"key": "secret", "reason": "user asked"},
    "octopoda_memory_health": {},
    "octopoda_consolidate": {"dry_run": True},
    "octopoda_search_filtered": {"max_age_seconds": 3600},
    "octopoda_process_conversation": {
        "messages": [{"role": "user", "content": "My name is Bob. I prefer dark mode."}]
    },
    "octopoda_share": {"key": "budget", "value": 100, "space": "team"},
    "octopoda_read_shared": {"key": "budget", "space": "team"},
    "octopoda_list_shared": {"space": "team"},
    "octopoda_shared_history": {"key": "budget", "space": "team"},
    "octopoda_shared_conflicts": {"space": "team"},
    "octopoda_resolve_conflict": {"conflict_id": 1, "keep": "theirs"},
    "octopoda_send_message": {"to_agent": "helper", "message": "please review"},
    "octopoda_read_messages": {"agent_id": "helper"},
    "octopoda_mark_read": {"message_id": 1, "agent_id": "helper"},
    "octopoda_broadcast": {"message": "standup", "space": "team"},
    "octopoda_read_broadcasts": {"space": "team"},
    "octopoda_set_goal": {"goal": "ship", "milestones": ["build", "test"]},
    "octopoda_get_goal": {},
    "octopoda_update_progress": {"milestone_index": 0, "note": "built"},
    "octopoda_log_decision": {"decision": "Use SQLite", "reasoning": "zero config"},
    "octopoda_decisions": {},
    "octopoda_loop_status": {},
    "octopoda_loop_history": {},
    "octopoda_agent_stats": {},
    "octopoda_list_agents": {},
    "octopoda_status": {},
    "octopoda_audit_verify": {},
    "octopoda_timeline": {"kinds": ["remember"]},
    "octopoda_diff": {"from_seq": 0},
    "octopoda_as_of": {"seq": 1},
    "octopoda_get_context": {"query": "name"},
}

# Invalid calls: a schema violation or an argument the runtime refuses (OctopodaError).
INVALID: dict[str, tuple[dict[str, Any], str]] = {
    "octopoda_remember": ({"key": ""}, "value"),
    "octopoda_recall": ({"key": ""}, "InvalidKey"),
    "octopoda_search": ({"cursor": "not-a-cursor"}, "InvalidInput"),
    "octopoda_recall_similar": ({"query": "x", "limit": 0}, "limit"),
    "octopoda_recall_history": ({"key": "k", "limit": 1000}, "limit"),
    "octopoda_related": ({}, "entity"),
    "octopoda_snapshot": ({"name": "before"}, "already has a snapshot"),
    "octopoda_list_snapshots": ({"agent_id": ""}, "InvalidAgentId"),
    "octopoda_restore": ({"name": "nope"}, "SnapshotNotFound"),
    "octopoda_forget": ({"key": 5}, "key"),
    "octopoda_forget_stale": ({"max_age_days": -1}, "max_age_days"),
    "octopoda_erase": ({"key": ""}, "InvalidKey"),
    "octopoda_memory_health": ({"stale_after_days": 0}, "stale_after_days"),
    "octopoda_consolidate": ({"dry_run": "maybe"}, "dry_run"),
    "octopoda_search_filtered": ({"min_age_seconds": -5}, "min_age_seconds"),
    "octopoda_process_conversation": ({"messages": []}, "messages"),
    "octopoda_share": ({"key": "budget", "value": 1, "space": ""}, "InvalidKey"),
    "octopoda_read_shared": ({"key": ""}, "InvalidKey"),
    "octopoda_list_shared": ({"space": ""}, "InvalidKey"),
    "octopoda_shared_history": ({"key": "", "space": "team"}, "InvalidKey"),
    "octopoda_shared_conflicts": ({"space": ""}, "InvalidKey"),
    "octopoda_resolve_conflict": ({"conflict_id": 999}, "NotFound"),
    "octopoda_send_message": ({"to_agent": "", "message": "x"}, "InvalidAgentId"),
    "octopoda_read_messages": ({"limit": 0}, "limit"),
    "octopoda_mark_read": ({"message_id": 0}, "message_id"),
    "octopoda_broadcast": ({"message": b"x".hex(), "space": ""}, "InvalidKey"),
    "octopoda_read_broadcasts": ({"since": -1}, "since"),
    "octopoda_set_goal": ({"goal": "  "}, "InvalidInput"),
    "octopoda_get_goal": ({"agent_id": ""}, "InvalidAgentId"),
    "octopoda_update_progress": ({"progress": 0.5, "agent_id": "no-goal"}, "NotFound"),
    "octopoda_log_decision": ({"decision": ""}, "InvalidInput"),
    "octopoda_decisions": ({"limit": 101}, "limit"),
    "octopoda_loop_status": ({"run_id": ""}, "run"),
    "octopoda_loop_history": ({"cursor": "eyJ0IjoieCIsInAiOjF9"}, "not a cursor of"),
    "octopoda_agent_stats": ({"agent_id": " "}, "InvalidAgentId"),
    "octopoda_list_agents": ({"limit": 0}, "limit"),
    "octopoda_audit_verify": ({"agent_id": ""}, "InvalidAgentId"),
    "octopoda_timeline": ({"since": "yesterday"}, "since"),
    "octopoda_diff": ({"from_seq": 10**6}, "NotFound"),
    "octopoda_as_of": ({"seq": -1}, "seq"),
    "octopoda_get_context": ({"limit": 0}, "limit"),
}
# octopoda_status takes no arguments: nothing it could be given is invalid.
NO_ARGUMENTS = {"octopoda_status"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def store(tmp_path: Path) -> Any:
    s = SqliteStore(tmp_path / "mcp.db")
    yield s
    s.close()


@pytest.fixture
async def client(store: Any) -> AsyncIterator[Client]:
    server, calls = build_server(store, "claude")
    async with Client(server) as c:
        yield c
    calls.close()


async def call(c: Client, name: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
    result = await c.call_tool(name, args or {})
    assert not result.is_error, result.content
    assert isinstance(result.structured_content, dict)
    return result.structured_content


async def seed(c: Client, store: Any) -> None:
    await call(c, "octopoda_remember", {"key": "plan", "value": {"tier": "pro"}})
    await call(c, "octopoda_remember", {"key": "secret", "value": "s3cret"})
    # a stale shared write: conflict 1 in space "team"
    other = AgentRuntime("other", store=store)
    await call(c, "octopoda_read_shared", {"key": "doc", "space": "team"})
    other.share("doc", "theirs", space="team")
    await call(c, "octopoda_share", {"key": "doc", "value": "mine", "space": "team"})


def test_the_tools_cover_the_predecessor_and_the_new_verbs() -> None:
    names = tool_names()
    assert len(names) == len(set(names))
    assert set(PREDECESSOR_TOOLS + NEW_TOOLS) <= set(names)
    assert set(names) == set(VALID)
    assert set(names) == set(INVALID) | NO_ARGUMENTS


async def test_every_tool_has_schema_output_annotations_and_a_description(
    client: Client,
) -> None:
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert list(tools) == tool_names()
    for name, t in tools.items():
        assert t.input_schema["type"] == "object", name
        assert t.output_schema is not None and t.output_schema["type"] == "object", name
        assert t.description and len(t.description) > 60, name
        a = t.annotations
        assert a is not None and a.read_only_hint is not None, name
        assert a.destructive_hint == (name in DESTRUCTIVE), name
        if not a.read_only_hint:  # a write: its receipt's fields are in the schema
            assert {"seq", "hash", "version"} <= set(t.output_schema["properties"]), name
        if a.read_only_hint:
            assert a.idempotent_hint and not a.destructive_hint, name
        if name not in NO_ARGUMENTS and "agent_id" not in t.input_schema["properties"]:
            assert name == "octopoda_list_agents", name
    assert "next_cursor" in tools["octopoda_search"].output_schema["properties"]  # type: ignore[index]
    assert tools["octopoda_recall"].annotations.read_only_hint  # type: ignore[union-attr]
    assert not tools["octopoda_remember"].annotations.read_only_hint  # type: ignore[union-attr]


async def test_every_tool_with_valid_arguments(client: Client, store: Any) -> None:
    await seed(client, store)
    for name in tool_names():
        out = await call(client, name, VALID[name])
        assert "loop" not in out, (name, out)
    # what the calls did, read back
    # process_conversation ran after remember("user.name", "Alice")
    assert (await call(client, "octopoda_recall", {"key": "user.name"}))["value"] == "Bob"
    assert (await call(client, "octopoda_recall", {"key": "secret"}))["found"] is False
    assert (await call(client, "octopoda_read_shared", {"key": "doc", "space": "team"}))[
        "value"
    ] == "theirs"
    goal = (await call(client, "octopoda_get_goal"))["goal"]
    assert goal["progress"] == 0.5 and goal["milestones"][0]["done"] is True
    assert (await call(client, "octopoda_audit_verify"))["ok"] is True
    agents = {a["id"] for a in (await call(client, "octopoda_list_agents"))["items"]}
    assert {"claude", "other", "helper"} <= agents


async def test_every_tool_with_invalid_arguments_is_a_tool_error(
    client: Client, store: Any
) -> None:
    await seed(client, store)
    await call(client, "octopoda_snapshot", {"name": "before"})
    wrong = []
    for name, (args, needle) in INVALID.items():
        result = await client.call_tool(name, args)
        text = result.content[0].text  # type: ignore[union-attr]
        if not result.is_error or needle not in text:
            wrong.append((name, result.is_error, text[:300]))
    assert wrong == []
    # the server still works after all of them
    assert (await call(client, "octopoda_recall", {"key": "plan"}))["value"] == {"tier": "pro"}


async def test_a_write_receipt_matches_later_reads(client: Client) -> None:
    r1 = await call(client, "octopoda_remember", {"key": "k", "value": 1})
    r2 = await call(client, "octopoda_remember", {"key": "k", "value": 2})
    assert (r1["version"], r2["version"]) == (1, 2) and r2["seq"] > r1["seq"]
    assert r2["durable"] is True and len(r2["hash"]) == 64
    read = await call(client, "octopoda_recall", {"key": "k"})
    assert (read["value"], read["version"], read["seq"]) == (2, r2["version"], r2["seq"])
    history = await call(client, "octopoda_recall_history", {"key": "k"})
    assert [(v["version"], v["seq"]) for v in history["items"]] == [
        (2, r2["seq"]),
        (1, r1["seq"]),
    ]
    events = await call(client, "octopoda_timeline", {"kinds": ["remember"]})
    assert [(e["seq"], e["hash"]) for e in events["items"]] == [
        (r1["seq"], r1["hash"]),
        (r2["seq"], r2["hash"]),
    ]
    shared = await call(client, "octopoda_share", {"key": "s", "value": "v", "space": "team"})
    read = await call(client, "octopoda_read_shared", {"key": "s", "space": "team"})
    assert (read["version"], read["author"]) == (shared["version"], "claude")
    history = await call(client, "octopoda_shared_history", {"key": "s", "space": "team"})
    assert history["items"][0]["seq"] == shared["seq"]
    goal = await call(client, "octopoda_set_goal", {"goal": "g"})
    events = await call(client, "octopoda_timeline", {"kinds": ["goal_set"]})
    assert [(e["seq"], e["hash"]) for e in events["items"]] == [(goal["seq"], goal["hash"])]
    verified = await call(client, "octopoda_audit_verify")
    assert verified["ok"] and verified["head"]["seq"] > goal["seq"]  # the call was recorded too


async def test_remember_with_a_kind_and_search_by_kinds(client: Client) -> None:
    receipt = await call(
        client, "octopoda_remember", {"key": "diet", "value": "tea", "kind": "preference"}
    )
    assert receipt["kind"] == "preference"
    assert "kind" not in await call(client, "octopoda_remember", {"key": "note", "value": "tea"})
    await call(client, "octopoda_remember", {"key": "city", "value": "Porto", "kind": "fact"})
    listed = await call(client, "octopoda_search", {"kinds": ["fact", "preference"]})
    assert [(i["key"], i["kind"]) for i in listed["items"]] == [
        ("city", "fact"),
        ("diet", "preference"),
    ]
    found = await call(client, "octopoda_search", {"query": "tea", "kinds": ["preference"]})
    assert [i["key"] for i in found["items"]] == ["diet"]
    similar = await call(client, "octopoda_recall_similar", {"query": "tea", "kinds": ["fact"]})
    assert similar["matches"] == []
    filtered = await call(client, "octopoda_search_filtered", {"kinds": ["fact"]})
    assert [i["key"] for i in filtered["items"]] == ["city"]
    assert (await call(client, "octopoda_recall", {"key": "diet"}))["kind"] == "preference"
    bad = await client.call_tool("octopoda_remember", {"key": "k", "value": 1, "kind": "a\nb"})
    assert bad.is_error and "printable" in bad.content[0].text  # type: ignore[union-attr]
    one = await client.call_tool("octopoda_search", {"kinds": "fact"})
    assert one.is_error


async def test_lists_paginate_with_a_cursor_and_a_bounded_page(client: Client) -> None:
    for i in range(45):
        await call(client, "octopoda_remember", {"key": f"k{i:02d}", "value": "x" * 5000})
    seen: list[str] = []
    cursor = None
    pages = []
    while True:
        args: dict[str, Any] = {} if cursor is None else {"cursor": cursor}
        page = await call(client, "octopoda_search", args)
        pages.append(page["count"])
        seen += [item["key"] for item in page["items"]]
        assert all(item["truncated"] and len(item["value"]) < 2100 for item in page["items"])
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert pages == [20, 20, 5] and seen == [f"k{i:02d}" for i in range(45)]
    full = await call(client, "octopoda_recall", {"key": "k00"})
    assert full["value"] == "x" * 5000
    timeline = await call(client, "octopoda_timeline", {"limit": 50})
    rest = await call(client, "octopoda_timeline", {"cursor": timeline["next_cursor"]})
    assert rest["items"][0]["seq"] == timeline["items"][-1]["seq"] + 1
    wrong = await client.call_tool(
        "octopoda_recall_history", {"key": "k00", "cursor": cursor or timeline["next_cursor"]}
    )
    assert wrong.is_error and "not a cursor of octopoda_recall_history" in wrong.content[0].text  # type: ignore[union-attr]


async def test_a_repeated_failing_call_is_reported_as_a_loop(client: Client) -> None:
    texts = []
    for _ in range(4):
        result = await client.call_tool("octopoda_restore", {"name": "missing"})
        assert result.is_error
        texts.append(result.content[0].text)  # type: ignore[union-attr]
    assert "SnapshotNotFound" in texts[0] and "loop" not in texts[0]
    assert "Octopoda loop detection (looping): retry" in texts[-1]
    status = await call(client, "octopoda_loop_status", {"run_id": "mcp"})
    assert status["state"] == "looping" and status["signals"][0]["kind"] == "retry"
    assert "loop" in status  # a successful call in a looping run says so too
    calls = await call(client, "octopoda_timeline", {"kinds": ["tool_call"]})
    names = [e["payload"]["name"] for e in calls["items"]]
    assert names[:4] == ["octopoda_restore"] * 4
    assert all(e["payload"]["run_id"] == "mcp" for e in calls["items"])


async def test_a_repeated_call_the_schema_refuses_is_reported_as_a_loop(client: Client) -> None:
    texts = []
    for _ in range(4):
        result = await client.call_tool("octopoda_remember", {"key": "k"})  # no value
        assert result.is_error
        texts.append(result.content[0].text)  # type: ignore[union-attr]
    assert "value" in texts[0] and "loop" not in texts[0]
    assert "Octopoda loop detection (looping): retry" in texts[-1]
    calls = await call(client, "octopoda_timeline", {"kinds": ["tool_call"]})
    assert [e["payload"]["error"] for e in calls["items"][:4]] == ["invalid arguments: value"] * 4


async def test_agent_id_per_call_and_from_the_environment(
    store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OCTOPODA_AGENT_ID", "from-env")
    server, calls = build_server(store)
    async with Client(server) as c:
        await call(c, "octopoda_remember", {"key": "a", "value": 1})
        await call(c, "octopoda_remember", {"key": "a", "value": 2, "agent_id": "other"})
        assert (await call(c, "octopoda_status"))["default_agent_id"] == "from-env"
    calls.close()
    assert AgentRuntime("from-env", store=store).recall("a").value == 1
    assert AgentRuntime("other", store=store).recall("a").value == 2


async def test_process_conversation_extracts_stated_facts_without_an_llm(
    client: Client,
) -> None:
    turns = [
        {"role": "user", "content": "Hi! My name is Alice and I work at Acme."},
        {"role": "assistant", "content": "My name is Claude."},
        {"role": "user", "content": "I prefer dark mode. Remember that the demo is Friday."},
        {"role": "assistant", "content": "We decided to ship on Monday."},
    ]
    out = await call(client, "octopoda_process_conversation", {"messages": turns})
    assert out["llm_used"] is False and "no LLM" in out["method"]
    stored = {f["key"]: f["value"] for f in out["extracted"]}
    assert stored["user.name"] == "Alice"  # not the assistant's "Claude"
    assert stored["user.works_at"] == "Acme"
    assert stored["user.prefers.dark_mode"] == "dark mode"
    assert any(k.startswith("note.") and v == "the demo is Friday" for k, v in stored.items())
    assert any(k.startswith("decision.") and v == "ship on Monday" for k, v in stored.items())
    assert (await call(client, "octopoda_recall", {"key": "user.name"}))["seq"] == out["seq"]
    dry = await call(
        client, "octopoda_process_conversation", {"messages": turns[:1], "dry_run": True}
    )
    assert "seq" not in dry and dry["extracted"][0]["key"] == "user.name"


async def test_consolidate_forgets_exact_duplicates_only_when_asked(client: Client) -> None:
    for key in ("a", "b", "c"):
        await call(client, "octopoda_remember", {"key": key, "value": {"same": True}})
    await call(client, "octopoda_remember", {"key": "d", "value": "different"})
    report = await call(client, "octopoda_consolidate")
    assert [(g["keep"], g["duplicates"]) for g in report["groups"]] == [("c", ["b", "a"])]
    assert (await call(client, "octopoda_recall", {"key": "a"}))["found"]
    done = await call(client, "octopoda_consolidate", {"dry_run": False})
    assert sorted(done["forgotten"]) == ["a", "b"] and len(done["hash"]) == 64
    assert not (await call(client, "octopoda_recall", {"key": "a"}))["found"]
    assert (await call(client, "octopoda_recall", {"key": "c"}))["found"]


async def test_list_shared_with_a_query_ranks_by_words(client: Client) -> None:
    for key, value in (("plan", "ship the release on Friday"), ("lunch", "pizza at noon")):
        await call(client, "octopoda_share", {"key": key, "value": value, "space": "crew"})
    await call(client, "octopoda_remember", {"key": "own", "value": "my release notes"})
    found = await call(client, "octopoda_list_shared", {"space": "crew", "query": "release"})
    assert [(i["key"], i["author"]) for i in found["items"]] == [("plan", "claude")]
    listed = await call(client, "octopoda_list_shared", {"space": "crew"})
    assert [i["key"] for i in listed["items"]] == ["lunch", "plan"]
