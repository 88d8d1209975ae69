"""RemoteStore: the store protocol against an Octopoda server (``octopoda serve``).

``AgentRuntime(store="http://127.0.0.1:7842")`` (or ``OCTOPODA_DATABASE_URL=http://...``,
with ``OCTOPODA_SERVER_TOKEN``) opens one. Reads are one HTTP request each
(``POST /v1/store/<read>``). A commit takes two:

1. ``/v1/store/prepare``: the server plans the commit inside a transaction of its own store
   (the planner's rules, with its errors), stamps the event (seq, prev_hash, the versions
   and ids in its payload) and rolls back;
2. the events pipeline runs here, in the agent's process, on the stamped event (the loop
   detectors, the user's processors, the audit chainer), exactly as it does on a local store;
3. ``/v1/store/commit``: the server commits again, checking that the plan is still the one
   stamped (else the head moved: back to 1) and that the chain hash is the one computed here.

Each commit carries an idempotency key, and the server recognises a commit already applied
(its event, hash and all, is in the chain): a commit retried after a timeout is never applied
twice. A server that cannot be reached raises :class:`~octopoda.StorageError` naming the URL;
there is never a local fallback.
"""

from __future__ import annotations

import contextlib
import copy
import os
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Final

from ..._audit.signing import SignedHead
from ..._errors import ConfigError, StorageError
from ..._records import Event
from ..ops import MemoryWrite, Op
from ..rows import (
    AgentRow,
    AuditedRows,
    ConflictRow,
    MessageRow,
    RunActivityRow,
    RunRow,
    SnapshotRow,
    SpaceRow,
    StoredRow,
)
from ..vector_reads import PendingVectors, VectorModel, VectorReads
from .codec import decode, decode_error, encode

__all__ = ["MOVED", "RemoteStore", "is_http_url"]

MOVED: Final = "HeadMoved"
"""The problem type of a commit whose plan no longer holds (the client plans again)."""

TOKEN_ENV: Final = "OCTOPODA_SERVER_TOKEN"
_ATTEMPTS: Final = 3  # a request that timed out or lost its connection is sent again


def is_http_url(url: str) -> bool:
    scheme, sep, _ = url.partition("://")
    return bool(sep) and scheme.lower() in ("http", "https")


def _requests() -> Any:
    try:
        import requests
    except ImportError:
        raise ConfigError(
            "an http:// store needs the remote extra: pip install 'octopoda-core[remote]'"
        ) from None
    return requests


