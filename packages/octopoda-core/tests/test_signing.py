"""Signed chain heads (Ed25519, the [sign] extra)."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from octopoda import AgentRuntime, InvalidInput, verify_audit_bundle
from octopoda._audit.chain import GENESIS_HASH, event_hash

ed25519 = pytest.importorskip("cryptography.hazmat.primitives.asymmetric.ed25519")


@pytest.fixture
def key() -> object:
    return ed25519.Ed25519PrivateKey.generate()


@pytest.fixture
def agent(tmp_path: Path) -> AgentRuntime:
    agent = AgentRuntime("bot", store=str(tmp_path / "s.db"))
    for i in range(4):
        agent.remember("k", i)
    return agent


def _sql(agent: AgentRuntime, sql: str, *params: object) -> None:
    conn = sqlite3.connect(agent.store.path)  # type: ignore[attr-defined]
    conn.execute(sql, params)
    conn.commit()
    conn.close()


def test_signed_head_verifies_and_survives_later_writes(agent: AgentRuntime, key: object) -> None:
    signed = agent.audit.sign_head(key)
    assert (signed.seq, signed.hash) == (4, agent.audit.head().hash)
    agent.remember("k", "later")
    report = agent.audit.verify(public_key=key.public_key())  # type: ignore[attr-defined]
    assert report.ok, report.reason
    assert agent.audit.signed_heads() == [signed]


def test_wrong_key_or_no_signature_fails(agent: AgentRuntime, key: object) -> None:
    other = ed25519.Ed25519PrivateKey.generate()
    report = agent.audit.verify(public_key=other.public_key())
    assert not report.ok and "no head" in (report.reason or "")
    agent.audit.sign_head(key)
    assert not agent.audit.verify(public_key=other.public_key()).ok


def test_forged_signature_row_is_detected(agent: AgentRuntime, key: object) -> None:
    agent.audit.sign_head(key)
    _sql(agent, "UPDATE signed_heads SET hash = ?", "ab" * 32)
    report = agent.audit.verify(public_key=key.public_key())  # type: ignore[attr-defined]
    assert not report.ok and report.first_bad_seq == 4 and "invalid" in (report.reason or "")


def test_rewritten_chain_below_a_signed_head_is_detected(agent: AgentRuntime, key: object) -> None:
    """Rewrite every event consistently (and the head): only the signature catches it."""
    agent.audit.sign_head(key)
    conn = sqlite3.connect(agent.store.path)  # type: ignore[attr-defined]
    rows = conn.execute("SELECT seq, time, kind, payload FROM events ORDER BY seq").fetchall()
    prev = GENESIS_HASH
    for seq, time, kind, payload in rows:
        forged = event_hash("bot", kind + "x", payload, prev, seq, time)
        conn.execute(
            "UPDATE events SET kind = ?, prev_hash = ?, hash = ? WHERE seq = ?",
            (kind + "x", prev, forged, seq),
        )
        prev = forged
    conn.execute("UPDATE agents SET head_hash = ?", (prev,))
    conn.commit()
    conn.close()
    assert agent.audit.verify().ok  # consistent rewrite: the plain check cannot see it
    report = agent.audit.verify(public_key=key.public_key())  # type: ignore[attr-defined]
    assert not report.ok and report.first_bad_seq == 4 and "rewritten" in (report.reason or "")


def test_truncation_below_a_signed_head_is_detected(agent: AgentRuntime, key: object) -> None:
    agent.audit.sign_head(key)
    _sql(agent, "DELETE FROM events WHERE seq = 4")
    conn = sqlite3.connect(agent.store.path)  # type: ignore[attr-defined]
    last = conn.execute("SELECT hash FROM events WHERE seq = 3").fetchone()[0]
    conn.execute("UPDATE agents SET head_seq = 3, head_hash = ?", (last,))
    conn.commit()
    conn.close()
    assert agent.audit.verify(check_memories=False).ok
    report = agent.audit.verify(check_memories=False, public_key=key.public_key())  # type: ignore[attr-defined]
    assert not report.ok and "truncated" in (report.reason or "")


def test_bundle_carries_signatures(agent: AgentRuntime, key: object) -> None:
    signed = agent.audit.sign_head(key)
    bundle = agent.audit.export()
    assert verify_audit_bundle(bundle, public_key=signed.public_key).ok
    bundle["signatures"][0]["signature"] = "00" * 64
    assert not verify_audit_bundle(bundle, public_key=signed.public_key).ok


def test_bad_keys_and_empty_chain(tmp_path: Path, key: object) -> None:
    empty = AgentRuntime("nobody", store=str(tmp_path / "e.db"))
    with pytest.raises(InvalidInput):
        empty.audit.sign_head(key)
    with pytest.raises(InvalidInput):
        AgentRuntime("x", store=str(tmp_path / "e.db")).audit.sign_head("not a key")


def test_missing_extra_names_the_install_line(tmp_path: Path) -> None:
    code = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name == "cryptography" or name.startswith("cryptography."):
            raise ImportError("blocked")
sys.meta_path.insert(0, Block())
from octopoda import AgentRuntime, ConfigError
a = AgentRuntime("a", store=sys.argv[1])
a.remember("k", 1)
try:
    a.audit.sign_head(b"0" * 32)
except ConfigError as exc:
    print(exc)
"""
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "m.db")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "pip install 'octopoda-core[sign]'" in out
