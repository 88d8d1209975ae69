"""The remote store (``store="http://..."``): the store conformance suite against a real
server process (over SQLite and over PostgreSQL), retries that are never applied twice, a
down server, and the quickstart by environment variable alone."""

from __future__ import annotations

import itertools
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("requests")

from octopoda import AgentRuntime, StorageError
from octopoda._store.remote.store import RemoteStore
from octopoda.testing import StoreConformance

ROOT = Path(__file__).resolve().parents[3]
PROCS = Path(__file__).with_name("procs")
_names = itertools.count()


def _fresh(hub: str) -> RemoteStore:
    return RemoteStore(f"{hub}/t/c{os.getpid()}_{next(_names)}")


class TestRemoteStore(StoreConformance):
    @pytest.fixture
    def store(self, remote_hub: str) -> Iterator[RemoteStore]:
        store = _fresh(remote_hub)
        yield store
        store.close()


class TestRemoteStoreOnPostgres(StoreConformance):
    @pytest.fixture
    def store(self, remote_hub_postgres: str) -> Iterator[RemoteStore]:
        store = _fresh(remote_hub_postgres)
        yield store
        store.close()


def test_a_down_server_is_a_storage_error_naming_the_url() -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    store = RemoteStore(f"http://127.0.0.1:{port}", timeout=2)
    with pytest.raises(StorageError, match=rf"http://127.0.0.1:{port} cannot be reached"):
        AgentRuntime("bot", store=store).remember("k", 1)
    store.close()


class _DroppingProxy:
    """A loopback TCP proxy that, once armed, forwards a commit to the server and closes the
    client's connection instead of relaying the answer (a timeout after the server applied
    the write)."""

    def __init__(self, upstream: str) -> None:
        host, port = upstream.removeprefix("http://").split(":")
        self.upstream = (host, int(port.split("/")[0]))
        self.path = "/" + upstream.split("/", 3)[3] if upstream.count("/") > 2 else ""
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.drops = 0
        self.armed = False
        self.threads: list[threading.Thread] = []
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.listener.getsockname()[1]}{self.path}"

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            t = threading.Thread(target=self._serve, args=(client,), daemon=True)
            t.start()
            self.threads.append(t)

    def _serve(self, client: socket.socket) -> None:
        with client, socket.create_connection(self.upstream) as server:
            while True:
                request = _read_http(client)
                if not request:
                    return
                server.sendall(request)
                answer = _read_http(server)
                if self.armed and b"/v1/store/commit" in request.split(b"\r\n", 1)[0]:
                    self.armed = False
                    self.drops += 1
                    return  # the answer is lost
                client.sendall(answer)

    def close(self) -> None:
        self.listener.close()


def _read_http(sock: socket.socket) -> bytes:
    """One HTTP/1.1 message with a Content-Length body (what requests and uvicorn send)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return b""
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(body) < length:
        body += sock.recv(65536)
    return head + b"\r\n\r\n" + body


def test_a_commit_retried_after_a_lost_answer_is_applied_once(remote_hub: str) -> None:
    target = f"{remote_hub}/t/retry{os.getpid()}"
    proxy = _DroppingProxy(target)
    store = RemoteStore(proxy.url, timeout=10)
    agent = AgentRuntime("bot", store=store)
    agent.remember("k", "v1")
    proxy.armed = True
    record = agent.remember("k", "v2")  # the first answer is lost; the retry is recognised
    assert proxy.drops == 1
    assert record.version == 2 and record.seq == 2
    direct = RemoteStore(target)
    check = AgentRuntime("bot", store=direct)
    assert [v.version for v in check.recall_history("k")] == [2, 1]
    assert check.audit.verify().ok and check.audit.head().seq == 2
    direct.close()
    store.close()
    proxy.close()


def test_the_quickstart_runs_against_a_server_by_environment_variable(tmp_path: Path) -> None:
    spec = __import__("importlib.util").util.spec_from_file_location(
        "octopoda_test_serving", Path(__file__).with_name("serving.py")
    )
    serving = __import__("importlib.util").util.module_from_spec(spec)
    spec.loader.exec_module(serving)
    env = {"OCTOPODA_SERVER_TOKEN": serving.TOKEN}
    with serving.running_server("--store", str(tmp_path / "served.db"), env=env) as url:
        script = str(ROOT / "examples" / "quickstart.py")
        run_env = {**os.environ, "OCTOPODA_DATABASE_URL": url, **env}
        run_env["OCTOPODA_HOME"] = str(tmp_path / "unused-home")
        for _ in range(2):
            result = subprocess.run(
                [sys.executable, script], capture_output=True, text=True, env=run_env, timeout=120
            )
            assert result.returncode == 0, result.stderr
        assert f"store: {url}" in result.stdout
        assert "remembered from an earlier run: user_name = 'Alice'" in result.stdout
        assert "audit chain: verified" in result.stdout
        without = {k: v for k, v in run_env.items() if k != "OCTOPODA_SERVER_TOKEN"}
        refused = subprocess.run(
            [sys.executable, script], capture_output=True, text=True, env=without, timeout=120
        )
        assert refused.returncode == 1 and "bearer token" in refused.stderr
    assert not (tmp_path / "unused-home").exists()  # never a local fallback


# ============================================================================ read snapshots


def test_a_server_snapshot_session_reads_one_moment_and_ends_when_idle(tmp_path: Path) -> None:
    from octopoda import NotFound, SqliteStore
    from octopoda._server.snapshots import SnapshotSessions

    path = tmp_path / "s.db"
    writer = AgentRuntime("a", store=path)
    writer.remember("k", 1)
    with SqliteStore(path) as store:
        sessions = SnapshotSessions(store, limit=2, idle=0.5)

        def head(s: Any) -> int:
            return int(s.agent("a").head_seq)

        session = sessions.open()
        seen = sessions.call(session, head)
        writer.remember("k", 2)  # committed meanwhile, by another connection
        assert sessions.call(session, head) == seen  # the session still reads its moment
        assert head(store) == seen + 1  # the server's store is not held back
        other = sessions.open()
        with pytest.raises(StorageError, match="2 read snapshots are open"):
            sessions.open()
        assert sessions.call(other, head) == seen + 1
        assert sessions.close(session) and not sessions.close(session)
        with pytest.raises(NotFound, match="not open"):
            sessions.call(session, head)
        time.sleep(1.0)  # idle past its limit: ended by itself, its slot free again
        with pytest.raises(NotFound, match="not open"):
            sessions.call(other, head)
        third = sessions.open()
        sessions.close_all()
        with pytest.raises(NotFound):
            sessions.call(third, head)
    writer.close()
