"""The ``octopoda`` command line, run with click's CliRunner against real SQLite files."""

from __future__ import annotations

import base64
import inspect
import json
import os
import re
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner, Result

from octopoda import AgentRuntime, SqliteStore
from octopoda._cli.memory import parse_value
from octopoda._cli.output import iso_time, preview, table
from octopoda._store.sqlite.schema import MIGRATIONS
from octopoda.cli import MISSING_CLICK, build_cli, main

ROOT = Path(__file__).resolve().parents[3]
DOCS = ROOT / "docs" / "cli.md"
ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reads or writes ~/.octopoda or a store named in the environment."""
    monkeypatch.setenv("OCTOPODA_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("OCTOPODA_DATABASE_URL", raising=False)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "store.db"


def _runner() -> CliRunner:
    # click < 8.2 mixes stderr into stdout unless told not to; 8.2 removed the flag.
    if "mix_stderr" in inspect.signature(CliRunner).parameters:
        return CliRunner(mix_stderr=False)
    return CliRunner()


def run(*args: str, stdin: str | bytes | None = None) -> Result:
    """Invoke ``octopoda ARGS``; any exception other than an exit fails the test."""
    return _runner().invoke(build_cli(), list(args), input=stdin, catch_exceptions=False)


def ok(*args: str, stdin: str | bytes | None = None) -> Result:
    result = run(*args, stdin=stdin)
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    return result


def ok_json(*args: str, stdin: str | bytes | None = None) -> Any:
    return json.loads(ok(*args, "--json", stdin=stdin).stdout)


def fails(*args: str, stdin: str | bytes | None = None) -> str:
    """Run a command that must fail cleanly; return its stderr."""
    result = run(*args, stdin=stdin)
    assert result.exit_code == 1, result.output
    assert result.stdout == ""
    assert result.stderr.startswith("Error: ")
    assert "Traceback" not in result.output
    return result.stderr


def put(db: Path, key: str, value: str, *extra: str, agent: str = "bot") -> Result:
    return ok("memory", "put", "--store", str(db), "--agent", agent, key, value, *extra)


@contextmanager
def runtime_on(path: Path, agent: str = "bot", **kwargs: Any) -> Iterator[AgentRuntime]:
    with SqliteStore(path) as store:
        yield AgentRuntime(agent, store=store, **kwargs)


def remember(path: Path, key: str, value: Any, agent: str = "bot", **kwargs: Any) -> None:
    clock = kwargs.pop("clock", None)
    with runtime_on(path, agent, clock=clock) as rt:
        rt.remember(key, value, **kwargs)


# -- entry points -------------------------------------------------------------------------------


def _python(*args: str) -> subprocess.CompletedProcess[str]:
    """Run this Python in a subprocess, without the OCTOPODA_* variables."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OCTOPODA_")}
    return subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )


def test_importing_octopoda_and_its_cli_does_not_import_click() -> None:
    proc = _python("-c", "import sys, octopoda, octopoda.cli; print('click' in sys.modules)")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"


BLOCK_CLICK = """
import sys

class BlockClick:
    def find_spec(self, name, path=None, target=None):
        if name == "click" or name.startswith("click."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, BlockClick())
sys.argv = ["octopoda", "version"]
from octopoda.cli import main
main()
"""


