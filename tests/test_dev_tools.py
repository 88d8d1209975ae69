"""tools/: the pytest arguments the noxfile's sessions build (tools/pytest_args.py) and the two
lanes of `python3 tools/dev.py test` (tools/dev.py), run against a stand-in for nox that
records which sessions each of its processes was asked to run."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
TOOLS = ROOT / "tools"


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"_octopoda_tools_{name}", TOOLS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


pytest_args = _load("pytest_args")
dev = _load("dev")


# -- tools/pytest_args.py ---------------------------------------------------------------------


def test_a_users_selection_narrows_the_sessions_instead_of_replacing_it() -> None:
    ours = {"-k": "not postgres"}
    assert pytest_args.narrowed(ours, ["-x", "-k", "audit", "tests/a.py"]) == [
        "-k",
        "(not postgres) and (audit)",
        "-x",
        "tests/a.py",
    ]
    assert pytest_args.narrowed(ours, ["-kaudit"])[:2] == ["-k", "(not postgres) and (audit)"]
    # pytest keeps the last -k: so does the join
    assert pytest_args.narrowed(ours, ["-k", "a", "-k", "b"]) == ["-k", "(not postgres) and (b)"]
    assert pytest_args.narrowed(ours, ["-q"]) == ["-k", "not postgres", "-q"]
    # an option the session does not set stays the user's, where it was
    assert pytest_args.narrowed(ours, ["-m", "slow", "-q"]) == [
        "-k",
        "not postgres",
        "-m",
        "slow",
        "-q",
    ]
    # long options that start like a selector are not one
    assert pytest_args.narrowed({"-m": "not x"}, ["--maxfail=1"]) == ["-m", "not x", "--maxfail=1"]


@pytest.mark.parametrize(
    ("python", "newest", "expected"),
    [
        ("3.11", True, []),  # the newest release on the full Python: every test
        ("3.13", True, ["-m", "not examples and not processes"]),
        ("3.11", False, ["-m", "not examples"]),  # an older release, on any Python
        ("3.10", False, ["-m", "not examples"]),
    ],
)
def test_each_adapter_cell_leaves_out_its_markers(
    python: str, newest: bool, expected: list[str]
) -> None:
    args = pytest_args.cell_args(
        python,
        newest=newest,
        full_python="3.11",
        elsewhere=("examples", "processes"),
        older=("examples",),
        posargs=["-q"],
    )
    assert args == [*expected, "-q"]


def test_a_users_marker_narrows_a_cells() -> None:
    args = pytest_args.cell_args(
        "3.12", newest=True, full_python="3.11", elsewhere=("processes",), posargs=["-m", "pg"]
    )
    assert args == ["-m", "(not processes) and (pg)"]
    # the full cell takes the user's arguments as they are
    assert pytest_args.cell_args(
        "3.11", newest=True, full_python="3.11", elsewhere=("processes",), posargs=["-m", "pg"]
    ) == ["-m", "pg"]


# -- tools/dev.py: two lanes, then the sessions tagged alone ----------------------------------

FAKE_NOX = """
import json, os, sys, time
args = sys.argv[1:]
if "--list" in args:
    print(json.dumps(json.loads(os.environ["FAKE_LISTING"])))
    sys.exit(0)
sessions = args[args.index("-s") + 1 :]
record = os.environ["FAKE_RECORD"]
def lines():
    out = []
    with open(record) as f:
        for line in f:
            try:
                out.append(json.loads(line))
            except ValueError:  # (the other lane is writing that line)
                pass
    return out
with open(record, "a") as f:
    f.write(json.dumps({"start": time.time(), "sessions": sessions}) + "\\n")
print("ran " + " ".join(sessions), flush=True)
# a lane waits (up to 20 s) until the other lane has started: both run at once
lane = "parity_langgraph" not in sessions
deadline = time.time() + 20
while lane and time.time() < deadline:
    if len([r for r in lines() if "start" in r]) >= 2:
        break
    time.sleep(0.05)
