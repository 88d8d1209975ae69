"""Octopoda across real processes on real files.

Acceptance criteria of the foundation issue: persistence across interpreters, no acknowledged
write lost to SIGKILL, several processes opening and writing one brand-new file at once, a
remember that waits out another process's transaction, no silent fallback to another file,
and the default store path. Beyond them: a writer killed among live ones, forked children,
and read-then-write operations racing another process.

Every test launches the plain scripts in ``procs/`` with ``sys.executable`` (the store path
on their command line) and then checks the file, through the library and with raw SQL.
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from octopoda import AgentRuntime, SqliteStore
from octopoda._audit.chain import GENESIS_HASH, event_hash
from octopoda._store.sqlite.schema import APPLICATION_ID, MIGRATIONS
from octopoda.store import agent_namespace

PROCS = Path(__file__).with_name("procs")
PROCESS_TIMEOUT = 60.0  # seconds any helper process may run before the test fails


# ------------------------------------------------------------------------------- processes


@dataclass
class Sandbox:
    """Empty HOME and OCTOPODA_HOME for the helper processes, which must leave them empty
    unless a test asks for the default store."""

    home: Path
    octopoda_home: Path

    @property
    def env(self) -> dict[str, str]:
        return script_env(HOME=str(self.home), OCTOPODA_HOME=str(self.octopoda_home))

    def files(self) -> list[Path]:
        return sorted(p for root in (self.home, self.octopoda_home) for p in root.rglob("*"))


def script_env(**overrides: str) -> dict[str, str]:
    """This process's environment without any OCTOPODA_* variable, plus ``overrides``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OCTOPODA_")}
    env.update(overrides)
    return env