def test_without_click_main_says_how_to_install_it() -> None:
    proc = _python("-c", BLOCK_CLICK)
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert "pip install 'octopoda-core[cli]'" in proc.stderr
    assert proc.stderr == MISSING_CLICK
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("module", ["octopoda.cli", "octopoda"])
def test_python_dash_m_runs_the_cli(module: str) -> None:
    proc = _python("-m", module, "version", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["octopoda"] == __import__("octopoda").__version__


def test_console_script_runs() -> None:
    script = Path(sys.executable).with_name("octopoda")
    if not script.exists():
        pytest.skip("the octopoda console script is not installed next to this Python")
    proc = subprocess.run(
        [str(script), "--version"], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("octopoda ")


def test_main_runs_in_process(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["version", "--json"])
    assert exit_info.value.code in (0, None)
    assert set(json.loads(capsys.readouterr().out)) == {"octopoda", "python", "sqlite"}


# -- version, doctor, agents --------------------------------------------------------------------


def test_version_text_and_json() -> None:
    text = ok("version").stdout
    assert text.startswith("octopoda")
    assert f"sqlite    {sqlite3.sqlite_version}" in text
    data = ok_json("version")
    assert data["sqlite"] == sqlite3.sqlite_version
    assert data["python"] == ".".join(map(str, sys.version_info[:3]))
    assert ok("--version").stdout == f"octopoda {data['octopoda']}\n"


def test_doctor_reports_store_integrity_and_extras(db: Path) -> None:
    put(db, "k", "1")
    report = ok_json("doctor", "--store", str(db))
    store = report["store"]
    assert report["ok"] is True and report["problems"] == []
    assert store["source"] == "--store"
    assert store["path"] == str(db) and store["url"] == f"sqlite:///{db}"
    assert store["schema_version"] == len(MIGRATIONS)
    assert store["migrations"] == sorted(name for name, _ in MIGRATIONS)
    assert store["journal_mode"] == "wal"
    assert store["durability"] == "normal"
    assert store["size_bytes"] > 0
    assert store["integrity_check"] == ["ok"]
    assert store["agents"] == 1
    assert set(report["extras"]) == {"cli", "sign", "postgres"}
    assert report["extras"]["cli"] == {
        "module": "click",
        "installed": True,
        "install": "pip install 'octopoda-core[cli]'",
    }
    text = ok("--store", str(db), "doctor").stdout
    assert re.search(r"integrity\s+ok", text)
    assert re.search(r"journal mode\s+wal", text)
    assert "click: installed" in text


def test_doctor_without_a_store_file_says_it_will_be_created(tmp_path: Path) -> None:
    report = ok_json("doctor")
    home_db = tmp_path / "home" / "octopoda.db"
    assert report["store"] == {
        "source": "OCTOPODA_HOME",
        "path": str(home_db),
        "exists": False,
        "writable": True,
    }
    assert report["ok"] is True
    assert "created on the first write" in ok("doctor").stdout
    assert not home_db.exists()


def test_doctor_on_a_garbage_file_fails_with_the_report(db: Path) -> None:
    db.write_bytes(b"this is not a database at all" * 200)
    result = run("doctor", "--store", str(db), "--json")
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["ok"] is False
    assert "not a usable SQLite database" in report["store"]["error"]
    assert result.stderr.startswith("Error: ") and "move it aside" in result.stderr
    assert "Traceback" not in result.output


def test_doctor_fails_when_the_integrity_check_fails(db: Path) -> None:
    put(db, "k", "1")
    # An index that no longer matches its table: integrity_check reports it, reads still work.
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE damage (x TEXT)")
    conn.execute("CREATE INDEX damage_x ON damage (x)")
    conn.executemany("INSERT INTO damage VALUES (?)", [("a",), ("b",)])
    conn.commit()
    conn.execute("PRAGMA writable_schema = ON")
    conn.execute(
        "UPDATE sqlite_master SET sql = 'CREATE INDEX damage_x ON damage (x || ''z'')'"
        " WHERE name = 'damage_x'"
    )
    conn.commit()
    conn.close()
    result = run("doctor", "--store", str(db))
    assert result.exit_code == 1
    assert "missing from index damage_x" in result.stdout
    assert "PRAGMA integrity_check found damage" in result.stderr
    report = json.loads(run("doctor", "--store", str(db), "--json").stdout)
    assert report["ok"] is False and report["store"]["integrity_check"] != ["ok"]


def test_doctor_with_an_unusable_store_url_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OCTOPODA_DATABASE_URL", "mysql://somewhere/db")
    result = run("doctor")
    assert result.exit_code == 1
    assert "unknown store URL scheme" in result.stderr
    assert "OCTOPODA_DATABASE_URL" in result.stdout


def test_agents_text_and_json(db: Path) -> None:
    put(db, "k", "1", agent="writer")
    put(db, "k", "2", agent="writer")
    put(db, "k", "1", agent="reader")
    rows = ok_json("agents", "--store", str(db))
    assert [r["id"] for r in rows] == ["reader", "writer"]
    writer = rows[1]
    assert writer["status"] == "active" and writer["head_seq"] == 2
    assert isinstance(writer["created_at"], float) and isinstance(writer["last_active"], float)
    text = ok("agents", "--store", str(db)).stdout
    assert text.splitlines()[0].split() == [
        "AGENT",
        "STATUS",
        "EVENTS",
        "CREATED",
        "LAST",
        "ACTIVE",
    ]
    assert re.search(r"writer\s+active\s+2\s+" + ISO.pattern, text)


def test_agents_of_an_empty_store(db: Path) -> None:
    SqliteStore(db).close()
    assert ok("agents", "--store", str(db)).stdout.startswith("no agents in ")
    assert ok_json("agents", "--store", str(db)) == []


# -- memory put / get ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("42", 42),
        ("-1.5", -1.5),
        ('{"a": [1, 2, {"b": null}]}', {"a": [1, 2, {"b": None}]}),
        ('"quoted"', "quoted"),
        ("true", True),
        ("null", None),
        ("hello world", "hello world"),
        ("[1,", "[1,"),
        ("NaN", "NaN"),
        ("-Infinity", "-Infinity"),
        ("", ""),
        ("caf\u00e9 \u2615", "caf\u00e9 \u2615"),
    ],
)
def test_put_stores_json_when_valid_else_the_string(db: Path, text: str, value: Any) -> None:
    assert parse_value(text) == value
    put(db, "k", "--", text)  # "--": a value may start with "-"
    with runtime_on(db) as rt:
        assert rt.recall("k").value == value


def test_put_raw_always_stores_the_string(db: Path) -> None:
    put(db, "k", '{"a": 1}', "--raw")
    put(db, "n", "42", "--raw")
    with runtime_on(db) as rt:
        assert rt.recall("k").value == '{"a": 1}'
        assert rt.recall("n").value == "42"


def test_put_prints_the_new_version(db: Path) -> None:
    assert put(db, "user", '"Alice"').stdout == "user: version 1\n"
    assert put(db, "user", '"Bob"').stdout == "user: version 2\n"
    written = ok_json("memory", "put", "--store", str(db), "-a", "bot", "user", "Carol")
    assert written["agent"] == "bot" and written["key"] == "user"
    assert written["version"] == 3 and written["seq"] == 3 and written["tombstone"] is False
    assert isinstance(written["created_at"], float)
    assert abs(written["created_at"] - time.time()) < 60


