"""``octopoda migrate``: bring an Octopoda 3.3.4 database or export bundle into the store."""

from __future__ import annotations

import json
import os
from pathlib import Path

import click

from .._errors import InvalidBundle, NotFound
from .._migrate.importer import MigrationReport, migrate
from .._migrate.legacy import (
    LegacyData,
    find_legacy_database,
    is_legacy_bundle,
    read_legacy_bundle,
    read_legacy_database,
)
from .options import CliState, json_option, pass_state, store_option
from .output import to_json

__all__ = ["migrate_command"]


def load_legacy(path: Path | None, agent: str | None = None) -> LegacyData:
    """A 3.3.4 database (a file or its data directory) or an export bundle (JSON)."""
    target = find_legacy_database(path, dict(os.environ))
    assert target is not None
    if not target.is_file():
        raise NotFound(
            f"no Octopoda 3.3.4 data at {target}; pass --from with its synrix.db, its data"
            " directory ($SYNRIX_DATA_DIR) or an export_memories() JSON file"
        )
    with target.open("rb") as fh:
        head = fh.read(16)
    if head.startswith(b"SQLite format 3"):
        return read_legacy_database(target)
    try:
        bundle = json.loads(target.read_bytes())
    except ValueError as exc:
        raise InvalidBundle(
            f"{target} is neither a 3.3.4 database nor a JSON export bundle: {exc}"
        ) from None
    if not is_legacy_bundle(bundle):
        raise InvalidBundle(
            f"{target} is not a 3.3.4 export bundle (no 'meta' and 'memories' objects);"
            " a bundle from our `octopoda export` is imported with `octopoda import`"
        )
    return read_legacy_bundle(bundle, str(target), agent)


def _text(report: MigrationReport) -> str:
    verb = "would import" if report.dry_run else "imported"
    lines = [f"{report.kind} {report.source}:"]
    if report.imported == 0 and report.already_imported:
        lines.append(f"  nothing to import: all {report.already_imported} records already imported")
    for a in report.agents:
        parts = [
            f"{a.versions} versions of {a.memories} keys",
            f"{a.shared_versions} shared versions",
            f"{a.goal_versions} goal versions",
            f"{a.decisions} decisions",
            f"{a.messages} messages",
        ]
        if not any((a.versions, a.shared_versions, a.goal_versions, a.decisions, a.messages)):
            lines.append(f"  {a.agent}: nothing new ({a.already_imported} already imported)")
            continue
        line = f"  {a.agent}: {verb} " + ", ".join(parts)
        if a.already_imported:
            line += f"; {a.already_imported} already imported"
        if a.events:
            line += f" (events {', '.join(map(str, a.events))})"
        lines.append(line)
    if report.skipped:
        lines.append(f"  skipped {len(report.skipped)}:")
        lines.extend(f"    {s.name}: {s.reason}" for s in report.skipped)
    return "\n".join(lines)


@click.command("migrate")
@store_option
@click.option(
    "--from",
    "source",
    type=click.Path(path_type=Path),
    default=None,
    help="3.3.4's synrix.db, its data directory, or an export_memories() JSON file. Default:"
    " $OCTOPODA_DATA_DIR, $SYNRIX_DATA_DIR, else ~/.synrix/data.",
)
@click.option("--agent", default=None, help="For a bundle: import into this agent.")
@click.option("--dry-run", is_flag=True, help="Report what would be imported; write nothing.")
@json_option
@pass_state
def migrate_command(
    state: CliState, source: Path | None, agent: str | None, dry_run: bool, as_json: bool
) -> None:
    """Import Octopoda 3.3.4's data: every agent's memories with their versions and times,
    shared values with their authors, goals, decisions and messages.

    Each agent's import is one audited event naming the source. Run it again and nothing
    is imported twice (versions, decisions and messages already here are skipped).
    """
    data = load_legacy(source, agent)
    if dry_run and not state.location().exists and not state.store_is_url():
        from .._store.sqlite.store import SqliteStore

        store = SqliteStore(":memory:")  # nothing there yet: everything would be imported
        click.get_current_context().call_on_close(store.close)
    else:
        store = state.open_store(create=not dry_run)
    report = migrate(store, data, dry_run=dry_run)
    click.echo(to_json(report.to_dict()) if as_json else _text(report))