class Launcher:
    """Starts helper scripts with ``sys.executable``; none outlives the test."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self._procs: list[subprocess.Popen[str]] = []

    def start(
        self, script: str, *args: object, env: dict[str, str] | None = None
    ) -> subprocess.Popen[str]:
        proc = subprocess.Popen(
            [sys.executable, str(PROCS / script), *(str(a) for a in args)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=self.env if env is None else env,
        )
        self._procs.append(proc)
        return proc

    @staticmethod
    def finish(proc: subprocess.Popen[str], timeout: float = PROCESS_TIMEOUT) -> tuple[str, str]:
        """Wait for ``proc``; its stdout and stderr."""
        try:
            return proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            pytest.fail(f"{proc.args} ran over {timeout:g}s\n--- stdout\n{out}\n--- stderr\n{err}")

    def reap(self) -> None:
        for proc in self._procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            for stream in (proc.stdin, proc.stdout, proc.stderr):
                if stream is not None and not stream.closed:
                    stream.close()


@pytest.fixture
def sandbox(tmp_path: Path) -> Sandbox:
    box = Sandbox(tmp_path / "sandbox-home", tmp_path / "sandbox-octopoda-home")
    box.home.mkdir()
    box.octopoda_home.mkdir()
    return box


@pytest.fixture
def launcher(sandbox: Sandbox) -> Iterator[Launcher]:
    launch = Launcher(sandbox.env)
    yield launch
    launch.reap()


def op(name: str, agent: str, *args: Any, **kwargs: Any) -> dict[str, Any]:
    """One operation for ``procs/ops.py``."""
    return {"op": name, "agent": agent, "args": list(args), "kwargs": kwargs}


def start_ops(
    launcher: Launcher, store: Path | str, ops: list[dict[str, Any]], *extra: object, **kw: Any
) -> subprocess.Popen[str]:
    return launcher.start("ops.py", store, json.dumps(ops), *extra, **kw)


def assert_overlapped(held: dict[str, Any], other: dict[str, Any]) -> None:
    """``other`` ran its operations while ``held`` was still inside its transaction."""
    assert other["started_at"] < held["finished_at"], (
        "the second process started after the held transaction ended: nothing raced"
    )


def start_held_ops(
    launcher: Launcher, store: Path, ops: list[dict[str, Any]], seconds: float = 1.0
) -> subprocess.Popen[str]:
    """Start ``ops`` with the first write transaction held open ``seconds`` (by a pipeline
    processor, after the transaction's reads); return once it is inside."""
    proc = start_ops(launcher, store, ops, seconds)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line == "inside\n", f"{line!r}\n{launcher.finish(proc)[1]}"
    return proc


def ops_report(
    launcher: Launcher, proc: subprocess.Popen[str], *, expect_error: bool | None = False
) -> dict[str, Any]:
    """The JSON report of an ``ops.py`` process; fails on a crash, stray stderr or an
    unexpected Octopoda error (or on a missing one with ``expect_error``; None: either)."""
    out, err = launcher.finish(proc)
    detail = f"{proc.args}\nexit {proc.returncode}\n--- stdout\n{out}\n--- stderr\n{err}"
    allowed = {False: (0,), True: (3,), None: (0, 3)}[expect_error]
    assert proc.returncode in allowed, detail
    assert err == "", detail
    report: dict[str, Any] = json.loads(out.splitlines()[-1])
    assert (report["error"] is not None) == (proc.returncode == 3), detail
    return report


def run_ops(
    launcher: Launcher, store: Path | str, ops: list[dict[str, Any]], **kw: Any
) -> dict[str, Any]:
    expect_error = kw.pop("expect_error", False)
    return ops_report(launcher, start_ops(launcher, store, ops, **kw), expect_error=expect_error)


class LineReader:
    """Collects a process's stdout lines on a thread, as they arrive (so nothing else may
    read that stdout: no ``communicate``)."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        self._proc = proc
        self._stream = proc.stdout
        self.lines: list[str] = []
        self._arrived = threading.Condition()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        for line in self._stream:
            with self._arrived:
                self.lines.append(line)
                self._arrived.notify_all()
        with self._arrived:
            self.lines.append("")  # EOF
            self._arrived.notify_all()

    def wait_for(self, count: int, timeout: float) -> bool:
        """True once ``count`` lines arrived; False on EOF or timeout."""
        with self._arrived:
            self._arrived.wait_for(
                lambda: len(self.lines) >= count or (self.lines and self.lines[-1] == ""),
                timeout,
            )
            return len(self.lines) >= count and self.lines[count - 1] != ""

    def stop(self) -> str:
        """Wait for the (killed) process to end; its stderr. The thread keeps stdout."""
        self._proc.wait(PROCESS_TIMEOUT)
        assert self._proc.stderr is not None
        return self._proc.stderr.read()

    def join(self) -> list[str]:
        """Every complete line (a line cut short by a kill is not a line)."""
        self._thread.join(PROCESS_TIMEOUT)
        return [line for line in self.lines if line.endswith("\n")]


# ------------------------------------------------------------------------ store inspection


@dataclass(frozen=True)
class Row:
    encoding: str
    value: Any  # decoded: a JSON value, bytes, or None for a tombstone
    seq: int
    author: str


@dataclass(frozen=True)
class EventRow:
    seq: int
    time: float
    kind: str
    payload: str
    prev_hash: str
    hash: str


@dataclass
class Dump:
    """Everything in a store file, read with raw SQL."""

    rows: dict[tuple[str, str, int], Row] = field(default_factory=dict)
    events: dict[str, list[EventRow]] = field(default_factory=dict)
    heads: dict[str, tuple[int, str]] = field(default_factory=dict)

    def versions(self, agent: str, key: str) -> list[int]:
        ns = agent_namespace(agent)
        return sorted(v for (n, k, v) in self.rows if (n, k) == (ns, key))

    def row(self, agent: str, key: str, version: int) -> Row | None:
        return self.rows.get((agent_namespace(agent), key, version))


def dump_store(path: Path) -> Dump:
    dump = Dump()
    with closing(sqlite3.connect(path)) as conn:
        for ns, key, version, encoding, value, seq, author in conn.execute(
            "SELECT namespace, key, version, encoding, value, seq, author FROM memories"
        ):
            decoded = json.loads(value) if encoding == "json" else value
            dump.rows[(ns, key, version)] = Row(encoding, decoded, seq, author)
        for agent, *event in conn.execute(
            "SELECT agent, seq, time, kind, payload, prev_hash, hash FROM events"
            " ORDER BY agent, seq"
        ):
            dump.events.setdefault(agent, []).append(EventRow(*event))
        for agent, head_seq, head_hash in conn.execute(
            "SELECT id, head_seq, head_hash FROM agents"
        ):
            dump.heads[agent] = (head_seq, head_hash)
    return dump


def event_problems(dump: Dump, agent: str) -> list[str]:
    """An agent's events: seqs 1..N gapless, a chain that verifies, the head on the last
    event, and every write the payload lists stored with that event's seq."""
    problems: list[str] = []
    events = dump.events.get(agent, [])
    seqs = [e.seq for e in events]
    if seqs != list(range(1, len(seqs) + 1)):
        missing = sorted(set(range(1, max(seqs, default=0) + 1)) - set(seqs))
        problems.append(f"agent {agent!r}: event seqs not 1..N, missing {missing[:10]}")
    prev = GENESIS_HASH
    for e in events:
        if e.prev_hash != prev:
            problems.append(f"agent {agent!r} seq {e.seq}: prev_hash does not link")
        if event_hash(agent, e.kind, e.payload, e.prev_hash, e.seq, e.time) != e.hash:
            problems.append(f"agent {agent!r} seq {e.seq}: hash does not verify")
        prev = e.hash
        for w in json.loads(e.payload).get("writes", []):
            slot = (w.get("namespace", agent_namespace(agent)), w["key"], w["version"])
            row = dump.rows.get(slot)
            if row is None or (row.seq, row.author, row.encoding) != (e.seq, agent, w["encoding"]):
                problems.append(f"agent {agent!r} seq {e.seq} lists write {slot}, stored {row}")
    head = (len(events), events[-1].hash if events else GENESIS_HASH)
    if dump.heads.get(agent) != head:
        problems.append(f"agent {agent!r}: head {dump.heads.get(agent)} but events end at {head}")
    return problems


def row_problems(dump: Dump) -> list[str]:
    """Memory rows: versions 1..N gapless per key, each written by an existing event."""
    problems: list[str] = []
    per_key: dict[tuple[str, str], list[int]] = {}
    event_ids = {(agent, e.seq) for agent, events in dump.events.items() for e in events}
    for (ns, key, version), row in dump.rows.items():
        per_key.setdefault((ns, key), []).append(version)
        if (row.author, row.seq) not in event_ids:
            problems.append(f"row {(ns, key, version)} points to missing event {row.seq}")
    for slot, versions in per_key.items():
        if sorted(versions) != list(range(1, len(versions) + 1)):
            problems.append(f"versions of {slot} are not 1..N: {sorted(versions)[:20]}")
    return problems


def assert_store_sound(path: Path) -> Dump:
    """Open the store with the library (recovering a crashed WAL), check its integrity and
    the consistency of rows and events; return its contents."""
    with SqliteStore(path) as store:
        assert store.integrity_check() == ["ok"], f"{path} fails PRAGMA integrity_check"
    dump = dump_store(path)
    problems = row_problems(dump)
    for agent in sorted(set(dump.events) | set(dump.heads)):
        problems += event_problems(dump, agent)
    assert not problems, f"{path} is inconsistent:\n" + "\n".join(problems[:30])
    return dump


@dataclass(frozen=True)
class Ack:
    """A write a process saw return."""

    agent: str
    key: str
    version: int
    seq: int
    value: Any


def lost_acks(dump: Dump, acks: list[Ack]) -> list[str]:
    """Acknowledged writes missing from the store or stored differently."""
    problems = []
    for ack in acks:
        row = dump.row(ack.agent, ack.key, ack.version)
        if row is None:
            problems.append(f"LOST: {ack}")
        elif (row.value, row.seq) != (ack.value, ack.seq):
            problems.append(f"CHANGED: {ack} stored as {row}")
    return problems


# ------------------------------------------------------------------- 1. persistence


def test_a_fresh_interpreter_recalls_what_another_remembered(
    tmp_path: Path, launcher: Launcher, sandbox: Sandbox
) -> None:
    store = tmp_path / "persist.db"
    profile_v1 = {"name": "Ada", "langs": ["py", "c"], "n": 3, "pi": 3.14159, "ok": None}
    profile_v2 = {"name": "Ada Lovelace", "nested": {"deep": [1, {"x": True}]}, "u": "café 🐙"}
    blob = {"$bytes": bytes(range(256)).hex()}
    scalars = [0, -1, 2**53 + 1, 1.5, 1e-300, "", None, True, False, "naïve ☕"]
    written = run_ops(
        launcher,
        store,
        [
            op("remember", "alice", "profile", profile_v1, tags=["user", "pii"]),
            op("remember", "alice", "profile", profile_v2, tags=["user"]),
            op("remember", "alice", "blob", blob, tags=["binary"], kind="file"),
            op("remember", "alice", "session", {"token": "t-123"}, ttl=3600),
            op("remember", "alice", "flash", "gone soon", ttl=0.3),
            op("remember", "alice", "temp", "to be forgotten"),
            op("forget", "alice", "temp"),
            op("remember", "alice", "scalars", scalars),
            op("remember", "bob", "profile", "bob's own"),
        ],
    )["results"]
    p1, p2, w_blob, w_session, w_flash, w_temp, w_forget, w_scalars, w_bob = written
    assert [r["version"] for r in written] == [1, 2, 1, 1, 1, 1, 2, 1, 1]
    assert [r["seq"] for r in written] == [1, 2, 3, 4, 5, 6, 7, 8, 1]
    time.sleep(max(0.0, w_flash["created_at"] + 0.35 - time.time()))  # let "flash" expire

    read = run_ops(
        launcher,
        store,
        [
            op("recall", "alice", "profile"),
            op("recall", "alice", "profile", version=1),
            op("recall", "alice", "blob"),
            op("recall", "alice", "session"),
            op("recall", "alice", "flash"),
            op("recall", "alice", "temp"),
            op("recall", "alice", "scalars"),
            op("history", "alice", "profile"),
            op("history", "alice", "temp"),
            op("keys", "alice"),
            op("search", "alice", tags=["user"]),
            op("recall", "bob", "profile"),
            op("remember", "alice", "profile", {"name": "v3"}),
        ],
    )["results"]
    (
        r_profile,
        r_profile_v1,
        r_blob,
        r_session,
        r_flash,
        r_temp,
        r_scalars,
        h_profile,
        h_temp,
        keys,
        tagged,
        r_bob,
        p3,
    ) = read

    def found(
        rec: dict[str, Any], value: Any, tags: list[str], expires: Any = None, kind: Any = None
    ) -> dict:
        return {
            "key": rec["key"],
            "found": True,
            "value": value,
            "version": rec["version"],
            "created_at": rec["created_at"],
            "tags": tags,
            "expires_at": expires,
            "seq": rec["seq"],
            "kind": kind,
        }

    def missing(key: str) -> dict[str, Any]:
        return {"key": key, "found": False, "value": None, "version": None, "created_at": None}

    assert r_profile == found(p2, profile_v2, ["user"])
    assert r_profile_v1 == found(p1, profile_v1, ["user", "pii"])
    assert r_blob == found(w_blob, blob, ["binary"], kind="file")
    assert r_session == found(
        w_session, {"token": "t-123"}, [], round(w_session["created_at"] + 3600, 6)
    )
    assert r_scalars == found(w_scalars, scalars, [])
    assert r_bob == found(w_bob, "bob's own", [])
    for result, key in ((r_flash, "flash"), (r_temp, "temp")):
        assert {k: result[k] for k in missing(key)} == missing(key), f"{key} came back"

    assert [(h["version"], h["value"], h["tags"], h["seq"]) for h in h_profile] == [
        (2, profile_v2, ["user"], p2["seq"]),
        (1, profile_v1, ["user", "pii"], p1["seq"]),
    ]
    assert [(h["version"], h["value"], h["tombstone"], h["seq"]) for h in h_temp] == [
        (2, None, True, w_forget["seq"]),
        (1, "to be forgotten", False, w_temp["seq"]),
    ], "the forgotten key's history did not survive as tombstone over value"
    assert keys == ["blob", "profile", "scalars", "session"]
    assert [(t["key"], t["value"]) for t in tagged] == [("profile", profile_v2)]
    assert (p3["version"], p3["seq"]) == (3, w_scalars["seq"] + 1), "head did not persist"

    third = run_ops(launcher, store, [op("recall", "alice", "temp"), op("keys", "alice")])
    assert third["results"][0]["found"] is False, "a forgotten key came back in a 3rd process"
    assert third["results"][1] == keys
    assert_store_sound(store)
    assert sandbox.files() == [], "a process wrote under HOME/OCTOPODA_HOME"


# ------------------------------------------------------------------- 2. crash safety

CRASH_AGENT = "crash-agent"  # the agent procs/crash_writer.py writes as
# (mode, durability) per trial, cycled: new keys, or five keys overwritten so versions grow.
CRASH_PLANS = [
    ("fresh", "normal"),
    ("overwrite", "normal"),
    ("fresh", "full"),
    ("overwrite", "normal"),
    ("overwrite", "full"),
]
CRASH_TRIALS = [(trial, *CRASH_PLANS[trial % len(CRASH_PLANS)]) for trial in range(25)]


def kill_writer(
    launcher: Launcher, store: Path, mode: str, durability: str, *, after: int, delay: float
) -> list[Ack]:
    """Run procs/crash_writer.py, SIGKILL it ``delay`` seconds after its ``after``-th
    stdout line (1 = "opening", 2 = the first ack), and return the writes it acknowledged."""
    proc = launcher.start("crash_writer.py", store, mode, durability)
    reader = LineReader(proc)
    stopped = not reader.wait_for(after, timeout=PROCESS_TIMEOUT)
    if not stopped:
        time.sleep(delay)
    proc.kill()
    err = reader.stop()
    lines = reader.join()
    assert not stopped, f"the writer printed {lines[:3]} and stopped\n--- stderr\n{err}"
    assert proc.returncode == -9, f"the writer ended before the kill ({proc.returncode}):\n{err}"
    assert lines[0] == "opening\n", lines[:2]
    return [Ack(CRASH_AGENT, **json.loads(line)) for line in lines[1:]]


def check_after_crash(store: Path, acks: list[Ack], context: str) -> None:
    """Every acknowledged write is stored as acknowledged, at most one write more committed,
    the file is sound, and the store takes the next write where the chain ended."""
    dump = assert_store_sound(store)
    problems = lost_acks(dump, acks)
    assert not problems, f"{context}: {len(problems)} of {len(acks)} acked writes:\n" + "\n".join(
        problems[:20]
    )
    assert [a.seq for a in acks] == list(range(1, len(acks) + 1)), f"{context}: ack seqs"
    events = len(dump.events.get(CRASH_AGENT, []))
    assert events in (len(acks), len(acks) + 1), (
        f"{context}: {len(acks)} writes acknowledged but {events} events stored"
    )
    agent = AgentRuntime(CRASH_AGENT, store=str(store))
    try:
        record = agent.remember("after-crash", {"ok": 1})
    finally:
        agent.store.close()
    assert (record.version, record.seq) == (1, events + 1), f"{context}: write after the crash"


@pytest.mark.parametrize(
    ("trial", "mode", "durability"), CRASH_TRIALS, ids=[f"{t}-{m}-{d}" for t, m, d in CRASH_TRIALS]
)
def test_sigkill_mid_write_loses_no_acknowledged_write(
    trial: int, mode: str, durability: str, tmp_path: Path, launcher: Launcher
) -> None:
    delay = random.Random(trial).uniform(0.02, 0.3)
    store = tmp_path / "crash.db"
    acks = kill_writer(launcher, store, mode, durability, after=2, delay=delay)
    context = f"trial {trial} ({mode}, durability={durability}, killed {delay * 1000:.0f} ms in)"
    assert len(acks) >= 1, context
    if mode == "overwrite":
        assert max(a.version for a in acks) > 1 or len(acks) < 6, context
    check_after_crash(store, acks, context)


@pytest.mark.parametrize("trial", range(8))
def test_sigkill_while_creating_the_store_leaves_it_usable(
    trial: int, tmp_path: Path, launcher: Launcher
) -> None:
    """Killed while opening a brand-new file (creating it, switching to WAL, migrating) or
    just after: the next open works and nothing half-made remains."""
    delay = random.Random(1000 + trial).uniform(0.0, 0.015)
    store = tmp_path / "crash-init.db"
    acks = kill_writer(launcher, store, "fresh", "normal", after=1, delay=delay)
    check_after_crash(store, acks, f"trial {trial} (killed {delay * 1000:.1f} ms after opening)")


# ------------------------------------------------------------ 3. concurrent processes


def start_racers(
    launcher: Launcher, store: Path, processes: int, config: dict[str, Any]
) -> list[subprocess.Popen[str]]:
    """Start procs/race_writer.py ``processes`` times; return them once all are ready."""
    procs = [
        launcher.start("race_writer.py", store, i, json.dumps(config)) for i in range(processes)
    ]
    for proc in procs:
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n", (
            f"{proc.args} did not get ready:\n{launcher.finish(proc)[1]}"
        )
    return procs