def test_put_with_tags_and_ttl(db: Path) -> None:
    put(db, "k", "1", "--tag", "a", "--tag", "b", "--ttl", "3600")
    got = ok_json("memory", "get", "--store", str(db), "-a", "bot", "k")
    assert got["tags"] == ["a", "b"]
    assert got["expires_at"] == pytest.approx(got["created_at"] + 3600, abs=1e-3)


def test_get_prints_the_value_as_json_and_the_record_with_json(db: Path) -> None:
    put(db, "profile", '{"name": "Alice", "langs": ["en", "fr"]}')
    out = ok("memory", "get", "--store", str(db), "--agent", "bot", "profile").stdout
    assert json.loads(out) == {"name": "Alice", "langs": ["en", "fr"]}
    got = ok_json("memory", "get", "--store", str(db), "--agent", "bot", "profile")
    assert got == {
        "agent": "bot",
        "key": "profile",
        "value": {"name": "Alice", "langs": ["en", "fr"]},
        "version": 1,
        "created_at": got["created_at"],
        "tags": [],
        "expires_at": None,
        "seq": 1,
        "kind": None,
    }
    put(db, "s", "plain text")
    assert ok("memory", "get", "--store", str(db), "-a", "bot", "s").stdout == '"plain text"\n'


def test_get_an_older_version(db: Path) -> None:
    put(db, "k", "1")
    put(db, "k", "2")
    assert ok("memory", "get", "--store", str(db), "-a", "bot", "k", "--version", "1").stdout == (
        "1\n"
    )
    got = ok_json("memory", "get", "--store", str(db), "-a", "bot", "k", "--version", "2")
    assert got["value"] == 2 and got["version"] == 2


def test_get_bytes_prints_base64_with_a_marker(db: Path) -> None:
    blob = b"\x00\xffbinary"
    remember(db, "blob", blob)
    marker = {"$bytes": base64.b64encode(blob).decode("ascii")}
    out = ok("memory", "get", "--store", str(db), "-a", "bot", "blob").stdout
    assert json.loads(out) == marker
    assert ok_json("memory", "get", "--store", str(db), "-a", "bot", "blob")["value"] == marker
    listed = ok_json("memory", "list", "--store", str(db), "-a", "bot")
    assert listed[0]["value"] == marker


def test_get_a_missing_key_fails(db: Path) -> None:
    put(db, "k", "1")
    err = fails("memory", "get", "--store", str(db), "-a", "bot", "nope")
    assert "agent 'bot' has no key 'nope'" in err
    assert "octopoda memory list --agent bot" in err


def test_get_an_unknown_agent_fails(db: Path) -> None:
    put(db, "k", "1")
    err = fails("memory", "get", "--store", str(db), "-a", "typo", "k")
    assert "there is no agent 'typo'" in err and "octopoda agents" in err


def test_get_a_missing_version_fails(db: Path) -> None:
    put(db, "k", "1")
    put(db, "k", "2")
    err = fails("memory", "get", "--store", str(db), "-a", "bot", "k", "--version", "7")
    assert "has no version 7; its versions are 1 to 2" in err


def test_get_a_forgotten_key_fails(db: Path) -> None:
    put(db, "k", "1")
    ok("memory", "forget", "--store", str(db), "-a", "bot", "k")
    err = fails("memory", "get", "--store", str(db), "-a", "bot", "k")
    assert "version 2 of key 'k'" in err and "forgotten" in err
    assert ok("memory", "get", "--store", str(db), "-a", "bot", "k", "--version", "1").stdout == (
        "1\n"
    )


def test_get_an_expired_key_fails(db: Path) -> None:
    remember(db, "k", "old", ttl=10, clock=lambda: time.time() - 100)
    err = fails("memory", "get", "--store", str(db), "-a", "bot", "k")
    assert "version 1 of key 'k' of agent 'bot' expired at " in err
    assert ISO.search(err)


def test_reading_a_store_that_does_not_exist_fails_and_creates_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "typo.db"
    for args in (
        ["memory", "get", "-a", "bot", "k"],
        ["memory", "list", "-a", "bot"],
        ["memory", "history", "-a", "bot", "k"],
        ["memory", "forget", "-a", "bot", "k"],
        ["memory", "erase", "-a", "bot", "k", "--yes"],
        ["export", "-a", "bot"],
        ["agents"],
    ):
        err = fails(*args, "--store", str(missing))
        assert f"there is no Octopoda store at {missing}" in err
    assert not missing.exists()


# -- memory history / list / forget -------------------------------------------------------------


