"""What an agent's events say its rows outside memory must be, checked against the store.

``audit.verify`` feeds every verified event to a :class:`SideLedger` (``note``), then
compares it with :meth:`Store.audited_rows <octopoda.store.Store.audited_rows>`
(``check``): a row no event accounts for, an event whose row is gone, and a row that
differs from its event are each reported with the seq of the event (or of the row).

What is compared, per table (the event kinds that determine it):

* agents (``paused``/``resumed`` without a run): ``status`` and ``status_reason``;
* runs (``paused``/``resumed`` of a run): status, reason, ``changed_at``, ``changed_seq``;
* snapshots (``snapshot``, the last per name): seq and ``created_at``;
* messages (``message_sent``, ``broadcast``, ``handoff``; ``message_read`` of the
  recipient): sender, recipient or space, type, run, seq, time, the body's digest
  recomputed from the body (a handoff of content that is not JSON carries its preview,
  which the event holds), and ``read_at``;
* conflicts (a shared write's ``conflict_id``; ``conflict_resolved``): namespace, key,
  version, author, seq, time, and status, resolution, resolver and time of resolution;
* spaces (``space_created``): creator, members, ``created_at``.

A conflict resolved by another agent is checked when that agent is verified (it must
exist); a message's ``read_at`` when its recipient is.
"""

import hashlib
import json
from collections.abc import Callable
from typing import Any, Final

from .._canonical import canonical_text
from .._errors import OctopodaError
from .._store import AgentRow, Store
from .._store.rows import AuditedRows, ConflictRow, MessageRow

__all__ = ["SIDE_KINDS", "SideLedger"]

SIDE_KINDS: Final = frozenset(
    {
        "paused",
        "resumed",
        "snapshot",
        "message_sent",
        "broadcast",
        "handoff",
        "message_read",
        "conflict_resolved",
        "space_created",
        "import",
    }
)
"""The event kinds that determine side rows (besides a shared write's ``conflict_id``)."""

Problem = tuple[int, str]
_Noted = tuple[int, float, dict[str, Any]]  # seq, time, payload (or write entry)


def _digest(body: Any) -> str | None:
    if type(body) is str:
        try:
            return hashlib.sha256(body.encode("utf-8")).hexdigest()
        except UnicodeEncodeError:
            return None
    return None


def _reason(text: Any) -> Any:
    """A stored status reason as the JSON it holds (None: none; a marker: not JSON)."""
    if text is None:
        return None
    try:
        return json.loads(text)
    except (TypeError, ValueError, RecursionError):
        return _UNREADABLE


_UNREADABLE: Final = object()


