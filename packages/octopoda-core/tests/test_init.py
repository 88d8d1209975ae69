"""octopoda.init(), octopoda.shutdown() and octopoda-run, with a test integration.

Each scenario runs in its own Python process, as a user's program would: an installed
"framework" (``fakefw``, a module and its ``.dist-info``) and an installed adapter
(``octopoda_fake``, declaring an ``octopoda.integrations`` entry point) sit in a folder
on ``PYTHONPATH``, so discovery, the version check, the post-import hook, the
``sitecustomize`` launcher and the store are all the real ones. The integration's
``activate`` writes to the runtime it is given and its deactivate writes again, so the
store (a real SQLite file) says what happened.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import octopoda
from octopoda import AgentRuntime, ConfigError, InvalidInput
from octopoda._instrument.discovery import (
    distributions,
    entry_points,
    normalize,
    parse_release,
    satisfies,
)
from octopoda._instrument.run import agent_id_of
from octopoda._instrument.session import parse_policy, program_agent_id

ADAPTER = """
import os, sys
from octopoda.integrations import Integration

CALLS = []

def activate(ctx):
    if os.environ.get("FAKE_FAIL"):
        raise RuntimeError("the framework refused the hook")
    CALLS.append("activate")
    policy = ctx.policy.on_loop if ctx.policy is not None else None
    ctx.runtime.remember(
        "activated", {"pid": os.getpid(), "loaded": "fakefw" in sys.modules, "policy": policy}
    )

    def undo():
        CALLS.append("deactivate")
        ctx.runtime.remember("deactivated", os.getpid())

    return undo