def test_history_shows_every_version_newest_first(db: Path) -> None:
    put(db, "k", '"one"', "--tag", "t")
    put(db, "k", '"two"')
    ok("memory", "forget", "--store", str(db), "-a", "bot", "k")
    rows = ok_json("memory", "history", "--store", str(db), "-a", "bot", "k")
    assert [(r["version"], r["state"], r["value"]) for r in rows] == [
        (3, "forgotten", None),
        (2, "live", "two"),
        (1, "live", "one"),
    ]
    assert rows[2]["tags"] == ["t"] and rows[0]["tombstone"] is True
    assert all(isinstance(r["created_at"], float) for r in rows)
    assert all(r["author"] == "bot" for r in rows)
    limited = ok_json("memory", "history", "--store", str(db), "-a", "bot", "k", "--limit", "1")
    assert [r["version"] for r in limited] == [3]
    lines = ok("memory", "history", "--store", str(db), "-a", "bot", "k").stdout.splitlines()
    assert lines[0].split() == ["VERSION", "CREATED", "STATE", "KIND", "TAGS", "VALUE"]
    assert re.match(r"3\s+" + ISO.pattern + r"\s+forgotten\s+-\s+-\s+-$", lines[1])
    assert re.match(r"1\s+" + ISO.pattern + r'\s+live\s+-\s+t\s+"one"$', lines[3])


def test_history_of_an_expired_version(db: Path) -> None:
    remember(db, "k", "old", ttl=10, clock=lambda: time.time() - 100)
    rows = ok_json("memory", "history", "--store", str(db), "-a", "bot", "k")
    assert rows[0]["state"] == "expired" and rows[0]["value"] is None


def test_history_of_a_missing_key_fails(db: Path) -> None:
    put(db, "k", "1")
    assert "has no key 'x'" in fails("memory", "history", "--store", str(db), "-a", "bot", "x")


def test_list_filters_by_prefix_tag_and_limit(db: Path) -> None:
    put(db, "user:name", '"Alice"', "--tag", "profile")
    put(db, "user:lang", '"fr"', "--tag", "profile", "--tag", "pref")
    put(db, "task", '"write"')

    def keys(*extra: str) -> list[str]:
        rows = ok_json("memory", "list", "--store", str(db), "-a", "bot", *extra)
        return [r["key"] for r in rows]

    assert keys() == ["task", "user:lang", "user:name"]
    assert keys("--prefix", "user:") == ["user:lang", "user:name"]
    assert keys("--tag", "profile") == ["user:lang", "user:name"]
    assert keys("--tag", "profile", "--tag", "pref") == ["user:lang"]
    assert keys("--limit", "2") == ["task", "user:lang"]
    assert keys("--prefix", "none") == []
    row = ok_json("memory", "list", "--store", str(db), "-a", "bot", "--prefix", "task")[0]
    assert set(row) == {
        "key",
        "value",
        "version",
        "created_at",
        "tags",
        "expires_at",
        "seq",
        "kind",
    }


def test_put_list_search_and_history_with_a_kind(db: Path) -> None:
    assert ok_json("memory", "put", "--store", str(db), "-a", "bot", "diet", '"vegan"',
                   "--kind", "preference")["kind"] == "preference"  # fmt: skip
    put(db, "city", '"Porto vegan place"', "--kind", "fact")
    put(db, "note", '"vegan"')

    def keys(command: str, *extra: str) -> list[str]:
        rows = ok_json("memory", command, "--store", str(db), "-a", "bot", *extra)
        return [r["key"] for r in (rows["matches"] if command == "search" else rows)]

    assert keys("list", "--kind", "preference") == ["diet"]
    assert keys("list", "--kind", "preference", "--kind", "fact") == ["city", "diet"]
    assert keys("search", "vegan", "--kind", "fact") == ["city"]
    lines = ok("memory", "list", "--store", str(db), "-a", "bot").stdout.splitlines()
    assert re.match(r"diet\s+1\s+" + ISO.pattern + r'\s+-\s+preference\s+-\s+"vegan"$', lines[2])
    history = ok_json("memory", "history", "--store", str(db), "-a", "bot", "diet")
    assert [r["kind"] for r in history] == ["preference"]
    bad = fails("memory", "put", "--store", str(db), "-a", "bot", "k", "1", "--kind", "a\tb")
    assert "printable" in bad
    assert keys("list") == ["city", "diet", "note"]  # (the refused put stored nothing)


def test_list_text_output(db: Path) -> None:
    put(db, "user:name", '"Alice"', "--tag", "profile")
    put(db, "note", "x" * 100, "--ttl", "60")
    put(db, "line\nbreak", "1")
    lines = ok("memory", "list", "--store", str(db), "-a", "bot").stdout.splitlines()
    assert lines[0].split() == ["KEY", "VERSION", "UPDATED", "EXPIRES", "KIND", "TAGS", "VALUE"]
    assert lines[1].startswith('"line\\nbreak"  ')
    assert re.match(
        r"note\s+1\s+" + ISO.pattern + r"\s+" + ISO.pattern + r'\s+-\s+-\s+"x+\.\.\.$', lines[2]
    )
    assert len(lines[2].split()[-1]) == 60
    assert re.match(r"user:name\s+1\s+" + ISO.pattern + r'\s+-\s+-\s+profile\s+"Alice"$', lines[3])


def test_list_when_nothing_matches(db: Path) -> None:
    put(db, "k", "1")
    ok("memory", "forget", "--store", str(db), "-a", "bot", "k")
    assert ok("memory", "list", "--store", str(db), "-a", "bot").stdout == (
        "agent 'bot' has no matching keys\n"
    )


