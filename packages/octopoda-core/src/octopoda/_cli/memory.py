"""``octopoda memory put|get|history|list|search|forget|erase``, ``octopoda export|import``
and ``octopoda reindex``."""

from __future__ import annotations

import json
import math
import shlex
import sys
import time
from pathlib import Path
from typing import Any, Literal, cast

import click

from .._errors import ConfigError, InvalidBundle, InvalidInput, InvalidValue, NotFound
from .._runtime.runtime import AgentRuntime
from .._search.embedders import embedder_from_env, resolve_embedder
from .._values import validate_reason
from .options import CliState, agent_option, json_option, pass_state, store_option
from .output import count, iso_time, preview, record, table, text_cell, to_json, version_state

__all__ = ["export_command", "import_command", "memory", "parse_value", "reindex_command"]


class _NotJsonNumber(Exception):
    """A number JSON has no form for (NaN, Infinity, 1e999) in a value's text."""


def _reject_constant(name: str) -> Any:
    raise _NotJsonNumber(name)


def _finite(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise _NotJsonNumber(text)
    return number


def parse_value(text: str, *, raw: bool = False) -> Any:
    """``text`` parsed as JSON when it is valid JSON, else ``text`` itself.

    JSON text holding ``NaN``, ``Infinity`` or a number too large for a float (which
    Python's JSON reader would accept) is refused with :class:`InvalidValue` (``--raw``
    stores it as a string); ``NaN`` or ``Infinity`` alone is the word, a string.
    """
    if raw or text.strip() in ("NaN", "Infinity", "-Infinity"):  # a word, not a number
        return text
    try:
        return json.loads(text, parse_constant=_reject_constant, parse_float=_finite)
    except _NotJsonNumber as exc:
        raise InvalidValue(
            f"VALUE holds the number {exc}, which JSON has no form for; write it as a"
            " string ('\"NaN\"') or pass --raw to store the whole text as a string"
        ) from None
    except (ValueError, RecursionError):
        return text


def read_value_argument(value: str) -> str:
    """VALUE as given, or the whole of stdin for ``-`` (so large values need no argv)."""
    if value != "-":
        return value
    stream = getattr(sys.stdin, "buffer", None)
    data = stream.read() if stream is not None else sys.stdin.read().encode("utf-8")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidValue("stdin is not UTF-8 text; store bytes through the Python API") from None


def _absence(runtime: AgentRuntime, key: str, version: int | None = None) -> str:
    """Why ``key`` (or one of its versions) has no value, in words."""
    agent = runtime.agent_id
    history = runtime.recall_history(key)
    if not history:
        return (
            f"agent {agent!r} has no key {key!r}; list its keys with"
            f" `octopoda memory list --agent {shlex.quote(agent)}`"
        )
    item = history[0]
    if version is not None:
        match = [v for v in history if v.version == version]
        if not match:
            return (
                f"key {key!r} of agent {agent!r} has no version {version};"
                f" its versions are 1 to {item.version}"
            )
        item = match[0]
    state = version_state(item, time.time())
    what = f"version {item.version} of key {key!r} of agent {agent!r}"
    if state == "forgotten":
        return f"{what} is a tombstone: the key was forgotten; see `octopoda memory history`"
    if state == "expired":
        return f"{what} expired at {iso_time(item.expires_at)}"
    if state == "erased":
        return f"{what} was erased"
    return f"{what} has no value"


@click.group()
def memory() -> None:
    """Write, read, list, forget and erase an agent's memories."""


@memory.command("put")
@store_option
@agent_option
@click.argument("key")
@click.argument("value")
@click.option("--tag", "tags", multiple=True, metavar="TAG", help="A tag (repeatable).")
@click.option("--kind", metavar="KIND", help="What it is: fact, preference, summary, ...")
@click.option("--ttl", type=float, metavar="SECONDS", help="Expire the value after SECONDS.")
@click.option("--raw", is_flag=True, help="Store VALUE as a string even if it is valid JSON.")
@json_option
@pass_state
def put(
    state: CliState,
    agent: str,
    key: str,
    value: str,
    tags: tuple[str, ...],
    kind: str | None,
    ttl: float | None,
    raw: bool,
    as_json: bool,
) -> None:
    """Store VALUE as the next version of KEY and print that version.

    VALUE is parsed as JSON when it is valid JSON ('42', '{"a": 1}', '"quoted"'), else
    stored as a plain string; --raw always stores the string. VALUE '-' reads it from
    stdin (for large values; a literal '-' is '"-"').
    """
    parsed = parse_value(read_value_argument(value), raw=raw)
    runtime = state.runtime(agent, create=True)
    written = runtime.remember(key, parsed, tags=tags, ttl=ttl, kind=kind)
    if as_json:
        click.echo(to_json(record(written, agent=agent)))
    else:
        click.echo(f"{text_cell(key)}: version {written.version}")


@memory.command("get")
@store_option
@agent_option
@click.argument("key")
@click.option(
    "--version", type=click.IntRange(min=1), metavar="N", help="Read version N, not the latest."
)
@json_option
@pass_state
def get(state: CliState, agent: str, key: str, version: int | None, as_json: bool) -> None:
    """Print the current value of KEY (or version N) as JSON.

    Exits 1 when the key does not exist, was forgotten or has expired.
    """
    runtime = state.runtime(agent)
    result = runtime.recall(key, version=version)
    if not result:
        raise NotFound(_absence(runtime, key, version))
    if as_json:
        found = record(result, agent=agent)
        del found["found"]
        click.echo(to_json(found))
    else:
        click.echo(to_json(result.value))


@memory.command("history")
@store_option
@agent_option
@click.argument("key")
@click.option(
    "--limit", type=click.IntRange(min=0), metavar="N", help="Show only the newest N versions."
)
@json_option
@pass_state
def history(state: CliState, agent: str, key: str, limit: int | None, as_json: bool) -> None:
    """Show every version of KEY, newest first, forgotten and expired ones included."""
    runtime = state.runtime(agent)
    versions = runtime.recall_history(key, limit=limit)
    if not versions and limit != 0:
        raise NotFound(_absence(runtime, key))
    now = time.time()
    if as_json:
        rows = [record(v, state=version_state(v, now)) for v in versions]
        click.echo(to_json(rows))
        return
    lines = []
    for v in versions:
        shown = version_state(v, now)
        value = preview(v.value) if shown == "live" else "-"
        tags = ",".join(v.tags) or "-"
        lines.append([str(v.version), iso_time(v.created_at), shown, v.kind or "-", tags, value])
    click.echo(table(["VERSION", "CREATED", "STATE", "KIND", "TAGS", "VALUE"], lines))


@memory.command("list")
@store_option
@agent_option
@click.option("--prefix", default="", metavar="P", help="Only keys starting with P.")
@click.option("--tag", "tags", multiple=True, metavar="T", help="Only keys tagged T (repeatable).")
@click.option("--kind", "kinds", multiple=True, metavar="K", help="Only kind K (repeatable).")
@click.option("--limit", type=click.IntRange(min=0), metavar="N", help="Show at most N keys.")
@json_option
@pass_state
def list_(
    state: CliState,
    agent: str,
    prefix: str,
    tags: tuple[str, ...],
    kinds: tuple[str, ...],
    limit: int | None,
    as_json: bool,
) -> None:
    """List the keys that currently have a value, ordered by key."""
    runtime = state.runtime(agent)
    items = runtime.search(prefix, tags=tags, limit=limit, kinds=kinds)
    if as_json:
        click.echo(to_json([record(item) for item in items]))
        return
    if not items:
        click.echo(f"agent {agent!r} has no matching keys")
        return
    lines = [
        [
            text_cell(item.key),
            str(item.version),
            iso_time(item.created_at),
            iso_time(item.expires_at),
            item.kind or "-",
            ",".join(item.tags) or "-",
            preview(item.value),
        ]
        for item in items
    ]
    click.echo(table(["KEY", "VERSION", "UPDATED", "EXPIRES", "KIND", "TAGS", "VALUE"], lines))


@memory.command("search")
@store_option
@agent_option
@click.argument("query")
@click.option("--prefix", default="", metavar="P", help="Only keys starting with P.")
@click.option("--tag", "tags", multiple=True, metavar="T", help="Only keys tagged T (repeatable).")
@click.option("--kind", "kinds", multiple=True, metavar="K", help="Only kind K (repeatable).")
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=5,
    show_default=True,
    metavar="N",
    help="Show at most N matches.",
)
@json_option
@pass_state
def search(
    state: CliState,
    agent: str,
    query: str,
    prefix: str,
    tags: tuple[str, ...],
    kinds: tuple[str, ...],
    limit: int,
    as_json: bool,
) -> None:
    """Find the memories that best match the words of QUERY, best first, each with its
    score (the share of the query's words it holds) and the words found; by meaning too
    when an embedder is configured (OCTOPODA_EMBEDDER)."""
    runtime = state.runtime(agent)
    found = runtime.recall_similar(
        query, limit=limit, prefix=prefix, tags=tags or None, kinds=kinds
    )
    if as_json:
        matches = [{**record(m.item), "score": m.score, "why": m.why._asdict()} for m in found]
        click.echo(
            to_json({"query": query, "mode": found.mode, "note": found.note, "matches": matches})
        )
        return
    if not found:
        what = "holds a word of" if found.mode == "lexical" else "matches"
        click.echo(f"no memory of agent {agent!r} {what} {query!r}")
        return
    lines = [
        [f"{m.score:.2f}", text_cell(m.key), ",".join(m.why.terms) or "-", preview(m.value)]
        for m in found
    ]
    click.echo(table(["SCORE", "KEY", "WORDS", "VALUE"], lines))
    if found.note:
        click.echo(f"({found.note})")


