"""Bringing 3.3.4's data (``legacy.py``) into a store: one audited ``import`` event per agent.

Each agent's event holds its memories (every version, with its original time), its goal's
versions, its decisions (in the payload: ``agent.decisions()`` lists them), the shared values
it authored and the messages it sent, and names the source. Shared keys several agents wrote
keep their version order: an agent whose shared writes interleave with another's on the same
key gets one more ``import`` event per interleaving (rare; the report counts events).

Idempotent: a version already in the store (same key, time, value and author) is skipped, as
is a decision or message whose 3.3.4 id an earlier import recorded; a second run imports
nothing and says so.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .._errors import OctopodaError, StorageError, VersionConflict
from .._store import MemoryWrite, SendMessage, Store, agent_namespace, space_namespace
from .._store.rows import StoredRow
from .._values import encode_value, validate_agent_id, validate_key, validate_tags
from .legacy import LegacyData, LegacyDecision, LegacyMessage, LegacySkip, LegacyVersion

__all__ = ["MigrationReport", "migrate"]

SOURCE_FORMAT = "octopoda-3.3.4"


@dataclass
class AgentReport:
    agent: str
    memories: int = 0
    versions: int = 0
    shared_versions: int = 0
    goal_versions: int = 0
    decisions: int = 0
    messages: int = 0
    already_imported: int = 0
    events: list[int] = field(default_factory=list)


@dataclass
class MigrationReport:
    """What ``octopoda migrate`` did (or, with ``dry_run``, would do)."""

    source: str
    kind: str
    dry_run: bool
    agents: list[AgentReport] = field(default_factory=list)
    skipped: list[LegacySkip] = field(default_factory=list)

    @property
    def imported(self) -> int:
        return sum(
            a.versions + a.shared_versions + a.goal_versions + a.decisions + a.messages
            for a in self.agents
        )

    @property
    def already_imported(self) -> int:
        return sum(a.already_imported for a in self.agents)

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "kind": self.kind,
            "dry_run": self.dry_run,
            "imported": self.imported,
            "already_imported": self.already_imported,
            "agents": [vars(a) for a in self.agents],
            "skipped": [vars(s) for s in self.skipped],
        }


@dataclass
class _Batch:
    agent: str
    writes: list[MemoryWrite] = field(default_factory=list)
    ops: list[SendMessage] = field(default_factory=list)
    decisions: list[dict[str, Any]] = field(default_factory=list)
    messages: list[dict[str, Any]] = field(default_factory=list)


def _fingerprint(row: StoredRow) -> tuple[str, float, str | None, str | None]:
    from .._store import stored_sha256

    return (row.key, round(row.created_at, 6), stored_sha256(row), row.author)


def _write(
    namespace: str, key: str, v: LegacyVersion, name: str, skips: list[LegacySkip]
) -> MemoryWrite | None:
    try:
        key = validate_key(key)
        encoded = encode_value(v.value)
        tags = validate_tags(v.tags)
    except OctopodaError as exc:
        skips.append(LegacySkip(name, str(exc)))
        return None
    return MemoryWrite(
        namespace,
        key,
        encoded.encoding,
        encoded.data,
        encoded.sha256,
        tags,
        v.expires_at,
        round(v.created_at, 6),
    )


def _goal_value(old: Any, when: float) -> Any:
    """A 3.3.4 goal (``completed``/``completed_at`` milestones) in our goal's shape."""
    if not isinstance(old, dict) or not isinstance(old.get("goal"), str):
        return None
    steps = [
        {
            "description": str(m.get("description", "")),
            "done": bool(m.get("completed")),
            "done_at": m.get("completed_at"),
        }
        for m in old.get("milestones") or ()
        if isinstance(m, dict)
    ]
    progress = old.get("progress")
    progress = float(progress) if isinstance(progress, (int, float)) else 0.0
    return {
        "goal": old["goal"],
        "milestones": steps,
        "progress": min(max(progress, 0.0), 1.0),
        "status": "completed" if progress >= 1.0 else str(old.get("status") or "active"),
        "note": None,
        "set_at": old.get("set_at") or when,
        "updated_at": old.get("last_updated") or old.get("set_at") or when,
    }