def test_forget_writes_a_tombstone(db: Path) -> None:
    put(db, "k", "1")
    assert ok("memory", "forget", "--store", str(db), "-a", "bot", "k").stdout == (
        "k: forgotten (tombstone version 2)\n"
    )
    put(db, "j", "1")
    written = ok_json("memory", "forget", "--store", str(db), "-a", "bot", "j")
    assert written["tombstone"] is True and written["version"] == 2 and written["agent"] == "bot"


def test_forget_a_key_without_value_fails(db: Path) -> None:
    put(db, "k", "1")
    err = fails("memory", "forget", "--store", str(db), "-a", "bot", "nope")
    assert err.startswith("Error: nothing to forget: agent 'bot' has no key 'nope'")
    ok("memory", "forget", "--store", str(db), "-a", "bot", "k")
    assert "forgotten" in fails("memory", "forget", "--store", str(db), "-a", "bot", "k")


def test_erase_with_yes_removes_every_value(db: Path) -> None:
    put(db, "email", '"alice@example.com"', "--tag", "pii")
    put(db, "email", '"alice@example.org"')
    ok("memory", "forget", "--store", str(db), "-a", "bot", "email")
    put(db, "email_verified", "true")
    out = ok("memory", "erase", "--store", str(db), "-a", "bot", "email", "--yes").stdout
    assert out == "email: erased versions 1, 2\n"
    rows = ok_json("memory", "history", "--store", str(db), "-a", "bot", "email")
    assert [(r["version"], r["state"], r["value"], r["erased"]) for r in rows] == [
        (3, "forgotten", None, False),
        (2, "erased", None, True),
        (1, "erased", None, True),
    ]
    assert rows[2]["tags"] == ["pii"]
    err = fails("memory", "get", "--store", str(db), "-a", "bot", "email", "--version", "1")
    assert "version 1 of key 'email' of agent 'bot' was erased" in err
    assert ok("memory", "get", "--store", str(db), "-a", "bot", "email_verified").stdout == (
        "true\n"
    )
    assert [r["ok"] for r in ok_json("audit", "verify", "--store", str(db), "-a", "bot")] == [True]


def test_erase_json_output_and_reason(db: Path) -> None:
    put(db, "k", '"secret"')
    erased = ok_json(
        "memory", "erase", "--store", str(db), "-a", "bot", "k", "-y", "--reason", "GDPR 42"
    )
    assert set(erased) == {"agent", "key", "versions", "erased_at", "seq"}
    assert (erased["agent"], erased["key"], erased["versions"], erased["seq"]) == (
        "bot",
        "k",
        [1],
        2,
    )
    with runtime_on(db) as rt:
        event = rt.timeline()[-1]
    assert (event.kind, event.seq, event.time) == ("erase", 2, erased["erased_at"])
    assert event.payload == {"erased": [{"key": "k", "versions": [1]}], "reason": "GDPR 42"}


def test_erase_asks_for_confirmation(db: Path) -> None:
    put(db, "k", '"one"')
    put(db, "k", '"two"')
    prompt = "Erase the values of 2 versions of k (agent 'bot')? This cannot be undone [y/N]: "
    for answer in ("n\n", "\n", ""):  # no, just Enter, end of input
        refused = run("memory", "erase", "--store", str(db), "-a", "bot", "k", stdin=answer)
        assert refused.exit_code == 1, refused.output
        assert refused.stdout == ""
        assert refused.stderr.startswith(prompt) and "Aborted" in refused.stderr
    assert ok("memory", "get", "--store", str(db), "-a", "bot", "k").stdout == '"two"\n'
    with runtime_on(db) as rt:
        assert [e.kind for e in rt.timeline()] == ["remember", "remember"]
    agreed = run("memory", "erase", "--store", str(db), "-a", "bot", "k", "--json", stdin="y\n")
    assert agreed.exit_code == 0, agreed.output
    assert agreed.stderr.startswith(prompt)
    assert json.loads(agreed.stdout)["versions"] == [1, 2]  # stdout holds only the JSON
    fails("memory", "get", "--store", str(db), "-a", "bot", "k")


def test_erase_with_nothing_to_erase_fails_before_asking(db: Path) -> None:
    put(db, "k", "1")
    err = fails("memory", "erase", "--store", str(db), "-a", "bot", "nope")
    assert err.startswith("Error: nothing to erase: agent 'bot' has no key 'nope'")
    ok("memory", "erase", "--store", str(db), "-a", "bot", "k", "--yes")
    err = fails("memory", "erase", "--store", str(db), "-a", "bot", "k")
    assert err.startswith(
        "Error: nothing to erase: no version of key 'k' of agent 'bot' holds a value"
    )
    err = fails("memory", "erase", "--store", str(db), "-a", "bot", "k", "--reason", " ")
    assert "reason must not be blank" in err
    with runtime_on(db) as rt:
        assert [e.kind for e in rt.timeline()] == ["remember", "erase"]


# -- export / import ----------------------------------------------------------------------------


def _seed_for_export(db: Path) -> None:
    put(db, "name", '"Alice"', "--tag", "profile")
    put(db, "name", '"Alicia"')
    put(db, "gone", "1")
    ok("memory", "forget", "--store", str(db), "-a", "bot", "gone")
    remember(db, "blob", b"\x01\x02")