@click.command("reindex")
@store_option
@click.option(
    "--embedder",
    "spec",
    default=None,
    metavar="E",
    help="octopoda-embed, or package.module:factory (default: $OCTOPODA_EMBEDDER).",
)
@json_option
@pass_state
def reindex_command(state: CliState, spec: str | None, as_json: bool) -> None:
    """Drop the store's vectors and embed every current memory again with the embedder
    (after a change of embedding model, which search by meaning refuses until then)."""
    embedder = resolve_embedder(spec) if spec else embedder_from_env()
    if embedder is None:
        raise ConfigError(
            "reindex needs an embedder: --embedder octopoda-embed (pip install"
            " 'octopoda-core[ai]') or OCTOPODA_EMBEDDER"
        )
    store = state.open_store()
    before = store.vector_model()
    store.reset_vectors()
    embedded = store.index_vectors(embedder)
    after = store.vector_model()
    report = {
        "before": None if before is None else before._asdict(),
        "model": None if after is None else after._asdict(),
        "embedded": embedded,
    }
    if as_json:
        click.echo(to_json(report))
        return
    was = "no vectors" if before is None else f"{before.name} ({before.dimension} dimensions)"
    noun = "memory" if embedded == 1 else "memories"
    click.echo(f"embedded {embedded} {noun} with {embedder.name} (was: {was})")


