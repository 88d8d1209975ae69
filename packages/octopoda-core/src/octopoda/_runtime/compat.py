"""Octopoda 3.3.4's methods, for code written against it (docs/migrating.md has the table).

Those that map cleanly onto this model work with 3.3.4's call shape and return this
library's records (``remember_with_ttl`` is ``remember(ttl=)``, ``handoff`` a recorded
handoff message, ``claim_task`` reads it, ...). Those with no equivalent raise
:class:`~octopoda.NotSupported`, naming what to use instead. This mixin comes last in
``AgentRuntime``'s bases: a method of the same name elsewhere wins.
"""

import json
from collections.abc import Iterable
from typing import Any, NamedTuple, NoReturn

from .._errors import NotSupported
from .._records import Event, VersionRecord
from .base import RuntimeBase

__all__ = ["LegacyMixin", "Task"]


class Task(NamedTuple):
    """``claim_task`` / ``complete_task``: a task handed to this agent with ``handoff``."""

    task_id: str
    payload: Any
    found: bool
    from_agent: str | None = None
    message_id: int | None = None


# 3.3.4 methods without an equivalent, and what to use instead.
REPLACED: dict[str, str] = {
    "related": "search(query=entity_name) (there is no knowledge graph)",
    "detect_conflicts": "share(key, value, expected_version=...) and shared_conflicts()",
    "remember_safe": "share(key, value, expected_version=...) (compare-and-set)",
    "share_safe": "share(key, value, space=..., expected_version=...)",
    "subscribe_shared": "read_broadcasts(since=...) or shared_items() polled by the caller",
    "search_filtered": "search(query=..., tags=[...]) and the created_at of each item",
    "usage_analytics": "stats() and memory_health()",
    "get_brain_status": "loop_status() and stats()",
    "get_dashboard_url": "`octopoda serve` (the dashboard is on 127.0.0.1:7842)",
}


class LegacyMixin(RuntimeBase):
    """3.3.4's method names on ``AgentRuntime``."""

    def remember_with_ttl(
        self, key: str, value: Any, ttl_seconds: float, tags: Iterable[str] | None = None
    ) -> VersionRecord:
        """3.3.4's TTL write: ``remember(key, value, tags=tags, ttl=ttl_seconds)``."""
        return self.remember(key, value, tags=tags, ttl=ttl_seconds)  # type: ignore[attr-defined,no-any-return]

    def remember_important(
        self,
        key: str,
        value: Any,
        importance: str = "normal",
        tags: Iterable[str] | None = None,
    ) -> VersionRecord:
        """3.3.4's importance levels as a tag: ``importance:critical`` (or ``normal``,
        ``low``), as ``octopoda migrate`` imports them."""
        if importance not in ("critical", "normal", "low"):
            importance = "normal"
        merged = [*(tags or ()), f"importance:{importance}"]
        return self.remember(key, value, tags=merged)  # type: ignore[attr-defined,no-any-return]

    def cleanup_expired(self) -> dict[str, Any]:
        """3.3.4's sweep: ``forget_expired()`` (tombstones, history kept)."""
        done = self.forget_expired()  # type: ignore[attr-defined]
        return {"deleted": len(done), "agent_id": self._agent_id}

    def forget_by_tag(self, tag: str) -> dict[str, Any]:
        """Tombstone every key whose current value carries ``tag``, in one event."""
        keys = [item.key for item in self.search(tags=[tag], limit=None)]  # type: ignore[attr-defined]
        done = self.forget_many(keys)  # type: ignore[attr-defined]
        return {"deleted": len(done), "tag": tag, "keys": [r.key for r in done]}

    def flush(self, timeout: float = 120.0) -> dict[str, Any]:
        """Nothing to wait for: every write is durable when it returns (3.3.4 enriched
        writes in the background)."""
        return {"pending": 0, "timed_out": False}

    def shutdown(self) -> None:
        """3.3.4's name of ``close()``."""
        self.close()

    def get_loop_status(self) -> Any:
        """3.3.4's name of ``loop_status()``."""
        return self.loop_status()  # type: ignore[attr-defined]

    def get_loop_history(self, hours: float = 24) -> Any:
        """3.3.4's name of ``loop_history(since=now - hours)``."""
        return self.loop_history(since=self._now() - float(hours) * 3600.0)  # type: ignore[attr-defined]

    def get_stats(self) -> Any:
        """3.3.4's name of ``stats()``."""
        return self.stats()  # type: ignore[attr-defined]

    # -- tasks: handoff, claim, complete ----------------------------------------------------

    def handoff(self, task_id: str, to_agent: str, payload: Any) -> Event:
        """Hand task ``task_id`` to ``to_agent``: a recorded handoff (``record_handoff``),
        delivered as a ``handoff`` message that ``claim_task`` reads."""
        content = {"task_id": task_id, "payload": payload}
        return self.record_handoff(to_agent, content)  # type: ignore[attr-defined,no-any-return]

    def _task(self, task_id: str) -> Task:
        for row in reversed(self._store.messages(recipient=self._agent_id)):
            if row.message_type != "handoff":
                continue
            body = json.loads(row.body)
            if isinstance(body, dict) and body.get("task_id") == task_id:
                return Task(task_id, body.get("payload"), True, row.sender, row.id)
        return Task(task_id, None, False)

    def claim_task(self, task_id: str) -> Task:
        """The task handed to this agent under ``task_id`` (exact id; ``found=False`` when
        there is none); claiming marks its message read (an audited event)."""
        task = self._task(task_id)
        row = None if task.message_id is None else self._store.message(task.message_id)
        if row is not None and row.read_at is None:
            self.mark_read(row.id)  # type: ignore[attr-defined]
        return task

    def complete_task(self, task_id: str, result: Any) -> Task:
        """Report ``result`` to the agent that handed ``task_id`` over (a ``task_complete``
        message); ``found=False`` (and nothing sent) when no such task was handed here."""
        task = self._task(task_id)
        if task.found and task.from_agent is not None:
            body = {"task_id": task_id, "result": result}
            self.send_message(task.from_agent, body, "task_complete")  # type: ignore[attr-defined]
        return task

    # -- no equivalent ----------------------------------------------------------------------

    def _replaced(self, name: str) -> NoReturn:
        raise NotSupported(
            f"AgentRuntime.{name}() was an Octopoda 3.3.4 method with no equivalent here;"
            f" use {REPLACED[name]} (docs/migrating.md)"
        )

    def related(self, entity_name: str) -> NoReturn:
        self._replaced("related")

    def detect_conflicts(self, key: str, new_value: Any, threshold: float = 0.7) -> NoReturn:
        self._replaced("detect_conflicts")

    def remember_safe(self, key: str, value: Any, *args: Any, **kwargs: Any) -> NoReturn:
        self._replaced("remember_safe")

    def share_safe(self, key: str, value: Any, space: str = "global") -> NoReturn:
        self._replaced("share_safe")

    def subscribe_shared(self, space: str, callback: Any) -> NoReturn:
        self._replaced("subscribe_shared")

    def search_filtered(self, *args: Any, **kwargs: Any) -> NoReturn:
        self._replaced("search_filtered")

    def usage_analytics(self) -> NoReturn:
        self._replaced("usage_analytics")

    def get_brain_status(self) -> NoReturn:
        self._replaced("get_brain_status")

    def get_dashboard_url(self) -> NoReturn:
        self._replaced("get_dashboard_url")
