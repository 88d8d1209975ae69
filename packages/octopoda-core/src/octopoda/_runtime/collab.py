"""Working together: shared spaces (authorship, compare-and-set, conflicts), messages and
goals. The multi-agent face of ``AgentRuntime``.

A shared space is the namespace ``space:<name>`` of the store. Every shared write keeps its
author and time. Without ``expected_version``, a write whose author had not seen the current
head (another agent wrote the key since this agent last read or wrote it) still succeeds as
a new version, and a conflict is recorded for review: nothing is lost. With
``expected_version`` the write is a strict compare-and-set. Every shared write, conflict
resolution, message and goal update is an event on the acting agent's chain.
"""

import json
from collections.abc import Iterable
from typing import Any

from .._errors import AccessDenied, InvalidInput, InvalidValue, NotFound
from .._loops.gists import content_gist
from .._records import MemoryVersion
from .._store import (
    ConflictRow,
    CreateSpace,
    MarkRead,
    MemoryWrite,
    ResolveConflict,
    SendMessage,
    space_namespace,
    stored_sha256,
)
from .._store.rows import decode_stored
from .._values import (
    encode_value,
    validate_agent_id,
    validate_int,
    validate_key,
    validate_limit,
    validate_prefix,
    validate_seconds,
    validate_tags,
)
from .actions import digest_preview
from .base import RuntimeBase, checked_run_id
from .collab_records import (
    Conflict,
    Goal,
    Message,
    SharedValue,
    SharedVersion,
    conflict_id_of,
    goal_of,
    message_of,
    value_of,
)

__all__ = [
    "CollabMixin",
    "Conflict",
    "Goal",
    "Message",
    "SharedValue",
    "SharedVersion",
    "space_namespace",
]

_KEEP_WORDS = ("mine", "theirs")