@memory.command("forget")
@store_option
@agent_option
@click.argument("key")
@json_option
@pass_state
def forget(state: CliState, agent: str, key: str, as_json: bool) -> None:
    """Forget KEY: write a tombstone version. Its history stays readable.

    Exits 1 when KEY has no current value (nothing is written then).
    """
    runtime = state.runtime(agent)
    written = runtime.forget(key)
    if written is None:
        raise NotFound(f"nothing to forget: {_absence(runtime, key)}")
    if as_json:
        click.echo(to_json(record(written, agent=agent)))
    else:
        click.echo(f"{text_cell(key)}: forgotten (tombstone version {written.version})")


@memory.command("erase")
@store_option
@agent_option
@click.argument("key")
@click.option("--reason", metavar="TEXT", help="Why, recorded in the audit event.")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@json_option
@pass_state
def erase(
    state: CliState, agent: str, key: str, reason: str | None, yes: bool, as_json: bool
) -> None:
    """Erase KEY: remove the value of every version of it, for good.

    The versions, their times and the audit trail stay; the content cannot be brought back
    (forget, by contrast, keeps it in the history). Asks for confirmation unless --yes.
    Exits 1 when no version of KEY holds a value (nothing is written then).
    """
    validate_reason(reason)  # refuse a blank reason before asking anything
    runtime = state.runtime(agent)
    held = [v.version for v in runtime.recall_history(key) if not (v.tombstone or v.erased)]
    if not held:
        raise NotFound(f"nothing to erase: {_no_value(runtime, key)}")
    if not yes:
        click.confirm(
            f"Erase the values of {count(len(held), 'version')} of {text_cell(key)}"
            f" (agent {agent!r})? This cannot be undone",
            abort=True,
            err=True,
        )
    erased = runtime.erase(key, reason=reason)
    if erased is None:  # erased by someone else meanwhile
        raise NotFound(f"nothing to erase: {_no_value(runtime, key)}")
    if as_json:
        click.echo(to_json(record(erased, agent=agent)))
    else:
        versions = ", ".join(str(v) for v in erased.versions)
        noun = "version" if len(erased.versions) == 1 else "versions"
        click.echo(f"{text_cell(key)}: erased {noun} {versions}")


