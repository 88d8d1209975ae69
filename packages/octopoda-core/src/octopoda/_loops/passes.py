"""What ping-pong reads about other agents: an agent's recent passes (``PassLog``), a shared
key's recent writers (``key_history``) and whether a partner's tool calls told it anything
(``partner_work``). All come from the store, so agents in other processes count."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .._records import Event
from .._store import stored_sha256
from .gists import content_gist, informative
from .payloads import tool_call_of
from .ping_pong import Pass

if TYPE_CHECKING:
    from .._store import Store

__all__ = ["WINDOW", "PassLog", "key_history", "partner_work"]

WINDOW = 48
"""The passes read: an agent's newest 48 handoffs and messages, sent or received."""


class PassLog:
    """The recent handoffs and messages ``agent`` sent or received (its passes), read from
    the store at each pass, in store order (by message id)."""

    __slots__ = ("_gists", "_store", "agent")

    def __init__(self, agent: str, store: Store) -> None:
        self.agent = agent
        self._store = store
        self._gists: dict[str, str] = {}  # message body digest -> content gist

    def committed(self, seq: int) -> None:
        """This runtime committed the agent's event ``seq`` (the guard says so)."""

    def passes(self, event: Event) -> Sequence[Pass]:
        """The agent's newest passes, oldest first (the one ``event`` is storing included
        where the store shows it within its commit)."""
        rows = self._store.messages(party=self.agent, limit=WINDOW)
        gists = self._gists
        if len(gists) > 4096:
            gists.clear()
        for r in rows:
            if r.body_sha256 not in gists:
                gists[str(r.body_sha256)] = content_gist(r.body)
        return [
            (
                r.sender,
                str(r.recipient),
                gists[str(r.body_sha256)],
                r.created_at,
                (
                    r.seq,
                    "handoff" if r.message_type == "handoff" else "message_sent",
                    str(r.recipient),
                    r.body[:60],
                    r.sender,
                ),
            )
            for r in rows
        ]


def key_history(store: Store, namespace: str, key: str) -> list[Pass]:
    """The recent writes of a shared key (the last 12 versions), oldest first, as passes
    ``(author, "", value_sha256, time, ref)``."""
    rows = store.history(namespace, key, 12)
    return [
        (
            str(r.author),
            "",
            str(stored_sha256(r)),
            r.created_at,
            (r.seq, "shared_write", key, f"v{r.version}", str(r.author)),
        )
        for r in reversed(rows)
    ]


def partner_work(store: Store, agent: str, start: int | None, middle: int, end: int) -> bool:
    """Whether ``agent`` made a tool call that told it something (a result more than an
    acknowledgement or the time: ``informative``) between its events ``middle`` and
    ``end`` that it had not made between ``start`` and ``middle``."""

    def calls(after: int, until: int) -> set[tuple[str, str, str]]:
        found = set()
        for e in store.events(
            agent, after_seq=after, until_seq=until, kinds=("tool_call",), limit=128
        ):
            p = tool_call_of(e)
            if "error_sha256" not in p and informative(str(p.get("result_preview")), e.time):
                args = p.get("args_gist") or p["args_sha256"]
                found.add((p["name"], args, str(p.get("result_gist") or p.get("result_sha256"))))
        return found

    earlier = calls(start, middle) if start is not None else set()
    return not calls(middle, end) <= earlier
