"""``octopoda serve``: the HTTP JSON API over a store (the ``server`` extra)."""

from __future__ import annotations

import os

import click

from .._errors import ConfigError
from .options import json_option, store_option

__all__ = ["serve"]


@click.command("serve")
@store_option
@click.option("--host", default="127.0.0.1", show_default=True, help="The address to bind.")
@click.option("--port", default=7842, show_default=True, type=int, help="0: any free port.")
@click.option("--token", default=None, help="A read-write bearer token (or OCTOPODA_SERVER_TOKEN).")
@click.option(
    "--token-file",
    default=None,
    type=click.Path(dir_okay=False),
    help="A JSON list of tokens with scopes and limits (or OCTOPODA_SERVER_TOKEN_FILE).",
)
@click.option(
    "--allowed-host", "allowed_hosts", multiple=True, help="Another Host header to accept."
)
@click.option("--cors-origin", "cors_origins", multiple=True, help="An origin CORS allows.")
@click.option("--log-level", default="warning", show_default=True, help="uvicorn's log level.")
@json_option
@click.pass_context
def serve(
    ctx: click.Context,
    host: str,
    port: int,
    token: str | None,
    token_file: str | None,
    allowed_hosts: tuple[str, ...],
    cors_origins: tuple[str, ...],
    log_level: str,
    as_json: bool,
) -> None:
    """Serve the dashboard (at /), the JSON API (/v1, /docs, /openapi.json) over the store
    until interrupted.

    With no arguments: the default store (OCTOPODA_DATABASE_URL, else ~/.octopoda) on
    127.0.0.1:7842. Binds 127.0.0.1 by default; any other address needs a token (a browser
    opens the dashboard once with /?token=<token>, kept in a cookie). Says where it listens
    and the dashboard's URL on stderr (with --json also the URL as a JSON line on stdout).
    """
    from .._server.settings import ServerSettings, require_server_extra

    require_server_extra()
    settings = ServerSettings.from_options(
        host=host,
        port=port,
        token=token,
        token_file=token_file,
        allowed_hosts=allowed_hosts,
        cors_origins=cors_origins,
    )
    from .._server.app import serve as run_server
    from .._store.config import open_store
    from .options import CliState

    spec = ctx.ensure_object(CliState).store
    spec = spec if spec is not None else os.environ.get("OCTOPODA_DATABASE_URL")
    if spec and spec.partition("://")[0].lower() in ("http", "https"):
        raise ConfigError("octopoda serve needs a database (a path or postgresql://), not a server")
    store = open_store(spec)
    try:
        run_server(store, settings, log_level=log_level, announce_json=as_json)
    finally:
        store.close()
