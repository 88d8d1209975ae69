"""``octopoda migrate`` against real Octopoda 3.3.4 data, written at test time by 3.3.4 itself.

The data comes from ``legacy/write_334.py`` run by an interpreter that has ``octopoda==3.3.4``
installed (``OCTOPODA_LEGACY_PYTHON``; the nox session ``migrate`` creates it). Without it
these tests skip (they fail instead when ``OCTOPODA_REQUIRE_LEGACY`` is set, as in that
session). Nothing of 3.3.4 is committed to this repository.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from octopoda import AgentRuntime, SqliteStore
from octopoda._cli.app import cli
from octopoda._migrate.legacy import decode_payload

HERE = Path(__file__).parent
WRITER = HERE / "legacy" / "write_334.py"


def legacy_python() -> str:
    python = os.environ.get("OCTOPODA_LEGACY_PYTHON")
    if not python:
        if os.environ.get("OCTOPODA_REQUIRE_LEGACY"):
            pytest.fail("OCTOPODA_LEGACY_PYTHON is not set", pytrace=False)
        pytest.skip("no octopoda 3.3.4 interpreter (OCTOPODA_LEGACY_PYTHON); nox -s migrate")
    return python


def legacy_env(home: Path, data: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OCTOPODA_", "SYNRIX_", "VIRTUAL_ENV", "PYTHON"))
    }
    env.update(
        HOME=str(home), SYNRIX_DATA_DIR=str(data), OCTOPODA_LOCAL_MODE="1", OCTOPODA_QUIET="1"
    )
    return env


@pytest.fixture(scope="module")
def legacy(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A 3.3.4 data directory, an export bundle, and what 3.3.4 reported it stored."""
    python = legacy_python()
    root = tmp_path_factory.mktemp("legacy")
    (root / "home").mkdir()
    (root / "data").mkdir()
    bundle = root / "alice-export.json"
    proc = subprocess.run(
        [python, str(WRITER), str(bundle)],
        env=legacy_env(root / "home", root / "data"),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    expected = json.loads(proc.stdout.strip().splitlines()[-1])
    return {"data": root / "data", "bundle": bundle, "expected": expected}


def run(*args: str) -> Any:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


def migrate_json(store: Path | str, source: Path, *extra: str) -> dict[str, Any]:
    result = run("--store", str(store), "migrate", "--from", str(source), "--json", *extra)
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def value_of_334(recorded: Any) -> Any:
    """A value as 3.3.4's recall_history reported it, without its bookkeeping keys."""
    return decode_payload(recorded)[0]


def test_every_value_and_version_order_matches_what_334_recorded(
    legacy: dict[str, Any], tmp_path: Path
) -> None:
    store_path = tmp_path / "ours.db"
    report = migrate_json(store_path, legacy["data"])
    assert report["kind"] == "database" and report["imported"] > 0
    with SqliteStore(store_path) as store:
        for agent, keys in legacy["expected"]["agents"].items():
            runtime = AgentRuntime(agent, store=store)
            for key, versions in keys.items():
                ours = [v.value for v in runtime.recall_history(key)]
                assert ours == [value_of_334(v) for v in versions], (agent, key)
        alice = AgentRuntime("alice", store=store)
        assert [v.value for v in alice.recall_history("user")] == ["Ally", "Alicia", "Alice"]
        assert alice.recall("user").value == "Ally"  # exact key: 3.3.4 said 'Bob' (user_name)
        assert alice.recall("use").found is False
        assert alice.recall("prefs").value == {"theme": "light", "lang": "en"}
        assert alice.recall("prefs").tags == ("ui",)
        assert alice.recall("vip").value == "always answer"
        assert "importance:critical" in alice.recall("vip").tags
        times = [v.created_at for v in alice.recall_history("user")]
        assert times == sorted(times, reverse=True) and times[0] < alice.decisions()[0].time + 60


def test_shared_values_keep_their_authors_and_order(legacy: dict[str, Any], tmp_path: Path) -> None:
    store_path = tmp_path / "ours.db"
    migrate_json(store_path, legacy["data"])
    with SqliteStore(store_path) as store:
        bob = AgentRuntime("bob", store=store)
        history = bob.shared_history("price", space="research")
        assert [(v.value, v.author) for v in history] == [
            ("$2.3B", "alice"),
            ("$2.2B", "bob"),
            ("$2.1B", "alice"),
        ]
        for key, recorded in legacy["expected"]["shared"].items():
            current = bob.read_shared(key, space="research")
            assert current.value == value_of_334(recorded)
            assert current.author == recorded["_author"]


def test_decisions_goal_and_messages_come_in(legacy: dict[str, Any], tmp_path: Path) -> None:
    store_path = tmp_path / "ours.db"
    migrate_json(store_path, legacy["data"])
    with SqliteStore(store_path) as store:
        alice = AgentRuntime("alice", store=store)
        [decision] = alice.decisions()
        assert (decision.decision, decision.reasoning, decision.context) == (
            "Keep VPS",
            "cheaper than cloud",
            {"cost": 5},
        )
        assert [d.decision for d in AgentRuntime("bob", store=store).decisions()] == [
            "Use Postgres"
        ]
        goal = alice.get_goal()
        recorded = legacy["expected"]["goal"]
        assert goal is not None and goal.goal == recorded["goal"] == "ship 1.0"
        assert goal.progress == recorded["progress"] == 0.5
        assert [m["done"] for m in goal.milestones] == [True, False]
        assert [g.progress for g in alice.goal_history()] == [0.5, 0.0]
        messages = AgentRuntime("bob", store=store).read_messages(unread_only=False)
        assert [(m.sender, m.body) for m in messages] == [("alice", "hello bob")]
        broadcasts = alice.read_broadcasts(space="global")
        assert [(m.sender, m.body) for m in broadcasts] == [("bob", "deploy at 5")]
        otp = alice.recall("otp")
        assert otp.value == "1234" and otp.expires_at is not None
        assert otp.expires_at == pytest.approx(otp.created_at + 3600, abs=5)
        assert alice.recall_history("gone") == []  # 3.3.4 had deleted it


def test_each_import_is_audited_naming_the_source_and_chains_verify(
    legacy: dict[str, Any], tmp_path: Path
) -> None:
    store_path = tmp_path / "ours.db"
    report = migrate_json(store_path, legacy["data"])
    with SqliteStore(store_path) as store:
        for entry in report["agents"]:
            runtime = AgentRuntime(entry["agent"], store=store)
            assert runtime.audit.verify().ok
            events = runtime.timeline(kinds=["import"])
            assert [e.seq for e in events] == entry["events"]
            assert all(e.payload["source"] == str(legacy["data"] / "synrix.db") for e in events)
            assert all(e.payload["source_format"] == "octopoda-3.3.4-database" for e in events)
        # bob's interleaved shared write sits between two of alice's: alice needs 2 events
        by_agent = {a["agent"]: a for a in report["agents"]}
        assert len(by_agent["bob"]["events"]) == 1
        assert len(by_agent["alice"]["events"]) == 2


def test_a_second_run_imports_nothing_and_says_so(legacy: dict[str, Any], tmp_path: Path) -> None:
    store_path = tmp_path / "ours.db"
    first = migrate_json(store_path, legacy["data"])
    second = migrate_json(store_path, legacy["data"])
    assert second["imported"] == 0
    assert second["already_imported"] == first["imported"]
    text = run("--store", str(store_path), "migrate", "--from", str(legacy["data"])).stdout
    assert "nothing to import" in text
    with SqliteStore(store_path) as store:
        alice = AgentRuntime("alice", store=store)
        assert len(alice.recall_history("user")) == 3
        assert len(alice.decisions()) == 1


def test_dry_run_writes_nothing_and_reports_skips(legacy: dict[str, Any], tmp_path: Path) -> None:
    store_path = tmp_path / "ours.db"
    report = migrate_json(store_path, legacy["data"], "--dry-run")
    assert report["dry_run"] and report["imported"] > 0
    assert not store_path.exists()
    reasons = {s["name"]: s["reason"] for s in report["skipped"]}
    assert any(name.startswith("agents:alice:snapshots:") for name in reasons)


def test_a_334_export_bundle_migrates_and_only_once(legacy: dict[str, Any], tmp_path: Path) -> None:
    store_path = tmp_path / "ours.db"
    report = migrate_json(store_path, legacy["bundle"])
    assert report["kind"] == "bundle"
    with SqliteStore(store_path) as store:
        alice = AgentRuntime("alice", store=store)
        assert alice.recall("user").value == "Ally"  # a bundle holds current values only
        assert alice.recall("count").value == 2
        assert alice.get_goal() is not None
    assert migrate_json(store_path, legacy["bundle"])["imported"] == 0
    # the database then adds what the bundle lacked, never doubling or reordering a key
    report = migrate_json(store_path, legacy["data"])
    with SqliteStore(store_path) as store:
        alice = AgentRuntime("alice", store=store)
        assert [v.value for v in alice.recall_history("count")] == [2]
        assert alice.recall("count").value == 2
        assert alice.decisions()[0].decision == "Keep VPS"
    skipped = [s for s in report["skipped"] if s["name"].startswith("agents:alice:count @")]
    assert skipped and "older than a version imported before" in skipped[0]["reason"]


def test_payload_decoding_follows_334_recall() -> None:
    assert decode_payload({"value": "Alice"}) == ("Alice", (), None)
    assert decode_payload({"theme": "dark", "_tags": ["ui"]}) == ({"theme": "dark"}, ("ui",), None)
    value = {"value": 3, "__expires_at": 1700000000.5, "__ttl_seconds": 60, "_tags": ["__ttl"]}
    assert decode_payload(value) == (3, (), 1700000000.5)
    assert decode_payload({"value": 1, "other": 2}) == ({"value": 1, "other": 2}, (), None)


def test_no_334_data_is_a_clear_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli, ["--store", str(tmp_path / "x.db"), "migrate", "--from", str(tmp_path)]
    )
    assert result.exit_code == 1
    assert "no Octopoda 3.3.4 data at" in result.output + (result.stderr or "")