class _Planner:
    def __init__(self, store: Store, data: LegacyData) -> None:
        self.store = store
        self.data = data
        self.skips: list[LegacySkip] = list(data.skipped)
        self.reports: dict[str, AgentReport] = {}
        self.batches: list[_Batch] = []
        self._first: dict[str, int] = {}
        self._known_ids: dict[str, set[str]] = {}

    def report(self, agent: str) -> AgentReport:
        return self.reports.setdefault(agent, AgentReport(agent))

    def first_batch(self, agent: str) -> _Batch:
        if agent not in self._first:
            self._first[agent] = len(self.batches)
            self.batches.append(_Batch(agent))
        return self.batches[self._first[agent]]

    def known_ids(self, agent: str) -> set[str]:
        """The 3.3.4 decision and message ids earlier imports of ``agent`` recorded."""
        if agent not in self._known_ids:
            ids: set[str] = set()
            for event in self.store.events(agent, kinds=("import",)):
                migrated = event.payload.get("migrated")
                if isinstance(migrated, dict):
                    ids.update(str(i) for i in migrated.get("ids", ()))
            self._known_ids[agent] = ids
        return self._known_ids[agent]

    def new_versions(
        self, namespace: str, key: str, versions: list[LegacyVersion], name: str, agent: str
    ) -> list[tuple[LegacyVersion, MemoryWrite]]:
        """Versions not yet in the store (by key, time, value digest and author)."""
        have = {_fingerprint(r) for r in self.store.history(namespace, key)}
        out = []
        matched = 0.0  # the newest version found here already
        for v in versions:
            write = _write(namespace, key, v, name, self.skips)
            if write is None:
                continue
            author = v.author or agent
            if (write.key, write.created_at, write.sha256, author) in have:
                self.report(author).already_imported += 1
                matched = max(matched, write.created_at or 0.0)
                continue
            out.append((v, write))
        late = [(v, w) for v, w in out if (w.created_at or 0.0) < matched]
        for v, _ in late:
            self.skips.append(
                LegacySkip(
                    f"{name} @ {v.created_at}",
                    "older than a version imported before (from a bundle?): history cannot"
                    " be inserted below it",
                )
            )
        return [(v, w) for v, w in out if (w.created_at or 0.0) >= matched]

    def plan_agent(self, agent: str) -> None:
        legacy = self.data.agents[agent]
        report = self.report(agent)
        namespace = agent_namespace(agent)
        batch = self.first_batch(agent)
        for key, versions in sorted(legacy.memories.items()):
            fresh = self.new_versions(namespace, key, versions, f"agents:{agent}:{key}", agent)
            if fresh:
                report.memories += 1
                report.versions += len(fresh)
                batch.writes.extend(w for _, w in fresh)
        goals = []
        for v in legacy.goal:
            value = _goal_value(v.value, v.created_at)
            if value is None:
                self.skips.append(LegacySkip(f"agents:{agent}:goal:current", "not a 3.3.4 goal"))
                continue
            goals.append(LegacyVersion(value, v.created_at))
        fresh = self.new_versions("goal:" + agent, "current", goals, f"agents:{agent}:goal", agent)
        report.goal_versions += len(fresh)
        batch.writes.extend(w for _, w in fresh)
        known = self.known_ids(agent)
        for d in legacy.decisions:
            if d.id in known:
                report.already_imported += 1
                continue
            batch.decisions.append(_decision(d))
            report.decisions += 1

    def plan_spaces(self) -> None:
        """Shared writes in time order, each in its author's batch unless a later write by
        another author to the same key sits after that batch."""
        last_of_key: dict[tuple[str, str], int] = {}
        latest_of: dict[str, int] = {}
        writes: list[tuple[float, str, str, LegacyVersion, MemoryWrite]] = []
        for space, keys in sorted(self.data.spaces.items()):
            for key, versions in sorted(keys.items()):
                name = f"shared:{space}:{key}"
                ns = space_namespace(space)
                for v, w in self.new_versions(ns, key, versions, name, ""):
                    writes.append((v.created_at, space, key, v, w))
        writes.sort(key=lambda t: t[0])
        for _, space, key, v, write in writes:
            author = str(v.author)
            floor = last_of_key.get((space, key), -1)
            index = latest_of.get(author, self._first.get(author))
            if index is None or index < floor:
                index = len(self.batches)
                self.batches.append(_Batch(author))
                self._first.setdefault(author, index)
            latest_of[author] = index
            last_of_key[(space, key)] = index
            self.batches[index].writes.append(write)
            self.report(author).shared_versions += 1

    def plan_messages(self) -> None:
        for m in self.data.messages:
            if m.id in self.known_ids(m.sender):
                self.report(m.sender).already_imported += 1
                continue
            op = _send(m, self.skips)
            if op is None:
                continue
            batch = self.first_batch(m.sender)
            batch.ops.append(op)
            batch.messages.append(
                {"id": m.id, "to": op.recipient, "space": op.space, "type": op.message_type,
                 "content_sha256": op.body_sha256, "sent_at": m.sent_at, "read": m.read}
            )  # fmt: skip
            self.report(m.sender).messages += 1


