"""Reading Octopoda 3.3.4's data with the standard library only (``sqlite3``, ``json``).

3.3.4 keeps everything in one SQLite table, ``nodes``: ``name`` is a namespaced key, ``data``
JSON ``{"value": <payload>, "metadata": {...}, "timestamp": <epoch microseconds>}``, and each
overwrite a new row (``version`` 1, 2, ...; ``valid_from`` in seconds). The names this reader
understands (docs/migrating.md lists them):

* ``agents:{agent}:{key}``: an agent's memory (``…:snapshots:*``, ``…:goal:embedding`` and
  ``…:goal:progress:*`` are left out, with a reason; ``…:goal:current`` is the goal);
* ``shared:{space}:{key}``: a shared value (author in ``_author``); ``…:inbox:{to}:{id}``
  a message, ``…:broadcast:{ts}`` a broadcast (``changelog``, ``conflicts`` and ``outbox``
  rows repeat what the others hold);
* ``audit:{agent}:{ts}:decision``: a decision.

Payload decoding follows 3.3.4's own ``recall``: its bookkeeping keys (``_tags``, ``_author``,
``__expires_at``, ...) are taken out, and ``{"value": x}`` (how it wrapped a non-dict) is ``x``.
3.3.4's prefix and case-insensitive matching is not reproduced: every key is taken exactly.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from .._errors import InvalidInput, StorageError

__all__ = [
    "LegacyData",
    "LegacyDecision",
    "LegacyMessage",
    "LegacySkip",
    "LegacyVersion",
    "find_legacy_database",
    "is_legacy_bundle",
    "read_legacy_bundle",
    "read_legacy_database",
]

_BOOKKEEPING: Final = frozenset(
    {
        "_tags",
        "_author",
        "_shared_at",
        "_stored_at",
        "_agent_role",
        "__expires_at",
        "__ttl_seconds",
        "__importance",
    }
)
_SPACE_RECORDS: Final = ("changelog", "conflicts", "outbox")


@dataclass
class LegacyVersion:
    """One version of a 3.3.4 key, decoded."""

    value: Any
    created_at: float
    tags: tuple[str, ...] = ()
    expires_at: float | None = None
    author: str | None = None


@dataclass
class LegacyDecision:
    id: str
    decision: str
    reasoning: str | None
    context: dict[str, Any] | None
    decided_at: float


@dataclass
class LegacyMessage:
    id: str
    sender: str
    recipient: str | None
    space: str | None
    message_type: str
    body: Any
    sent_at: float
    read: bool


@dataclass
class LegacySkip:
    """A 3.3.4 record not imported, and why."""

    name: str
    reason: str


@dataclass
class LegacyAgent:
    memories: dict[str, list[LegacyVersion]] = field(default_factory=dict)
    goal: list[LegacyVersion] = field(default_factory=list)
    decisions: list[LegacyDecision] = field(default_factory=list)


@dataclass
class LegacyData:
    """What a 3.3.4 database or export bundle holds, in our terms."""

    source: str
    kind: str  # "database" or "bundle"
    agents: dict[str, LegacyAgent] = field(default_factory=dict)
    spaces: dict[str, dict[str, list[LegacyVersion]]] = field(default_factory=dict)
    messages: list[LegacyMessage] = field(default_factory=list)
    skipped: list[LegacySkip] = field(default_factory=list)

    def agent(self, name: str) -> LegacyAgent:
        return self.agents.setdefault(name, LegacyAgent())


def _seconds(value: Any) -> float | None:
    """A 3.3.4 time (seconds, or microseconds as in ``data.timestamp``) in seconds."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    number = float(value)
    return round(number / 1e6 if number > 1e11 else number, 6)


def decode_payload(payload: Any) -> tuple[Any, tuple[str, ...], float | None]:
    """A stored 3.3.4 payload as (value, tags, expires_at), the way its ``recall`` read it."""
    if not isinstance(payload, dict):
        return payload, (), None
    tags: list[str] = []
    for tag in payload.get("_tags") or ():
        if not isinstance(tag, str) or not tag or tag == "__ttl":
            continue
        tags.append(tag.replace("__importance:", "importance:", 1))
    importance = payload.get("__importance")
    if isinstance(importance, str) and f"importance:{importance}" not in tags:
        tags.append(f"importance:{importance}")
    expires_at = _seconds(payload.get("__expires_at"))
    value = {k: v for k, v in payload.items() if k not in _BOOKKEEPING}
    if len(value) == 1 and "value" in value:
        return value["value"], tuple(dict.fromkeys(tags)), expires_at
    return value, tuple(dict.fromkeys(tags)), expires_at


def _row_time(data: dict[str, Any], valid_from: Any, created_at: Any) -> float:
    for candidate in (data.get("timestamp"), valid_from, created_at):
        seconds = _seconds(candidate)
        if seconds:
            return seconds
    return 0.0