def test_export_import_round_trip_through_stdout_and_stdin(db: Path, tmp_path: Path) -> None:
    _seed_for_export(db)
    text = ok("export", "--store", str(db), "--agent", "bot").stdout
    bundle = json.loads(text)
    assert bundle["format"] == "octopoda.memories" and bundle["agent"] == "bot"
    assert [m["key"] for m in bundle["memories"]] == ["blob", "gone", "name"]
    other = tmp_path / "other.db"
    out = ok("import", "--store", str(other), "--agent", "copy", "-", stdin=text).stdout
    assert out == "imported 3 keys (5 versions) into agent 'copy'\n"

    def history(path: Path, agent: str, key: str) -> list[tuple[Any, ...]]:
        rows = ok_json("memory", "history", "--store", str(path), "-a", agent, key)
        return [(r["version"], r["state"], r["value"], r["tags"], r["created_at"]) for r in rows]

    for key in ("name", "gone", "blob"):
        assert history(other, "copy", key) == history(db, "bot", key)
    assert json.loads(ok("memory", "get", "--store", str(other), "-a", "copy", "blob").stdout) == {
        "$bytes": "AQI="
    }


def test_export_to_a_file_and_import_it(db: Path, tmp_path: Path) -> None:
    _seed_for_export(db)
    target = tmp_path / "bundle.json"
    out = ok("export", "--store", str(db), "-a", "bot", str(target)).stdout
    assert out == f"exported 3 keys (5 versions) of agent 'bot' to {target}\n"
    summary = ok_json("export", "--store", str(db), "-a", "bot", str(target))
    assert summary == {"agent": "bot", "file": str(target), "keys": 3, "versions": 5}
    assert json.loads(target.read_text(encoding="utf-8"))["agent"] == "bot"
    result = ok_json("import", "--store", str(db), "-a", "twin", str(target))
    assert result == {
        "agent": "twin",
        "keys": 3,
        "versions": 5,
        "skipped_keys": [],
        "seq": 1,
        "already_imported": None,
    }
    assert ok("memory", "get", "--store", str(db), "-a", "twin", "name").stdout == '"Alicia"\n'


def test_import_records_the_source_agent_in_the_audit_event(db: Path, tmp_path: Path) -> None:
    put(db, "k", "1")
    target = tmp_path / "b.json"
    ok("export", "--store", str(db), "-a", "bot", str(target))
    ok("import", "--store", str(db), "-a", "twin", str(target))
    with SqliteStore(db) as store:
        (event,) = store.events("twin", kinds=["import"])
    assert event.payload["source_agent"] == "bot"


def test_import_on_existing_keys(db: Path, tmp_path: Path) -> None:
    put(db, "a", "1")
    put(db, "b", "2")
    target = tmp_path / "b.json"
    ok("export", "--store", str(db), "-a", "bot", str(target))
    put(db, "a", "10", agent="twin")
    err = fails("import", "--store", str(db), "-a", "twin", str(target), "--on-existing", "error")
    assert "key 'a' already has history for agent 'twin'" in err
    skip = ok("import", "--store", str(db), "-a", "twin", str(target), "--on-existing", "skip")
    assert skip.stdout == (
        "imported 1 key (1 version) into agent 'twin'\nskipped 1 existing key: a\n"
    )
    again = ok("import", "--store", str(db), "-a", "twin", str(target))
    assert again.stdout == (
        "nothing imported: agent 'twin' imported this bundle already (event 2);"
        " pass --allow-duplicate to append a second copy\n"
    )
    appended = ok_json("import", "--store", str(db), "-a", "twin", str(target), "--allow-duplicate")
    assert appended["keys"] == 2 and appended["versions"] == 2
    assert ok_json("memory", "get", "--store", str(db), "-a", "twin", "a")["version"] == 2
    bad = run("import", "--store", str(db), "-a", "twin", str(target), "--on-existing", "merge")
    assert bad.exit_code == 2 and "'merge' is not one of" in bad.stderr


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"\x00\x01garbage", "is not a JSON bundle from `octopoda export`"),
        (b"[1, 2]", "holds a JSON list, not an export bundle"),
        (b'{"format": "other"}', "not an Octopoda memory bundle"),
        (
            b'{"format": "octopoda.memories", "format_version": 1, "memories": [{"key": ""}]}',
            "memories[0] must be an object with 'key' and a 'versions' list",
        ),
    ],
)
def test_import_of_a_bad_file_fails(db: Path, tmp_path: Path, content: bytes, message: str) -> None:
    bad = tmp_path / "bad.json"
    bad.write_bytes(content)
    assert message in fails("import", "--store", str(db), "-a", "bot", str(bad))


def test_import_of_a_missing_file_fails_and_creates_no_store(db: Path, tmp_path: Path) -> None:
    missing = tmp_path / "missing.json"
    err = fails("import", "--store", str(db), "-a", "bot", str(missing))
    assert f"cannot read {missing}: No such file or directory" in err
    assert not db.exists()


def test_export_to_an_unwritable_path_fails(db: Path, tmp_path: Path) -> None:
    put(db, "k", "1")
    err = fails("export", "--store", str(db), "-a", "bot", str(tmp_path / "no" / "b.json"))
    assert "cannot write" in err and "No such file or directory" in err


# -- stores and errors --------------------------------------------------------------------------


