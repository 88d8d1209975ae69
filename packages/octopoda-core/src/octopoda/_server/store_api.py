"""The store protocol over HTTP, for :class:`~octopoda._store.remote.store.RemoteStore`:
``POST /v1/store/<read>`` and the two-step commit (``prepare``, ``commit``; see the remote
store's docstring). Not in the OpenAPI document: it is the remote store's wire, whose bodies
are the tagged JSON of :mod:`octopoda._store.remote.codec`."""

from __future__ import annotations

import copy
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from .._audit.chain import chain_event
from .._errors import AccessDenied, InvalidInput, OctopodaError
from .._records import Event
from .._store.remote.codec import decode, encode
from .._store.remote.store import MOVED
from .guard import STORE_READS, STORE_WRITES
from .state import ServerState, state_of, token_of

__all__ = ["router"]

router = APIRouter(prefix="/v1/store", include_in_schema=False)


class _Prepared(Exception):
    """Raised by the capturing pipeline: the plan is taken, the transaction rolls back."""

    def __init__(self, event: Event) -> None:
        self.event = event


class _Moved(Exception):
    pass


async def _body(request: Request) -> dict[str, Any]:
    token = token_of(request)
    if token is not None and not token.unlimited:
        raise AccessDenied(
            "the store API (a remote store) needs a token without agent or space limits"
        )
    try:
        body = await request.json()
    except ValueError:
        raise InvalidInput("the body is not JSON") from None
    if not isinstance(body, dict):
        raise InvalidInput("the body must be a JSON object")
    return body


def _result(value: Any) -> JSONResponse:
    return JSONResponse({"result": encode(value)})


def _request(body: dict[str, Any]) -> tuple[Event, list[Any], dict[str, Any]]:
    request = decode(body.get("request"))
    if not isinstance(request, dict) or not isinstance(request.get("event"), Event):
        raise InvalidInput("a commit request needs its event")
    event = request.pop("event")
    writes = request.pop("writes", [])
    return event, writes, request


@router.post("/prepare")
async def prepare(request: Request) -> JSONResponse:
    body = await _body(request)
    event, writes, options = _request(body)
    state = state_of(request)

    def capture(stamped: Event) -> Event:
        raise _Prepared(copy.deepcopy(stamped))

    def run() -> Event:
        try:
            state.store.commit(event, writes, capture, **options)
        except _Prepared as done:
            return done.event
        raise InvalidInput("the store committed without running the pipeline")

    return _result(await _thread(run))


def _applied(state: ServerState, agent: str, seq: int, hash_hex: str) -> Any:
    """The (event, versions) of a commit already in the chain at ``seq`` with ``hash_hex``."""
    for stored in state.store.events(agent, after_seq=seq - 1, limit=1):
        if stored.seq == seq and stored.hash == hash_hex:
            versions = [w["version"] for w in stored.payload.get("writes", ())]
            return stored, versions
    return None


@router.post("/commit")
async def commit(request: Request) -> JSONResponse:
    body = await _body(request)
    event, writes, options = _request(body)
    expect = decode(body.get("expect"))
    final = decode(body.get("final"))
    if not isinstance(expect, dict) or not isinstance(final, dict):
        raise InvalidInput("a commit needs the stamped plan and the final event")
    state = state_of(request)

    def replay(planned: Event) -> Event:
        if planned.seq != expect["seq"] or planned.prev_hash != expect["prev_hash"]:
            raise _Moved
        ids = _id_changes(expect["payload"], planned.payload, ())
        if ids is None:
            raise _Moved
        planned.payload = final["payload"]
        for path, value in ids:  # ids a store hands out anew (PostgreSQL sequences)
            _set(planned.payload, path, value)
        chain_event(planned)
        if not ids and planned.hash != final["hash"]:
            raise InvalidInput("the event's hash is not the one the client computed")
        return planned

    key = request.headers.get("idempotency-key", "")

    def run() -> Any:
        with state.idempotency(key) as remembered:
            if remembered:
                return remembered[0]
            done = apply()
            remembered.append(done)
            return done

    def apply() -> Any:
        done = _applied(state, event.agent, expect["seq"], final["hash"])
        if done is not None:  # a retry of a commit that was applied
            return done
        try:
            return state.store.commit(event, writes, replay, **options)
        except _Moved:
            done = _applied(state, event.agent, expect["seq"], final["hash"])
            if done is not None:
                return done
            raise

    try:
        return _result(await _thread(run))
    except _Moved:
        detail = "the agent's head moved between prepare and commit; prepare again"
        return JSONResponse({"type": MOVED, "status": 409, "detail": detail}, status_code=409)


