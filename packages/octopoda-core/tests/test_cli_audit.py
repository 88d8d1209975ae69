"""`octopoda audit verify|export|verify-bundle`, `octopoda timeline` and `octopoda diff`."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from octopoda import AgentRuntime
from octopoda.cli import build_cli


def run(*args: str) -> Result:
    return CliRunner().invoke(build_cli(), list(args), catch_exceptions=False)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "audit.db"
    agent = AgentRuntime("bot", store=str(path))
    agent.remember("plan", {"tier": "pro"})
    agent.log_decision("Offer the discount")
    agent.remember("plan", {"tier": "enterprise"})
    agent.remember("note", "hi")
    AgentRuntime("other", store=str(path)).remember("k", 1)
    return path


def test_verify_every_agent(db: Path) -> None:
    result = run("audit", "verify", "--store", str(db))
    assert result.exit_code == 0, result.output
    assert "bot: ok, 4 events verified" in result.output
    assert "other: ok, 1 event verified" in result.output
    reports = json.loads(run("audit", "verify", "--store", str(db), "--json").output)
    assert [(r["agent"], r["ok"], r["checked"]) for r in reports] == [
        ("bot", True, 4),
        ("other", True, 1),
    ]


def test_verify_fails_on_tampering_with_exit_1(db: Path) -> None:
    conn = sqlite3.connect(db)
    conn.execute("UPDATE events SET kind = 'remembered' WHERE agent = 'bot' AND seq = 2")
    conn.commit()
    conn.close()
    result = run("audit", "verify", "--store", str(db), "-a", "bot")
    assert result.exit_code == 1
    assert "bot: BROKEN at seq 2" in result.output


def test_expected_head_catches_truncation_with_a_moved_head(db: Path) -> None:
    head = AgentRuntime("bot", store=str(db)).audit.head()
    conn = sqlite3.connect(db)
    prev = conn.execute("SELECT hash FROM events WHERE agent='bot' AND seq=3").fetchone()[0]
    conn.execute("DELETE FROM events WHERE agent='bot' AND seq=4")
    conn.execute("DELETE FROM memories WHERE key='note'")
    conn.execute("UPDATE agents SET head_seq=3, head_hash=? WHERE id='bot'", (prev,))
    conn.commit()
    conn.close()
    assert run("audit", "verify", "--store", str(db), "-a", "bot").exit_code == 0
    kept = f"{head.seq}:{head.hash}"
    result = run("audit", "verify", "--store", str(db), "-a", "bot", "--expected-head", kept)
    assert result.exit_code == 1 and "truncated" in result.output
    bad = run("audit", "verify", "--store", str(db), "--expected-head", kept)
    assert bad.exit_code == 2 and "exactly one --agent" in bad.output


def test_export_and_verify_bundle_offline(db: Path, tmp_path: Path) -> None:
    bundle = tmp_path / "bot.audit.json"
    result = run("audit", "export", "--store", str(db), "-a", "bot", str(bundle))
    assert result.exit_code == 0 and "wrote 4 events" in result.output
    db.unlink()
    ok = run("audit", "verify-bundle", str(bundle))
    assert ok.exit_code == 0 and "bot: ok, 4 events verified" in ok.output
    data = json.loads(bundle.read_text())
    data["events"][1]["payload"]["decision"] = "Offer nothing"
    bundle.write_text(json.dumps(data))
    broken = run("audit", "verify-bundle", str(bundle), "--json")
    assert broken.exit_code == 1
    assert json.loads(broken.output)[0]["first_bad_seq"] == 2


def test_verify_bundle_rejects_garbage(tmp_path: Path) -> None:
    garbage = tmp_path / "g.json"
    garbage.write_text("{not json")
    result = CliRunner().invoke(build_cli(), ["audit", "verify-bundle", str(garbage)])
    assert result.exit_code == 1 and "not valid JSON" in result.output


def test_timeline_filters_and_json(db: Path) -> None:
    text = run("timeline", "--store", str(db), "-a", "bot").output
    assert [line.split()[2] for line in text.splitlines()[1:]] == [
        "remember",
        "decision",
        "remember",
        "remember",
    ]
    decisions = json.loads(
        run("timeline", "--store", str(db), "-a", "bot", "--kind", "decision", "--json").output
    )
    assert [(e["seq"], e["payload"]["decision"]) for e in decisions] == [(2, "Offer the discount")]
    assert (
        len(
            json.loads(
                run("timeline", "--store", str(db), "-a", "bot", "--limit", "1", "--json").output
            )
        )
        == 1
    )


def test_diff(db: Path) -> None:
    out = json.loads(run("diff", "--store", str(db), "-a", "bot", "2", "--json").output)
    assert out["changed"] == {"plan": {"from": {"tier": "pro"}, "to": {"tier": "enterprise"}}}
    assert out["added"] == {"note": "hi"} and out["removed"] == {}
    text = run("diff", "--store", str(db), "-a", "bot", "1", "3").output
    assert text.startswith("~  plan")
    assert "no changes" in run("diff", "--store", str(db), "-a", "bot", "3", "3").output


def test_unknown_agent_is_an_error(db: Path) -> None:
    result = CliRunner().invoke(build_cli(), ["timeline", "--store", str(db), "-a", "nobody"])
    assert result.exit_code == 1 and "no agent 'nobody'" in result.output