def test_store_from_the_environment_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "env.db"
    monkeypatch.setenv("OCTOPODA_DATABASE_URL", f"sqlite:///{target}")
    ok("memory", "put", "-a", "bot", "k", "1")
    assert target.exists()
    assert ok_json("doctor")["store"]["source"] == "OCTOPODA_DATABASE_URL"
    assert ok("memory", "get", "-a", "bot", "k").stdout == "1\n"


def test_default_store_under_octopoda_home(tmp_path: Path) -> None:
    ok("memory", "put", "-a", "bot", "k", "1")
    assert (tmp_path / "home" / "octopoda.db").is_file()


def test_default_store_in_the_home_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OCTOPODA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("USERPROFILE", str(tmp_path))  # Path.home() on Windows
    store = ok_json("doctor")["store"]
    assert store["source"] == "default"
    assert store["path"] == str(tmp_path / ".octopoda" / "octopoda.db")
    assert "(the default location)" in ok("doctor").stdout
    ok("memory", "put", "-a", "bot", "k", "1")  # creates ~/.octopoda
    assert (tmp_path / ".octopoda" / "octopoda.db").is_file()


def test_store_after_the_command_wins_over_the_one_before(tmp_path: Path) -> None:
    first, second = tmp_path / "first.db", tmp_path / "second.db"
    ok("--store", str(first), "memory", "put", "--store", str(second), "-a", "bot", "k", "1")
    assert second.exists() and not first.exists()
    ok("--store", str(first), "memory", "put", "-a", "bot", "k", "1")
    assert first.exists()


def test_store_in_a_missing_directory_fails(tmp_path: Path) -> None:
    target = tmp_path / "nowhere" / "x.db"
    err = fails("memory", "put", "--store", str(target), "-a", "bot", "k", "1")
    assert f"the directory {target.parent} does not exist" in err


def test_store_that_is_a_directory_fails(tmp_path: Path) -> None:
    err = fails("memory", "put", "--store", str(tmp_path), "-a", "bot", "k", "1")
    assert "is a directory" in err


def test_garbage_file_as_store_fails(db: Path) -> None:
    db.write_bytes(b"garbage " * 1000)
    for args in (
        ["memory", "put", "-a", "bot", "k", "1"],
        ["memory", "get", "-a", "bot", "k"],
        ["agents"],
    ):
        assert "is not a usable SQLite database" in fails(*args, "--store", str(db))


def test_sqlite_file_of_another_application_fails(db: Path) -> None:
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE invoices (id INTEGER)")
    conn.close()
    err = fails("memory", "put", "--store", str(db), "-a", "bot", "k", "1")
    assert "already holds tables of another application" in err


def test_unreachable_postgres_url_fails_with_a_clear_error() -> None:
    err = fails("agents", "--store", "postgresql://db.example/octopoda")
    assert "cannot use PostgreSQL at postgresql://db.example/octopoda" in err
    assert "Traceback" not in err


def test_unsupported_store_url_fails() -> None:
    err = fails("agents", "--store", "mysql://db.example/octopoda")
    assert "unknown store URL scheme 'mysql'" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["memory", "put", "-a", "bot", "", "1"], "key must not be empty"),
        (["memory", "get", "-a", "bot", ""], "key must not be empty"),
        (["memory", "put", "-a", "", "k", "1"], "agent id must not be empty"),
        (["memory", "put", "-a", "bot", "k", "1", "--ttl", "-5"], "ttl must be positive"),
        (["memory", "put", "-a", "bot", "k", "1", "--ttl", "nan"], "ttl must be a number"),
        (["memory", "put", "-a", "bot", "k", "1", "--tag", ""], "every tag must be a non-empty"),
        (["memory", "put", "-a", "bot", "k" * 1025, "1"], "the limit is 1024"),
    ],
)
def test_invalid_input_fails(db: Path, args: list[str], message: str) -> None:
    put(db, "k", "1")
    assert message in fails(*args, "--store", str(db))


def test_usage_errors_exit_2(db: Path) -> None:
    result = run("memory", "get", "--store", str(db), "k")
    assert result.exit_code == 2 and "Missing option '--agent'" in result.stderr
    result = run("memory", "get", "--store", str(db), "-a", "bot", "k", "--version", "0")
    assert result.exit_code == 2


# -- help and docs ------------------------------------------------------------------------------


def _commands(group: click.Group, prefix: str = "octopoda") -> Iterator[tuple[str, click.Command]]:
    for name, command in sorted(group.commands.items()):
        path = f"{prefix} {name}"
        yield path, command
        if isinstance(command, click.Group):
            yield from _commands(command, path)


COMMANDS = list(_commands(build_cli()))


def test_the_expected_commands_are_registered() -> None:
    assert [path for path, _ in COMMANDS] == [
        "octopoda agents",
        "octopoda audit",
        "octopoda audit export",
        "octopoda audit verify",
        "octopoda audit verify-bundle",
        "octopoda diff",
        "octopoda doctor",
        "octopoda export",
        "octopoda import",
        "octopoda mcp",
        "octopoda memory",
        "octopoda memory erase",
        "octopoda memory forget",
        "octopoda memory get",
        "octopoda memory history",
        "octopoda memory list",
        "octopoda memory put",
        "octopoda memory search",
        "octopoda migrate",
        "octopoda reindex",
        "octopoda run",
        "octopoda serve",
        "octopoda timeline",
        "octopoda version",
    ]