def release(racers: list[subprocess.Popen[str]]) -> None:
    """Let every racer open the store at one instant, 50 ms from now."""
    start = time.time() + 0.05
    for proc in racers:
        assert proc.stdin is not None
        proc.stdin.write(f"go {start!r}\n")
        proc.stdin.flush()


def collect(launcher: Launcher, racers: list[subprocess.Popen[str]]) -> list[dict[str, Any]]:
    """Each racer's report, its acks as :class:`Ack`; fails on any error in any racer."""
    failures, reports = [], []
    for index, proc in enumerate(racers):
        out, err = launcher.finish(proc)
        report = json.loads(out) if out.strip() else {"acks": [], "error": "no report"}
        if proc.returncode != 0 or err or report["error"]:
            failures.append(
                f"process {index}: exit {proc.returncode}\n{report['error'] or ''}{err}"
            )
        report["acks"] = [Ack(*ack) for ack in report["acks"]]
        reports.append(report)
    assert not failures, "\n".join(failures)
    return reports


def race(
    launcher: Launcher, store: Path, processes: int, config: dict[str, Any]
) -> list[list[Ack]]:
    """Run ``processes`` racers on the brand-new ``store``; each one's acknowledged writes."""
    racers = start_racers(launcher, store, processes, config)
    assert not store.exists(), "the store must be brand-new when the processes open it"
    release(racers)
    return [report["acks"] for report in collect(launcher, racers)]