class RemoteStore(VectorReads):
    """A store served by ``octopoda serve`` at ``url`` (``http://host:port``).

    ``token``: the bearer token (default ``$OCTOPODA_SERVER_TOKEN``); ``timeout``: seconds
    to connect and to wait for each answer.
    """

    def __init__(self, url: str, *, token: str | None = None, timeout: float = 30.0) -> None:
        if not is_http_url(url):
            raise ConfigError(f"{url!r} is not an http:// or https:// URL of an Octopoda server")
        requests = _requests()
        self._url = url.rstrip("/")
        self._timeout = timeout
        self._session = requests.Session()
        self._session.trust_env = False  # (no proxy settings: the URL is where it goes)
        token = token if token is not None else os.environ.get(TOKEN_ENV)
        if token:
            self._session.headers["Authorization"] = f"Bearer {token}"
        self._errors = (requests.ConnectionError, requests.Timeout)
        self._lock = threading.Lock()
        self._snapshot = threading.local()  # read_snapshot's session, per thread
        self.closed = False

    @property
    def url(self) -> str:
        return self._url

    def __repr__(self) -> str:
        return f"RemoteStore({self._url!r})"

    # -- transport ----------------------------------------------------------------------------

    def _post(self, path: str, body: dict[str, Any], headers: dict[str, str] | None = None) -> Any:
        if self.closed:
            raise StorageError(f"the remote store {self._url} is closed")
        target = f"{self._url}/v1/store/{path}"
        last: Exception | None = None
        for _ in range(_ATTEMPTS):
            try:
                response = self._session.post(
                    target, json=body, timeout=self._timeout, headers=headers
                )
                break
            except self._errors as exc:
                last = exc
        else:
            raise StorageError(
                f"the Octopoda server at {self._url} cannot be reached ({type(last).__name__}:"
                f" {last}); start it with `octopoda serve` or fix the URL"
            ) from None
        try:
            data = response.json()
        except ValueError:
            data = None
        if response.status_code == 200 and isinstance(data, dict) and "result" in data:
            return decode(data["result"])
        fallback = f"the Octopoda server at {self._url} answered {response.status_code} to {path}"
        if isinstance(data, dict):
            if data.get("type") == MOVED:
                raise _HeadMoved
            raise decode_error(data, f"{fallback}: {data.get('detail', '')}")
        raise StorageError(fallback)

    def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        body = {"args": encode(list(args)), "kwargs": encode(kwargs)}
        session = getattr(self._snapshot, "id", None)
        if session is not None:
            body["snapshot"] = session
        return self._post(method, body)

    @contextlib.contextmanager
    def read_snapshot(self) -> Iterator[None]:
        """Every read of this thread inside the block sees one snapshot of the server's
        store (a session the server holds for it: ``_server/snapshots.py``), as a local
        store's ``read_snapshot`` does; nested blocks share the outer one."""
        if getattr(self._snapshot, "id", None) is not None:
            yield
            return
        session = self._post("snapshot/open", {})
        self._snapshot.id = session
        try:
            yield
        finally:
            self._snapshot.id = None
            with contextlib.suppress(StorageError):  # (it ends by itself when idle)
                self._post("snapshot/close", {"snapshot": session})

    # -- the write ----------------------------------------------------------------------------

    def commit(
        self,
        event: Event,
        writes: Sequence[MemoryWrite],
        pipeline: Callable[[Event], Event],
        *,
        snapshot: str | None = None,
        replace_snapshot: bool = False,
        status: tuple[str, str | None] | None = None,
        ops: Sequence[Op] = (),
        expected_seq: int | None = None,
    ) -> tuple[Event, list[int]]:
        request = {
            "event": Event(event.agent, event.kind, copy.deepcopy(event.payload), event.time),
            "writes": list(writes),
            "snapshot": snapshot,
            "replace_snapshot": replace_snapshot,
            "status": status,
            "ops": list(ops),
            "expected_seq": expected_seq,
        }
        original = copy.deepcopy(event.payload)
        key = uuid.uuid4().hex
        for _ in range(50):
            stamped: Event = self._post("prepare", {"request": encode(request)})
            event.seq, event.prev_hash = stamped.seq, stamped.prev_hash
            event.payload = stamped.payload
            expect = {
                "seq": stamped.seq,
                "prev_hash": stamped.prev_hash,
                "payload": stamped.payload,
            }
            expect = copy.deepcopy(expect)
            final = pipeline(event)
            body = {
                "request": encode(request),
                "expect": encode(expect),
                "final": encode({"payload": final.payload, "hash": final.hash}),
            }
            try:
                stored, versions = self._post("commit", body, {"Idempotency-Key": key})
            except _HeadMoved:
                event.payload = copy.deepcopy(original)
                key = uuid.uuid4().hex
                continue
            final.payload, final.hash = stored.payload, stored.hash  # (ids the server gave)
            final.payload_text = stored.payload_text
            return final, list(versions)
        raise StorageError(
            f"agent {event.agent!r} kept changing on the server at {self._url}; try again"
        )

    # -- reads --------------------------------------------------------------------------------

    def latest(self, namespace: str, key: str, as_of_seq: int | None = None) -> StoredRow | None:
        return self._call("latest", namespace, key, as_of_seq)  # type: ignore[no-any-return]

    def version(self, namespace: str, key: str, version: int) -> StoredRow | None:
        return self._call("version", namespace, key, version)  # type: ignore[no-any-return]

    def history(self, namespace: str, key: str, limit: int | None = None) -> list[StoredRow]:
        return self._call("history", namespace, key, limit)  # type: ignore[no-any-return]

    def current(self, namespace: str, **kwargs: Any) -> list[StoredRow]:
        return self._call("current", namespace, **_filters(kwargs))  # type: ignore[no-any-return]

    def search(
        self, namespace: str, terms: Sequence[str], **kwargs: Any
    ) -> list[tuple[StoredRow, float]]:
        found = self._call("search", namespace, list(terms), **_filters(kwargs))
        return found  # type: ignore[no-any-return]

    def all_versions(self, namespace: str) -> Iterator[StoredRow]:
        return iter(self._call("all_versions", namespace))

    def events(self, agent: str, **kwargs: Any) -> Iterator[Event]:
        if "kinds" in kwargs:
            kwargs["kinds"] = list(kwargs["kinds"])
        return iter(self._call("events", agent, **kwargs))

    def chain_rows(self, agent: str, after_seq: int = 0) -> Iterator[tuple[Any, ...]]:
        return iter(self._call("chain_rows", agent, after_seq))

    def agent(self, agent: str) -> AgentRow | None:
        return self._call("agent", agent)  # type: ignore[no-any-return]

    def agents(self) -> list[AgentRow]:
        return self._call("agents")  # type: ignore[no-any-return]

    def agent_and_run(self, agent: str, run_id: str) -> tuple[AgentRow | None, RunRow | None]:
        return self._call("agent_and_run", agent, run_id)  # type: ignore[no-any-return]

    def run_activity(self, agent: str, run_id: str) -> RunActivityRow | None:
        return self._call("run_activity", agent, run_id)  # type: ignore[no-any-return]

    def runs(
        self, agent: str, *, status: str | None = None, limit: int | None = None
    ) -> list[RunActivityRow]:
        return self._call("runs", agent, status=status, limit=limit)  # type: ignore[no-any-return]

    def snapshot(self, agent: str, name: str) -> SnapshotRow | None:
        return self._call("snapshot", agent, name)  # type: ignore[no-any-return]

    def snapshots(self, agent: str) -> list[SnapshotRow]:
        return self._call("snapshots", agent)  # type: ignore[no-any-return]

    def space(self, name: str) -> SpaceRow | None:
        return self._call("space", name)  # type: ignore[no-any-return]

    def spaces(self) -> list[SpaceRow]:
        return self._call("spaces")  # type: ignore[no-any-return]

    def conflicts(
        self, namespace: str, *, key: str | None = None, status: str | None = "open"
    ) -> list[ConflictRow]:
        return self._call("conflicts", namespace, key=key, status=status)  # type: ignore[no-any-return]

    def conflict(self, conflict_id: int) -> ConflictRow | None:
        return self._call("conflict", conflict_id)  # type: ignore[no-any-return]

    def messages(self, **kwargs: Any) -> list[MessageRow]:
        return self._call("messages", **kwargs)  # type: ignore[no-any-return]

    def message(self, message_id: int) -> MessageRow | None:
        return self._call("message", message_id)  # type: ignore[no-any-return]

    def put_signed_head(self, head: SignedHead) -> None:
        self._call("put_signed_head", head)

    def signed_heads(self, agent: str) -> list[SignedHead]:
        return self._call("signed_heads", agent)  # type: ignore[no-any-return]

    def value_bytes(self, namespace: str) -> int:
        return int(self._call("value_bytes", namespace))

    def audited_rows(self, agent: str) -> AuditedRows:
        rows: AuditedRows = self._call("audited_rows", agent)  # (its messages as a list)
        return rows._replace(messages=iter(rows.messages))

    # -- vectors: VectorReads runs here (the embedder is this process's); its hooks are the
    # server store's -----------------------------------------------------------------------

    def vector_model(self) -> VectorModel | None:
        return self._call("vector_model")  # type: ignore[no-any-return]

    def reset_vectors(self) -> None:
        self._call("reset_vectors")

    def _vector_pending(self) -> list[PendingVectors]:
        return self._call("_vector_pending")  # type: ignore[no-any-return]

    def _vector_apply(
        self,
        model: VectorModel,
        pending: PendingVectors | None,
        puts: list[tuple[str, str, int, list[float]]],
    ) -> None:
        self._call("_vector_apply", model, pending, puts)

    def _vector_search(
        self,
        namespace: str,
        query: list[float],
        model: VectorModel,
        prefix: str,
        tags: Sequence[str],
        now: float | None,
        limit: int,
        kinds: Sequence[str] = (),
    ) -> list[tuple[StoredRow, float]]:
        args = (namespace, query, model, prefix, list(tags), now, limit)
        if kinds:  # (only then: a server without kinds still answers the others)
            return self._call("_vector_search", *args, list(kinds))  # type: ignore[no-any-return]
        return self._call("_vector_search", *args)  # type: ignore[no-any-return]

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._session.close()


def _filters(kwargs: dict[str, Any]) -> dict[str, Any]:
    """A read's keyword arguments as sent: ``kinds`` only when it filters (a server of an
    Octopoda without kinds still answers every other read)."""
    if "kinds" in kwargs:
        kinds = kwargs.pop("kinds")
        if kinds:
            kwargs["kinds"] = list(kinds)
    return kwargs


class _HeadMoved(Exception):
    """The server's head moved between prepare and commit (internal: planned again)."""
