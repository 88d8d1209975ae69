"""Drive ``loop_agent.py`` processes from a test (imported by path by the loop tests).

Each :class:`AgentProcess` is one agent runtime in a fresh interpreter (``sys.executable``)
on a shared store file; ``call`` sends one command and returns its JSON answer. A watchdog
kills a process that does not answer within ``timeout`` seconds, so a hung child fails the
test instead of hanging it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

SCRIPT = Path(__file__).with_name("loop_agent.py")
TIMEOUT = 60.0


def child_env() -> dict[str, str]:
    """This environment without OCTOPODA_* variables (the store is always passed)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("OCTOPODA_")}


class AgentProcess:
    def __init__(
        self,
        store: Path,
        agent: str,
        policy: dict[str, Any] | None = None,
        *,
        timeout: float = TIMEOUT,
    ) -> None:
        args = [sys.executable, str(SCRIPT), str(store), agent]
        if policy is not None:
            args.append(json.dumps(policy))
        self.agent = agent
        self.timeout = timeout
        self.proc = subprocess.Popen(
            args,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=child_env(),
        )
        ready = self._read()
        assert ready == {"ready": True}, ready

    def _read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        watchdog = threading.Timer(self.timeout, self.proc.kill)
        watchdog.start()
        try:
            line = self.proc.stdout.readline()
        finally:
            watchdog.cancel()
        if not line:
            self.proc.wait()
            err = self.proc.stderr.read() if self.proc.stderr else ""
            raise AssertionError(
                f"{self.agent} process ended (exit {self.proc.returncode}):\n{err}"
            )
        answer: dict[str, Any] = json.loads(line)
        return answer

    def call(self, op: str, **fields: Any) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"op": op, **fields}) + "\n")
        self.proc.stdin.flush()
        return self._read()

    def close(self) -> str:
        """Ask the process to quit; its stderr (a clean run writes only log lines)."""
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            try:
                self.proc.stdin.write('{"op": "quit"}\n')
                self.proc.stdin.flush()
            except OSError:
                pass
        try:
            _, err = self.proc.communicate(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate()
        return err

    def __enter__(self) -> AgentProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