def check_shared_key(dump: Dump, agent: str, acks: list[Ack], expected: int) -> None:
    """The versions of ``shared`` are exactly 1..expected, each acknowledged once."""
    acked = sorted(a.version for a in acks if (a.agent, a.key) == (agent, "shared"))
    assert dump.versions(agent, "shared") == list(range(1, expected + 1)), (
        f"stored versions of {agent}/shared"
    )
    assert acked == list(range(1, expected + 1)), f"acknowledged versions of {agent}/shared"


@pytest.mark.parametrize("round_", range(5))
def test_four_processes_write_one_new_file_at_once(
    round_: int, tmp_path: Path, launcher: Launcher
) -> None:
    processes, unique, shared = 4, 25, 25
    config = {"agent": "team", "unique": unique, "shared": shared, "own": True}
    store = tmp_path / f"race-{round_}.db"
    per_process = race(launcher, store, processes, config)
    all_acks = [a for acks in per_process for a in acks]
    assert len(all_acks) == processes * 2 * (unique + shared)
    dump = assert_store_sound(store)
    problems = lost_acks(dump, all_acks)
    assert not problems, f"{len(problems)} acknowledged writes:\n" + "\n".join(problems[:20])

    check_shared_key(dump, "team", all_acks, processes * shared)
    team_seqs = sorted(a.seq for a in all_acks if a.agent == "team")
    assert team_seqs == list(range(1, processes * (unique + shared) + 1)), "team event seqs"
    for index, acks in enumerate(per_process):
        own = f"own-{index}"
        check_shared_key(dump, own, acks, shared)
        assert len(dump.events[own]) == unique + shared, f"events of {own}"
        mine = [a.version for a in acks if (a.agent, a.key) == ("team", "shared")]
        assert mine == sorted(mine), f"process {index} saw team/shared versions go back: {mine}"
    assert set(dump.events) == {"team"} | {f"own-{i}" for i in range(processes)}


