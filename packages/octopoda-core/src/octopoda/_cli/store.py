"""``octopoda version``, ``octopoda doctor`` and ``octopoda agents``: the install and the store."""

from __future__ import annotations

import importlib.util
import os
import platform
import sqlite3
from typing import Any, Final

import click

from .._errors import ConfigError, OctopodaError
from .._store.config import is_postgres_url, is_server_url
from .._store.sqlite.store import SqliteStore
from .._version import __version__
from .checks import integrations_report, server_report, sqlite_access
from .options import (
    CliState,
    describe_source,
    json_option,
    locate_store,
    pass_state,
    store_option,
)
from .output import iso_time, record, table, text_cell, to_json

__all__ = ["agents", "doctor", "version"]

DISTRIBUTION: Final = "octopoda-core"
# (extra, the module it installs): found with importlib.util.find_spec, never imported.
EXTRAS: Final = (("cli", "click"), ("sign", "cryptography"), ("postgres", "psycopg"))


def _versions() -> dict[str, str]:
    return {
        "octopoda": __version__,
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
    }


@click.command("version")
@json_option
def version(as_json: bool) -> None:
    """Show the versions of Octopoda, Python and SQLite."""
    versions = _versions()
    if as_json:
        click.echo(to_json(versions))
    else:
        click.echo(table([], [[name, value] for name, value in versions.items()]))


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _declared_extras() -> set[str] | None:
    """The extras this distribution offers, or None when its metadata is not installed."""
    from importlib.metadata import PackageNotFoundError, metadata

    try:
        return set(metadata(DISTRIBUTION).get_all("Provides-Extra") or ())
    except PackageNotFoundError:
        return None


def _extras() -> dict[str, dict[str, Any]]:
    declared = _declared_extras()
    return {
        extra: {
            "module": module,
            "installed": _installed(module),
            "install": (
                f"pip install '{DISTRIBUTION}[{extra}]'"
                if declared is None or extra in declared
                else None
            ),
        }
        for extra, module in EXTRAS
    }


def _postgres_access(url: str) -> tuple[bool, str | None, str]:
    """Whether the PostgreSQL store exists yet (found without creating it), None when its
    user may write it (else why not), and its URL without a password: one connection."""
    try:
        from .._store.postgres.driver import redact_url, store_access
    except ImportError:
        raise ConfigError(
            "a postgresql:// store needs the postgres extra: pip install 'octopoda-core[postgres]'"
        ) from None
    exists, denied = store_access(url)
    return exists, denied, redact_url(url)


def _postgres_report(state: CliState, spec: str) -> tuple[dict[str, Any], list[str]]:
    """What doctor says about a PostgreSQL store, and the problems found."""
    source = "--store" if state.store is not None else "OCTOPODA_DATABASE_URL"
    report: dict[str, Any] = {"source": source, "path": None, "exists": True}
    try:
        report["exists"], denied, report["url"] = _postgres_access(spec)
        report["writable"] = denied is None
        if denied is not None:
            report["error"] = denied
            return report, [denied]
        if not report["exists"]:  # not a problem: the tables are created on the first write
            return report, []
        _inspect(state.open_store(), report)
    except OctopodaError as exc:
        report["error"] = str(exc)
        return report, [str(exc)]
    if report["integrity_check"] != ["ok"]:
        found = "; ".join(report["integrity_check"][:5])
        return report, [f"the PostgreSQL store is not sound: {found}"]
    return report, []


def _inspect(store: Any, report: dict[str, Any]) -> None:
    """What doctor reads from an open store (either backend) into ``report``."""
    report.update(store.info())
    report["agents"] = len(store.agents())
    report["integrity_check"] = store.integrity_check()


def _store_report(state: CliState) -> tuple[dict[str, Any], list[str]]:
    """What doctor says about the store, and the problems found."""
    spec = state.store if state.store is not None else os.environ.get("OCTOPODA_DATABASE_URL")
    if spec and is_postgres_url(spec):
        return _postgres_report(state, spec)
    if spec and is_server_url(spec):
        server, problems = server_report(spec)
        source = "--store" if state.store is not None else "OCTOPODA_DATABASE_URL"
        return {"source": source, "path": None, "exists": True, **server}, problems
    try:
        where = locate_store(state.store)
    except OctopodaError as exc:
        source = "--store" if state.store is not None else "OCTOPODA_DATABASE_URL"
        return {"source": source, "error": str(exc)}, [str(exc)]
    report: dict[str, Any] = {"source": where.source, "path": where.path, "exists": where.exists}
    denied = sqlite_access(where.path)
    report["writable"] = denied is None
    if denied is not None:
        report["error"] = f"the store cannot be written: {denied}"
        return report, [report["error"]]
    if not where.exists:  # not a problem: the store is created on the first write
        return report, []
    try:
        with SqliteStore(where.path) as store:
            _inspect(store, report)
    except OctopodaError as exc:
        report["error"] = str(exc)
        return report, [str(exc)]
    if report["integrity_check"] != ["ok"]:
        found = "; ".join(report["integrity_check"][:5])
        return report, [
            f"PRAGMA integrity_check found damage in {where.path}: {found}; restore it from a"
            " backup or export what still reads"
        ]
    return report, []