integration = Integration(
    name="fake",
    modules=("fakefw",),
    distribution="fakefw",
    supported=os.environ.get("FAKE_SUPPORTED", ">=1.2,<2"),
    activate=activate,
    description="records that it ran",
)
"""


@pytest.fixture
def site(tmp_path: Path) -> Path:
    """A folder holding the fake framework and the fake adapter, installed."""
    root = tmp_path / "site"
    (root / "fakefw").mkdir(parents=True)
    (root / "fakefw" / "__init__.py").write_text("VERSION = '1.2.3'\n")
    meta = root / "fakefw-1.2.3.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: fakefw\nVersion: 1.2.3\n")
    (root / "octopoda_fake.py").write_text(ADAPTER)
    adapter = root / "octopoda_fake-0.1.0.dist-info"
    adapter.mkdir()
    (adapter / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: octopoda-fake\nVersion: 0.1.0\n"
    )
    (adapter / "entry_points.txt").write_text(
        "[console_scripts]\nfake = octopoda_fake:main\n\n"
        "[octopoda.integrations]\nfake = octopoda_fake:integration\n"
    )
    return root


def _env(tmp_path: Path, site: Path | None, **extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("OCTOPODA_") and k not in ("PYTHONPATH", "FAKE_FAIL")
    }
    env["OCTOPODA_HOME"] = str(tmp_path / "home")
    env["OCTOPODA_DATABASE_URL"] = str(tmp_path / "agent.db")
    env["OCTOPODA_AGENT_ID"] = "bot"
    if site is not None:
        env["PYTHONPATH"] = str(site)
    env.update(extra)
    return env


def _python(
    tmp_path: Path, code: str, site: Path | None, **extra: str
) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(code))
    return subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        env=_env(tmp_path, site, **extra),
        cwd=tmp_path,
        timeout=120,
    )


def _states(out: str) -> list[Any]:
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def _memory(tmp_path: Path, key: str, agent: str = "bot") -> list[Any]:
    with AgentRuntime(agent, store=str(tmp_path / "agent.db")) as runtime:
        return [v.value for v in reversed(runtime.recall_history(key))]


# ======================================================================== init in a program


def test_with_no_integration_installed_init_does_nothing_and_opens_nothing(
    tmp_path: Path,
) -> None:
    done = _python(
        tmp_path,
        """
        import json, sys
        import octopoda
        before = list(sys.meta_path)
        result = octopoda.init()
        print(json.dumps([result.agent_id, list(result.integrations), sys.meta_path == before]))
        print(json.dumps(sorted(m for m in sys.modules if m.startswith("octopoda."))))
        octopoda.shutdown()
        """,
        None,
        OCTOPODA_AGENT_ID="",
    )
    assert done.returncode == 0, done.stderr
    (agent_and_state, modules) = _states(done.stdout)
    assert agent_and_state == ["script", [], True]  # the program's name, no finder left
    assert not (tmp_path / "agent.db").exists()
    assert not any(m.startswith(("octopoda._store", "octopoda._runtime")) for m in modules)


def test_a_framework_imported_after_init_is_instrumented_when_it_is_imported(
    tmp_path: Path, site: Path
) -> None:
    done = _python(
        tmp_path,
        """
        import json, sys
        import octopoda
        first = octopoda.init()
        print(json.dumps(first["fake"]._asdict()))
        import fakefw
        print(json.dumps(octopoda.init()["fake"]._asdict()))
        import octopoda_fake
        print(json.dumps(octopoda_fake.CALLS))
        """,
        site,
        OCTOPODA_POLICY="pause",
    )
    assert done.returncode == 0, done.stderr
    before, after, calls = _states(done.stdout)
    assert before["state"] == "waiting" and before["version"] == "1.2.3"
    assert before["adapter"] == "octopoda-fake" and before["supported"] == ">=1.2,<2"
    assert after["state"] == "active"
    assert calls == ["activate"]
    (activated,) = _memory(tmp_path, "activated")
    assert activated["loaded"] is True and activated["policy"] == "pause"
    assert len(_memory(tmp_path, "deactivated")) == 1  # shutdown ran at exit


def test_a_framework_imported_before_init_is_instrumented_at_once(
    tmp_path: Path, site: Path
) -> None:
    done = _python(
        tmp_path,
        """
        import json
        import fakefw, octopoda
        print(json.dumps(octopoda.init()["fake"].state))
        """,
        site,
    )
    assert done.returncode == 0, done.stderr
    assert _states(done.stdout) == ["active"]
    assert len(_memory(tmp_path, "activated")) == 1


def test_init_twice_changes_nothing_and_shutdown_undoes_it(tmp_path: Path, site: Path) -> None:
    done = _python(
        tmp_path,
        """
        import json, sys
        import fakefw, octopoda, octopoda_fake
        a = octopoda.init()
        b = octopoda.init(agent_id="bot")
        print(json.dumps([a == b, list(octopoda_fake.CALLS)]))
        try:
            octopoda.init(agent_id="someone-else")
        except octopoda.ConfigError as exc:
            print(json.dumps(["refused", str(exc)]))
        finder_count = len(sys.meta_path)
        octopoda.shutdown()
        octopoda.shutdown()
        print(json.dumps(list(octopoda_fake.CALLS)))
        print(json.dumps(octopoda.init(agent_id="someone-else")["fake"].state))
        """,
        site,
    )
    assert done.returncode == 0, done.stderr
    same, refused, after_shutdown, again = _states(done.stdout)
    assert same == [True, ["activate"]]
    assert refused[0] == "refused" and "octopoda.shutdown()" in refused[1]
    assert after_shutdown == ["activate", "deactivate"]
    assert again == "active"
    assert len(_memory(tmp_path, "activated", "someone-else")) == 1
    assert len(_memory(tmp_path, "deactivated")) == 1


def test_shutdown_before_the_framework_is_imported_leaves_no_hook(
    tmp_path: Path, site: Path
) -> None:
    done = _python(
        tmp_path,
        """
        import json, sys
        import octopoda
        before = list(sys.meta_path)
        octopoda.init()
        print(json.dumps(len(sys.meta_path) - len(before)))
        octopoda.shutdown()
        print(json.dumps(sys.meta_path == before))
        import fakefw, octopoda_fake
        print(json.dumps(octopoda_fake.CALLS))
        """,
        site,
    )
    assert done.returncode == 0, done.stderr
    assert _states(done.stdout) == [1, True, []]
    assert not (tmp_path / "agent.db").exists()


def test_an_unsupported_framework_version_is_left_alone_with_a_warning(
    tmp_path: Path, site: Path
) -> None:
    done = _python(
        tmp_path,
        """
        import json
        import octopoda
        status = octopoda.init()["fake"]
        import fakefw, octopoda_fake
        print(json.dumps([status.state, status.detail, octopoda_fake.CALLS]))
        """,
        site,
        FAKE_SUPPORTED=">=2.0",
    )
    assert done.returncode == 0, done.stderr
    ((state, detail, calls),) = _states(done.stdout)
    assert state == "unsupported" and calls == []
    assert detail == "fakefw 1.2.3 is installed; octopoda-fake supports >=2.0"
    assert "fakefw 1.2.3 is installed" in done.stderr
    assert not (tmp_path / "agent.db").exists()


def test_disabled_integrations_stay_off(tmp_path: Path, site: Path) -> None:
    done = _python(
        tmp_path,
        """
        import json
        import fakefw, octopoda, octopoda_fake
        print(json.dumps([octopoda.init()["fake"].state, octopoda_fake.CALLS]))
        """,
        site,
        OCTOPODA_DISABLED_INTEGRATIONS="langchain, fake",
    )
    assert done.returncode == 0, done.stderr
    assert _states(done.stdout) == [["disabled", []]]


def test_integrations_selects_by_name_and_names_what_to_install(tmp_path: Path, site: Path) -> None:
    done = _python(
        tmp_path,
        """
        import json
        import octopoda
        for names in (["crewai"], "fake", [7]):
            try:
                octopoda.init(integrations=names)
            except octopoda.OctopodaError as exc:
                print(json.dumps([type(exc).__name__, str(exc)]))
        print(json.dumps(octopoda.init(integrations=["fake"])["fake"].state))
        """,
        site,
    )
    assert done.returncode == 0, done.stderr
    missing, one_string, not_names, selected = _states(done.stdout)
    assert missing[0] == "ConfigError"
    assert "'crewai'" in missing[1] and "installed: fake" in missing[1]
    assert "pip install octopoda-crewai" in missing[1]
    assert one_string[0] == "InvalidInput" and "['fake']" in one_string[1]
    assert not_names[0] == "InvalidInput"
    assert selected == "waiting"


def test_an_integration_that_fails_to_activate_never_breaks_the_framework_import(
    tmp_path: Path, site: Path
) -> None:
    done = _python(
        tmp_path,
        """
        import json
        import octopoda
        octopoda.init()
        import fakefw
        status = octopoda.init()["fake"]
        print(json.dumps([fakefw.VERSION, status.state, status.detail]))
        """,
        site,
        FAKE_FAIL="1",
    )
    assert done.returncode == 0, done.stderr
    ((version, state, detail),) = _states(done.stdout)
    assert version == "1.2.3" and state == "failed"
    assert "the framework refused the hook" in detail
    assert "the fake integration failed to activate" in done.stderr


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        ("stop", "starts with warn, pause or raise"),
        ("pause,spend_cap=5", "'spend_cap=5' is not a setting"),
        ("pause,max_tool_calls=many", "max_tool_calls needs a int"),
    ],
)
def test_a_bad_policy_is_refused_with_what_to_write(policy: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        octopoda.init(policy=policy)


def test_bad_init_arguments_are_refused_before_anything_happens() -> None:
    with pytest.raises(InvalidInput, match="LoopPolicy"):
        octopoda.init(policy=3)  # type: ignore[arg-type]
    with pytest.raises(octopoda.InvalidAgentId):
        octopoda.init(agent_id="   ")
    with pytest.raises(InvalidInput, match="prices"):
        octopoda.init(prices=[("gpt", 1)])  # type: ignore[arg-type]


def test_policies_read_as_loop_policy_settings() -> None:
    assert parse_policy("pause") == ("pause", {})
    assert parse_policy(" raise , spend_cap_usd=2.5, max_tool_calls=40,pause_scope=agent") == (
        "raise",
        {"spend_cap_usd": 2.5, "max_tool_calls": 40, "pause_scope": "agent"},
    )


# =========================================================================== octopoda-run

RUN = str(Path(sys.executable).with_name("octopoda-run"))
CLI = str(Path(sys.executable).with_name("octopoda"))


def _run(
    tmp_path: Path, args: list[str], site: Path | None, **extra: str
) -> subprocess.CompletedProcess[str]:
    env = _env(tmp_path, site, **extra)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return subprocess.run(args, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)


PROGRAM = """
import json, os, sys
import fakefw
import octopoda_fake
print(json.dumps([os.environ["OCTOPODA_AGENT_ID"], octopoda_fake.CALLS,
                  os.environ.get("USER_SITECUSTOMIZE")]))