@pytest.mark.parametrize("round_", range(6))
def test_six_processes_initialise_one_new_file_at_once(
    round_: int, tmp_path: Path, launcher: Launcher
) -> None:
    processes = 6
    store = tmp_path / f"init-race-{round_}.db"
    config = {"agent": "init", "unique": 0, "shared": 1, "own": False}
    acks = [a for acks in race(launcher, store, processes, config) for a in acks]
    dump = assert_store_sound(store)
    assert not lost_acks(dump, acks)
    check_shared_key(dump, "init", acks, processes)
    with SqliteStore(store) as opened:
        info = opened.info()
    assert info["schema_version"] == len(MIGRATIONS)
    assert info["migrations"] == sorted(name for name, _ in MIGRATIONS)
    assert info["journal_mode"] == "wal"
    with closing(sqlite3.connect(store)) as conn:
        assert conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID


@pytest.mark.parametrize("round_", range(3))
def test_sigkill_of_one_writer_does_not_disturb_the_others(
    round_: int, tmp_path: Path, launcher: Launcher
) -> None:
    """Two processes write while a third is SIGKILLed at a random point (often inside its
    transaction, holding the write lock): the two finish without an error, nothing
    acknowledged by anyone is lost, and the file is sound."""
    store, stop = tmp_path / "crash-amid.db", tmp_path / "stop-writing"
    config = {"agent": "team", "unique": 0, "shared": 0, "until": str(stop), "own": True}
    racers = start_racers(launcher, store, 2, config)
    release(racers)
    delay = random.Random(2000 + round_).uniform(0.02, 0.3)
    crash_acks = kill_writer(launcher, store, "overwrite", "normal", after=2, delay=delay)
    killed_at = time.time()
    time.sleep(0.1)  # the others keep writing after the kill...
    stop.touch()  # ...until now
    reports = collect(launcher, racers)
    assert all(r["finished_at"] > killed_at for r in reports), "a writer stopped before the kill"
    racer_acks = [a for r in reports for a in r["acks"]]
    check_after_crash(store, crash_acks, f"round {round_} (killed {delay * 1000:.0f} ms in)")
    dump = assert_store_sound(store)
    assert not lost_acks(dump, racer_acks)
    for agent in ("team", "own-0", "own-1"):
        writes = sum(1 for a in racer_acks if a.agent == agent)
        check_shared_key(dump, agent, racer_acks, writes)