def test_migrating_into_postgresql_keeps_history_and_is_idempotent(
    legacy: dict[str, Any], postgres_clean_url: str
) -> None:
    from octopoda._store.config import open_store

    first = migrate_json(postgres_clean_url, legacy["data"])
    assert first["imported"] > 0
    second = migrate_json(postgres_clean_url, legacy["data"])
    assert second["imported"] == 0 and second["already_imported"] == first["imported"]
    store = open_store(postgres_clean_url)
    alice = AgentRuntime("alice", store=store)
    assert [v.value for v in alice.recall_history("user")] == ["Ally", "Alicia", "Alice"]
    history = alice.shared_history("price", space="research")
    assert [v.author for v in history] == ["alice", "bob", "alice"]
    assert alice.audit.verify().ok and AgentRuntime("bob", store=store).audit.verify().ok


def test_two_migrations_at_once_import_everything_once(
    legacy: dict[str, Any], tmp_path: Path
) -> None:
    import sys

    store_path = tmp_path / "ours.db"
    with SqliteStore(store_path) as store:  # the file exists
        AgentRuntime("someone", store=store).remember("x", 1)
    cmd = [sys.executable, "-m", "octopoda", "--store", str(store_path), "migrate", "--json"]
    procs = [
        subprocess.Popen([*cmd, "--from", str(legacy["data"])], stdout=subprocess.PIPE, text=True)
        for _ in range(3)
    ]
    reports = [json.loads(p.communicate(timeout=120)[0]) for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert all(r["imported"] + r["already_imported"] > 0 for r in reports)
    with SqliteStore(store_path) as store:
        alice = AgentRuntime("alice", store=store)
        assert [v.value for v in alice.recall_history("user")] == ["Ally", "Alicia", "Alice"]
        assert len(alice.decisions()) == 1
        bob = AgentRuntime("bob", store=store)
        assert len(bob.shared_history("price", space="research")) == 3
        assert len(bob.read_messages(unread_only=False)) == 1
        assert alice.audit.verify().ok and bob.audit.verify().ok


def test_without_from_it_reads_334s_data_dir_variables(
    legacy: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OCTOPODA_DATA_DIR", raising=False)
    monkeypatch.setenv("SYNRIX_DATA_DIR", str(legacy["data"]))
    result = run("--store", str(tmp_path / "ours.db"), "migrate", "--json")
    assert json.loads(result.stdout)["source"] == str(legacy["data"] / "synrix.db")
    monkeypatch.setenv("OCTOPODA_DATA_DIR", str(tmp_path / "elsewhere"))  # 3.3.4's first
    failed = CliRunner().invoke(cli, ["--store", str(tmp_path / "ours.db"), "migrate"])
    assert failed.exit_code == 1
    assert f"no Octopoda 3.3.4 data at {tmp_path / 'elsewhere' / 'synrix.db'}" in (
        failed.output + (failed.stderr or "")
    )


def test_a_database_that_is_not_334s_is_a_clear_error(tmp_path: Path) -> None:
    ours = tmp_path / "octopoda.db"
    with SqliteStore(ours) as store:
        AgentRuntime("bot", store=store).remember("k", 1)
    result = CliRunner().invoke(
        cli, ["--store", str(tmp_path / "x.db"), "migrate", "--from", str(ours)]
    )
    assert result.exit_code == 1
    assert "is an SQLite database but not Octopoda 3.3.4's" in result.output + (result.stderr or "")
    junk = tmp_path / "junk.json"
    junk.write_text('{"format": "other"}')
    result = CliRunner().invoke(
        cli, ["--store", str(tmp_path / "x.db"), "migrate", "--from", str(junk)]
    )
    assert result.exit_code == 1 and "is not a 3.3.4 export bundle" in result.output + (
        result.stderr or ""
    )


def test_doctor_points_at_334_data_when_it_finds_some(
    legacy: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OCTOPODA_DATA_DIR", raising=False)
    monkeypatch.setenv("SYNRIX_DATA_DIR", str(legacy["data"]))
    args = ["--store", str(tmp_path / "ours.db"), "doctor"]
    report = json.loads(run(*args, "--json").stdout)
    assert report["predecessor"] == {"data": str(legacy["data"] / "synrix.db")}
    assert "bring it in with `octopoda migrate`" in run(*args).stdout
    monkeypatch.setenv("SYNRIX_DATA_DIR", str(tmp_path))  # nothing there
    assert json.loads(run(*args, "--json").stdout)["predecessor"] == {"data": None}
