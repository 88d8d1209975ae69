"""``create_app``: the FastAPI application over a store; ``serve``: run it with uvicorn."""

from __future__ import annotations

import json
import socket
import sys
from typing import Any

from fastapi import FastAPI
from fastapi.responses import HTMLResponse

from .._store.protocol import Store
from .._version import __version__
from . import agents, collab, events, store_api
from .docs_page import DOCS_HTML
from .guard import RequestGuard
from .models import PROBLEMS
from .problems import install_handlers
from .settings import ServerSettings
from .state import ServerState

__all__ = ["create_app", "serve"]


def create_app(store: Store, settings: ServerSettings | None = None) -> Any:
    """The ASGI application serving ``store`` (the request guard in front of FastAPI)."""
    settings = settings or ServerSettings()
    settings.check()
    app = FastAPI(
        title="Octopoda",
        version=__version__,
        description="Versioned memory, loop detection and a hash-chained audit trail for AI"
        " agents. Errors are problem bodies: `type` is the OctopodaError class.",
        docs_url=None,  # (FastAPI's pages load assets from a CDN; /docs is ours)
        redoc_url=None,
    )
    app.state.octopoda = ServerState(store, settings)

    install_handlers(app)

    @app.get("/v1/health", tags=["server"])
    def health() -> dict[str, Any]:
        """Liveness (needs no token)."""
        return {"ok": True, "version": __version__}

    @app.get("/docs", include_in_schema=False)
    def docs() -> HTMLResponse:
        return HTMLResponse(DOCS_HTML)

    app.include_router(agents.router, responses=PROBLEMS)
    app.include_router(collab.router, responses=PROBLEMS)
    app.include_router(events.router, responses=PROBLEMS)
    app.include_router(store_api.router)
    _install_dashboard(app)
    _mount_mcp(app, store)
    asgi: Any = app
    if settings.cors_origins:
        from starlette.middleware.cors import CORSMiddleware

        asgi = CORSMiddleware(
            asgi,
            allow_origins=list(settings.cors_origins),
            allow_methods=["*"],
            allow_headers=["Authorization", "Content-Type", "Idempotency-Key"],
        )
    guarded = RequestGuard(asgi, settings)
    guarded.fastapi = app  # type: ignore[attr-defined]
    return guarded


def _install_dashboard(app: Any) -> None:
    """The dashboard at ``/`` (``octopoda._dashboard``) when Jinja2 is installed (it comes
    with the ``server`` extra); without it ``/`` says what to install."""
    import importlib.util

    if importlib.util.find_spec("jinja2") is None:

        def no_dashboard() -> HTMLResponse:
            return HTMLResponse(
                "<p>The dashboard needs Jinja2: pip install 'octopoda-core[server]'</p>",
                status_code=501,
            )

        app.add_api_route("/", no_dashboard, include_in_schema=False)
        return
    from .._dashboard import install

    install(app, app.state.octopoda)


def _mount_mcp(app: Any, store: Store) -> None:
    """The MCP tools over streamable HTTP at ``/mcp`` when the ``mcp`` extra is installed,
    behind the same guard (tokens, Host, body size) as the API; its session manager runs in
    the app's lifespan. The server's Host check stands in for the SDK's own."""
    import importlib.util

    if importlib.util.find_spec("mcp") is None:
        return
    from contextlib import asynccontextmanager

    from mcp.server.transport_security import TransportSecuritySettings

    from .._mcp.server import streamable_http_app

    mcp_app = streamable_http_app(
        store,
        path="/",
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        close_store=False,  # (the server's store: closed by the server)
    )
    app.mount("/mcp", mcp_app)
    inner = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(a: Any) -> Any:
        async with inner(a), mcp_app.router.lifespan_context(mcp_app):
            yield

    app.router.lifespan_context = lifespan


def serve(
    store: Store,
    settings: ServerSettings,
    *,
    log_level: str = "warning",
    announce_json: bool = False,
) -> None:
    """Serve until interrupted; says where on stderr (the port, when 0 asked for any)."""
    import uvicorn

    app = create_app(store, settings)
    family = socket.AF_INET6 if ":" in settings.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((settings.host, settings.port))
    except OSError as exc:
        sock.close()
        from .._errors import ConfigError

        raise ConfigError(f"cannot listen on {settings.host}:{settings.port}: {exc}") from None
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.listen(2048)  # (connections wait in the backlog until uvicorn accepts them)
    port = sock.getsockname()[1]
    host = f"[{settings.host}]" if ":" in settings.host else settings.host
    config = uvicorn.Config(
        app, log_level=log_level, access_log=False, timeout_graceful_shutdown=5, lifespan="on"
    )
    server = uvicorn.Server(config)
    url = f"http://{host}:{port}"
    print(f"octopoda serve: listening on {url} (store {store.url})", file=sys.stderr, flush=True)
    login = "/?token=<your token>" if settings.tokens else "/"
    print(f"octopoda serve: dashboard at {url}{login}", file=sys.stderr, flush=True)
    if announce_json:
        print(json.dumps({"url": url, "store": store.url}), flush=True)
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
        app.fastapi.state.octopoda.close()