@pytest.mark.parametrize(("path", "command"), COMMANDS, ids=[p for p, _ in COMMANDS])
def test_every_command_is_documented_with_help_and_an_example(
    path: str, command: click.Command
) -> None:
    assert command.help, f"{path} has no docstring"
    docs = DOCS.read_text(encoding="utf-8")
    heading = re.search(rf"^#+ `{re.escape(path)}`\n", docs, re.MULTILINE)
    assert heading, f"docs/cli.md has no section for {path}"
    section = re.split(r"\n#+ ", docs[heading.end() :], maxsplit=1)[0]
    assert f"$ {path}" in section, f"the section of {path} has no example"
    help_text = ok(*path.split()[1:], "--help").stdout
    assert help_text.startswith(f"Usage: {path}")


@pytest.mark.parametrize(
    ("path", "command"),
    [(p, c) for p, c in COMMANDS if not isinstance(c, click.Group) and p != "octopoda run"],
    ids=[p for p, c in COMMANDS if not isinstance(c, click.Group) and p != "octopoda run"],
)
def test_every_command_takes_json(path: str, command: click.Command) -> None:
    # (but `octopoda run`, whose output is the program's it runs)
    assert "--json" in [opt for param in command.params for opt in param.opts], path


# -- output helpers -----------------------------------------------------------------------------


def test_iso_time() -> None:
    assert iso_time(0) == "1970-01-01T00:00:00Z"
    assert iso_time(1_750_000_000.75) == "2025-06-15T15:06:40Z"
    assert iso_time(None) == "-"
    assert iso_time(1e20) == "1e+20"


def test_preview_and_table() -> None:
    assert preview({"a": [1, 2]}) == '{"a":[1,2]}'
    assert preview("x" * 100, width=10) == '"xxxxxx...'
    assert preview(b"hi") == '{"$bytes":"aGk="}'
    assert table(["A", "LONG"], [["xyz", "1"], ["q", "22"]]) == "A    LONG\nxyz  1\nq    22"
    assert table([], []) == ""


# -- memory search ------------------------------------------------------------------------------


def test_memory_search_by_meaning_and_reindex(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import types

    from octopoda.testing import FakeEmbedder

    module = types.ModuleType("cli_embedders")
    module.food = lambda: FakeEmbedder(synonyms={"eat": "food", "vegetarian": "food"})  # type: ignore[attr-defined]
    module.small = lambda: FakeEmbedder(8)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "cli_embedders", module)
    put(db, "diet", '"Alice is vegetarian"')
    put(db, "city", '"Porto"')
    monkeypatch.setenv("OCTOPODA_EMBEDDER", "cli_embedders:food")
    doc = ok_json("memory", "search", "--store", str(db), "-a", "bot", "what does she eat")
    assert doc["mode"] == "hybrid" and doc["matches"][0]["key"] == "diet"
    assert doc["matches"][0]["why"]["method"] == "semantic"
    monkeypatch.setenv("OCTOPODA_EMBEDDER", "cli_embedders:small")
    err = fails("memory", "search", "--store", str(db), "-a", "bot", "eat")
    assert "fake-hashing-64" in err and "octopoda reindex" in err
    report = ok_json("reindex", "--store", str(db))
    assert report == {
        "before": {"name": "fake-hashing-64", "dimension": 64},
        "model": {"name": "fake-hashing-8", "dimension": 8},
        "embedded": 2,
    }
    out = ok("reindex", "--store", str(db), "--embedder", "cli_embedders:food").stdout
    assert out == "embedded 2 memories with fake-hashing-64 (was: fake-hashing-8 (8 dimensions))\n"
    monkeypatch.delenv("OCTOPODA_EMBEDDER")
    assert "reindex needs an embedder" in fails("reindex", "--store", str(db))


def test_memory_search_ranks_by_words(db: Path) -> None:
    put(db, "user/diet", '"The user eats vegetarian food"')
    put(db, "user/name", '"Alice"')
    put(db, "ops/db", '"PostgreSQL 15"', "--tag", "ops")
    out = ok("memory", "search", "--store", str(db), "-a", "bot", "what does the user eat?").stdout
    lines = out.splitlines()
    assert lines[0].split() == ["SCORE", "KEY", "WORDS", "VALUE"]
    assert lines[1].split()[:3] == ["1.00", "user/diet", "user,eat"]
    assert lines[2].split()[:2] == ["0.50", "user/name"]
    assert "no embedder is configured" in lines[-1]
    doc = ok_json("memory", "search", "--store", str(db), "-a", "bot", "user", "--limit", "1")
    assert doc["mode"] == "lexical" and "no embedder" in doc["note"]
    assert [m["key"] for m in doc["matches"]] == ["user/diet"]
    assert doc["matches"][0]["why"]["lexical_rank"] == 1
    assert 0 < doc["matches"][0]["score"] <= 1
    tagged = ok_json(
        "memory", "search", "--store", str(db), "-a", "bot", "postgresql", "--tag", "ops"
    )
    assert [m["key"] for m in tagged["matches"]] == ["ops/db"]
    none = ok("memory", "search", "--store", str(db), "-a", "bot", "'; DROP TABLE x; --").stdout
    assert none == "no memory of agent 'bot' holds a word of \"'; DROP TABLE x; --\"\n"