@pytest.mark.parametrize(
    "threaded",
    [
        False,
        True,
    ],
    ids=["fork", "fork-while-another-thread-writes"],
)
def test_forked_children_write_through_the_runtime_they_inherited(
    threaded: bool, tmp_path: Path, launcher: Launcher
) -> None:
    """The store reopens its connection in a forked child (never sharing the parent's): three
    children and the parent write one key at once, and every version is there once."""
    store = tmp_path / "fork.db"
    out, err = launcher.finish(launcher.start("fork_writer.py", store, int(threaded)))
    assert out, f"fork_writer.py printed nothing:\n{err}"
    report = json.loads(out)
    assert report["children"] == [0, 0, 0], f"children failed or hung:\n{err}"
    assert err == "", err
    acks = [Ack(*ack) for ack in report["acks"]]
    dump = assert_store_sound(store)
    assert not lost_acks(dump, acks)
    check_shared_key(dump, "team", acks, 4 * 40)


# ------------------------------------------------------------ 4. a transaction held elsewhere


def holder_events(launcher: Launcher, holder: subprocess.Popen[str]) -> dict[str, float]:
    out, err = launcher.finish(holder)
    assert err == "", err
    return {e["event"]: e["t"] for e in map(json.loads, out.splitlines())}


def start_holder(
    launcher: Launcher, store: Path, mode: str, seconds: float
) -> tuple[subprocess.Popen[str], float]:
    """Start procs/lock_holder.py; return it once its transaction is open, with that time."""
    holder = launcher.start("lock_holder.py", store, mode, seconds)
    assert holder.stdout is not None
    line = holder.stdout.readline()
    assert line, f"the lock holder failed:\n{launcher.finish(holder)[1]}"
    return holder, json.loads(line)["t"]


