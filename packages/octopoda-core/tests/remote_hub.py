"""A test server holding many stores: ``python remote_hub.py DIR [POSTGRES_URL]`` runs
uvicorn on an ephemeral loopback port (printed as JSON on stdout) and serves, under
``/t/<name>``, the Octopoda app over its own store ``DIR/<name>.db`` (or, given a PostgreSQL
URL, its own schema there), created on first use. The runtime suites run against
``RemoteStore("http://127.0.0.1:PORT/t/<name>")`` with ``--store-backend=remote``: one real
server process for the run, a fresh store per test, as the SQLite and PostgreSQL runs have."""

from __future__ import annotations

import json
import re
import socket
import sys
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any

import uvicorn

from octopoda._server.app import create_app
from octopoda._store.config import open_store

KEEP_OPEN = 4
"""Stores kept open: a test uses its own, so older ones are closed (their files stay)."""
_NAME = re.compile(r"^/t/([A-Za-z0-9_]{1,60})(/.*)$")


class Hub:
    def __init__(self, root: Path, postgres: str | None) -> None:
        self.root = root
        self.postgres = postgres
        self.apps: OrderedDict[str, Any] = OrderedDict()
        self.lock = threading.Lock()

    def app(self, name: str) -> Any:
        with self.lock:
            app = self.apps.get(name)
            if app is None:
                app = self.apps[name] = create_app(self._store(name))
                while len(self.apps) > KEEP_OPEN:  # (each PostgreSQL store holds a pool)
                    _, old = self.apps.popitem(last=False)
                    old.fastapi.state.octopoda.store.close()
            self.apps.move_to_end(name)
            return app

    def _store(self, name: str) -> Any:
        if self.postgres is None:
            return open_store(str(self.root / f"{name}.db"))
        import psycopg

        with psycopg.connect(self.postgres, autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA IF NOT EXISTS {name}")
        return open_store(f"{self.postgres}?options=-csearch_path%3D{name}")

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        match = _NAME.match(scope["path"])
        if match is None:
            await send({"type": "http.response.start", "status": 404, "headers": []})
            await send({"type": "http.response.body", "body": b"no such store"})
            return
        inner = dict(scope, path=match.group(2), raw_path=match.group(2).encode())
        await self.app(match.group(1))(inner, receive, send)


def main() -> None:
    root = Path(sys.argv[1])
    postgres = sys.argv[2] if len(sys.argv) > 2 else None
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.listen(2048)
    config = uvicorn.Config(Hub(root, postgres), log_level="warning", lifespan="off")
    print(json.dumps({"url": f"http://127.0.0.1:{sock.getsockname()[1]}"}), flush=True)
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