others = [r["sessions"] for r in lines() if "start" in r and r["sessions"] != sessions]
with open(record, "a") as f:
    f.write(json.dumps({"end": time.time(), "sessions": sessions, "others": others}) + "\\n")
failing = os.environ.get("FAKE_FAIL", "")
sys.exit(3 if failing and failing in sessions else 0)
"""

LISTING = [
    {"session": "lint", "tags": []},
    {"session": "tests-3.11", "tags": []},
    {"session": "crewai(1.15.30-py3.11)", "tags": ["adapters"]},
    {"session": "langchain(newest-py3.11)", "tags": ["adapters"]},
    {"session": "parity_langgraph", "tags": ["alone"]},
]


def _lanes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fail: str = ""
) -> tuple[int, list[dict[str, object]]]:
    fake = tmp_path / "nox.py"
    fake.write_text(FAKE_NOX)
    record = tmp_path / "record.jsonl"
    monkeypatch.setattr(dev, "TOOLS", tmp_path)  # (the adapters' log goes here)
    env = {
        **os.environ,
        "FAKE_LISTING": json.dumps(LISTING),
        "FAKE_RECORD": str(record),
        "FAKE_FAIL": fail,
    }
    status = dev.run_in_lanes([sys.executable, str(fake)], env)
    return status, [json.loads(line) for line in record.read_text().splitlines()]


def test_the_lanes_split_by_tag_and_run_at_once_then_the_alone_sessions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    status, record = _lanes(tmp_path, monkeypatch)
    assert status == 0
    core, adapters = ["lint", "tests-3.11"], ["crewai(1.15.30-py3.11)", "langchain(newest-py3.11)"]
    ends = {tuple(r["sessions"]): r for r in record if "end" in r}  # type: ignore[misc]
    assert set(ends) == {tuple(core), tuple(adapters), ("parity_langgraph",)}
    # each lane saw the other one running: they ran at once
    assert ends[tuple(core)]["others"] == [adapters]
    assert ends[tuple(adapters)]["others"] == [core]
    # the alone sessions started once both lanes had ended
    alone = next(r for r in record if "start" in r and r["sessions"] == ["parity_langgraph"])
    assert alone["start"] >= max(ends[tuple(core)]["end"], ends[tuple(adapters)]["end"])
    out = capfd.readouterr().out
    # the adapters' output is printed after the core lane's
    assert out.index("ran lint tests-3.11") < out.index("ran crewai(1.15.30-py3.11)")


@pytest.mark.parametrize("fail", ["tests-3.11", "langchain(newest-py3.11)", "parity_langgraph"])
def test_a_failure_in_any_lane_fails_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fail: str
) -> None:
    status, record = _lanes(tmp_path, monkeypatch, fail=fail)
    assert status == 3
    assert len([r for r in record if "end" in r]) == 3  # the other lanes still ran


def test_every_default_session_of_the_noxfile_is_in_one_lane() -> None:
    nox = ROOT / ".tools" / ("Scripts" if os.name == "nt" else "bin") / "nox"
    if not nox.exists():
        if os.environ.get("CI"):
            pytest.fail(f"{nox} is missing: `python3 tools/dev.py test` creates it")
        pytest.skip("no .tools/ here: `python3 tools/dev.py test` creates it")
    listed = subprocess.run(
        [str(nox), "-f", str(ROOT / "noxfile.py"), "--list", "--json"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    listing = json.loads(listed.stdout)
    assert listing, "nox listed no sessions"
    for entry in listing:
        lanes = {"adapters", "alone"} & set(entry["tags"])
        assert len(lanes) <= 1, entry
        adapter = entry["session"].split("(")[0] in {
            "crewai",
            "langchain",
            "autogen",
            "openai_agents",
        }
        if adapter:  # every framework cell runs in the adapters' lane
            assert lanes == {"adapters"}, entry
    names = {e["session"] for e in listing}
    assert {"crewai(1.10.1-py3.11)", "crewai(1.13.0-py3.11)", "crewai(1.15.30-py3.11)"} <= names