def _split_agent(rest: str, data: dict[str, Any]) -> tuple[str, str] | None:
    """``{agent}:{key}`` split using the agent id 3.3.4 put in the row's metadata."""
    meta = data.get("metadata")
    agent = meta.get("agent_id") if isinstance(meta, dict) else None
    if isinstance(agent, str) and agent and rest.startswith(agent + ":"):
        return agent, rest[len(agent) + 1 :]
    agent, sep, key = rest.partition(":")
    return (agent, key) if sep and agent and key else None


def _agent_row(out: LegacyData, name: str, data: dict[str, Any], when: float) -> None:
    split = _split_agent(name[len("agents:") :], data)
    if split is None:
        out.skipped.append(LegacySkip(name, "not an agent memory key (agents:AGENT:KEY)"))
        return
    agent, key = split
    if key.startswith("snapshots:"):
        out.skipped.append(
            LegacySkip(name, "a 3.3.4 snapshot (a copy of values; the versions are imported)")
        )
        return
    if key == "goal:embedding" or key.startswith("goal:progress:"):
        out.skipped.append(LegacySkip(name, "goal bookkeeping (the goal's versions are imported)"))
        return
    value, tags, expires_at = decode_payload(data.get("value"))
    version = LegacyVersion(value, when, tags, expires_at)
    if key == "goal:current":
        out.agent(agent).goal.append(version)
    else:
        out.agent(agent).memories.setdefault(key, []).append(version)


def _shared_row(out: LegacyData, name: str, data: dict[str, Any], when: float) -> None:
    space, _, rest = name[len("shared:") :].partition(":")
    head, _, tail = rest.partition(":")
    payload = data.get("value")
    if not space or not rest:
        out.skipped.append(LegacySkip(name, "not a shared key (shared:SPACE:KEY)"))
    elif head in _SPACE_RECORDS and tail:
        pass  # changelog, conflict records and outbox copies: held by the values and inbox
    elif head == "inbox" and tail and isinstance(payload, dict):
        _message(out, name, payload, when, None)
    elif head == "broadcast" and tail and isinstance(payload, dict):
        _message(out, name, payload, when, space)
    else:
        author = payload.get("_author") if isinstance(payload, dict) else None
        meta = data.get("metadata")
        if not isinstance(author, str) and isinstance(meta, dict):
            author = meta.get("author")
        if not isinstance(author, str) or not author:
            out.skipped.append(LegacySkip(name, "a shared value without an author"))
            return
        value, tags, expires_at = decode_payload(payload)
        out.spaces.setdefault(space, {}).setdefault(rest, []).append(
            LegacyVersion(value, when, tags, expires_at, author)
        )


def _message(
    out: LegacyData, name: str, body: dict[str, Any], when: float, space: str | None
) -> None:
    sender = body.get("from_agent") or body.get("from") or body.get("author")
    recipient = None if space is not None else body.get("to_agent")
    if not isinstance(sender, str) or not sender or (space is None and not recipient):
        out.skipped.append(LegacySkip(name, "a message without a sender or recipient"))
        return
    kind = body.get("message_type") or body.get("type") or "info"
    out.messages.append(
        LegacyMessage(
            str(body.get("msg_id") or name),
            sender,
            str(recipient) if recipient is not None else None,
            space,
            str(kind),
            body.get("message"),
            _seconds(body.get("timestamp")) or when,
            bool(body.get("read")),
        )
    )


def _decision_row(out: LegacyData, name: str, data: dict[str, Any], when: float) -> None:
    agent = data.get("agent_id")
    decision = data.get("decision")
    if not isinstance(agent, str) or not isinstance(decision, str) or not decision.strip():
        out.skipped.append(LegacySkip(name, "a decision record without agent or decision"))
        return
    reasoning = data.get("reasoning")
    context = data.get("context")
    out.agent(agent).decisions.append(
        LegacyDecision(
            name,
            decision,
            reasoning if isinstance(reasoning, str) else None,
            context if isinstance(context, dict) else None,
            _seconds(data.get("timestamp")) or when,
        )
    )


_IGNORED: Final = ("metrics:", "runtime:", "alerts:", "tasks:", "auditv2:")
_READ: Final = ("agents:", "shared:", "audit:")


def read_legacy_database(path: Path) -> LegacyData:
    """Every agent memory (all versions), shared value, decision, goal and message of a
    3.3.4 ``synrix.db``, read-only."""
    uri = f"file:{path.resolve()}?mode=ro"
    try:
        rows = _read_rows(uri)
    except sqlite3.Error as exc:
        raise StorageError(f"cannot read the Octopoda 3.3.4 database {path}: {exc}") from None
    if rows is None:
        raise InvalidInput(
            f"{path} is an SQLite database but not Octopoda 3.3.4's (it has no 'nodes' table);"
            " pass --from with 3.3.4's synrix.db (an Octopoda store is copied with"
            " `octopoda export` and `octopoda import`)"
        )
    return _decode_rows(str(path), rows)


