"""Start ``octopoda serve`` as a real process on an ephemeral loopback port (tests only)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

TOKEN = "t0ken-for-the-tests-0123456789"


def serve_args(*args: str) -> list[str]:
    return [sys.executable, "-m", "octopoda", "serve", "--port", "0", "--json", *args]


@contextmanager
def running_server(*args: str, env: dict[str, str] | None = None) -> Iterator[str]:
    """The URL of an ``octopoda serve`` process, stopped (SIGTERM) afterwards."""
    full_env = {**os.environ, **(env or {})}
    proc = subprocess.Popen(
        serve_args(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=full_env
    )
    assert proc.stdout is not None and proc.stderr is not None
    try:
        line = proc.stdout.readline()
        if not line:
            proc.wait(10)
            raise AssertionError(f"octopoda serve did not start: {proc.stderr.read()}")
        yield str(json.loads(line)["url"])
    finally:
        proc.terminate()
        proc.wait(10)
        proc.stdout.close()
        proc.stderr.close()


def refused(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``octopoda serve`` expecting it to refuse to start."""
    return subprocess.run(
        serve_args(*args),
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
        check=False,
    )


def session(token: str | None = None) -> Any:
    import requests

    s = requests.Session()
    s.trust_env = False
    if token:
        s.headers["Authorization"] = f"Bearer {token}"
    return s