def _no_value(runtime: AgentRuntime, key: str) -> str:
    if not runtime.recall_history(key):
        return _absence(runtime, key)
    return (
        f"no version of key {key!r} of agent {runtime.agent_id!r} holds a value"
        " (each is erased or a tombstone); see `octopoda memory history`"
    )


@click.command("export")
@store_option
@agent_option
@click.argument("file", default="-", metavar="[FILE|-]")
@json_option
@pass_state
def export_command(state: CliState, agent: str, file: str, as_json: bool) -> None:
    """Write every memory of an agent, with full history, as a JSON bundle.

    The bundle goes to FILE, or to stdout when FILE is - or left out. Read it back with
    `octopoda import`.
    """
    runtime = state.runtime(agent)
    if file == "-":  # streamed: one version in memory at a time
        runtime.export_memories_to(sys.stdout)
        return
    try:
        keys, versions = runtime.export_memories_to(Path(file))
    except InvalidInput as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        click.echo(to_json({"agent": agent, "file": file, "keys": keys, "versions": versions}))
    else:
        click.echo(
            f"exported {count(keys, 'key')} ({count(versions, 'version')})"
            f" of agent {agent!r} to {file}"
        )


def _read_bundle(file: str) -> dict[str, Any]:
    try:
        data = sys.stdin.buffer.read() if file == "-" else Path(file).read_bytes()
    except OSError as exc:
        raise click.ClickException(f"cannot read {file}: {exc.strerror or exc}") from None
    name = "stdin" if file == "-" else file
    try:
        bundle = json.loads(data)
    except ValueError as exc:
        raise InvalidBundle(f"{name} is not a JSON bundle from `octopoda export`: {exc}") from None
    if not isinstance(bundle, dict):
        raise InvalidBundle(f"{name} holds a JSON {type(bundle).__name__}, not an export bundle")
    return bundle


@click.command("import")
@store_option
@agent_option
@click.argument("file", metavar="FILE|-")
@click.option(
    "--on-existing",
    type=click.Choice(["append", "skip", "error"]),
    default="append",
    show_default=True,
    help="For a key that already has history: add the versions after it, leave the key"
    " alone, or refuse the whole import.",
)
@click.option(
    "--allow-duplicate",
    is_flag=True,
    help="Import a bundle this agent imported before once more (a second copy of its"
    " versions). Without it, a bundle already imported writes nothing.",
)
@json_option
@pass_state
def import_command(
    state: CliState,
    agent: str,
    file: str,
    on_existing: str,
    allow_duplicate: bool,
    as_json: bool,
) -> None:
    """Import a bundle written by `octopoda export` (FILE, or stdin with -) into an agent.

    Every version is written as a new version, in one transaction: all or nothing. A bundle
    the agent imported before is recognised (by its digest) and writes nothing.
    """
    bundle = _read_bundle(file)
    mode = cast(Literal["append", "skip", "error"], on_existing)
    result = state.runtime(agent, create=True).import_memories(
        bundle, on_existing=mode, allow_duplicate=allow_duplicate
    )
    if as_json:
        click.echo(to_json(record(result, agent=agent)))
        return
    if result.already_imported is not None:
        click.echo(
            f"nothing imported: agent {agent!r} imported this bundle already (event"
            f" {result.already_imported}); pass --allow-duplicate to append a second copy"
        )
        return
    imported = f"{count(result.keys, 'key')} ({count(result.versions, 'version')})"
    click.echo(f"imported {imported} into agent {agent!r}")
    if result.skipped_keys:
        skipped = ", ".join(text_cell(k) for k in result.skipped_keys)
        click.echo(f"skipped {count(len(result.skipped_keys), 'existing key')}: {skipped}")