class SideLedger:
    """The side rows an agent's events determine, noted event by event."""

    def __init__(self, agent: str) -> None:
        self.agent = agent
        self.status: tuple[int, str, dict[str, Any]] | None = None  # the last agent-wide
        # paused or resumed: seq, kind, payload
        self.runs: dict[str, tuple[int, float, str, dict[str, Any]]] = {}
        self.snapshots: dict[str, tuple[int, float]] = {}
        self.sent: dict[int, _Noted] = {}
        self.read: dict[int, _Noted] = {}
        self.conflicts: dict[int, _Noted] = {}  # recorded by a shared write
        self.resolved: dict[int, _Noted] = {}
        self.spaces: dict[str, _Noted] = {}
        self.handoffs: set[int] = set()  # of the messages sent: handoffs

    def note(self, seq: int, time: float, kind: str, payload: dict[str, Any]) -> None:
        """Note one event (of a kind in ``SIDE_KINDS``; any kind for its writes'
        conflicts). Raises TypeError/KeyError on a payload of the wrong shape."""
        for entry in payload.get("writes", ()):
            if "conflict_id" in entry:
                self.conflicts[entry["conflict_id"]] = (seq, time, entry)
        if kind not in SIDE_KINDS:
            return
        if kind in ("paused", "resumed"):
            run = payload.get("run_id")
            if run is None:
                self.status = (seq, kind, payload)
            else:
                self.runs[run] = (seq, time, kind, payload)
        elif kind == "snapshot":
            self.snapshots[payload["name"]] = (seq, time)
        elif kind in ("message_sent", "broadcast", "handoff"):
            self.sent[payload["message_id"]] = (seq, time, payload)
            if kind == "handoff":
                self.handoffs.add(payload["message_id"])
        elif kind == "message_read":
            self.read[payload["message_id"]] = (seq, time, payload)
        elif kind == "conflict_resolved":
            self.resolved[payload["conflict_id"]] = (seq, time, payload)
        elif kind == "import":  # messages brought in by `octopoda migrate`, sent at once
            self._note_imported(seq, time, payload)
        else:  # space_created
            self.spaces[payload["space"]] = (seq, time, payload)

    def _note_imported(self, seq: int, time: float, payload: dict[str, Any]) -> None:
        messages = payload.get("messages", ())
        if not messages:
            return
        ids = payload.get("message_ids") or [payload["message_id"]]
        for message_id, entry in zip(ids, messages, strict=True):
            sent = {
                "to": entry["to"],
                "space": entry["space"],
                "type": entry["type"],
                "content_sha256": entry["content_sha256"],
                "message_id": message_id,
            }
            self.sent[message_id] = (seq, time, sent)

    # -- the comparison -----------------------------------------------------------------

    def check(self, store: Store, agent_row: AgentRow | None) -> tuple[Problem | None, int]:
        """The first difference between the noted events and the stored rows (None: none),
        and how many rows were compared."""
        rows = store.audited_rows(self.agent)
        steps: tuple[Callable[[], tuple[Problem | None, int]], ...] = (
            lambda: self._check_status(agent_row),
            lambda: self._check_runs(rows),
            lambda: self._check_snapshots(rows),
            lambda: self._check_spaces(rows),
            lambda: self._check_conflicts(store, rows),
            lambda: self._check_messages(rows),
        )
        checked = 0
        for step in steps:
            problem, n = step()
            checked += n
            if problem is not None:
                return problem, checked
        return None, checked

    def _check_status(self, row: AgentRow | None) -> tuple[Problem | None, int]:
        if row is None:
            return None, 0
        stored = (row.status, _reason(row.status_reason))
        if self.status is None:
            if stored != ("active", None):
                return (0, f"agent {self.agent!r} is {row.status!r:.40} without a pause event"), 1
            return None, 1
        seq, kind, payload = self.status
        paused = kind == "paused"
        claimed = ("paused", payload) if paused else ("active", None)
        if stored != claimed:
            return (
                seq,
                f"the agent's status differs from its {'pause' if paused else 'resume'}"
                f" event (seq {seq})",
            ), 1
        return None, 1

    def _check_runs(self, rows: AuditedRows) -> tuple[Problem | None, int]:
        noted = dict(self.runs)
        for run in rows.runs:
            found = noted.pop(run.run_id, None)
            where = f"the status of run {run.run_id!r:.80}"
            if found is None:
                return (
                    run.changed_seq if type(run.changed_seq) is int else 0,
                    f"{where} has no matching pause or resume event",
                ), 1
            seq, time, kind, payload = found
            paused = kind == "paused"
            claimed = ("paused" if paused else "active", payload if paused else None, time, seq)
            stored = (run.status, _reason(run.status_reason), run.changed_at, run.changed_seq)
            if stored != claimed:
                return (seq, f"{where} differs from its {kind} event (seq {seq})"), 1
        if noted:
            run_id, (seq, _, kind, _) = min(noted.items(), key=lambda kv: kv[1][0])
            return (seq, f"run {run_id!r:.80} was {kind} (seq {seq}) but its status row is gone"), 0
        return None, len(rows.runs)

    def _check_snapshots(self, rows: AuditedRows) -> tuple[Problem | None, int]:
        noted = dict(self.snapshots)
        for snap in rows.snapshots:
            found = noted.pop(snap.name, None)
            where = f"snapshot {snap.name!r:.80}"
            if found is None:
                seq = snap.seq if type(snap.seq) is int else 0
                return (seq, f"{where} has no matching snapshot event"), 1
            if (snap.seq, snap.created_at) != found:
                return (
                    found[0],
                    f"{where} differs from its snapshot event (seq {found[0]}):"
                    " restore() would bring back another state",
                ), 1
        if noted:
            name, (seq, _) = min(noted.items(), key=lambda kv: kv[1][0])
            return (seq, f"snapshot {name!r:.80} was taken (seq {seq}) but its row is gone"), 0
        return None, len(rows.snapshots)

    def _check_spaces(self, rows: AuditedRows) -> tuple[Problem | None, int]:
        noted = dict(self.spaces)
        for space in rows.spaces:
            found = noted.pop(space.name, None)
            where = f"space {space.name!r:.80}"
            if found is None:
                return (0, f"{where} names {self.agent!r} as its creator without an event"), 1
            seq, time, payload = found
            members = payload.get("members")
            claimed = (time, None if members is None else tuple(members))
            if (space.created_at, space.members) != claimed:
                return (seq, f"{where} differs from its space_created event (seq {seq})"), 1
        if noted:
            name, (seq, _, _) = min(noted.items(), key=lambda kv: kv[1][0])
            return (
                seq,
                f"space {name!r:.80} was created (seq {seq}) but its row is gone"
                " or names another creator",
            ), 0
        return None, len(rows.spaces)

    def _check_conflicts(self, store: Store, rows: AuditedRows) -> tuple[Problem | None, int]:
        made, resolved = dict(self.conflicts), dict(self.resolved)
        for row in rows.conflicts:
            problem = self._conflict_problem(store, row, made, resolved)
            if problem is not None:
                return problem, 1
        if made:
            cid, (seq, _, _) = min(made.items(), key=lambda kv: kv[1][0])
            return (seq, f"conflict {cid} was recorded (seq {seq}) but its row is gone"), 0
        if resolved:
            cid, (seq, _, _) = min(resolved.items(), key=lambda kv: kv[1][0])
            return (
                seq,
                f"conflict {cid} was resolved (seq {seq}) but its row is gone or"
                " names another resolver",
            ), 0
        return None, len(rows.conflicts)

    def _conflict_problem(
        self,
        store: Store,
        row: ConflictRow,
        made: dict[int, _Noted],
        resolved: dict[int, _Noted],
    ) -> Problem | None:
        where = f"conflict {row.id!r:.40}"
        row_seq = row.seq if type(row.seq) is int else 0
        if row.author == self.agent:
            found = made.pop(row.id, None)
            if found is None:
                return row_seq, f"{where} has no matching write event"
            seq, time, entry = found
            claimed = (entry.get("namespace"), entry["key"], entry["version"], seq, time)
            if (row.namespace, row.key, row.version, row.seq, row.created_at) != claimed:
                return seq, f"{where} differs from the write that recorded it (seq {seq})"
        unresolved = (row.resolution, row.resolved_by, row.resolved_at)
        if row.resolved_by == self.agent:
            done = resolved.pop(row.id, None)
            if done is None:
                return row_seq, f"{where} is marked resolved without a conflict_resolved event"
            seq, time, payload = done
            if (row.status, row.resolution, row.resolved_at) != ("resolved", payload["keep"], time):
                return seq, f"{where} differs from its conflict_resolved event (seq {seq})"
        elif row.status == "open" and unresolved == (None, None, None):
            return None
        elif row.status != "resolved" or type(row.resolved_by) is not str:
            return row_seq, f"{where} is marked resolved without a conflict_resolved event"
        elif not _is_agent(store, row.resolved_by):
            return row_seq, (
                f"{where} is marked resolved by {row.resolved_by!r:.80}, an agent that does not"
                " exist"
            )
        return None

    def _check_messages(self, rows: AuditedRows) -> tuple[Problem | None, int]:
        sent, read = dict(self.sent), dict(self.read)
        checked = 0
        for message in rows.messages:
            checked += 1
            problem = self._message_problem(message, sent, read)
            if problem is not None:
                return problem, checked
        if sent:
            mid, (seq, _, _) = min(sent.items(), key=lambda kv: kv[1][0])
            return (seq, f"message {mid} was sent (seq {seq}) but its row is gone"), checked
        if read:
            mid, (seq, _, _) = min(read.items(), key=lambda kv: kv[1][0])
            return (
                seq,
                f"message {mid} was read (seq {seq}) but its row is gone or is not"
                f" addressed to {self.agent!r}",
            ), checked
        return None, checked

    def _message_problem(
        self, row: MessageRow, sent: dict[int, _Noted], read: dict[int, _Noted]
    ) -> Problem | None:
        where = f"message {row.id!r:.40}"
        row_seq = row.seq if type(row.seq) is int else 0
        if row.sender == self.agent:
            found = sent.pop(row.id, None)
            if found is None:
                return row_seq, f"{where} has no matching send event"
            seq, time, payload = found
            handoff = row.id in self.handoffs
            sha = payload["content_sha256"]
            body_sha = _digest(row.body)
            if handoff and body_sha != sha and row.body == canonical_text(payload["preview"]):
                body_sha = sha  # content that is not JSON: its preview was sent
            claimed = (
                payload.get("to"),
                payload.get("space"),
                "handoff" if handoff else payload["type"],
                sha,
                sha,
                payload.get("run_id"),
                seq,
                time,
            )
            stored = (
                row.recipient,
                row.space,
                row.message_type,
                row.body_sha256,
                body_sha,
                row.run_id,
                row.seq,
                row.created_at,
            )
            if stored != claimed:
                return seq, f"{where} differs from its send event (seq {seq})"
        if row.recipient == self.agent:
            done = read.pop(row.id, None)
            if done is None and row.read_at is not None:
                return row_seq, f"{where} is marked read without a message_read event"
            if done is not None and row.read_at != done[1]:
                return done[0], f"{where} differs from its message_read event (seq {done[0]})"
        return None


def _is_agent(store: Store, agent: str) -> bool:
    try:
        return store.agent(agent) is not None
    except OctopodaError:  # its row is damaged: it exists
        return True