sys.exit(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
"""


def test_octopoda_run_instruments_an_unmodified_program(tmp_path: Path, site: Path) -> None:
    (tmp_path / "my_agent.py").write_text(PROGRAM)
    done = _run(
        tmp_path,
        [RUN, "--policy", "pause", sys.executable, "my_agent.py", "3"],
        site,
        OCTOPODA_AGENT_ID="",
    )
    assert done.returncode == 3, done.stderr  # the program's own exit code
    assert _states(done.stdout) == [["my_agent", ["activate"], None]]
    (activated,) = _memory(tmp_path, "activated", "my_agent")
    assert activated["policy"] == "pause" and activated["loaded"] is True
    assert len(_memory(tmp_path, "deactivated", "my_agent")) == 1


def test_octopoda_run_chains_to_the_programs_own_sitecustomize(tmp_path: Path, site: Path) -> None:
    own = tmp_path / "own"
    own.mkdir()
    (own / "sitecustomize.py").write_text("import os\nos.environ['USER_SITECUSTOMIZE'] = 'ran'\n")
    (tmp_path / "my_agent.py").write_text(PROGRAM)
    done = _run(
        tmp_path,
        [RUN, sys.executable, "my_agent.py"],
        site,
        PYTHONPATH=os.pathsep.join([str(own), str(site)]),
    )
    assert done.returncode == 0, done.stderr
    assert _states(done.stdout) == [["bot", ["activate"], "ran"]]


def test_scripts_run_with_one_agent_id_share_one_memory_and_one_chain(
    tmp_path: Path, site: Path
) -> None:
    (tmp_path / "a.py").write_text(PROGRAM)
    (tmp_path / "b.py").write_text(PROGRAM)
    for script in ("a.py", "b.py"):
        done = _run(tmp_path, [RUN, "--agent-id", "crew", sys.executable, script], site)
        assert done.returncode == 0, done.stderr
    activations = _memory(tmp_path, "activated", "crew")
    assert len(activations) == 2 and activations[0]["pid"] != activations[1]["pid"]
    with AgentRuntime("crew", store=str(tmp_path / "agent.db")) as runtime:
        assert runtime.audit.verify().ok


def test_octopoda_run_refuses_bad_settings_before_the_program_starts(
    tmp_path: Path, site: Path
) -> None:
    (tmp_path / "my_agent.py").write_text("open('ran', 'w').close()\n")
    for args, message in (
        (["--policy", "halt"], "the policy starts with warn, pause or raise"),
        (["--store", "mysql://db/agents"], "unknown store URL scheme 'mysql'"),
        (["--agent-id", " "], "agent id"),
    ):
        done = _run(tmp_path, [RUN, *args, sys.executable, "my_agent.py"], site)
        assert done.returncode == 2 and message in done.stderr
    assert not (tmp_path / "ran").exists()
    done = _run(tmp_path, [RUN], site)
    assert done.returncode == 2 and "octopoda-run python agent.py" in done.stderr
    done = _run(tmp_path, [RUN, "no-such-program-here"], site)
    assert done.returncode == 127 and "command not found" in done.stderr


def test_octopoda_run_as_a_subcommand_of_octopoda(tmp_path: Path, site: Path) -> None:
    pytest.importorskip("click")
    (tmp_path / "my_agent.py").write_text(PROGRAM)
    done = _run(
        tmp_path,
        [CLI, "run", "--agent-id", "sub", "--", sys.executable, "my_agent.py", "4"],
        site,
    )
    assert done.returncode == 4, done.stderr
    assert _states(done.stdout) == [["sub", ["activate"], None]]


# ============================================================== names, versions, discovery


@pytest.mark.parametrize(
    ("command", "agent"),
    [
        (["python", "agent.py"], "agent"),
        (["python3.11", "-u", "-X", "dev", "bots/support_bot.py", "--fast"], "support_bot"),
        (["/usr/bin/python", "-m", "crews.research"], "crews.research"),
        (["python", "-mcrews.research"], "crews.research"),
        (["python", "-c", "print(1)"], "python"),
        (["my-agent", "--once"], "my-agent"),
    ],
)
def test_octopoda_run_names_the_agent_after_the_program(command: list[str], agent: str) -> None:
    assert agent_id_of(command) == agent


def test_the_program_name_is_the_default_agent_id() -> None:
    main = sys.modules["__main__"]
    spec = main.__spec__
    try:
        main.__spec__ = None  # as in `python /srv/bots/support_bot.py`
        assert program_agent_id(["/srv/bots/support_bot.py"]) == "support_bot"
        assert program_agent_id(["-c"]) == "python"
    finally:
        main.__spec__ = spec
    assert agent_id_of(["python", "bots/pkg/__main__.py"]) == "pkg"


@pytest.mark.parametrize(
    ("version", "supported", "ok"),
    [
        ("1.15.30", ">=1.10.1,<1.16", True),
        ("1.10.0", ">=1.10.1,<1.16", False),
        ("1.16.0rc1", ">=1.10.1,<1.16", False),
        ("0.3.70.post1", ">=0.3.70,<2", True),
        ("0.8", ">=0.8.0", True),
        ("2", "!=2.0.0", False),
        ("5.0", "", True),
    ],
)
def test_version_ranges(version: str, supported: str, ok: bool) -> None:
    assert satisfies(version, supported) is ok


def test_bad_versions_and_ranges_say_what_was_expected() -> None:
    with pytest.raises(ConfigError, match="not a version"):
        parse_release("latest")
    with pytest.raises(ConfigError, match="operator"):
        satisfies("1.0", "~=1.0")


def test_discovery_reads_the_metadata_folders_first_one_wins(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    for root, version in ((first, "1.0.0"), (second, "9.9.9")):
        (root / f"Some_Thing-{version}.dist-info").mkdir(parents=True)
    (second / "legacy.egg-info").mkdir()
    (second / "legacy.egg-info" / "PKG-INFO").write_text("Name: legacy\nVersion: 0.4\n\nbody\n")
    (second / "legacy.egg-info" / "entry_points.txt").write_text(
        "[octopoda.integrations]\nold = legacy.hook:integration [extra]\n# note\n[other]\nx = y\n"
    )
    (second / "no_version.dist-info").mkdir()
    dists = distributions([str(first), str(tmp_path / "missing"), str(second)])
    assert dists["some-thing"].version == "1.0.0"
    assert dists["legacy"].version == "0.4"
    assert "no-version" not in dists
    points = entry_points("octopoda.integrations", dists)
    assert [(p.name, p.value, p.distribution) for p in points] == [
        ("old", "legacy.hook:integration", "legacy")
    ]
    assert normalize("Octopoda__Core.x") == "octopoda-core-x"


# ================================================================================= doctor


def _doctor(
    tmp_path: Path, site: Path | None, *args: str, **extra: str
) -> tuple[int, dict[str, Any], str]:
    pytest.importorskip("click")
    done = _run(tmp_path, [RUN, "doctor", "--json", *args], site, **extra)
    return done.returncode, json.loads(done.stdout), done.stderr


def test_doctor_lists_the_integrations_init_would_activate(tmp_path: Path, site: Path) -> None:
    code, report, _ = _doctor(tmp_path, site)
    assert code == 0 and report["ok"] is True
    (row,) = report["integrations"]
    assert row == {
        "integration": "fake",
        "adapter": "octopoda-fake",
        "adapter_version": "0.1.0",
        "framework": "fakefw",
        "version": "1.2.3",
        "supported": ">=1.2,<2",
        "state": "ready",
        "detail": "records that it ran",
    }
    assert not (tmp_path / "agent.db").exists()  # doctor opens nothing it would create


def test_doctor_fails_on_a_framework_version_the_adapter_does_not_support(
    tmp_path: Path, site: Path
) -> None:
    code, report, stderr = _doctor(tmp_path, site, FAKE_SUPPORTED=">=1.3")
    assert code == 1 and report["integrations"][0]["state"] == "unsupported"
    assert "fakefw 1.2.3 is installed; octopoda-fake supports >=1.3" in stderr
    text = _run(tmp_path, [RUN, "doctor"], site, FAKE_SUPPORTED=">=1.3").stdout
    assert re.search(r"fake\s+fakefw 1\.2\.3: unsupported", text)


def test_doctor_names_the_adapter_of_an_installed_framework_without_one(tmp_path: Path) -> None:
    site = tmp_path / "bare"
    (site / "crewai-1.15.30.dist-info").mkdir(parents=True)
    code, report, _ = _doctor(tmp_path, site)
    assert code == 0
    assert report["integrations"] == [
        {
            "integration": "crewai",
            "adapter": "octopoda-crewai",
            "adapter_version": None,
            "framework": "crewai",
            "version": "1.15.30",
            "supported": None,
            "state": "no adapter",
            "detail": "pip install octopoda-crewai",
        }
    ]
    assert report["notes"] == ["crewai 1.15.30 is installed: pip install octopoda-crewai"]


def test_doctor_fails_on_a_location_it_cannot_write(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    for store, reason in (
        (str(blocker / "sub" / "agent.db"), "is not a folder"),
        (str(tmp_path), "is a folder, not a store file"),
    ):
        code, report, stderr = _doctor(tmp_path, None, "--store", store)
        assert code == 1 and report["store"]["writable"] is False
        assert reason in report["store"]["error"] and "cannot be written" in stderr
    if os.geteuid() != 0:  # root writes anywhere
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o555)
        code, report, _ = _doctor(tmp_path, None, "--store", str(locked / "agent.db"))
        assert code == 1 and "cannot create files in" in report["store"]["error"]
    code, report, _ = _doctor(tmp_path, None, "--store", str(tmp_path / "new" / "agent.db"))
    assert code == 0 and report["store"]["writable"] is True
    assert not (tmp_path / "new").exists()


def test_doctor_accepts_a_postgresql_url_and_checks_it_can_write(
    tmp_path: Path, postgres_clean_url: str
) -> None:
    code, report, stderr = _doctor(tmp_path, None, "--store", postgres_clean_url)
    assert code == 0, stderr
    assert report["store"]["writable"] is True and report["store"]["url"] == postgres_clean_url


def test_doctor_says_which_extra_a_postgresql_url_needs(tmp_path: Path) -> None:
    pytest.importorskip("click")
    code = (
        "import sys; sys.modules['psycopg'] = None\n"  # as if the extra were not installed
        "from octopoda.cli import main\n"
        "main(['doctor', '--json', '--store', 'postgresql://postgres@127.0.0.1:5432/x'])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=_env(tmp_path, None)
    )
    assert done.returncode == 1
    assert "pip install 'octopoda-core[postgres]'" in json.loads(done.stdout)["store"]["error"]


def test_doctor_checks_a_configured_server_answers(tmp_path: Path) -> None:
    code, report, stderr = _doctor(tmp_path, None, OCTOPODA_DATABASE_URL="http://127.0.0.1:9")
    assert code == 1 and report["store"]["backend"] == "server"
    assert "does not answer" in stderr and "octopoda serve" in stderr