class CollabMixin(RuntimeBase):
    """Shared spaces, messages and goals of ``AgentRuntime``."""

    # -- spaces -----------------------------------------------------------------------------

    def create_space(self, name: str, *, members: Iterable[str] | None = None) -> None:
        """Create a shared space. With ``members`` only they (and this agent) may read or
        write it; without, it is open to every agent (as spaces are by default)."""
        name = validate_key(name, "space name")
        member_tuple = None
        if members is not None:
            if isinstance(members, str):
                raise InvalidInput(
                    f"members is a list of agent ids, not one string; use [{members!r}]"
                )
            member_tuple = tuple(
                dict.fromkeys([self._agent_id, *(validate_agent_id(m) for m in members)])
            )
        payload = {"space": name, "members": None if member_tuple is None else list(member_tuple)}
        self._commit("space_created", payload, ops=[CreateSpace(name, member_tuple)])

    def _space(self, space: str) -> str:
        """The namespace of ``space``, after checking this agent may use it."""
        space = validate_key(space, "space name")
        row = self._store.space(space)
        if row is not None and row.members is not None and self._agent_id not in row.members:
            raise AccessDenied(
                f"agent {self._agent_id!r} is not a member of space {space!r}"
                f" (members: {', '.join(row.members)}); ask its creator {row.created_by!r}"
            )
        return space_namespace(space)

    # -- shared memory ----------------------------------------------------------------------

    def share(
        self,
        key: str,
        value: Any,
        space: str = "global",
        *,
        expected_version: int | None = None,
        tags: Iterable[str] | None = None,
        ttl: float | None = None,
    ) -> SharedVersion:
        """Write ``value`` to ``key`` in a shared space, as a new version authored by this
        agent. ``expected_version``: compare-and-set (``VersionConflict`` if the head moved;
        0 means the key must not exist yet)."""
        namespace = self._space(space)
        key = validate_key(key)
        if expected_version is not None:
            validate_int(expected_version, "expected_version")
        encoded = encode_value(value, self._max_value_bytes, f"the value of {key!r:.200}")
        now = self._now()
        expires = None
        if ttl is not None:
            expires = round(now + validate_seconds(ttl, "ttl"), 6)
        write = MemoryWrite(
            namespace,
            key,
            encoded.encoding,
            encoded.data,
            encoded.sha256,
            validate_tags(tags),
            expires,
            expected_version=expected_version,
            seen_version=self._seen.get((namespace, key)),
            check_stale=expected_version is None,
        )
        event, versions = self._commit("shared_write", {"space": space}, (write,), now=now)
        self._seen[(namespace, key)] = versions[0]
        conflict = event.payload["writes"][0].get("conflict_id")
        return SharedVersion(key, space, versions[0], self._agent_id, now, event.seq, conflict)

    def read_shared(self, key: str, space: str = "global") -> SharedValue:
        """The current value of a shared key and its author; remembers the version seen."""
        namespace = self._space(space)
        key = validate_key(key)
        row = self._store.latest(namespace, key)
        now = self._now()
        if row is not None:
            self._seen[(namespace, key)] = row.version
        live = (
            row is not None
            and not row.tombstone
            and not row.erased
            and (row.expires_at is None or row.expires_at > now)
        )
        self._guard.observe_read(namespace, key, row.data if live else None, now)  # type: ignore[union-attr]
        if not live:
            return SharedValue(key, space, False)
        assert row is not None
        return SharedValue(
            key, space, True, value_of(row), row.version, row.author, row.created_at, row.tags
        )

    def shared_history(
        self, key: str, *, space: str = "global", limit: int | None = None
    ) -> list[MemoryVersion]:
        """Every version of a shared key with its author, newest first."""
        namespace = self._space(space)
        rows = self._store.history(namespace, validate_key(key), validate_limit(limit))
        return [
            MemoryVersion(
                r.key,
                r.version,
                value_of(r),
                r.created_at,
                r.tags,
                r.expires_at,
                r.seq,
                r.author,
                r.tombstone,
                r.erased,
            )
            for r in rows
        ]

    def shared_items(
        self, *, space: str = "global", prefix: str = "", limit: int | None = 50
    ) -> list[SharedValue]:
        """Current values of a space's keys (exact, case-sensitive prefix), by key."""
        namespace = self._space(space)
        rows = self._store.current(
            namespace, prefix=validate_prefix(prefix), now=self._now(), limit=validate_limit(limit)
        )
        for r in rows:  # listed values count as seen: updating them is not a stale write
            self._seen[(namespace, r.key)] = r.version
        return [
            SharedValue(r.key, space, True, value_of(r), r.version, r.author, r.created_at, r.tags)
            for r in rows
        ]

    # -- conflicts --------------------------------------------------------------------------

    def _conflict(self, row: ConflictRow) -> Conflict:
        space = row.namespace.removeprefix("space:")
        mine = self._store.version(row.namespace, row.key, row.version)
        theirs = self._store.version(row.namespace, row.key, row.head_version)
        return Conflict(
            row.id,
            space,
            row.key,
            row.version,
            row.author,
            value_of(mine),
            row.head_version,
            row.head_author,
            value_of(theirs),
            row.seen_version,
            row.created_at,
            row.status,
            row.resolution,
            row.resolved_by,
            row.resolved_at,
        )

    def shared_conflicts(
        self, *, space: str = "global", include_resolved: bool = False
    ) -> list[Conflict]:
        """Conflicts awaiting review in a space (with both values), oldest first."""
        namespace = self._space(space)
        status = None if include_resolved else "open"
        return [self._conflict(r) for r in self._store.conflicts(namespace, status=status)]

    def resolve_conflict(self, conflict_id: int, keep: Any = "mine") -> SharedVersion | None:
        """Decide a conflict: ``keep="mine"`` (the stale write), ``"theirs"`` (the head it
        replaced) or any other value. The kept value becomes the current version (written
        anew unless it already is current); the resolution is audited. Returns the new
        version, or None when nothing had to be written."""
        wanted = conflict_id_of(conflict_id)
        row = None if wanted is None else self._store.conflict(wanted)
        if row is None or not row.namespace.startswith("space:"):
            raise NotFound(f"no conflict with id {conflict_id!r}")
        namespace = self._space(row.namespace.removeprefix("space:"))
        if row.status != "open":
            raise InvalidInput(f"conflict {conflict_id} is already resolved ({row.resolution})")
        if isinstance(keep, str) and keep in _KEEP_WORDS:
            source = self._store.version(
                namespace, row.key, row.version if keep == "mine" else row.head_version
            )
            if source is None:
                raise NotFound(f"version of {row.key!r} kept by conflict {conflict_id} is gone")
            encoding, data, sha = source.encoding, source.data, stored_sha256(source)
            resolution = keep
        else:
            encoded = encode_value(keep, self._max_value_bytes, "the kept value")
            encoding, data, sha, resolution = (
                encoded.encoding,
                encoded.data,
                encoded.sha256,
                "value",
            )
        current = self._store.latest(namespace, row.key)
        writes = []
        if current is None or (current.encoding, current.data) != (encoding, data):
            # a write like any other: if another agent wrote the key since this agent last
            # saw it, that newer write is not lost silently: a new conflict is recorded
            writes.append(
                MemoryWrite(
                    namespace,
                    row.key,
                    encoding,
                    data,
                    sha,
                    # deciding the conflict means having seen the versions up to it
                    seen_version=max(self._seen.get((namespace, row.key), 0), row.version),
                    check_stale=True,
                )
            )
        payload = {
            "conflict_id": conflict_id,
            "space": row.namespace[6:],
            "key": row.key,
            "keep": resolution,
        }
        event, versions = self._commit(
            "conflict_resolved", payload, writes, ops=[ResolveConflict(conflict_id, resolution)]
        )
        if not versions:
            return None
        self._seen[(namespace, row.key)] = versions[0]
        return SharedVersion(
            row.key, row.namespace[6:], versions[0], self._agent_id, event.time, event.seq
        )

    # -- messages ---------------------------------------------------------------------------

    def _message_body(self, body: Any) -> tuple[str, str, str]:
        if isinstance(body, (bytes, bytearray, memoryview)):
            raise InvalidValue("message bodies are JSON values; send text or base64 for bytes")
        encoded = encode_value(body, self._max_value_bytes, "the message body")
        _, preview = digest_preview(body)
        return str(encoded.data), encoded.sha256, preview

    def send_message(
        self, to_agent: str, body: Any, message_type: str = "info", *, run_id: str | None = None
    ) -> Message:
        """Send a message (any JSON value) to another agent; persisted, ordered, audited.
        ``run_id``: the run it is part of (its ping-pong is judged in that run)."""
        to_agent = validate_agent_id(to_agent)
        message_type = validate_key(message_type)
        run_id = checked_run_id(run_id)
        text, sha, preview = self._message_body(body)
        payload = {
            "to": to_agent,
            "content_sha256": sha,
            "content_gist": content_gist(text),
            "preview": preview,
            "type": message_type,
        }
        if run_id is not None:
            payload["run_id"] = run_id
        op = SendMessage(to_agent, None, message_type, text, sha, run_id)
        event = self._commit("message_sent", payload, ops=[op])[0]
        return Message(
            event.payload["message_id"],
            self._agent_id,
            to_agent,
            None,
            message_type,
            json.loads(text),
            event.time,
            None,
            run_id,
        )

    def read_messages(
        self, *, unread_only: bool = True, limit: int | None = 50, after_id: int = 0
    ) -> list[Message]:
        """Messages sent to this agent, oldest first (reading does not mark them read)."""
        validate_int(after_id, "after_id")
        rows = self._store.messages(
            recipient=self._agent_id,
            unread_only=bool(unread_only),
            after_id=after_id,
            limit=validate_limit(limit),
        )
        return [message_of(r) for r in rows]

    def mark_read(self, message_id: int) -> None:
        """Mark a message to this agent as read (an audited event)."""
        row = self._store.message(validate_int(message_id, "message_id"))
        payload: dict[str, Any] = {"message_id": message_id}
        if row is not None and row.recipient == self._agent_id:
            payload["content_sha256"] = row.body_sha256  # what was read: new information
            payload["content_gist"] = content_gist(row.body)
        self._commit("message_read", payload, ops=[MarkRead(message_id)])

    def broadcast(self, body: Any, *, space: str = "global", message_type: str = "info") -> Message:
        """Send a message to every reader of a space."""
        self._space(space)
        message_type = validate_key(message_type)
        text, sha, preview = self._message_body(body)
        payload = {
            "space": space,
            "content_sha256": sha,
            "content_gist": content_gist(text),
            "preview": preview,
            "type": message_type,
        }
        event = self._commit(
            "broadcast", payload, ops=[SendMessage(None, space, message_type, text, sha)]
        )[0]
        return Message(
            event.payload["message_id"],
            self._agent_id,
            None,
            space,
            message_type,
            json.loads(text),
            event.time,
            None,
        )

    def read_broadcasts(
        self, *, space: str = "global", since: float | None = None, limit: int | None = 50
    ) -> list[Message]:
        """Broadcasts in a space, oldest first; ``since`` is Unix seconds."""
        self._space(space)
        if since is not None:
            since = validate_seconds(since, "since", allow_zero=True)
        rows = self._store.messages(space=space, since=since, limit=validate_limit(limit))
        return [message_of(r) for r in rows]

    # -- goals ------------------------------------------------------------------------------

    def _goal_namespace(self) -> str:
        return "goal:" + self._agent_id

    def _write_goal(self, kind: str, goal: dict[str, Any], now: float) -> Goal:
        encoded = encode_value(goal, self._max_value_bytes, "the goal")
        write = MemoryWrite(self._goal_namespace(), "current", "json", encoded.data, encoded.sha256)
        _, versions = self._commit(kind, {}, (write,), now=now)
        return goal_of(goal, versions[0])

    def set_goal(self, goal: str, milestones: Iterable[str] | None = None) -> Goal:
        """Set this agent's goal (replacing any current one; the old one stays in history)."""
        if not isinstance(goal, str) or not goal.strip():
            raise InvalidInput("goal must be a non-empty str")
        steps = [] if milestones is None else list(milestones)
        if isinstance(milestones, str) or not all(isinstance(m, str) and m for m in steps):
            raise InvalidInput("milestones must be a list of non-empty strings")
        now = self._now()
        value = {
            "goal": goal,
            "milestones": [{"description": m, "done": False, "done_at": None} for m in steps],
            "progress": 0.0,
            "status": "active",
            "note": None,
            "set_at": now,
            "updated_at": now,
        }
        return self._write_goal("goal_set", value, now)

    def update_progress(
        self,
        *,
        milestone_index: int | None = None,
        progress: float | None = None,
        note: str | None = None,
    ) -> Goal:
        """Complete a milestone and/or set progress (0..1); each update is a new version."""
        row = self._store.latest(self._goal_namespace(), "current")
        if row is None:
            raise NotFound(f"agent {self._agent_id!r} has no goal; call set_goal() first")
        goal = decode_stored(row)
        goal_of(goal, row.version)  # (a damaged goal raises StorageError)
        now = self._now()
        steps = goal["milestones"]
        if milestone_index is not None:
            if (
                isinstance(milestone_index, bool)
                or not isinstance(milestone_index, int)
                or not (0 <= milestone_index < len(steps))
            ):
                raise InvalidInput(
                    f"milestone_index must be 0..{len(steps) - 1}, not {milestone_index!r}"
                )
            if not steps[milestone_index]["done"]:
                steps[milestone_index].update(done=True, done_at=now)
            if progress is None:
                progress = sum(1 for m in steps if m["done"]) / len(steps)
        if progress is not None:
            if (
                isinstance(progress, bool)
                or not isinstance(progress, (int, float))
                or not (0.0 <= progress <= 1.0)
            ):
                raise InvalidInput(f"progress must be a number from 0 to 1, not {progress!r}")
            goal["progress"] = float(progress)
        if note is not None and not isinstance(note, str):
            raise InvalidInput(f"note must be a str, not {type(note).__name__}")
        goal["note"] = note
        goal["status"] = "completed" if goal["progress"] >= 1.0 else "active"
        goal["updated_at"] = now
        return self._write_goal("goal_progress", goal, now)

    def get_goal(self) -> Goal | None:
        """The current goal, or None."""
        row = self._store.latest(self._goal_namespace(), "current")
        return None if row is None else goal_of(decode_stored(row), row.version)

    def goal_history(self) -> list[Goal]:
        """Every version of the goal, newest first (the progress history)."""
        return [
            goal_of(decode_stored(r), r.version)
            for r in self._store.history(self._goal_namespace(), "current")
        ]
