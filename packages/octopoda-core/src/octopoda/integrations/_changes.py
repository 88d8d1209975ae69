"""What changed in an agent's memory since an adapter last looked: the keys to read again,
from the agent's events (an adapter's cache catches up instead of reading every memory)."""

from __future__ import annotations

from .._runtime.runtime import AgentRuntime

__all__ = ["CHANGED_KEYS_EVENTS", "changed_keys"]

CHANGED_KEYS_EVENTS = 1000
"""At most this many events are read for :func:`changed_keys` (more: None, read it all)."""


def changed_keys(
    runtime: AgentRuntime, after_seq: int, until_seq: int, *, limit: int = CHANGED_KEYS_EVENTS
) -> set[str] | None:
    """The keys of ``runtime``'s own memory that its events after seq ``after_seq`` up to
    ``until_seq`` wrote (a new version or a tombstone: remember, forget, restore, import,
    consolidate) or erased, whichever runtime or process stored them. Every change to an
    agent's memory is in one of its events (the audit trail checks the memory rows against
    them), so a cache of the agent's memory that knew it at ``after_seq`` is current again
    once it has read these keys. None when more than ``limit`` events are to be read or a
    seq of the range cannot be read (then read the whole memory instead)."""
    if until_seq - after_seq > limit:
        return None
    keys: set[str] = set()
    expected = after_seq + 1
    events = runtime.store.events(runtime.agent_id, after_seq=after_seq, until_seq=until_seq)
    for event in events:
        if event.seq != expected:
            return None
        expected += 1
        payload = event.payload
        for field in ("writes", "erased"):
            entries = payload.get(field)
            for entry in entries if isinstance(entries, list) else ():
                if isinstance(entry, dict) and "namespace" not in entry:  # (the agent's own)
                    keys.add(str(entry.get("key")))
    return keys if expected == until_seq + 1 else None