def _id_changes(
    expected: Any, planned: Any, path: tuple[Any, ...]
) -> list[tuple[tuple[Any, ...], Any]] | None:
    """Where ``planned`` differs from ``expected`` only in ids (``id``/``*_id`` integers a
    store hands out anew on each attempt): those paths and values; None for any other
    difference (the plan changed)."""
    if type(expected) is not type(planned):
        return None
    if isinstance(expected, dict):
        if expected.keys() != planned.keys():
            return None
        out: list[tuple[tuple[Any, ...], Any]] = []
        for k, v in expected.items():
            w = planned[k]
            if v != w and type(v) is int and type(w) is int and (k == "id" or k.endswith("_id")):
                out.append(((*path, k), w))
                continue
            if v != w and k.endswith("_ids") and _int_lists(v, w):
                out.append(((*path, k), w))
                continue
            found = _id_changes(v, w, (*path, k))
            if found is None:
                return None
            out += found
        return out
    if isinstance(expected, (list, tuple)):
        if len(expected) != len(planned):
            return None
        out = []
        for i, (v, w) in enumerate(zip(expected, planned, strict=True)):
            found = _id_changes(v, w, (*path, i))
            if found is None:
                return None
            out += found
        return out
    return [] if expected == planned else None


def _int_lists(a: Any, b: Any) -> bool:
    """Whether ``a`` and ``b`` are lists of ints of one length (ids handed out anew)."""
    return (
        type(a) is list
        and type(b) is list
        and len(a) == len(b)
        and all(type(x) is int for x in (*a, *b))
    )


def _set(payload: Any, path: tuple[Any, ...], value: Any) -> None:
    for step in path[:-1]:
        payload = payload[step]
    payload[path[-1]] = value


@router.post("/snapshot/open")
async def snapshot_open(request: Request) -> JSONResponse:
    """A read snapshot of the server's store for the reads that name it (``snapshots.py``)."""
    await _body(request)
    return _result(await _thread(state_of(request).snapshots.open))


@router.post("/snapshot/close")
async def snapshot_close(request: Request) -> JSONResponse:
    body = await _body(request)
    session = body.get("snapshot")
    if not isinstance(session, str):
        raise InvalidInput("closing a read snapshot needs its id")
    return _result(state_of(request).snapshots.close(session))


@router.post("/{method}")
async def read(request: Request, method: str) -> JSONResponse:
    body = await _body(request)
    if method not in STORE_READS and method not in STORE_WRITES:
        raise InvalidInput(f"{method!r} is not a store read")
    args = decode(body.get("args", []))
    kwargs = decode(body.get("kwargs", {}))
    if not isinstance(args, list) or not isinstance(kwargs, dict):
        raise InvalidInput("a store call needs args (a list) and kwargs (an object)")
    state = state_of(request)

    def run(store: Any) -> Any:
        result = getattr(store, method)(*args, **kwargs)
        if method in ("events", "all_versions", "chain_rows"):
            result = list(result)
        elif method == "audited_rows":
            result = result._replace(messages=list(result.messages))
        return result

    session = body.get("snapshot")
    if session is None or method in STORE_WRITES:  # (a snapshot is for reads)
        return _result(await _thread(lambda: run(state.store)))
    if not isinstance(session, str):
        raise InvalidInput("a read snapshot's id is a str")
    return _result(await _thread(lambda: state.snapshots.call(session, run)))


async def _thread(func: Any) -> Any:
    from starlette.concurrency import run_in_threadpool

    try:
        return await run_in_threadpool(func)
    except OctopodaError:
        raise
