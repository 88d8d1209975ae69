"""The command line's errors and inputs (issue 15 item 11): ``--json`` errors as JSON on
stderr, values from stdin, NaN refused, names and agent ids checked; ``octopoda agents``
and the data commands on PostgreSQL too."""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from octopoda import AgentRuntime, InvalidAgentId, InvalidKey
from octopoda.cli import build_cli


def run(*args: str, stdin: str | bytes | None = None) -> Result:
    kwargs: dict[str, Any] = {}
    if "mix_stderr" in inspect.signature(CliRunner).parameters:
        kwargs["mix_stderr"] = False  # click < 8.2
    return CliRunner(**kwargs).invoke(build_cli(), list(args), input=stdin, catch_exceptions=False)


def json_error(result: Result, exit_code: int = 1) -> dict[str, Any]:
    assert result.exit_code == exit_code, result.output
    assert result.stdout == ""
    error = json.loads(result.stderr)["error"]
    assert set(error) == {"type", "message"} and error["message"]
    return dict(error)


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "store.db")


def test_json_errors_are_json_on_stderr(db: str) -> None:
    error = json_error(run("memory", "get", "--store", db, "-a", "bot", "k", "--json"))
    assert error["type"] == "NotFound" and "no Octopoda store" in error["message"]
    AgentRuntime("bot", store=db).remember("k", 1)
    error = json_error(run("memory", "get", "--store", db, "-a", "ghost", "k", "--json"))
    assert error["type"] == "NotFound" and "ghost" in error["message"]
    error = json_error(run("memory", "get", "--store", db, "-a", "bot", "--json"), exit_code=2)
    assert error["type"] == "MissingParameter"
    error = json_error(run("memory", "get", "--store", db, "-a", "bot", "nope", "--json"))
    assert "nope" in error["message"]
    error = json_error(run("memory", "get", "--store", db, "-a", "bot", "--jsn", "--json"), 2)
    assert error["type"] == "NoSuchOption"
    plain = run("memory", "get", "--store", db, "-a", "ghost", "k")
    assert plain.exit_code == 1 and plain.stderr.startswith("Error: ")


def test_nan_inside_json_is_refused_not_stored_as_a_string(db: str) -> None:
    for text in ('{"a": NaN}', "[1, Infinity]", "1e999", '{"x": -1e400}'):
        result = run("memory", "put", "--store", db, "-a", "bot", "k", "--", text)
        assert result.exit_code == 1, result.output
        assert "JSON has no form" in result.stderr and "--raw" in result.stderr
    run("memory", "put", "--store", db, "-a", "bot", "k", "--raw", '{"a": NaN}')
    run("memory", "put", "--store", db, "-a", "bot", "w", "NaN")
    agent = AgentRuntime("bot", store=db)
    assert agent.recall("k").value == '{"a": NaN}'
    assert agent.recall("w").value == "NaN"
    assert agent.recall("k").version == 1


def test_a_value_from_stdin(db: str) -> None:
    big = {"text": "x" * 300_000, "n": [1, 2]}
    result = run("memory", "put", "--store", db, "-a", "bot", "k", "-", stdin=json.dumps(big))
    assert result.exit_code == 0, result.output
    run("memory", "put", "--store", db, "-a", "bot", "s", "-", stdin="plain text\n")
    run("memory", "put", "--store", db, "-a", "bot", "dash", '"-"')
    agent = AgentRuntime("bot", store=db)
    assert agent.recall("k").value == big
    assert agent.recall("s").value == "plain text\n"
    assert agent.recall("dash").value == "-"
    bad = run("memory", "put", "--store", db, "-a", "bot", "b", "-", stdin=b"\xff\xfe")
    assert bad.exit_code == 1 and "not UTF-8" in bad.stderr


