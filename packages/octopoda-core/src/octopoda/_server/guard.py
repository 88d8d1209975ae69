"""The ASGI layer in front of every route: the Host header, the body size and the token.

It runs before FastAPI reads anything, so a refused request costs no parsing: a forged
Host header is 421, a body over the limit 413 (from its Content-Length alone, or as soon
as a chunked body passes the limit), a missing or unknown token 401, a read-only token on
a write 403. The token that was accepted is put in ``scope["octopoda.token"]`` for the
routes' agent and space limits (None: no tokens are configured, everything is allowed).

The API (``/v1``, ``/mcp``) reads the token from the ``Authorization: Bearer`` header only.
The dashboard's pages also take it from a cookie, so a browser can hold it: opening any
dashboard page with ``?token=<token>`` answers with a redirect to the same page without it
and sets the cookie (``HttpOnly``, ``SameSite=Strict``); a wrong token there is 401.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, Final
from urllib.parse import parse_qsl, quote, unquote, urlencode

from .settings import ServerSettings, Token

__all__ = ["TOKEN_COOKIE", "RequestGuard", "is_dashboard", "problem_bytes"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

READ_METHODS: Final = frozenset({"GET", "HEAD", "OPTIONS"})
STORE_READS: Final = frozenset(
    {
        "latest",
        "version",
        "history",
        "current",
        "search",
        "all_versions",
        "events",
        "chain_rows",
        "agent",
        "agents",
        "agent_and_run",
        "run_activity",
        "runs",
        "snapshot",
        "snapshots",
        "space",
        "spaces",
        "conflicts",
        "conflict",
        "messages",
        "message",
        "signed_heads",
        "value_bytes",
        "audited_rows",
        "vector_model",
        "_vector_pending",
        "_vector_search",
    }
)
# A remote store's read snapshot (_server/snapshots.py): reads.
SNAPSHOT_CALLS: Final = frozenset({"snapshot/open", "snapshot/close"})
# The store calls besides commit that write (a read-only token is refused them).
STORE_WRITES: Final = frozenset({"put_signed_head", "reset_vectors", "_vector_apply"})
PUBLIC: Final = frozenset({"/v1/health", "/openapi.json", "/docs"})  # (they hold no data)
TOKEN_COOKIE: Final = "octopoda_token"
"""The cookie the dashboard's pages accept the token from (never the API)."""
API_PREFIXES: Final = ("/v1/", "/mcp")


def is_dashboard(path: str) -> bool:
    """Whether ``path`` is the dashboard's (a page, a fragment, a static file), not the API."""
    return not path.startswith(API_PREFIXES) and path not in PUBLIC


def problem_bytes(status: int, kind: str, detail: str) -> bytes:
    return json.dumps(
        {"type": kind, "title": kind, "status": status, "detail": detail}, ensure_ascii=False
    ).encode("utf-8")


def is_write(method: str, path: str) -> bool:
    if path.startswith("/v1/store/"):
        call = path.removeprefix("/v1/store/")
        return call not in STORE_READS and call not in SNAPSHOT_CALLS
    if method == "POST" and path.endswith(("/search", "/similar")):
        return False
    return method not in READ_METHODS


class RequestGuard:
    """Refuses what must not reach a route (see the module docstring)."""

    def __init__(self, app: App, settings: ServerSettings) -> None:
        self.app = app
        self.settings = settings

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        host = headers.get("host", "")
        if not self.settings.host_allowed(host):
            await _refuse(send, 421, "HostNotAllowed", f"Host {host!r:.80} is not this server")
            return
        dashboard = is_dashboard(scope["path"])
        if (
            dashboard
            and scope["method"] == "GET"
            and self.settings.tokens
            and _query_token(scope) is not None
        ):
            await self._token_login(scope, send)
            return
        header = headers.get("authorization")
        if dashboard and header is None:
            header = _cookie_bearer(headers.get("cookie", ""))
        token, why = self._token(header)
        if why is not None and scope["path"] not in PUBLIC:
            await _refuse(send, 401, "Unauthorized", why, {"www-authenticate": "Bearer"})
            return
        if token is not None and token.scope == "read" and is_write(scope["method"], scope["path"]):
            await _refuse(send, 403, "AccessDenied", "this token is read-only")
            return
        if token is not None and not token.unlimited and scope["path"].startswith("/mcp"):
            await _refuse(
                send,
                403,
                "AccessDenied",
                "a token limited to agents or spaces cannot use /mcp (its tools name any agent);"
                " use a token without agents/spaces limits",
            )
            return
        scope["octopoda.token"] = token
        limit = self.settings.max_body_bytes
        length = headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > limit):
            await _refuse(send, 413, "BodyTooLarge", f"request bodies are limited to {limit} bytes")
            return
        if scope["method"] in READ_METHODS and length is None:
            await self.app(scope, receive, send)
            return
        body = await _read_body(receive, limit)
        if body is None:
            await _refuse(send, 413, "BodyTooLarge", f"request bodies are limited to {limit} bytes")
            return
        await self.app(scope, _replay(body, receive), send)

    async def _token_login(self, scope: Scope, send: Send) -> None:
        """``?token=`` on a dashboard page: the cookie and a redirect without it, or 401."""
        offered = _query_token(scope) or ""
        if not any(t.matches(offered) for t in self.settings.tokens):
            await _refuse(send, 401, "Unauthorized", "the token is not one of this server's tokens")
            return
        query = [
            (k, v)
            for k, v in parse_qsl(scope.get("query_string", b"").decode("latin-1"), True)
            if k != "token"
        ]
        location = quote(scope["path"]) + (f"?{urlencode(query)}" if query else "")
        cookie = f"{TOKEN_COOKIE}={quote(offered)}; Path=/; HttpOnly; SameSite=Strict"
        headers = [
            (b"location", location.encode("latin-1")),
            (b"set-cookie", cookie.encode("latin-1")),
            (b"cache-control", b"no-store"),
            (b"content-length", b"0"),
        ]
        await send({"type": "http.response.start", "status": 303, "headers": headers})
        await send({"type": "http.response.body", "body": b""})

    def _token(self, header: str | None) -> tuple[Token | None, str | None]:
        tokens = self.settings.tokens
        if not tokens:
            return None, None
        if not header or not header.lower().startswith("bearer "):
            return None, "this server needs a bearer token: Authorization: Bearer <token>"
        offered = header[7:].strip()
        for token in tokens:
            if token.matches(offered):
                return token, None
        return None, "the bearer token is not one of this server's tokens"


def _query_token(scope: Scope) -> str | None:
    query: bytes = scope.get("query_string", b"")
    if b"token=" not in query:
        return None
    for k, v in parse_qsl(query.decode("latin-1"), True):
        if k == "token":
            return v
    return None


def _cookie_bearer(cookie_header: str) -> str | None:
    """The dashboard's token cookie as an ``Authorization`` value, or None."""
    for part in cookie_header.split(";"):
        name, _, value = part.strip().partition("=")
        if name == TOKEN_COOKIE and value:
            return f"Bearer {unquote(value)}"
    return None


async def _read_body(receive: Receive, limit: int) -> bytes | None:
    """The whole body, or None as soon as it passes ``limit`` (the rest is never read)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


async def _refuse(
    send: Send, status: int, kind: str, detail: str, extra: dict[str, str] | None = None
) -> None:
    body = problem_bytes(status, kind, detail)
    headers = [
        (b"content-type", b"application/problem+json"),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),
    ]
    headers += [(k.encode(), v.encode()) for k, v in (extra or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