def _decision(d: LegacyDecision) -> dict[str, Any]:
    return {
        "id": d.id,
        "decision": d.decision,
        "reasoning": d.reasoning,
        "context": d.context,
        "decided_at": d.decided_at,
    }


def _send(m: LegacyMessage, skips: list[LegacySkip]) -> SendMessage | None:
    try:
        encoded = encode_value(m.body)
        kind = validate_key(m.message_type)
        recipient = None if m.recipient is None else validate_agent_id(m.recipient)
    except OctopodaError as exc:
        skips.append(LegacySkip(m.id, str(exc)))
        return None
    return SendMessage(recipient, m.space, kind, str(encoded.data), encoded.sha256)


def migrate(store: Store, data: LegacyData, *, dry_run: bool = False) -> MigrationReport:
    """Import ``data`` into ``store``; with ``dry_run`` only plan and report.

    Each agent's commit expects the agent's head as planned: when another writer (a second
    ``octopoda migrate`` at the same time, say) moved it, the plan is made again, and what
    the other committed meanwhile counts as already imported.
    """
    for _ in range(20):
        planner = _plan(store, data)
        try:
            return _apply(store, data, planner, dry_run)
        except VersionConflict:
            continue
    raise StorageError("the store kept changing during `octopoda migrate`; run it again")


def _plan(store: Store, data: LegacyData) -> _Planner:
    planner = _Planner(store, data)
    for agent in sorted(data.agents):
        try:
            validate_agent_id(agent)
        except OctopodaError as exc:
            planner.skips.append(LegacySkip(f"agents:{agent}", str(exc)))
            continue
        planner.plan_agent(agent)
    planner.plan_spaces()
    planner.plan_messages()
    return planner


def _apply(store: Store, data: LegacyData, planner: _Planner, dry_run: bool) -> MigrationReport:
    from .._runtime.runtime import AgentRuntime

    report = MigrationReport(data.source, data.kind, dry_run, skipped=planner.skips)
    heads = {a: (row.head_seq if (row := store.agent(a)) else 0) for a in planner.reports}
    for batch in planner.batches:
        if dry_run or not (batch.writes or batch.ops or batch.decisions):
            continue
        payload: dict[str, Any] = {
            "source": data.source,
            "source_format": f"{SOURCE_FORMAT}-{data.kind}",
            "source_agent": batch.agent,
            "migrated": {
                "ids": [d["id"] for d in batch.decisions] + [m["id"] for m in batch.messages]
            },
        }
        if batch.decisions:
            payload["decisions"] = batch.decisions
        if batch.messages:
            payload["messages"] = batch.messages
        runtime = AgentRuntime(batch.agent, store=store)
        event, _ = runtime._commit(
            "import", payload, batch.writes, ops=batch.ops, expected_seq=heads[batch.agent]
        )
        row = store.agent(batch.agent)
        heads[batch.agent] = row.head_seq if row is not None else event.seq
        planner.report(batch.agent).events.append(event.seq)
    report.agents = [planner.reports[a] for a in sorted(planner.reports)]
    return report


def dumps(report: MigrationReport) -> str:
    return json.dumps(report.to_dict(), indent=2, ensure_ascii=False)