def _integration_rows(integrations: list[dict[str, Any]]) -> list[list[str]]:
    rows = [["integrations", "" if integrations else "none installed"]]
    for row in integrations:
        framework = f"{row['framework']} {row['version'] or '(not installed)'}"
        if row["state"] == "ready":
            what = f"{framework}: instrumented by octopoda.init() ({row['adapter']})"
        elif row["state"] in ("no adapter", "absent"):
            what = f"{framework}: {row['detail']}"
        else:
            what = f"{framework}: {row['state']}: {row['detail']}"
        rows.append([f"  {row['integration']}", what])
    return rows


def _doctor_text(report: dict[str, Any]) -> str:
    store = report["store"]
    rows = [[name, report[name]] for name in ("octopoda", "python", "sqlite")]
    place = store.get("path") or store.get("url", "-")
    rows.append(["store", f"{place} ({describe_source(store['source'])})"])
    if store.get("backend") == "server":
        rows.append(["  server", f"Octopoda {store.get('server_version') or '?'}"])
        if "agents" in store:
            rows.append(["  agents", str(store["agents"])])
    if "writable" in store:
        rows.append(["  writable", "yes" if store["writable"] else "no"])
    if "error" in store:
        rows.append(["  error", store["error"]])
    elif store.get("backend") == "server":
        pass
    elif not store["exists"]:
        rows.append(["  exists", "no (it is created on the first write)"])
    else:
        migrations = ", ".join(store["migrations"]) or "none"
        rows += [
            ["  url", store["url"]],
            ["  schema", f"version {store['schema_version']} (migrations: {migrations})"],
        ]
        if store["backend"] == "postgresql":
            rows += [
                ["  server", store["server_version"]],
                ["  database", f"{store['database']} (schema {store['schema']})"],
            ]
        else:
            rows += [
                ["  journal mode", store["journal_mode"]],
                ["  durability", store["durability"]],
            ]
        rows += [
            ["  size", f"{store['size_bytes']} bytes"],
            ["  agents", str(store["agents"])],
            ["  integrity", "; ".join(store["integrity_check"][:5])],
        ]
    legacy = report["predecessor"]["data"]
    if legacy is not None:
        rows.append(["octopoda 3.3.4 data", f"{legacy}: bring it in with `octopoda migrate`"])
    rows += _integration_rows(report["integrations"])
    rows.append(["extras", ""])
    for extra, info in report["extras"].items():
        if info["installed"]:
            status = "installed"
        elif info["install"]:
            status = f"not installed: {info['install']}"
        else:
            status = f"not installed (not offered by {DISTRIBUTION} {__version__})"
        rows.append([f"  {extra}", f"{info['module']}: {status}"])
    return table([], [[name, str(value)] for name, value in rows])


def _predecessor() -> dict[str, Any]:
    """Octopoda 3.3.4's database where 3.3.4 would look for it, if there is one."""
    from .._migrate.legacy import find_legacy_database

    path = find_legacy_database(None, dict(os.environ))
    return {"data": str(path) if path is not None and path.is_file() else None}


@click.command("doctor")
@store_option
@json_option
@pass_state
def doctor(state: CliState, as_json: bool) -> None:
    """Check the installation and the store.

    Shows the versions, which store is used (and why), whether it can be written, its
    schema, journal mode, durability, size and PRAGMA integrity_check (or, for an
    http:// server, whether it answers), the frameworks octopoda.init() would instrument,
    and which optional extras are installed. Exits 1 when the store cannot be opened,
    written or is damaged, or an installed framework's version is not supported.
    """
    store, problems = _store_report(state)
    integrations, notes = integrations_report()
    problems += [note for note in notes if note.endswith("it is not instrumented")]
    report = {
        **_versions(),
        "store": store,
        "integrations": integrations,
        "notes": notes,
        "extras": _extras(),
        "predecessor": _predecessor(),
        "problems": problems,
        "ok": not problems,
    }
    click.echo(to_json(report) if as_json else _doctor_text(report))
    if problems:
        for problem in problems:
            click.echo(f"Error: {problem}", err=True)
        click.get_current_context().exit(1)


@click.command("agents")
@store_option
@json_option
@pass_state
def agents(state: CliState, as_json: bool) -> None:
    """List the agents in the store, with their event count and last activity."""
    store = state.open_store()
    rows = store.agents()
    if as_json:
        click.echo(to_json([record(row) for row in rows]))
        return
    if not rows:
        click.echo(f"no agents in {getattr(store, 'path', store.url)}")
        return
    lines = [
        [
            text_cell(r.id),
            r.status,
            str(r.head_seq),
            iso_time(r.created_at),
            iso_time(r.last_active),
        ]
        for r in rows
    ]
    click.echo(table(["AGENT", "STATUS", "EVENTS", "CREATED", "LAST ACTIVE"], lines))
