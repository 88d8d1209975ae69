"""What ping-pong reads about other agents: an agent's recent passes (``PassLog``), a shared
key's recent writers (``key_history``) and whether a partner's tool calls told it anything
(``partner_work``). All come from the store, so agents in other processes count."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from .._records import Event
from .._store import MessageRow, stored_sha256
from .gists import content_gist, informative
from .paraphrase import PREVIEW_CHARS
from .payloads import PassPayload, tool_call_of
from .ping_pong import Pass

if TYPE_CHECKING:
    from .._store import Store

__all__ = ["WINDOW", "PassLog", "key_history", "partner_work", "preview"]

WINDOW = 48
"""The passes kept: an agent's newest 48 handoffs and messages, sent or received."""


class PassLog:
    """The recent handoffs and messages ``agent`` sent or received (its passes), in store
    order (by message id), kept in memory and topped up from the store at each pass.

    The first pass reads the newest ``WINDOW`` from the store. After that, the agent's own
    passes come from its events as they are stored, in the order of its chain (the one
    being stored included, which PostgreSQL does not show until its commit ends); they
    are read from the store again only when another runtime stored events of this agent
    meanwhile (a gap in the seqs committed here: ``committed``). Messages to the agent are
    read after the newest one known: a store makes the messages to one agent appear in id
    order (what polling ``read_messages(after_id=...)`` relies on; PostgreSQL, which draws
    ids as commits begin and so can show ids out of order overall, serialises the commits
    to one inbox), so none is missed. On SQLite, where one writer at a time means all ids
    appear in order, a pass whose message id is the next after this agent's last needs
    no read at all: nothing was stored in between.

    Each pass keeps the run it was sent in (its event's, or its message row's
    ``run_id``). A run's ping-pong sees the passes of that run and those sent without a run
    (``of_run``); the default run sees only those: the same handoff made once in each of
    three conversations is no ping-pong.
    """

    __slots__ = (
        "_gists",
        "_ids",
        "_in_order",
        "_last_id",
        "_own_through",
        "_passes",
        "_received",
        "_run",
        "_runs",
        "_scoped",
        "_store",
        "agent",
    )

    def __init__(self, agent: str, store: Store) -> None:
        self.agent = agent
        self._store = store
        # SQLite stores one writer at a time, and a message's id is drawn inside its
        # commit: ids appear in order there, so a pass whose id follows this agent's last
        # one's shows that nothing was stored in between
        self._in_order = store.url.startswith("sqlite:")
        self._last_id = -1  # the message id of this agent's last pass seen here
        self._run = (0, -1)  # the newest run of seqs this runtime committed without a gap
        self._passes: list[Pass] = []  # by message id
        self._ids: list[int] = []  # their message ids
        self._runs: list[str | None] = []  # the run each was sent in
        self._scoped = 0  # how many of them were sent in a run
        self._received = 0  # the id of the newest message to this agent read
        self._own_through = -1  # the agent's own passes up to this seq are known
        self._gists: dict[str, str] = {}  # message body digest -> content gist

    def committed(self, event: Event) -> None:
        """This runtime committed the agent's ``event`` (the guard says so). A pass to
        another agent committed here that the detectors did not see (detection switched
        off for it: bench 7 does) is the next message id on SQLite, as one seen: it needs
        no read (a read of the messages to this agent would not find it either)."""
        seq = event.seq
        first, last = self._run
        self._run = (first, seq) if seq == last + 1 else (seq, seq)
        if seq > self._own_through and (event.kind == "handoff" or event.kind == "message_sent"):
            p = event.payload
            if (
                p.get("message_id") == self._last_id + 1
                and self._in_order
                and p.get("to") != self.agent
            ):
                self._last_id += 1

    def of_run(self, run_id: str | None) -> Callable[[Event], Sequence[Pass]]:
        """``passes`` as run ``run_id``'s ping-pong reads them: its own and the unscoped."""

        def exchange(event: Event) -> Sequence[Pass]:
            passes = self.passes(event)
            if not self._scoped:
                return passes
            return [p for p, r in zip(passes, self._runs, strict=True) if r is None or r == run_id]

        return exchange

    def passes(self, event: Event) -> Sequence[Pass]:
        """The agent's newest passes, oldest first, the one ``event`` is storing included
        (kept here: read, do not change), of every run."""
        first, last = self._run
        own = self._own_through
        seq = event.seq
        p: PassPayload = event.payload  # type: ignore[assignment]  # (pass_of: every pass)
        message_id = p.get("message_id")
        if own < 0 or seq <= own or (own + 1 < seq and not (first <= own + 1 and last == seq - 1)):
            # the first pass; a seq again (its first commit failed); or another runtime
            # stored events of this agent meanwhile
            self._load()
        elif not (self._in_order and message_id == self._last_id + 1):
            self._top_up()  # (else no message at all was stored since this agent's last)
        self._own_through = seq
        if message_id is None:  # (an event that did not come from a store: the newest)
            message_id = self._ids[-1] + 1 if self._ids else 1
        self._last_id = message_id
        kind = "handoff" if "handoff" in (event.kind, p.get("type")) else "message_sent"
        to = str(p["to"])
        ref = (seq, kind, to, str(p.get("preview", "")), self.agent)
        content = str(p.get("content_gist") or p.get("content_sha256"))
        run = p.get("run_id")
        item = (self.agent, to, content, event.time, ref)
        self._add(message_id, item, to == self.agent, run if type(run) is str else None)
        return self._passes

    def _load(self) -> None:
        self._passes, self._ids, self._runs, self._received, self._scoped = [], [], [], 0, 0
        for row in self._store.messages(party=self.agent, limit=WINDOW):
            self._add_row(row)

    def _top_up(self) -> None:
        floor = self._received
        if len(self._ids) >= WINDOW and self._ids[0] > floor:
            floor = self._ids[0]  # (messages older than every pass kept do not matter)
        for row in self._store.messages(recipient=self.agent, after_id=floor):
            self._add_row(row)

    def _add_row(self, row: MessageRow) -> None:
        ids = self._ids
        if ids and row.id <= ids[-1] and ids[bisect_left(ids, row.id)] == row.id:
            return  # known
        gists = self._gists
        gist = gists.get(row.body_sha256)
        if gist is None:
            if len(gists) > 4096:
                gists.clear()
            gist = gists[row.body_sha256] = content_gist(row.body)
        kind = "handoff" if row.message_type == "handoff" else "message_sent"
        to = str(row.recipient)
        ref = (row.seq, kind, to, preview(row.body), row.sender)
        item = (row.sender, to, gist, row.created_at, ref)
        self._add(row.id, item, to == self.agent, row.run_id)

    def _add(self, message_id: int, item: Pass, received: bool, run: str | None) -> None:
        """Insert a pass by its message id (once), keeping the newest ``WINDOW``."""
        ids = self._ids
        if not ids or message_id > ids[-1]:
            at = len(ids)
        else:
            at = bisect_left(ids, message_id)
            if ids[at] == message_id or (at == 0 and len(ids) >= WINDOW):
                return  # known, or older than every pass kept
        ids.insert(at, message_id)
        self._passes.insert(at, item)
        self._runs.insert(at, run)
        self._scoped += run is not None
        if received and message_id > self._received:
            self._received = message_id
        if len(ids) > WINDOW:
            ids.pop(0)
            self._passes.pop(0)
            self._scoped -= self._runs.pop(0) is not None


def preview(body: str) -> str:
    """A message body as its event's preview shows it (cut at 120 characters)."""
    return body if len(body) <= PREVIEW_CHARS else body[: PREVIEW_CHARS - 3] + "..."


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