@pytest.mark.parametrize(
    ("initialised", "ending"),
    [(True, "commit"), (False, "commit"), (True, "sigkill")],
    ids=["store-commit", "brand-new-file-commit", "store-holder-killed"],
)
def test_remember_waits_out_a_write_transaction_of_another_process(
    initialised: bool, ending: str, tmp_path: Path, launcher: Launcher
) -> None:
    """A raw connection holds BEGIN IMMEDIATE for about a second, then commits (or its process
    dies): a remember started meanwhile waits (busy timeout) and succeeds."""
    store = tmp_path / "held.db"
    if initialised:
        SqliteStore(store).close()
    holder, _ = start_holder(launcher, store, "write", 1.0 if ending == "commit" else 60.0)
    writer = start_ops(launcher, store, [op("remember", "waiter", "k", {"waited": True})])
    if ending == "commit":
        released = holder_events(launcher, holder)["released"]
    else:
        time.sleep(1.0)
        released = time.time()
        holder.kill()
        launcher.finish(holder)
    report = ops_report(launcher, writer)
    assert report["started_at"] < released, "the writer started after the lock was gone"
    assert report["finished_at"] >= released, "remember returned while the lock was held"
    assert (report["results"][0]["version"], report["results"][0]["seq"]) == (1, 1)
    dump = assert_store_sound(store)
    assert dump.row("waiter", "k", 1) == Row("json", {"waited": True}, 1, "waiter")


def test_a_long_read_transaction_does_not_block_remember(
    tmp_path: Path, launcher: Launcher
) -> None:
    store = tmp_path / "reader.db"
    SqliteStore(store).close()
    holder, _ = start_holder(launcher, store, "read", 1.5)
    report = run_ops(launcher, store, [op("remember", "writer", "k", 1)])
    released = holder_events(launcher, holder)["released"]
    assert report["finished_at"] < released, "a reader blocked the writer (is WAL on?)"
    assert_store_sound(store)


# ---------------------------------------------------- read-then-write races across processes
# Operations that read before they write must not act on what another process changed in
# between. Each test runs one while another process holds its write transaction open, so the
# interleaving is certain, not left to chance.


def test_two_processes_forgetting_one_key_write_one_tombstone(
    tmp_path: Path, launcher: Launcher
) -> None:
    store = tmp_path / "forget-race.db"
    run_ops(launcher, store, [op("remember", "a", "x", 1)])
    first = start_held_ops(launcher, store, [op("forget", "a", "x")])
    racing = run_ops(launcher, store, [op("forget", "a", "x")])
    held = ops_report(launcher, first)
    assert_overlapped(held, racing)
    assert held["results"][0]["version"] == 2
    second = racing["results"][0]
    history = run_ops(launcher, store, [op("history", "a", "x")])["results"][0]
    assert_store_sound(store)
    versions = [(h["version"], "tombstone" if h["tombstone"] else "value") for h in history]
    assert (second, versions) == (None, [(2, "tombstone"), (1, "value")]), (
        f"the second forget wrote {second}; history (newest first) {versions}"
    )


def test_restore_racing_a_write_of_another_process_still_restores_the_snapshot(
    tmp_path: Path, launcher: Launcher
) -> None:
    store = tmp_path / "restore-race.db"
    run_ops(launcher, store, [op("remember", "a", "kept", 1), op("snapshot", "a", "s")])
    writer = start_held_ops(launcher, store, [op("remember", "a", "late", 2)])
    restoring = run_ops(launcher, store, [op("restore", "a", "s"), op("keys", "a")])
    restore, keys = restoring["results"]
    held = ops_report(launcher, writer)
    late = held["results"][0]
    assert_overlapped(held, restoring)
    assert late["seq"] < restore["seq"], "the write must come first for this test to mean much"
    assert_store_sound(store)
    assert keys == ["kept"], (
        f"restore (event {restore['seq']}, removed {restore['removed']}) came after the write"
        f" of 'late' (event {late['seq']}), yet memory is {keys}, not the snapshot ['kept']"
    )


def test_two_processes_importing_with_on_existing_error_import_once(
    tmp_path: Path, launcher: Launcher
) -> None:
    store = tmp_path / "import-race.db"
    bundle = run_ops(launcher, store, [op("remember", "src", "k", 1), op("export", "src")])
    importing = [op("import", "dst", bundle["results"][1], on_existing="error")]
    first = start_held_ops(launcher, store, importing)
    second = run_ops(launcher, store, importing, expect_error=None)
    held = ops_report(launcher, first)
    assert_overlapped(held, second)
    assert held["results"][0]["versions"] == 1
    history = run_ops(launcher, store, [op("history", "dst", "k")])["results"][0]
    assert_store_sound(store)
    versions = [h["version"] for h in history]
    refused = second["error"] is not None and "InvalidInput" in second["error"]["types"]
    assert (refused, versions) == (True, [1]), (
        f"the racing import with on_existing='error' returned {second['results']}"
        f" {second['error']}; dst/k now has versions {versions}"
    )


# --------------------------------------------------------------- 5. no silent fallback


