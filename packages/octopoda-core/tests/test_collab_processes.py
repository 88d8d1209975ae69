"""Working together across real processes on one real file: the acceptance tests of the
multi-agent issue.

Agents live in separate interpreters started with ``sys.executable``: ``procs/collab_worker.py``
runs the runtime methods it is sent on stdin (one JSON line per call, with an optional start
time that works as a barrier), ``procs/collab_counter.py`` increments a shared counter with
compare-and-set as fast as it can. The test process checks the file through the library.
Also runs ``examples/team.py`` twice on a fresh default store.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from octopoda import Octopoda, SqliteStore

TESTS = Path(__file__).parent
PROCS = TESTS / "procs"
EXAMPLE = TESTS.parents[2] / "examples" / "team.py"
TIMEOUT = 60.0  # seconds any helper process may take to answer before the test fails
BARRIER = 0.05  # seconds ahead the start time of a race is set


# -- processes ----------------------------------------------------------------------------------


def script_env(tmp_path: Path) -> dict[str, str]:
    """No OCTOPODA_* from this environment; HOME and OCTOPODA_HOME in the sandbox."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OCTOPODA_")}
    home = tmp_path / "home"
    octopoda_home = tmp_path / "octopoda-home"
    home.mkdir(exist_ok=True)
    octopoda_home.mkdir(exist_ok=True)
    env.update(HOME=str(home), OCTOPODA_HOME=str(octopoda_home))
    return env


class WorkerFailed(AssertionError):
    pass


