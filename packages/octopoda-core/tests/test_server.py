"""``octopoda serve``: the JSON API and its security, against real server processes."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("requests")


def _load(name: str) -> Any:
    """A helper module beside this file (the tests are not a package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        f"octopoda_test_{name}", Path(__file__).with_name(f"{name}.py")
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


serving = _load("serving")

TOKEN, refused, running_server, session = (
    serving.TOKEN,
    serving.refused,
    serving.running_server,
    serving.session,
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: Any) -> Iterator[str]:
    db = tmp_path_factory.mktemp("srv") / "octopoda.db"
    with running_server("--store", str(db)) as url:
        yield url


@pytest.fixture
def http() -> Iterator[Any]:
    s = session()
    yield s
    s.close()


def test_memories_put_get_history_list_forget_erase(server: str, http: Any) -> None:
    base = f"{server}/v1/agents/bot/memories"
    r = http.put(f"{base}/user/name", json={"value": "Alice", "tags": ["profile"]})
    assert r.status_code == 200 and r.json()["version"] == 1
    assert http.put(f"{base}/user/name", json={"value": "Alice B."}).json()["version"] == 2
    got = http.get(f"{base}/user/name").json()
    assert got["value"] == "Alice B." and got["version"] == 2
    assert http.get(f"{base}/user/name", params={"version": 1}).json()["value"] == "Alice"
    assert http.get(f"{base}/user/name", params={"as_of": got["seq"] - 1}).json()["version"] == 1
    history = http.get(f"{base}/user/name/history").json()
    assert [v["version"] for v in history] == [2, 1]
    many = http.post(base, json={"items": {"a": 1, "b": {"x": [1, 2]}}}).json()
    assert [v["key"] for v in many] == ["a", "b"] and many[0]["seq"] == many[1]["seq"]
    page = http.get(base, params={"limit": 2}).json()
    assert [i["key"] for i in page["items"]] == ["a", "b"] and page["next_cursor"] == 2
    rest = http.get(base, params={"limit": 2, "cursor": 2}).json()
    assert [i["key"] for i in rest["items"]] == ["user/name"] and rest["next_cursor"] is None
    assert http.delete(f"{base}/a").json()["tombstone"] is True
    assert http.get(f"{base}/a").status_code == 404
    erased = http.post(f"{base}/b/erase", json={"reason": "gdpr"}).json()
    assert erased["versions"] == [1]
    found = http.post(f"{server}/v1/agents/bot/search", json={"query": "alice"}).json()
    assert [i["key"] for i in found] == ["user/name"]
    similar = http.post(f"{server}/v1/agents/bot/similar", json={"query": "alice"}).json()
    assert similar["mode"] == "lexical" and similar["matches"][0]["key"] == "user/name"
    verify = http.get(f"{server}/v1/agents/bot/audit/verify").json()
    assert verify["ok"] is True and verify["checked"] == 5
    assert http.get(f"{server}/v1/agents/bot/audit/head").json()["seq"] == 5
    bundle = http.get(f"{server}/v1/agents/bot/audit/export").json()
    assert len(bundle["events"]) == 5, sorted(bundle)
    assert http.get(f"{server}/v1/agents/bot/audit/signed-heads").json() == []


def test_memories_with_a_kind_and_searches_by_kinds(server: str, http: Any) -> None:
    base = f"{server}/v1/agents/kinds/memories"
    put = http.put(f"{base}/diet", json={"value": "green tea", "kind": "preference"}).json()
    assert put["kind"] == "preference"
    many = http.post(base, json={"items": {"city": "Porto tea", "job": "x"}, "kind": "fact"})
    assert [v["kind"] for v in many.json()] == ["fact", "fact"]
    http.put(f"{base}/note", json={"value": "tea"})
    assert http.get(f"{base}/diet").json()["kind"] == "preference"
    assert [v["kind"] for v in http.get(f"{base}/diet/history").json()] == ["preference"]
    listed = http.get(base, params={"kind": ["fact", "preference"]}).json()
    assert [i["key"] for i in listed["items"]] == ["city", "diet", "job"]
    assert [i["key"] for i in http.get(base, params={"kind": "preference"}).json()["items"]] == [
        "diet"
    ]
    search = f"{server}/v1/agents/kinds/search"
    found = http.post(search, json={"query": "tea", "kinds": ["fact"]}).json()
    assert [(i["key"], i["kind"]) for i in found] == [("city", "fact")]
    similar = http.post(
        f"{server}/v1/agents/kinds/similar", json={"query": "tea", "kinds": ["preference"]}
    )
    assert [m["key"] for m in similar.json()["matches"]] == ["diet"]
    bad = http.put(f"{base}/k", json={"value": 1, "kind": "x" * 65})
    assert bad.status_code == 400 and "the limit is 64" in bad.json()["detail"]
    assert http.get(f"{base}/k").status_code == 404


def test_errors_are_problem_bodies_naming_the_octopoda_error(server: str, http: Any) -> None:
    r = http.get(f"{server}/v1/agents/nobody-here/memories/k")
    assert r.status_code == 404
    assert r.headers["content-type"] == "application/problem+json"
    assert r.json()["type"] == "NotFound" and "nobody-here" in r.json()["detail"]
    r = http.put(f"{server}/v1/agents/{'x' * 600}/memories/k", json={"value": 1})
    assert r.status_code == 400 and r.json()["type"] == "InvalidAgentId"
    r = http.post(f"{server}/v1/agents/bot/snapshots/never/restore")
    assert r.status_code == 404 and r.json()["type"] == "SnapshotNotFound"


def test_spaces_compare_and_set_conflicts_and_resolve(server: str, http: Any) -> None:
    base = f"{server}/v1/spaces/team/memories/plan"
    r = http.post(f"{server}/v1/spaces", json={"name": "team", "agent": "a1"})
    assert r.status_code == 200
    first = http.put(base, json={"agent": "a1", "value": "v1", "expected_version": 0})
    assert first.status_code == 200 and first.json()["version"] == 1
    stale = http.put(base, json={"agent": "a2", "value": "x", "expected_version": 0})
    assert stale.status_code == 409 and stale.json()["type"] == "VersionConflict"
    assert stale.json()["attributes"]["actual"] == 1
    assert http.get(base, params={"agent": "a2"}).json()["value"] == "v1"
    http.put(base, json={"agent": "a1", "value": "v2"})
    clash = http.put(base, json={"agent": "a2", "value": "mine"})  # a2 saw v1, a1 wrote v2
    assert clash.status_code == 200
    conflicts = http.get(f"{server}/v1/spaces/team/conflicts", params={"agent": "a2"}).json()
    assert len(conflicts) == 1
    cid = conflicts[0]["id"]
    done = http.post(
        f"{server}/v1/spaces/team/conflicts/{cid}/resolve", json={"agent": "a2", "keep": "mine"}
    )
    assert done.status_code == 200, done.text
    assert http.get(f"{server}/v1/spaces/team/conflicts", params={"agent": "a2"}).json() == []
    assert [s["name"] for s in http.get(f"{server}/v1/spaces").json()] == ["team"]


def test_search_and_similar_on_a_space(server: str, http: Any) -> None:
    spaces = f"{server}/v1/spaces"
    http.put(f"{spaces}/board/memories/menu", json={"agent": "s1", "value": "pasta on Friday"})
    http.put(f"{spaces}/board/memories/room", json={"agent": "s2", "value": "room 4 booked"})
    http.put(f"{server}/v1/agents/s1/memories/own", json={"value": "my pasta recipe"})
    found = http.post(f"{spaces}/board/search", json={"agent": "s2", "query": "pasta"})
    assert found.status_code == 200, found.text
    assert [(v["key"], v["author"]) for v in found.json()] == [("menu", "s1")]
    similar = http.post(f"{spaces}/board/similar", json={"agent": "s2", "query": "friday pasta"})
    body = similar.json()
    assert body["mode"] == "lexical" and [m["key"] for m in body["matches"]] == ["menu"]
    assert body["matches"][0]["score"] == 1.0 and body["matches"][0]["why"]["terms"]
    http.post(spaces, json={"name": "closed", "agent": "s1", "members": []})
    refused = http.post(f"{spaces}/closed/search", json={"agent": "s2", "query": "x"})
    assert refused.status_code == 403 and refused.json()["type"] == "AccessDenied"


def test_decisions_timeline_snapshots_loops_messages_goals(server: str, http: Any) -> None:
    agent = f"{server}/v1/agents/ops"
    http.put(f"{agent}/memories/k", json={"value": 1})
    snap = http.post(f"{agent}/snapshots", json={"name": "before"}).json()
    d = http.post(f"{agent}/decisions", json={"decision": "ship", "reasoning": "green"}).json()
    assert d["decision"] == "ship"
    http.put(f"{agent}/memories/k", json={"value": 2})
    assert http.get(f"{agent}/diff", params={"a": d["seq"]}).json()["changed"]
    assert http.get(f"{agent}/as-of/{snap['seq']}").json()["memory"] == {"k": 1}
    restored = http.post(f"{agent}/snapshots/before/restore").json()
    assert http.get(f"{agent}/memories/k").json()["value"] == 1, restored
    assert [s["name"] for s in http.get(f"{agent}/snapshots").json()] == ["before"]
    kinds = http.get(f"{agent}/timeline", params={"kind": "decision"}).json()
    assert [e["kind"] for e in kinds["items"]] == ["decision"]
    first = http.get(f"{agent}/timeline", params={"limit": 2}).json()
    assert [e["seq"] for e in first["items"]] == [1, 2] and first["next_cursor"] == 2
    after = http.get(f"{agent}/timeline", params={"cursor": 2, "limit": 2}).json()
    assert [e["seq"] for e in after["items"]] == [3, 4]
    assert http.get(f"{agent}/loops").json()["state"] == "ok"
    assert http.get(f"{agent}/loops/history").json() == []
    assert http.post(f"{agent}/loops/resume", json={}).json() == {"resumed": False}
    sent = http.post(f"{agent}/messages", json={"to": "dev", "body": {"hi": 1}}).json()
    inbox = http.get(f"{server}/v1/agents/dev/messages").json()["items"]
    assert [m["id"] for m in inbox] == [sent["id"]] and inbox[0]["body"] == {"hi": 1}
    http.post(f"{server}/v1/agents/dev/messages/{sent['id']}/read")
    unread = http.get(f"{server}/v1/agents/dev/messages", params={"unread_only": True}).json()
    assert unread["items"] == []
    http.post(f"{agent}/broadcasts", json={"body": "deploying"})
    assert http.get(f"{server}/v1/agents/dev/broadcasts").json()[0]["body"] == "deploying"
    goal = http.put(f"{agent}/goal", json={"goal": "launch", "milestones": ["a", "b"]}).json()
    assert goal["goal"] == "launch"
    http.post(f"{agent}/goal/progress", json={"milestone_index": 0})
    assert http.get(f"{agent}/goal").json()["progress"] == 0.5
    bundle = http.get(f"{agent}/export").json()
    imported = http.post(f"{server}/v1/agents/copy/import", json={"bundle": bundle}).json()
    assert imported["keys"] == 1
    assert http.get(f"{server}/v1/agents/copy/memories/k").json()["value"] == 1
    assert http.get(f"{agent}/stats").json()["paused"] is False
    status = http.get(f"{agent}").json()
    assert status["agent"]["id"] == "ops" and status["paused"] is False
    names = [a["id"] for a in http.get(f"{server}/v1/agents").json()["items"]]
    assert "ops" in names and "copy" in names


def test_events_long_poll_and_server_sent_events(server: str, http: Any) -> None:
    agent = f"{server}/v1/agents/streamer"
    http.put(f"{agent}/memories/k", json={"value": 1})
    empty = http.get(f"{agent}/events", params={"cursor": 1, "wait": 0.3}).json()
    assert empty == {"items": [], "next_cursor": None}
    http.put(f"{agent}/memories/k", json={"value": 2})
    got = http.get(f"{agent}/events", params={"cursor": 1, "wait": 5}).json()
    assert [e["seq"] for e in got["items"]] == [2] and got["next_cursor"] == 2
    with http.get(
        f"{agent}/events/stream", params={"max_seconds": 1}, stream=True, timeout=10
    ) as r:
        assert r.headers["content-type"].startswith("text/event-stream")
        text = r.raw.read().decode()
    blocks = [b for b in text.split("\n\n") if b.startswith("id:")]
    assert [b.splitlines()[0] for b in blocks] == ["id: 1", "id: 2"]
    assert json.loads(blocks[1].splitlines()[2].removeprefix("data: "))["kind"] == "remember"


def test_openapi_and_offline_docs(server: str, http: Any) -> None:
    doc = http.get(f"{server}/openapi.json").json()
    assert "/v1/agents/{agent}/memories/{key}" in doc["paths"]
    assert not any(p.startswith("/v1/store") for p in doc["paths"])
    page = http.get(f"{server}/docs").text
    assert "/openapi.json" in page
    assert "http://" not in page and "https://" not in page  # no CDN, nothing external


# -- security ---------------------------------------------------------------------------------


def test_no_token_off_loopback_refuses_to_start(tmp_path: Path) -> None:
    result = refused("--store", str(tmp_path / "x.db"), "--host", "0.0.0.0")
    assert result.returncode == 1
    assert "not a loopback address, without a token" in result.stderr
    assert result.stdout == ""


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: Any) -> Iterator[str]:
    root = tmp_path_factory.mktemp("guarded")
    tokens = [
        {"token": "reader-token-0123456789", "scope": "read"},
        {"token": "bot-only-token-0123456789", "scope": "write", "agents": ["bot"]},
    ]
    (root / "tokens.json").write_text(json.dumps(tokens))
    args = ("--store", str(root / "g.db"), "--token-file", str(root / "tokens.json"))
    with running_server(*args, env={"OCTOPODA_SERVER_TOKEN": TOKEN}) as url:
        yield url