def test_empty_snapshot_and_space_names_say_what_is_empty(db: str) -> None:
    agent = AgentRuntime("bot", store=db)
    with pytest.raises(InvalidKey, match="snapshot name must not be empty"):
        agent.snapshot("")
    with pytest.raises(InvalidKey, match="snapshot name must not be empty"):
        agent.restore("")
    with pytest.raises(InvalidKey, match="space name must not be empty"):
        agent.create_space("")
    with pytest.raises(InvalidKey, match="space name must not be empty"):
        agent.share("k", 1, space="")
    with pytest.raises(InvalidKey, match=r"^key must not be empty"):
        agent.remember("", 1)


@pytest.mark.parametrize("agent_id", [" ", "\t\n", "\u3000"])
def test_a_whitespace_only_agent_id_is_refused(db: str, agent_id: str) -> None:
    with pytest.raises(InvalidAgentId, match="only whitespace"):
        AgentRuntime(agent_id, store=db)
    result = run("memory", "put", "--store", db, "-a", agent_id, "k", "1")
    assert result.exit_code == 1 and "only whitespace" in result.stderr
    assert AgentRuntime(" padded ", store=db).agent_id == " padded "


def test_cli_commands_on_postgresql(postgres_clean_url: str) -> None:
    url = postgres_clean_url
    empty = run("agents", "--store", url)
    assert empty.exit_code == 0, empty.output
    assert "no agents in postgresql://" in empty.stdout
    assert json.loads(run("agents", "--store", url, "--json").stdout) == []
    assert run("memory", "put", "--store", url, "-a", "bot", "k", '{"a": 1}').exit_code == 0
    assert run("memory", "put", "--store", url, "-a", "bot", "k", "-", stdin="2").exit_code == 0
    got = json.loads(run("memory", "get", "--store", url, "-a", "bot", "k", "--json").stdout)
    assert got["value"] == 2
    for args in (
        ("agents",),
        ("memory", "history", "-a", "bot", "k"),
        ("memory", "list", "-a", "bot"),
        ("timeline", "-a", "bot"),
        ("diff", "-a", "bot", "1", "2"),
        ("audit", "verify", "-a", "bot"),
        ("export", "-a", "bot"),
        ("memory", "forget", "-a", "bot", "k"),
    ):
        result = run(*args, "--store", url, "--json")
        assert result.exit_code == 0, (args, result.output)
        json.loads(result.stdout)
    error = json_error(run("memory", "get", "--store", url, "-a", "ghost", "k", "--json"))
    assert error["type"] == "NotFound"


def test_doctor_on_postgresql(postgres_databases: Any) -> None:
    url = postgres_databases()  # a database of its own: doctor must not create the store
    empty = run("doctor", "--store", url, "--json")
    assert empty.exit_code == 0, empty.output
    store = json.loads(empty.stdout)["store"]
    assert (store["exists"], store["url"], store["source"]) == (False, url, "--store")
    assert "no (it is created on the first write)" in run("doctor", "--store", url).stdout
    assert run("doctor", "--store", url, "--json").exit_code == 0  # still nothing created
    assert json.loads(run("doctor", "--store", url, "--json").stdout)["store"]["exists"] is False
    assert run("memory", "put", "--store", url, "-a", "bot", "k", "1").exit_code == 0
    report = json.loads(run("doctor", "--store", url, "--json").stdout)
    store = report["store"]
    assert report["ok"] and report["problems"] == []
    assert (store["backend"], store["agents"], store["integrity_check"]) == (
        "postgresql",
        1,
        ["ok"],
    )
    assert store["schema_version"] == len(store["migrations"]) >= 6
    text = run("doctor", "--store", url).stdout
    assert f"{url} (from --store)" in text
    integrity = [line.split() for line in text.splitlines() if "integrity" in line]
    assert integrity == [["integrity", "ok"]]


def test_doctor_on_an_unreachable_postgresql_server() -> None:
    url = "postgresql://nobody@127.0.0.1:1/none?connect_timeout=2"
    result = run("doctor", "--store", url, "--json")
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert not report["ok"] and report["problems"] and "Traceback" not in result.output