class Worker:
    """One ``collab_worker.py`` process: call runtime methods of its agents, get the reply."""

    def __init__(self, proc: subprocess.Popen[str], name: str) -> None:
        self.proc = proc
        self.name = name
        self._lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.expect("ready")

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put("")  # end of output

    def _line(self) -> str:
        try:
            line = self._lines.get(timeout=TIMEOUT)
        except queue.Empty:
            line = ""
        if not line:
            self.proc.kill()
            self.proc.wait()
            err = self.proc.stderr.read() if self.proc.stderr else ""
            raise WorkerFailed(
                f"worker {self.name} gave no answer (exit {self.proc.poll()}):\n{err}"
            )
        return line

    def expect(self, text: str) -> None:
        line = self._line().strip()
        assert line == text, f"worker {self.name}: expected {text!r}, got {line!r}"

    def send(self, agent: str, op: str, *args: Any, at: float | None = None, **kwargs: Any) -> None:
        command = {"agent": agent, "op": op, "args": list(args), "kwargs": kwargs}
        if at is not None:
            command["at"] = at
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(command) + "\n")
        self.proc.stdin.flush()

    def reply(self) -> dict[str, Any]:
        return json.loads(self._line())  # type: ignore[no-any-return]

    def call(self, agent: str, op: str, *args: Any, **kwargs: Any) -> dict[str, Any]:
        self.send(agent, op, *args, **kwargs)
        return self.reply()

    def ok(self, agent: str, op: str, *args: Any, **kwargs: Any) -> Any:
        """The result of a call that must succeed."""
        reply = self.call(agent, op, *args, **kwargs)
        assert "error" not in reply, f"{self.name}: {agent}.{op}{args} failed: {reply['error']}"
        return reply["ok"]

    def fails(self, agent: str, op: str, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """The error of a call that must fail."""
        reply = self.call(agent, op, *args, **kwargs)
        assert "error" in reply, f"{self.name}: {agent}.{op}{args} succeeded: {reply['ok']}"
        return reply["error"]  # type: ignore[no-any-return]

    def stop(self) -> None:
        """Exit cleanly (stdin closed), as a restart would."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise
        assert self.proc.returncode == 0, self.proc.stderr.read() if self.proc.stderr else ""


class Launcher:
    """Starts helper processes with ``sys.executable``; none outlives the test."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self._procs: list[subprocess.Popen[str]] = []

    def popen(self, *argv: object) -> subprocess.Popen[str]:
        proc = subprocess.Popen(
            [sys.executable, *(str(a) for a in argv)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=self.env,
        )
        self._procs.append(proc)
        return proc

    def worker(self, store: Path, name: str) -> Worker:
        return Worker(self.popen(PROCS / "collab_worker.py", store), name)

    def reap(self) -> None:
        for proc in self._procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            for stream in (proc.stdin, proc.stdout, proc.stderr):
                if stream is not None and not stream.closed:
                    stream.close()


@pytest.fixture
def launcher(tmp_path: Path) -> Iterator[Launcher]:
    launch = Launcher(script_env(tmp_path))
    yield launch
    launch.reap()


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "team.db"


@pytest.fixture
def pair(launcher: Launcher, db: Path) -> tuple[Worker, Worker]:
    """Two agent processes on one file."""
    return launcher.worker(db, "A"), launcher.worker(db, "B")


@pytest.fixture
def here(db: Path) -> Iterator[Octopoda]:
    """The test process's own view of the file (its own connection)."""
    store = SqliteStore(db)
    yield Octopoda(store=store)
    store.close()


def race(workers: list[tuple[Worker, str, str, tuple[Any, ...], dict[str, Any]]]) -> list[Any]:
    """Send each worker its call with one start time; their replies, in order."""
    at = time.time() + BARRIER
    for worker, agent, op, args, kwargs in workers:
        worker.send(agent, op, *args, at=at, **kwargs)
    return [worker.reply() for worker, *_ in workers]


def overlapped(x: dict[str, Any], y: dict[str, Any]) -> bool:
    return bool(x["started"] < y["finished"] and y["started"] < x["finished"])


def assert_verified(client: Octopoda, *agents: str) -> None:
    for agent in agents:
        report = client.agent(agent).audit.verify()
        assert report.ok, f"{agent}: {report.reason} at #{report.first_bad_seq}"


# -- compare-and-set ----------------------------------------------------------------------------


def test_a_compare_and_set_race_has_exactly_one_winner(
    pair: tuple[Worker, Worker], here: Octopoda
) -> None:
    a, b = pair
    a.ok("alpha", "share", "plan", "initial", space="race")
    # 30 rounds, and more (up to 200) until the two calls overlapped in time at least 3 times:
    # a loaded machine may serialise some rounds, but the barrier must make them race.
    rounds, overlaps, wins = 0, 0, {"alpha": 0, "beta": 0}
    while rounds < 30 or (overlaps < 3 and rounds < 200):
        r, expected = rounds, {"space": "race", "expected_version": rounds + 1}
        seen_a = a.ok("alpha", "read_shared", "plan", space="race")["version"]
        seen_b = b.ok("beta", "read_shared", "plan", space="race")["version"]
        assert seen_a == seen_b == r + 1  # both saw the same head before either wrote
        reply_a, reply_b = race(
            [
                (a, "alpha", "share", ("plan", f"alpha {r}"), expected),
                (b, "beta", "share", ("plan", f"beta {r}"), expected),
            ]
        )
        winners = [(name, x) for name, x in (("alpha", reply_a), ("beta", reply_b)) if "ok" in x]
        assert len(winners) == 1, f"round {r}: {reply_a} / {reply_b}"
        (winner, won), loser = winners[0], (reply_b if winners[0][0] == "alpha" else reply_a)
        assert (won["ok"]["version"], won["ok"]["author"], won["ok"]["conflict_id"]) == (
            r + 2,
            winner,
            None,
        )
        error = loser["error"]
        assert (error["type"], error["expected"], error["actual"]) == (
            "VersionConflict",
            r + 1,
            r + 2,
        )
        wins[winner] += 1
        overlaps += overlapped(reply_a, reply_b)
        rounds += 1
    assert overlaps >= 3, f"the writers overlapped in {overlaps} of {rounds} rounds: no race"

    reader = here.agent("reader")
    history = reader.shared_history("plan", space="race")
    assert len(history) == rounds + 1  # exactly one version per round: the losers wrote nothing
    for version in history[:-1]:
        assert version.value == f"{version.author} {version.version - 2}"
    assert sum(1 for v in history if v.author == "beta") == wins["beta"]
    assert reader.shared_conflicts(space="race", include_resolved=True) == []
    events = {"alpha": wins["alpha"] + 1, "beta": wins["beta"]}  # the losers left no event
    assert {x.id: x.events for x in here.agents()} == {k: n for k, n in events.items() if n}
    assert_verified(here, "alpha", "beta")


def test_concurrent_compare_and_set_increments_lose_no_update(
    launcher: Launcher, db: Path, here: Octopoda
) -> None:
    n = 250
    procs = [
        launcher.popen(PROCS / "collab_counter.py", db, agent, "race", n) for agent in ("p", "q")
    ]
    for proc in procs:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    start = time.time() + 0.2
    results = []
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write(f"go {start}\n")
        proc.stdin.flush()
    for proc in procs:
        out, err = proc.communicate(timeout=TIMEOUT)
        assert proc.returncode == 0, err
        results.append(json.loads(out))

    reader = here.agent("reader")
    current = reader.read_shared("counter", space="race")
    assert (current.value, current.version) == (2 * n, 2 * n)
    history = reader.shared_history("counter", space="race")
    assert [(v.version, v.value) for v in reversed(history)] == [
        (i, i) for i in range(1, 2 * n + 1)
    ]
    claimed = {
        version: agent
        for agent, result in zip(("p", "q"), results, strict=True)
        for version, _ in result["won"]
    }
    assert len(claimed) == 2 * n  # no version acknowledged to both
    assert {v.version: v.author for v in history} == claimed
    assert sum(r["conflicts"] for r in results) > 0, "the processes never collided"
    assert reader.shared_conflicts(space="race", include_resolved=True) == []
    assert_verified(here, "p", "q")


# -- stale writes and conflicts -----------------------------------------------------------------


def make_stale(a: Worker, b: Worker, key: str) -> dict[str, Any]:
    """researcher (A) writes, coder (B) reads and rewrites, researcher writes again without
    having seen it: the stale write's version record."""
    a.ok("researcher", "share", key, f"{key}: base", space="team")
    b.ok("coder", "read_shared", key, space="team")
    b.ok("coder", "share", key, f"{key}: coder", space="team")
    written = a.ok("researcher", "share", key, f"{key}: researcher", space="team")
    assert written["conflict_id"] is not None and written["version"] == 3
    return written  # type: ignore[no-any-return]


def test_a_stale_write_is_recorded_as_a_conflict_and_resolved_across_processes(
    pair: tuple[Worker, Worker], launcher: Launcher, db: Path, here: Octopoda
) -> None:
    a, b = pair
    ids = {key: make_stale(a, b, key)["conflict_id"] for key in ("k_mine", "k_theirs", "k_value")}

    listed = b.ok("coder", "shared_conflicts", space="team")
    assert [c["id"] for c in listed] == list(ids.values())
    first = listed[0]
    assert {k: first[k] for k in ("key", "status", "seen_version")} == {
        "key": "k_mine",
        "status": "open",
        "seen_version": 1,
    }
    assert (first["mine_version"], first["mine_author"], first["mine_value"]) == (
        3,
        "researcher",
        "k_mine: researcher",
    )
    assert (first["theirs_version"], first["theirs_author"], first["theirs_value"]) == (
        2,
        "coder",
        "k_mine: coder",
    )

    # keep="mine" (decided by the other process): already current, nothing written
    assert b.ok("coder", "resolve_conflict", ids["k_mine"], keep="mine") is None
    again = a.fails("researcher", "resolve_conflict", ids["k_mine"], keep="theirs")
    assert (again["type"], "already resolved" in again["message"]) == ("InvalidInput", True)
    # keep="theirs": the replaced value comes back as a new version by the resolver
    theirs = b.ok("coder", "resolve_conflict", ids["k_theirs"], keep="theirs")
    assert (theirs["version"], theirs["author"]) == (4, "coder")
    # an explicit value, decided by the stale writer itself
    merged = {"range": ["low", "high"], "by": "researcher"}
    value = a.ok("researcher", "resolve_conflict", ids["k_value"], keep=merged)
    assert (value["version"], value["author"]) == (4, "researcher")
    assert b.ok("coder", "read_shared", "k_value", space="team")["value"] == merged
    assert b.ok("coder", "shared_conflicts", space="team") == []

    a.stop()
    b.stop()
    later = launcher.worker(db, "C")  # a restart: everything is in the file
    resolved = later.ok("auditor", "shared_conflicts", space="team", include_resolved=True)
    assert [(c["id"], c["resolution"], c["resolved_by"]) for c in resolved] == [
        (ids["k_mine"], "mine", "coder"),
        (ids["k_theirs"], "theirs", "coder"),
        (ids["k_value"], "value", "researcher"),
    ]
    history = {
        key: [
            (v["version"], v["author"], v["value"])
            for v in later.ok("auditor", "shared_history", key, space="team")
        ]
        for key in ids
    }
    assert history["k_mine"] == [
        (3, "researcher", "k_mine: researcher"),
        (2, "coder", "k_mine: coder"),
        (1, "researcher", "k_mine: base"),
    ]
    assert history["k_theirs"][0] == (4, "coder", "k_theirs: coder")
    assert [v[1] for v in history["k_theirs"][1:]] == ["researcher", "coder", "researcher"]
    assert history["k_value"][0] == (4, "researcher", merged)
    assert (
        later.fails("coder", "resolve_conflict", ids["k_value"], keep="mine")["type"]
        == "InvalidInput"
    )

    events = {agent: here.agent(agent).timeline() for agent in ("researcher", "coder")}
    resolutions = {
        (agent, e.payload["conflict_id"], e.payload["keep"])
        for agent, timeline in events.items()
        for e in timeline
        if e.kind == "conflict_resolved"
    }
    assert resolutions == {
        ("coder", ids["k_mine"], "mine"),
        ("coder", ids["k_theirs"], "theirs"),
        ("researcher", ids["k_value"], "value"),
    }
    stale_events = [
        e.payload["writes"][0]["conflict_id"]
        for e in events["researcher"]
        if e.kind == "shared_write" and "conflict_id" in e.payload["writes"][0]
    ]
    assert stale_events == list(ids.values())
    assert_verified(here, "researcher", "coder")


# -- messages -----------------------------------------------------------------------------------


def test_messages_go_both_ways_between_processes_and_survive_a_restart(
    pair: tuple[Worker, Worker], launcher: Launcher, db: Path, here: Octopoda
) -> None:
    a, b = pair
    sent = [
        a.ok("researcher", "send_message", "coder", body, message_type="finding")
        for body in ("market is $2.1B", {"sources": ["x", "y"]}, ["third", 3])
    ]
    inbox = b.ok("coder", "read_messages")
    assert [(m["id"], m["sender"], m["body"], m["read_at"]) for m in inbox] == [
        (m["id"], "researcher", m["body"], None) for m in sent
    ]
    replies = [b.ok("coder", "send_message", "researcher", f"ack {m['id']}") for m in inbox[:2]]
    assert [m["body"] for m in a.ok("researcher", "read_messages")] == [
        f"ack {sent[0]['id']}",
        f"ack {sent[1]['id']}",
    ]
    assert min(r["id"] for r in replies) > max(m["id"] for m in sent)  # one order for all

    b.ok("coder", "mark_read", sent[1]["id"])
    assert [m["id"] for m in b.ok("coder", "read_messages")] == [sent[0]["id"], sent[2]["id"]]
    stolen = a.fails("researcher", "mark_read", sent[0]["id"])  # the coder's message
    assert stolen["type"] == "NotFound"
    assert b.fails("coder", "mark_read", sent[1]["id"])["type"] == "NotFound"  # already read

    a.stop()
    b.stop()
    later = launcher.worker(db, "C")
    everything = later.ok("coder", "read_messages", unread_only=False)
    assert [(m["body"], m["read_at"] is not None) for m in everything] == [
        ("market is $2.1B", False),
        ({"sources": ["x", "y"]}, True),
        (["third", 3], False),
    ]
    assert len(later.ok("researcher", "read_messages")) == 2
    later.ok("coder", "mark_read", sent[0]["id"])
    assert [m["id"] for m in later.ok("coder", "read_messages")] == [sent[2]["id"]]

    coder_events = here.agent("coder").timeline()
    assert [e.kind for e in coder_events] == [
        "message_sent",
        "message_sent",
        "message_read",
        "message_read",
    ]
    assert [e.payload["message_id"] for e in coder_events if e.kind == "message_read"] == [
        sent[1]["id"],
        sent[0]["id"],
    ]
    assert [e.kind for e in here.agent("researcher").timeline()] == ["message_sent"] * 3
    assert_verified(here, "researcher", "coder")


def test_simultaneous_messages_both_ways_all_arrive_in_order(pair: tuple[Worker, Worker]) -> None:
    a, b = pair
    n = 25
    at = time.time() + 0.1
    for i in range(n):
        when = at if i == 0 else None
        a.send("researcher", "send_message", "coder", {"from": "researcher", "i": i}, at=when)
        b.send("coder", "send_message", "researcher", {"from": "coder", "i": i}, at=when)
    replies_a = [a.reply() for _ in range(n)]
    replies_b = [b.reply() for _ in range(n)]
    assert all("ok" in r for r in replies_a + replies_b)
    assert overlapped(
        {"started": replies_a[0]["started"], "finished": replies_a[-1]["finished"]},
        {"started": replies_b[0]["started"], "finished": replies_b[-1]["finished"]},
    )
    for worker, agent, partner in ((a, "researcher", "coder"), (b, "coder", "researcher")):
        inbox = worker.ok(agent, "read_messages", limit=None)
        assert [m["body"] for m in inbox] == [{"from": partner, "i": i} for i in range(n)]
        assert [m["id"] for m in inbox] == sorted(m["id"] for m in inbox)
    ids = [r["ok"]["id"] for r in replies_a + replies_b]
    assert len(set(ids)) == 2 * n


def test_broadcasts_across_processes_with_since(
    pair: tuple[Worker, Worker], launcher: Launcher, db: Path
) -> None:
    a, b = pair
    first = a.ok("researcher", "broadcast", "kickoff", space="team")
    second = b.ok(
        "coder", "broadcast", {"status": "sources in"}, space="team", message_type="status"
    )
    b.ok("coder", "broadcast", "other space", space="elsewhere")
    assert second["created_at"] > first["created_at"]
    reader = launcher.worker(db, "C")
    everything = reader.ok("reviewer", "read_broadcasts", space="team")
    assert [(m["sender"], m["body"]) for m in everything] == [
        ("researcher", "kickoff"),
        ("coder", {"status": "sources in"}),
    ]
    since = reader.ok("reviewer", "read_broadcasts", space="team", since=second["created_at"])
    assert [m["id"] for m in since] == [second["id"]]
    assert (
        reader.ok("reviewer", "read_broadcasts", space="team", since=second["created_at"] + 1) == []
    )
    assert reader.ok("reviewer", "read_messages") == []


# -- membership ---------------------------------------------------------------------------------


def test_membership_is_enforced_across_processes(
    pair: tuple[Worker, Worker], here: Octopoda
) -> None:
    a, b = pair
    a.ok("researcher", "create_space", "secret", members=["coder"])
    a.ok("researcher", "share", "plan", "launch monday", space="secret")
    b.ok("coder", "read_shared", "plan", space="secret")
    b.ok("coder", "share", "plan", "launch tuesday", space="secret")
    a.ok("researcher", "share", "plan", "launch wednesday", space="secret")  # stale: a conflict
    a.ok("researcher", "broadcast", "members only", space="secret")
    (conflict,) = b.ok("coder", "shared_conflicts", space="secret")

    for op, args, kwargs in [
        ("share", ("plan", "sabotage"), {"space": "secret"}),
        ("share", ("plan", "sabotage"), {"space": "secret", "expected_version": 3}),
        ("read_shared", ("plan",), {"space": "secret"}),
        ("shared_history", ("plan",), {"space": "secret"}),
        ("shared_items", (), {"space": "secret"}),
        ("shared_conflicts", (), {"space": "secret"}),
        ("resolve_conflict", (conflict["id"],), {"keep": "mine"}),
        ("broadcast", ("psst",), {"space": "secret"}),
        ("read_broadcasts", (), {"space": "secret"}),
    ]:
        error = b.fails("outsider", op, *args, **kwargs)
        assert error["type"] == "AccessDenied", (op, error)
        assert "PermissionError" in error["types"]
        assert "'outsider' is not a member of space 'secret'" in error["message"], (op, error)
        assert "researcher, coder" in error["message"]

    exists = b.fails("coder", "create_space", "secret")
    assert (exists["type"], "already exists" in exists["message"]) == ("InvalidInput", True)
    assert b.ok("outsider", "share", "plan", "open space", space="team")["version"] == 1

    reader = here.agent("researcher")
    assert [v.author for v in reader.shared_history("plan", space="secret")] == [
        "researcher",
        "coder",
        "researcher",
    ]
    assert here.agent("outsider").timeline()[0].payload["space"] == "team"  # nothing else
    assert len(here.agent("outsider").timeline()) == 1
    assert [s.name for s in here.spaces()] == ["secret"]


def test_two_processes_creating_one_space_at_once_one_wins(
    pair: tuple[Worker, Worker], here: Octopoda
) -> None:
    a, b = pair
    for r in range(5):
        name = f"space-{r}"
        replies = race(
            [
                (a, "researcher", "create_space", (name,), {"members": ["coder"]}),
                (b, "coder", "create_space", (name,), {"members": ["researcher"]}),
            ]
        )
        assert sorted("ok" in x for x in replies) == [False, True], replies
        (lost,) = [x["error"] for x in replies if "error" in x]
        assert lost["type"] == "InvalidInput" and "already exists" in lost["message"]
    assert [s.name for s in here.spaces()] == [f"space-{r}" for r in range(5)]
    assert_verified(here, "researcher", "coder")


# -- loop signals -------------------------------------------------------------------------------


def test_two_processes_bouncing_a_shared_key_is_a_ping_pong(
    pair: tuple[Worker, Worker], here: Octopoda
) -> None:
    a, b = pair
    for _ in range(3):
        a.ok("researcher", "share", "approach", "use library X", space="team")
        b.ok("coder", "share", "approach", "use library Y", space="team")
    assert "ping_pong" in b.ok("coder", "loop_kinds")
    assert "ping_pong" in a.ok("researcher", "loop_kinds")
    (signal,) = [s for s in here.agent("coder").loop_history() if s.kind == "ping_pong"]
    assert "approach" in signal.subject
    assert {e.agent for e in signal.events} >= {"researcher"}  # seen from the other process

    for i in range(4):  # a productive exchange, between two other agents
        a.ok("drafter", "read_shared", "draft", space="team")
        a.ok("drafter", "share", "draft", f"draft {2 * i}", space="team")
        b.ok("editor", "read_shared", "draft", space="team")
        b.ok("editor", "share", "draft", f"draft {2 * i + 1}", space="team")
    assert a.ok("drafter", "loop_kinds") == b.ok("editor", "loop_kinds") == []
    assert here.agent("editor").loop_history() == here.agent("drafter").loop_history() == []


def test_two_processes_repeating_a_message_is_a_ping_pong(
    pair: tuple[Worker, Worker], here: Octopoda
) -> None:
    a, b = pair
    for _ in range(3):
        a.ok("researcher", "send_message", "coder", "please re-run the tests")
        b.ok("coder", "send_message", "researcher", "please re-run the tests")
    assert "ping_pong" in b.ok("coder", "loop_kinds")
    (signal,) = [s for s in here.agent("coder").loop_history() if s.kind == "ping_pong"]
    assert {e.kind for e in signal.events} == {"message_sent"}

    for i in range(4):
        a.ok("asker", "send_message", "answerer", f"question {i}")
        b.ok("answerer", "send_message", "asker", f"answer {i}")
    assert a.ok("asker", "loop_kinds") == b.ok("answerer", "loop_kinds") == []
    assert here.agent("answerer").loop_history() == []
    assert_verified(here, "researcher", "coder", "asker", "answerer")


# -- the example --------------------------------------------------------------------------------


def test_the_team_example_runs_offline_and_again(launcher: Launcher, tmp_path: Path) -> None:
    octopoda_home = Path(launcher.env["OCTOPODA_HOME"])
    outputs = []
    for _ in range(2):
        proc = launcher.popen(EXAMPLE)
        out, err = proc.communicate(timeout=TIMEOUT)
        assert proc.returncode == 0, f"{out}\n{err}"
        outputs.append(out)
    assert [p.name for p in octopoda_home.iterdir() if p.suffix == ".db"] == ["octopoda.db"]
    assert not any((tmp_path / "home").iterdir())  # the default store, not ~/.octopoda
    for out in outputs:
        assert f"store: sqlite:///{octopoda_home.resolve() / 'octopoda.db'}" in out
        assert "conflict #" in out and "resolved by analyst-" in out
        assert "open conflicts left: 0" in out
        assert "v4 by analyst-" in out and "v1 by researcher-" in out
        assert out.count(": verified (") == 2 and "BROKEN" not in out

    with SqliteStore(octopoda_home / "octopoda.db") as store:
        client = Octopoda(store=store)
        agents = [x.id for x in client.agents()]
        assert len(agents) == 4  # two fresh agents per run
        assert all(client.agent(agent).audit.verify().ok for agent in agents)
        assert len(client.spaces()) == 2
