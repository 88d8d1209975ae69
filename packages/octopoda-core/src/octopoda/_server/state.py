"""What the routes share: the store, one runtime per agent (each behind a lock: a runtime's
loop state is not shared between threads), the token limits, and ``jsonable``."""

from __future__ import annotations

import base64
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from fastapi import Request

from .._errors import AccessDenied
from .._runtime.client import Octopoda
from .._runtime.runtime import AgentRuntime
from .._store.protocol import Store
from .settings import ServerSettings, Token
from .snapshots import SnapshotSessions

__all__ = ["ServerState", "allow", "jsonable", "state_of"]


class ServerState:
    def __init__(self, store: Store, settings: ServerSettings) -> None:
        self.store = store
        self.settings = settings
        self.client = Octopoda(store)
        self._locks: dict[str, threading.RLock] = {}
        self._lock = threading.Lock()
        self._done: OrderedDict[str, tuple[threading.Lock, list[Any]]] = OrderedDict()
        self.snapshots = SnapshotSessions(store)  # (remote stores' read_snapshot)

    @contextmanager
    def agent(self, agent_id: str) -> Iterator[AgentRuntime]:
        """The agent's runtime, held for one request."""
        with self._lock:
            lock = self._locks.setdefault(agent_id, threading.RLock())
        with lock:
            yield self.client.agent(agent_id)

    @contextmanager
    def idempotency(self, key: str) -> Iterator[list[Any]]:
        """The result of the commit with idempotency key ``key`` (a list: empty until one
        is appended), one request per key at a time; the last 10,000 keys are kept."""
        if not key:
            yield []
            return
        with self._lock:
            entry = self._done.get(key)
            if entry is None:
                entry = self._done[key] = (threading.Lock(), [])
                while len(self._done) > 10_000:
                    self._done.popitem(last=False)
        with entry[0]:
            yield entry[1]

    def close(self) -> None:
        self.snapshots.close_all()
        self.client.close()


def state_of(request: Request) -> ServerState:
    state: ServerState = request.app.state.octopoda
    return state


def token_of(request: Request) -> Token | None:
    token: Token | None = request.scope.get("octopoda.token")
    return token


def allow(request: Request, *, agent: str | None = None, space: str | None = None) -> None:
    """Refuse (AccessDenied) an agent or space the request's token is not limited to."""
    token = token_of(request)
    if token is None:
        return
    if agent is not None and not token.may_agent(agent):
        raise AccessDenied(f"this token may not act on agent {agent!r}")
    if space is not None and not token.may_space(space):
        raise AccessDenied(f"this token may not use space {space!r}")


def jsonable(x: Any) -> Any:
    """Results (named tuples, records with ``to_dict``, bytes) as JSON data."""
    if x is None or type(x) in (str, int, float, bool):
        return x
    to_dict = getattr(x, "to_dict", None)
    if callable(to_dict):
        return jsonable(to_dict())
    if isinstance(x, tuple) and hasattr(x, "_asdict"):
        return {k: jsonable(v) for k, v in x._asdict().items()}
    if isinstance(x, (list, tuple, set, frozenset)):
        return [jsonable(v) for v in x]
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (bytes, bytearray)):
        return {"base64": base64.b64encode(bytes(x)).decode("ascii")}
    if hasattr(x, "__slots__") or hasattr(x, "__dict__"):
        names = getattr(x, "__slots__", None) or vars(x)
        return {n: jsonable(getattr(x, n)) for n in names if not n.startswith("_")}
    return str(x)
