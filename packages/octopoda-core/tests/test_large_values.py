"""Large values (issue 15, item 9): what the frameworks' own backends store (a 20 MB graph
state, 12.5 MB of raw bytes, a 17 MB image) is stored and read back on both stores, up to a
configurable limit whose error names the object, the limit and how to raise it."""

from __future__ import annotations

import hashlib
import json
import os

import pytest

from octopoda import AgentRuntime, ConfigError, InvalidInput, InvalidValue
from octopoda._values import DEFAULT_MAX_VALUE_BYTES, MAX_VALUE_BYTES_CEILING

MB = 1_000_000


def test_values_above_the_old_16_mib_limit_round_trip(any_store_url: str) -> None:
    agent = AgentRuntime("big", store=any_store_url)
    state = {"messages": [{"role": "user", "content": "x" * (20 * MB)}], "step": 3}
    image = os.urandom(17 * MB)
    agent.remember("checkpoint:thread-1", state)
    agent.remember("image", image)
    agent.remember("image", image[: 12 * MB + 500_000])  # a second version
    assert agent.recall("checkpoint:thread-1").value == state
    assert agent.recall("image", version=1).value == image
    assert [v.version for v in agent.recall_history("image", limit=1)] == [2]
    text = json.dumps(state, ensure_ascii=False, separators=(",", ":"))
    (write,) = agent.timeline(kinds=["remember"])[0].payload["writes"]
    assert write["sha256"] == hashlib.sha256(text.encode()).hexdigest()
    report = agent.audit.verify()
    assert report.ok and report.memories_checked == 3


def test_the_limit_is_configurable_and_named_when_exceeded(any_store_url: str) -> None:
    agent = AgentRuntime("small", store=any_store_url, max_value_bytes=1000)
    agent.remember("k", "x" * 998)  # 1,000 bytes with its quotes
    agent.remember("b", bytes(1000))
    with pytest.raises(InvalidValue) as info:
        agent.remember("checkpoint:t1", "x" * 999)
    message = str(info.value)
    assert message.startswith(
        "the value of 'checkpoint:t1' is 1,001 bytes; the limit is 1,000 bytes (max_value_bytes)"
    )
    assert "AgentRuntime(..., max_value_bytes=N) or OCTOPODA_MAX_VALUE_BYTES=N" in message
    with pytest.raises(InvalidValue, match="the value of 'img' is 1,001 bytes"):
        agent.remember_many({"ok": 1, "img": bytes(1001)})
    with pytest.raises(InvalidValue, match="the value of 'doc' is"):
        agent.share("doc", "é" * 600, space="team")
    with pytest.raises(InvalidValue, match="the message body is"):
        agent.send_message("other", {"text": "y" * 2000})
    assert [e.kind for e in agent.timeline()] == ["remember", "remember"]  # nothing else


def test_the_environment_sets_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OCTOPODA_MAX_VALUE_BYTES", "2_000")
    agent = AgentRuntime("env", store=":memory:")
    try:
        agent.remember("k", "x" * 1998)
        with pytest.raises(InvalidValue, match="the limit is 2,000 bytes"):
            agent.remember("k", "x" * 1999)
        # an explicit limit wins over the environment
        wide = AgentRuntime("env", store=agent.store, max_value_bytes=10_000)
        wide.remember("k", "x" * 5000)
        monkeypatch.setenv("OCTOPODA_MAX_VALUE_BYTES", "lots")
        with pytest.raises(ConfigError, match="OCTOPODA_MAX_VALUE_BYTES must be a number"):
            AgentRuntime("env", store=agent.store)
        monkeypatch.setenv("OCTOPODA_MAX_VALUE_BYTES", str(2**40))
        with pytest.raises(ConfigError, match="from 1 to 536,870,912"):
            AgentRuntime("env", store=agent.store)
        monkeypatch.delenv("OCTOPODA_MAX_VALUE_BYTES")
        assert AgentRuntime("env", store=agent.store)._max_value_bytes == DEFAULT_MAX_VALUE_BYTES
    finally:
        agent.store.close()


@pytest.mark.parametrize("bad", [0, -1, MAX_VALUE_BYTES_CEILING + 1, "1000", 1.5, True])
def test_a_bad_limit_is_refused(bad: object) -> None:
    with pytest.raises(InvalidInput, match="max_value_bytes must be an int from 1 to"):
        AgentRuntime("x", store=":memory:", max_value_bytes=bad)  # type: ignore[arg-type]


def test_the_default_is_far_above_what_agents_send() -> None:
    assert DEFAULT_MAX_VALUE_BYTES == 256 * 2**20 <= MAX_VALUE_BYTES_CEILING == 512 * 2**20
