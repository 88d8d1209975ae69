"""Shared pieces of the command line: the options every command reuses, and the store.

Every command that reads or writes a store takes the same decorators (sqlite-utils'
``output_options`` is the model)::

    @click.command()
    @store_option      # --store PATH_OR_URL (also accepted before the command name)
    @agent_option      # --agent AGENT, required
    @json_option       # --json: print JSON to stdout
    @pass_state
    def timeline(state: CliState, agent: str, as_json: bool) -> None:
        runtime = state.runtime(agent)
        ...

Errors are :class:`~octopoda.OctopodaError`; :class:`OctopodaGroup` prints their message
on stderr and exits 1, so commands just let them propagate.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, TypeVar

import click

from .._errors import NotFound, OctopodaError
from .._runtime.runtime import AgentRuntime
from .._store.config import default_store_path, is_postgres_url, parse_store_url
from .._store.config import open_store as open_configured_store
from .._store.sqlite.store import SqliteStore
from .._values import validate_agent_id

__all__ = [
    "CliState",
    "OctopodaGroup",
    "StoreLocation",
    "agent_option",
    "describe_source",
    "json_option",
    "locate_store",
    "pass_state",
    "store_option",
]

F = TypeVar("F", bound=Callable[..., Any])

STORE_HELP: Final = (
    "The store: a SQLite path or sqlite:///path URL. Default: $OCTOPODA_DATABASE_URL, else"
    " $OCTOPODA_HOME/octopoda.db, else ~/.octopoda/octopoda.db."
)


class JsonError(click.ClickException):
    """An error of a command run with ``--json``: ``{"error": {"type", "message"}}`` on
    stderr (one line), with the usual exit code (1; 2 for a usage error:
    :class:`JsonUsageError`)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind

    def show(self, file: Any = None) -> None:
        text = json.dumps({"error": {"type": self.kind, "message": self.message}})
        if file is None:
            click.echo(text, err=True)
        else:
            click.echo(text, file=file)


class JsonUsageError(JsonError):
    exit_code = 2


class OctopodaGroup(click.Group):
    """The root group: an :class:`~octopoda.OctopodaError` from any command becomes
    ``Error: <message>`` on stderr and exit code 1, never a traceback; with ``--json``
    anywhere on the command line, every error is JSON on stderr (:class:`JsonError`)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta["octopoda.json"] = "--json" in args
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        as_json = ctx.meta.get("octopoda.json", False)
        try:
            return super().invoke(ctx)
        except OctopodaError as exc:
            if as_json:
                raise JsonError(type(exc).__name__, str(exc)) from None
            raise click.ClickException(str(exc)) from None
        except click.ClickException as exc:
            if not as_json or isinstance(exc, JsonError):
                raise
            error = JsonUsageError if exc.exit_code == 2 else JsonError
            raise error(type(exc).__name__, exc.format_message()) from None


def describe_source(source: str) -> str:
    """``from --store``, ``from OCTOPODA_HOME``, ..., or ``the default location``."""
    return "the default location" if source == "default" else f"from {source}"


@dataclass(frozen=True)
class StoreLocation:
    """Where a store is, and which setting named it."""

    path: str
    source: str  # "--store", "OCTOPODA_DATABASE_URL", "OCTOPODA_HOME" or "default"
    create_dirs: bool = False

    @property
    def origin(self) -> str:
        return describe_source(self.source)

    @property
    def exists(self) -> bool:
        return self.path == ":memory:" or Path(self.path).expanduser().exists()


def locate_store(spec: str | None) -> StoreLocation:
    """Resolve ``--store`` the way ``AgentRuntime(store=None)`` does (see ``_config``)."""
    if spec is not None:
        return StoreLocation(parse_store_url(spec), "--store")
    url = os.environ.get("OCTOPODA_DATABASE_URL")
    if url:
        return StoreLocation(parse_store_url(url), "OCTOPODA_DATABASE_URL")
    source = "OCTOPODA_HOME" if os.environ.get("OCTOPODA_HOME") else "default"
    return StoreLocation(str(default_store_path()), source, create_dirs=True)


@dataclass
class CliState:
    """What the options collected: the ``--store`` given, if any."""

    store: str | None = None

    def location(self) -> StoreLocation:
        return locate_store(self.store)

    def store_is_url(self) -> bool:
        """Whether the store is a PostgreSQL URL (not a file)."""
        spec = self.store if self.store is not None else os.environ.get("OCTOPODA_DATABASE_URL")
        return bool(spec and is_postgres_url(spec))

    def open_store(self, *, create: bool = False) -> Any:
        """Open the store for this command; it closes when the command ends.

        Without ``create``, a store file that does not exist is an error rather than a new
        empty file (a mistyped ``--store`` must not look like an empty store). A
        ``postgresql://`` URL opens the PostgreSQL store (``[postgres]`` extra).
        """
        spec = self.store if self.store is not None else os.environ.get("OCTOPODA_DATABASE_URL")
        if spec and is_postgres_url(spec):
            return open_configured_store(spec)
        where = self.location()
        if not create and not where.exists:
            raise NotFound(
                f"there is no Octopoda store at {where.path} ({where.origin});"
                " check --store or OCTOPODA_DATABASE_URL, or write a memory first with"
                " `octopoda memory put`"
            )
        store = SqliteStore(where.path, create_dirs=where.create_dirs)
        click.get_current_context().call_on_close(store.close)
        return store

    def runtime(self, agent: str, *, create: bool = False) -> AgentRuntime:
        """An :class:`~octopoda.AgentRuntime` for ``agent``.

        Without ``create``, the agent must already have written something: reading an
        unknown agent is an error, so a typo in ``--agent`` is not an empty memory.
        """
        validate_agent_id(agent)
        store = self.open_store(create=create)
        if not create and store.agent(agent) is None:
            where = getattr(store, "path", store.url)
            raise NotFound(
                f"there is no agent {agent!r} in {where}; list the agents with `octopoda agents`"
            )
        return AgentRuntime(agent, store=store)


def _remember_store(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    state = ctx.ensure_object(CliState)
    if value is not None:  # a --store after the command name wins over one before it
        state.store = value


def store_option(fn: F) -> F:
    """``--store PATH_OR_URL``: on the root group and on every command that opens a store."""
    return click.option(
        "--store",
        metavar="PATH_OR_URL",
        expose_value=False,
        callback=_remember_store,
        help=STORE_HELP,
    )(fn)


def agent_option(fn: F) -> F:
    """``--agent AGENT`` (``-a``), required: the agent whose memory a command uses."""
    return click.option(
        "--agent",
        "-a",
        "agent",
        required=True,
        metavar="AGENT",
        help="The agent id whose memory to use.",
    )(fn)


def json_option(fn: F) -> F:
    """``--json``: print JSON to stdout instead of text (passed as ``as_json``)."""
    return click.option(
        "--json",
        "as_json",
        is_flag=True,
        help='Print JSON to stdout (times as Unix seconds, bytes as {"$bytes": base64}).',
    )(fn)


pass_state = click.make_pass_decorator(CliState, ensure=True)