def _read_rows(uri: str) -> list[tuple[Any, ...]] | None:
    conn = sqlite3.connect(uri, uri=True)
    try:
        columns = {r[1] for r in conn.execute("PRAGMA table_info(nodes)")}
        if not {"name", "data"} <= columns:
            return None
        order = "version, valid_from, id" if {"version", "valid_from"} <= columns else "id"
        valid_from = "valid_from" if "valid_from" in columns else "NULL"
        created_at = "created_at" if "created_at" in columns else "NULL"
        # Name ranges (the name index serves them): 3.3.4's metrics and runtime rows, most
        # of a long-used database, are never read.
        ranges = " OR ".join(f"(name >= '{p}' AND name < '{p[:-1]};')" for p in _READ)
        rows = conn.execute(
            f"SELECT name, data, {valid_from}, {created_at} FROM nodes"  # (constants only)
            f" WHERE {ranges} ORDER BY name, {order}"
        ).fetchall()
    finally:
        conn.close()
    return rows


def _decode_rows(source: str, rows: list[tuple[Any, ...]]) -> LegacyData:
    out = LegacyData(source, "database")
    for name, text, start, created in rows:
        if not isinstance(name, str) or name.startswith(_IGNORED):
            continue
        try:
            data = json.loads(text)
        except (TypeError, ValueError):
            out.skipped.append(LegacySkip(name, "its data is not JSON"))
            continue
        if not isinstance(data, dict):
            out.skipped.append(LegacySkip(name, "its data is not a JSON object"))
            continue
        when = _row_time(data, start, created)
        if name.startswith("agents:"):
            _agent_row(out, name, data, when)
        elif name.startswith("shared:"):
            _shared_row(out, name, data, when)
        elif name.startswith("audit:") and name.endswith(":decision"):
            _decision_row(out, name, data, when)
        elif name.startswith("audit:"):
            out.skipped.append(LegacySkip(name, "a 3.3.4 audit record of a forget or handoff"))
        else:
            out.skipped.append(LegacySkip(name, "a key outside 3.3.4's known namespaces"))
    for versions in (v for a in out.agents.values() for v in a.memories.values()):
        versions.sort(key=lambda v: v.created_at)
    for keys in out.spaces.values():
        for versions in keys.values():
            versions.sort(key=lambda v: v.created_at)
    for agent in out.agents.values():
        agent.goal.sort(key=lambda v: v.created_at)
        agent.decisions.sort(key=lambda d: d.decided_at)
    out.messages.sort(key=lambda m: (m.sent_at, m.id))
    return out


def is_legacy_bundle(bundle: Any) -> bool:
    """Whether ``bundle`` is what 3.3.4's ``export_memories()`` returned."""
    return (
        isinstance(bundle, dict)
        and isinstance(bundle.get("meta"), dict)
        and isinstance(bundle.get("memories"), dict)
        and "format" not in bundle
    )


def read_legacy_bundle(bundle: dict[str, Any], source: str, agent: str | None = None) -> LegacyData:
    """A 3.3.4 export bundle (current values only: 3.3.4 exported no history)."""
    meta = bundle["meta"]
    name = agent or meta.get("agent_id")
    out = LegacyData(source, "bundle")
    if not isinstance(name, str) or not name:
        out.skipped.append(LegacySkip(source, "the bundle names no agent; pass --agent"))
        return out
    exported = _seconds(meta.get("exported_at")) or 0.0
    target = out.agent(name)
    for key, item in sorted(bundle["memories"].items()):
        if not isinstance(item, dict):
            out.skipped.append(LegacySkip(key, "not an object with value and timestamp"))
            continue
        value, tags, expires_at = decode_payload(item.get("value"))
        version = LegacyVersion(
            value, _seconds(item.get("timestamp")) or exported, tags, expires_at
        )
        if key == "goal:current":
            target.goal.append(version)
        elif key.startswith("snapshots:") or key.startswith("goal:"):
            out.skipped.append(LegacySkip(key, "snapshot or goal bookkeeping"))
        else:
            target.memories[key] = [version]
    for label in bundle.get("snapshots") or {}:
        out.skipped.append(LegacySkip(f"snapshots:{label}", "a 3.3.4 snapshot (a copy of values)"))
    return out


def find_legacy_database(path: Path | None, env: dict[str, str]) -> Path | None:
    """The 3.3.4 database: ``path`` (a file or a directory holding ``synrix.db``), else
    ``$OCTOPODA_DATA_DIR``, ``$SYNRIX_DATA_DIR`` or ``~/.synrix/data`` (3.3.4's order)."""
    if path is not None:
        return path / "synrix.db" if path.is_dir() else path
    for var in ("OCTOPODA_DATA_DIR", "SYNRIX_DATA_DIR"):
        if env.get(var):
            return Path(env[var]) / "synrix.db"
    return Path.home() / ".synrix" / "data" / "synrix.db"