def test_tokens_are_required_and_scoped(guarded: str) -> None:
    with session() as anon, session(TOKEN) as admin, session("reader-token-0123456789") as ro:
        url = f"{guarded}/v1/agents/bot/memories/k"
        r = anon.get(url)
        assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
        with session("wrong-token-0000000000000") as wrong:
            assert wrong.get(url).status_code == 401
        assert anon.get(f"{guarded}/v1/health").json()["ok"] is True
        assert anon.get(f"{guarded}/openapi.json").status_code == 200
        assert anon.get(f"{guarded}/v1/agents").status_code == 401
        assert admin.put(url, json={"value": 1}).status_code == 200
        assert ro.get(url).json()["value"] == 1
        denied = ro.put(url, json={"value": 2})
        assert denied.status_code == 403 and denied.json()["detail"] == "this token is read-only"
        assert ro.post(f"{guarded}/v1/agents/bot/search", json={"query": "x"}).status_code == 200
        assert admin.get(url).json()["version"] == 1  # the refused write did not happen


def test_a_token_limited_to_an_agent_cannot_read_another(guarded: str) -> None:
    with session(TOKEN) as admin, session("bot-only-token-0123456789") as bot:
        admin.put(f"{guarded}/v1/agents/other/memories/secret", json={"value": "s"})
        assert bot.put(f"{guarded}/v1/agents/bot/memories/k2", json={"value": 1}).ok
        r = bot.get(f"{guarded}/v1/agents/other/memories/secret")
        assert r.status_code == 403 and r.json()["type"] == "AccessDenied"
        names = [a["id"] for a in bot.get(f"{guarded}/v1/agents").json()["items"]]
        assert names == ["bot"]
        r = bot.post(f"{guarded}/v1/store/agents", json={"args": [], "kwargs": {}})
        assert r.status_code == 403  # the store API needs an unlimited token
        r = bot.put(f"{guarded}/v1/spaces/s/memories/k", json={"agent": "other", "value": 1})
        assert r.status_code == 403