def make_garbage(path: Path, kind: str) -> None:
    if kind == "text":
        path.write_text("this is not a database\n" * 200)
    elif kind == "random-bytes":
        path.write_bytes(random.Random(7).randbytes(8192))
    elif kind == "short":
        path.write_bytes(b"hello")
    elif kind == "foreign-sqlite":
        with closing(sqlite3.connect(path)) as conn:
            conn.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
            conn.execute("INSERT INTO customers (name) VALUES ('precious')")
            conn.commit()
    else:
        raise AssertionError(kind)


def open_store_in_process(
    launcher: Launcher, sandbox: Sandbox, target: Path, via: str
) -> dict[str, Any]:
    """Open (and try to write) ``target`` in a subprocess, named by the store argument or by
    OCTOPODA_DATABASE_URL; the Octopoda error it reports."""
    ops = [op("open", "a"), op("remember", "a", "k", "v")]
    if via == "argument":
        report = run_ops(launcher, target, ops, expect_error=True)
    else:
        env = {**sandbox.env, "OCTOPODA_DATABASE_URL": f"sqlite:///{target}"}
        report = run_ops(launcher, "-", ops, env=env, expect_error=True)
    assert report["results"] == [], "the runtime opened and wrote somewhere"
    error: dict[str, Any] = report["error"]
    assert "OctopodaError" in error["types"], error
    return error


def assert_nothing_created(sandbox: Sandbox, tmp_path: Path, expected: set[str]) -> None:
    assert sandbox.files() == [], "fell back to a store under HOME/OCTOPODA_HOME"
    names = {p.name for p in tmp_path.iterdir()} - {sandbox.home.name, sandbox.octopoda_home.name}
    assert names == expected, "files appeared next to the store"


@pytest.mark.parametrize("via", ["argument", "env-url"])
@pytest.mark.parametrize("missing", ["missing-directory", "directory-itself"])
def test_an_unusable_path_raises_config_error_and_creates_nothing(
    via: str, missing: str, tmp_path: Path, launcher: Launcher, sandbox: Sandbox
) -> None:
    if missing == "missing-directory":
        target = tmp_path / "missing_dir" / "x.db"
    else:
        target = tmp_path / "a-directory"
        target.mkdir()
    error = open_store_in_process(launcher, sandbox, target, via)
    assert error["type"] == "ConfigError", error
    assert str(target.parent if missing == "missing-directory" else target) in error["message"]
    assert_nothing_created(
        sandbox, tmp_path, set() if missing == "missing-directory" else {target.name}
    )


@pytest.mark.parametrize("via", ["argument", "env-url"])
@pytest.mark.parametrize("kind", ["text", "random-bytes", "short", "foreign-sqlite"])
def test_a_file_that_is_not_an_octopoda_store_raises_storage_error_untouched(
    via: str, kind: str, tmp_path: Path, launcher: Launcher, sandbox: Sandbox
) -> None:
    target = tmp_path / "not-octopoda.db"
    make_garbage(target, kind)
    before = (target.read_bytes(), target.stat().st_mtime_ns)
    error = open_store_in_process(launcher, sandbox, target, via)
    assert error["type"] == "StorageError", error
    assert str(target) in error["message"], error
    assert (target.read_bytes(), target.stat().st_mtime_ns) == before, "the file was modified"
    assert_nothing_created(sandbox, tmp_path, {target.name})


# --------------------------------------------------------------- 6. the default path


@pytest.mark.parametrize(
    ("variables", "expected"),
    [
        ({"OCTOPODA_HOME": "{tmp}/home", "HOME": "{tmp}/h"}, "home/octopoda.db"),
        ({"HOME": "{tmp}/h"}, "h/.octopoda/octopoda.db"),
        ({"OCTOPODA_HOME": "~/custom", "HOME": "{tmp}/h"}, "h/custom/octopoda.db"),
    ],
    ids=["OCTOPODA_HOME", "HOME", "OCTOPODA_HOME-with-tilde"],
)
def test_without_a_store_argument_the_default_path_is_used(
    variables: dict[str, str], expected: str, tmp_path: Path, launcher: Launcher
) -> None:
    root = tmp_path / "default"
    root.mkdir()
    (root / "h").mkdir()  # HOME exists; every other directory must be created by Octopoda
    env = script_env(**{k: v.format(tmp=root) for k, v in variables.items()})
    target = root / expected
    written = run_ops(
        launcher, "-", [op("remember", "d", "k", {"v": 1}), op("store_url", "d")], env=env
    )["results"]
    assert written[1] == f"sqlite:///{target.resolve()}"
    assert target.is_file(), f"{target} was not created"
    created = {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}
    assert created <= {expected, f"{expected}-wal", f"{expected}-shm"}, created
    recalled = run_ops(launcher, "-", [op("recall", "d", "k")], env=env)["results"][0]
    assert (recalled["value"], recalled["version"]) == ({"v": 1}, 1)
    assert assert_store_sound(target).row("d", "k", 1) == Row("json", {"v": 1}, 1, "d")
