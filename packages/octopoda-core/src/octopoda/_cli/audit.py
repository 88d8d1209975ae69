"""``octopoda audit verify|export|verify-bundle``, ``octopoda timeline`` and ``octopoda diff``."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from .._audit.trail import ChainHead, VerifyReport, verify_audit_bundle
from .._errors import InvalidBundle
from .options import CliState, agent_option, json_option, pass_state, store_option
from .output import count, iso_time, preview, table, text_cell, to_json

__all__ = ["audit", "diff", "timeline"]


def _head_option(fn: Any) -> Any:
    return click.option(
        "--expected-head",
        metavar="SEQ:HASH",
        help="A head kept elsewhere (from `audit verify`); the chain must still contain it.",
    )(fn)


def _parse_head(text: str | None) -> ChainHead | None:
    if text is None:
        return None
    seq, _, digest = text.partition(":")
    if not (seq.isascii() and seq.isdigit()) or len(digest) != 64:
        raise click.BadParameter("write the head as SEQ:HASH (64 hex characters)")
    return ChainHead(int(seq), digest)


def _report_line(report: VerifyReport) -> str:
    if report.ok:
        return (
            f"{report.agent}: ok, {count(report.checked, 'event')} verified,"
            f" head {report.head.seq}:{report.head.hash}"
        )
    return f"{report.agent}: BROKEN at seq {report.first_bad_seq}: {report.reason}"


def _finish(reports: list[VerifyReport], as_json: bool) -> None:
    if as_json:
        click.echo(to_json([r.to_dict() for r in reports]))
    else:
        for report in reports:
            click.echo(_report_line(report))
    if not all(r.ok for r in reports):
        sys.exit(1)


@click.group()
def audit() -> None:
    """Verify, export and check agents' hash-chained audit trails."""


@audit.command("verify")
@store_option
@click.option(
    "--agent",
    "-a",
    "agents",
    multiple=True,
    metavar="AGENT",
    help="An agent to verify (repeatable). Default: every agent in the store.",
)
@_head_option
@click.option(
    "--no-memories",
    is_flag=True,
    help="Check only the chain, not that memory rows match their events.",
)
@json_option
@pass_state
def verify_command(
    state: CliState,
    agents: tuple[str, ...],
    expected_head: str | None,
    no_memories: bool,
    as_json: bool,
) -> None:
    """Recompute every hash of each agent's chain and compare it with the stored head.

    Exits 1 when any chain is broken, naming the first bad seq and why.
    """
    head = _parse_head(expected_head)
    if head is not None and len(agents) != 1:
        raise click.UsageError("--expected-head needs exactly one --agent")
    store = state.open_store()
    names = list(agents) or [row.id for row in store.agents()]
    reports = [
        state.runtime(name).audit.verify(expected_head=head, check_memories=not no_memories)
        for name in names
    ]
    _finish(reports, as_json)


@audit.command("export")
@store_option
@agent_option
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True), default="-")
@json_option
@pass_state
def export_command(state: CliState, agent: str, file: str, as_json: bool) -> None:
    """Write AGENT's events and head as a self-contained bundle (to FILE, or stdout)."""
    bundle = state.runtime(agent).audit.export()
    text = json.dumps(bundle, ensure_ascii=False, indent=1)
    if file == "-":
        click.echo(text)
        return
    Path(file).write_text(text + "\n", encoding="utf-8")
    summary = {
        "agent": agent,
        "file": file,
        "events": len(bundle["events"]),
        "head": bundle["head"],
    }
    click.echo(
        to_json(summary) if as_json else f"wrote {count(len(bundle['events']), 'event')} to {file}"
    )


@audit.command("verify-bundle")
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True))
@_head_option
@json_option
def verify_bundle_command(file: str, expected_head: str | None, as_json: bool) -> None:
    """Check an exported audit bundle offline, without any database. Exits 1 if broken."""
    try:
        text = sys.stdin.read() if file == "-" else Path(file).read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidBundle(f"cannot read {file}: {exc.strerror}") from None
    _finish([verify_audit_bundle(text, _parse_head(expected_head))], as_json)


@click.command()
@store_option
@agent_option
@click.option("--since", type=float, metavar="SECONDS", help="From this Unix time on.")
@click.option("--until", type=float, metavar="SECONDS", help="Before this Unix time.")
@click.option(
    "--kind",
    "kinds",
    multiple=True,
    metavar="KIND",
    help="Only events of this kind (repeatable): remember, forget, decision, ...",
)
@click.option("--limit", type=click.IntRange(min=0), metavar="N", help="At most N events.")
@json_option
@pass_state
def timeline(
    state: CliState,
    agent: str,
    since: float | None,
    until: float | None,
    kinds: tuple[str, ...],
    limit: int | None,
    as_json: bool,
) -> None:
    """List AGENT's events in order: what it did, when, and each event's hash."""
    events = state.runtime(agent).timeline(since=since, until=until, kinds=kinds, limit=limit)
    if as_json:
        click.echo(to_json([e.to_dict() for e in events]))
        return
    rows = [
        [str(e.seq), iso_time(e.time), e.kind, text_cell(_summary(e.payload)), e.hash[:12]]
        for e in events
    ]
    click.echo(table(["seq", "time", "kind", "what", "hash"], rows) or "no events")


def _summary(payload: dict[str, Any]) -> str:
    writes = payload.get("writes")
    if isinstance(writes, list) and writes:
        keys = ", ".join(f"{w['key']} v{w['version']}" for w in writes[:3])
        return keys + (f" (+{len(writes) - 3})" if len(writes) > 3 else "")
    if "decision" in payload:
        return str(payload["decision"])
    return preview({k: v for k, v in payload.items() if k != "writes"})


@click.command()
@store_option
@agent_option
@click.argument("from_seq", type=click.IntRange(min=0))
@click.argument("to_seq", type=click.IntRange(min=0), required=False)
@json_option
@pass_state
def diff(state: CliState, agent: str, from_seq: int, to_seq: int | None, as_json: bool) -> None:
    """Keys added, changed and removed between event FROM_SEQ and TO_SEQ (default: now)."""
    changes = state.runtime(agent).diff(from_seq, to_seq)
    if as_json:
        click.echo(
            to_json(
                {
                    "from_seq": changes.from_seq,
                    "to_seq": changes.to_seq,
                    "added": changes.added,
                    "changed": {k: {"from": a, "to": b} for k, (a, b) in changes.changed.items()},
                    "removed": changes.removed,
                }
            )
        )
        return
    rows = [["+", text_cell(k), preview(v)] for k, v in changes.added.items()]
    rows += [
        ["~", text_cell(k), f"{preview(a, 28)} -> {preview(b, 28)}"]
        for k, (a, b) in changes.changed.items()
    ]
    rows += [["-", text_cell(k), preview(v)] for k, v in changes.removed.items()]
    click.echo(
        table([], rows)
        if rows
        else f"no changes between seq {changes.from_seq} and {changes.to_seq}"
    )