def _raw(url: str, request: bytes, read: bool = True) -> bytes:
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(request)
        chunks = []
        while read:
            chunk = sock.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks)


def test_a_forged_host_header_is_refused(server: str) -> None:
    answer = _raw(server, b"GET /v1/agents HTTP/1.1\r\nHost: evil.example:7842\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 421"), answer[:200]
    assert b"HostNotAllowed" in answer
    ok = _raw(server, b"GET /v1/health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
    assert ok.startswith(b"HTTP/1.1 200")


def test_a_100_mb_body_is_refused_without_reading_it(server: str) -> None:
    # Only the headers are sent: the answer comes from the Content-Length alone.
    head = (
        b"PUT /v1/agents/bot/memories/big HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Content-Type: application/json\r\nContent-Length: 104857600\r\n\r\n"
    )
    answer = _raw(server, head)
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    # A chunked body is cut off as soon as it passes the limit.
    chunk = b"x" * 1_048_576
    body = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(33))
    chunked = (
        b"PUT /v1/agents/bot/memories/big HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n" + body
    )
    try:
        answer = _raw(server, chunked)
    except ConnectionResetError:  # the server closed while we were still sending
        answer = b"HTTP/1.1 413"
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]


def test_cors_is_off_unless_configured(server: str, http: Any) -> None:
    r = http.get(f"{server}/v1/health", headers={"Origin": "http://evil.example"})
    assert "access-control-allow-origin" not in r.headers


def test_the_server_extra_missing_names_the_install_line() -> None:
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['fastapi'] = None\n"
        "from octopoda._server.settings import require_server_extra\n"
        "require_server_extra()"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert "pip install 'octopoda-core[server]'" in result.stderr


def test_the_remote_extra_missing_names_the_install_line() -> None:
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['requests'] = None\n"
        "from octopoda import AgentRuntime\n"
        "AgentRuntime('bot', store='http://127.0.0.1:7842')"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert "ConfigError" in result.stderr
    assert "pip install 'octopoda-core[remote]'" in result.stderr
