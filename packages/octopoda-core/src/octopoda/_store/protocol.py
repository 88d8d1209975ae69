"""The store protocol: the few primitives every backend implements (its docstring is the
contract; ``octopoda.testing.StoreConformance`` checks it).

Memory rows are append-only versions ``(namespace, key, version)``; each records the
``seq`` of the event that wrote it. Every change commits together with exactly one event
of the acting agent (:meth:`Store.commit`), in one transaction: there is no write without
its event and no event for a write that did not happen. Reads never write. Convenience (TTL,
snapshots, restore, export, health) lives in the runtime above this protocol.

A backend reads what a commit depends on inside its transaction, lets the commit planner
(:func:`~octopoda._store.planner.plan_commit`) apply the rules of a write, and executes the
plan; it never re-derives the rules.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol, runtime_checkable

from .._audit.signing import SignedHead
from .._records import Event
from .._search.embedders import Embedder
from .ops import MemoryWrite, Op
from .rows import (
    AgentRow,
    AuditedRows,
    ConflictRow,
    MessageRow,
    RunActivityRow,
    RunRow,
    SnapshotRow,
    SpaceRow,
    StoredRow,
)
from .vector_reads import VectorModel

__all__ = ["Store"]


@runtime_checkable
class Store(Protocol):
    """What a backend provides: one write primitive (:meth:`commit`) and the reads.

    The contract (``octopoda.testing.StoreConformance`` is its executable form):

    * a commit is one transaction, durable once it returns; one that raises (the pipeline's
      own errors included) leaves the store unchanged;
    * per agent, event seqs are 1, 2, 3, ... without gaps, each event's ``prev_hash`` the
      hash of the one before (``GENESIS_HASH`` first); per key, versions likewise;
    * the rules of a write (next version, compare-and-set, stale write -> conflict row,
      space membership, the operations' preconditions, a taken snapshot name) are those
      of :func:`~octopoda.store.plan_commit`, with its errors, whatever the backend;
    * an event's ``payload["run_id"]`` (a str) is its run: ``events(run_id=...)`` and
      ``runs`` find it, and a message sent with it (``SendMessage.run_id``) keeps it;
    * keys and names are exact: case-sensitive, compared by code point, never by prefix;
    * reads never write;
    * driver errors never leave the store raw: they become ``StorageError`` (or
      ``InvalidInput`` for text the backend cannot hold).
    """

    @property
    def url(self) -> str: ...

    def commit(
        self,
        event: Event,
        writes: Sequence[MemoryWrite],
        pipeline: Callable[[Event], Event],
        *,
        snapshot: str | None = None,
        replace_snapshot: bool = False,
        status: tuple[str, str | None] | None = None,
        ops: Sequence[Op] = (),
        expected_seq: int | None = None,
    ) -> tuple[Event, list[int]]:
        """Append ``writes`` and ``event`` in one transaction.

        Inside it: assign each write its next version, set ``event.seq``/``event.prev_hash``
        from the agent's head, record the writes in ``event.payload["writes"]``, run
        ``pipeline(event)`` (which sets the hash), store rows and event, move the head, and
        record ``snapshot`` (a name) at the event's seq when given (moving an existing one
        only with ``replace_snapshot``; otherwise a taken name raises ``InvalidInput``).
        With ``status`` (``(status, reason)``), set the agent's status in the same transaction.
        ``ops`` (spaces, conflict resolutions, messages, erasures) are checked before the
        pipeline runs, and what they create is recorded in the payload (``message_id``,
        ``erased``, a write's ``conflict_id``), so the audit chain hashes it.
        ``expected_seq``: raise ``VersionConflict`` unless the agent's head is still at that
        seq (optimistic concurrency for read-then-write operations such as restore).
        Returns the stored event and the versions assigned, in the order of ``writes``.
        """
        ...

    def latest(self, namespace: str, key: str, as_of_seq: int | None = None) -> StoredRow | None:
        """The newest version of ``key`` (written at or before ``as_of_seq`` when given)."""
        ...

    def version(self, namespace: str, key: str, version: int) -> StoredRow | None: ...

    def history(self, namespace: str, key: str, limit: int | None = None) -> list[StoredRow]:
        """Every version (or the newest ``limit``), newest first."""
        ...

    def current(
        self,
        namespace: str,
        *,
        prefix: str = "",
        tags: Sequence[str] = (),
        as_of_seq: int | None = None,
        now: float | None = None,
        limit: int | None = None,
        offset: int = 0,
        include_dead: bool = False,
        kinds: Sequence[str] = (),
    ) -> list[StoredRow]:
        """Latest version per key (as of ``as_of_seq``), ordered by key.

        Without ``include_dead``, tombstones, erased versions and versions expired at ``now``
        are left out (a key whose latest version then is erased has no value then). With
        ``tags``, only versions carrying every one of them; with ``kinds``, only versions
        whose kind is one of them (a version without a kind is then left out).
        """
        ...

    def search(
        self,
        namespace: str,
        terms: Sequence[str],
        *,
        prefix: str = "",
        tags: Sequence[str] = (),
        now: float | None = None,
        limit: int | None = None,
        offset: int = 0,
        kinds: Sequence[str] = (),
    ) -> list[tuple[StoredRow, float]]:
        """Current values (as :meth:`current` without ``include_dead``) whose text holds
        any of ``terms`` (lower-cased words: letters and digits only), best first, each
        with its relevance (> 0, higher is better; the scale is the backend's).

        The text of a version is its key and the strings of its value
        (:func:`octopoda.search.document_text`). A returned write is found at once (the SQL
        stores bring their index up to date before they query); a tombstoned or erased
        key is not.
        """
        ...

    def index_vectors(self, embedder: Embedder) -> int:
        """Embed the current value of every key written since the last call and store the
        vectors (one per key, of its current version); the number embedded. The embedder
        runs with no lock or transaction held. Another model than the stored vectors'
        raises :class:`~octopoda.EmbedderMismatch` (``vector_reads.py``)."""
        ...

    def search_vectors(
        self,
        namespace: str,
        vector: Sequence[float],
        *,
        model: str | None = None,
        prefix: str = "",
        tags: Sequence[str] = (),
        now: float | None = None,
        limit: int = 10,
        kinds: Sequence[str] = (),
    ) -> list[tuple[StoredRow, float]]:
        """Current values (as :meth:`search`) with a vector of their current version,
        best first by cosine similarity to ``vector``, each with the cosine."""
        ...

    def put_vectors(
        self,
        namespace: str,
        items: Sequence[tuple[str, int, Sequence[float]]],
        *,
        model: str,
    ) -> None:
        """Store caller-made vectors ``(key, version, vector)`` of model ``model``."""
        ...

    def vector_model(self) -> VectorModel | None:
        """The name and dimension of the stored vectors' model (None: no vectors)."""
        ...

    def reset_vectors(self) -> None:
        """Drop every vector: the next :meth:`index_vectors` embeds everything again."""
        ...

    def all_versions(self, namespace: str) -> Iterator[StoredRow]:
        """Every version of every key, by key then version."""
        ...

    def events(
        self,
        agent: str,
        *,
        after_seq: int = 0,
        until_seq: int | None = None,
        since: float | None = None,
        until: float | None = None,
        kinds: Sequence[str] = (),
        limit: int | None = None,
        run_id: str | None = None,
    ) -> Iterator[Event]:
        """The agent's events in seq order (with ``run_id``: only that run's, the events
        whose ``payload["run_id"]`` it is)."""
        ...

    def audited_rows(self, agent: str) -> AuditedRows:
        """The rows outside memory that ``agent``'s events determine, as stored, for
        ``audit.verify`` (:mod:`octopoda._store.audited_reads` says which): its snapshots,
        runs, the spaces it created, the conflicts it recorded or resolved, and (lazily,
        by id) the messages it sent or received."""
        ...

    def chain_rows(self, agent: str, after_seq: int = 0) -> Iterator[tuple[Any, ...]]:
        """Raw event rows ``(seq, time, kind, payload_text, prev_hash, hash)`` of ``agent`` in
        seq order, without parsing payloads (for verification)."""
        ...

    def agent(self, agent: str) -> AgentRow | None: ...

    def agents(self) -> list[AgentRow]: ...

    def agent_and_run(self, agent: str, run_id: str) -> tuple[AgentRow | None, RunRow | None]:
        """The agent's row and the status row of its run ``run_id`` (None: that run was
        never paused), in one statement: what the breaker reads before every tool call."""
        ...

    def run_activity(self, agent: str, run_id: str) -> RunActivityRow | None:
        """The agent's run ``run_id`` with its activity and status, as :meth:`runs` lists
        it (None: no event of the agent carries that run id)."""
        ...

    def runs(
        self, agent: str, *, status: str | None = None, limit: int | None = None
    ) -> list[RunActivityRow]:
        """The agent's runs (the run ids its events carry), the most recently active first,
        each with its activity and status (only those of ``status`` when given)."""
        ...

    def snapshot(self, agent: str, name: str) -> SnapshotRow | None: ...

    def snapshots(self, agent: str) -> list[SnapshotRow]: ...

    def space(self, name: str) -> SpaceRow | None: ...

    def spaces(self) -> list[SpaceRow]: ...

    def conflicts(
        self, namespace: str, *, key: str | None = None, status: str | None = "open"
    ) -> list[ConflictRow]:
        """Conflicts of a namespace (a shared space), oldest first."""
        ...

    def conflict(self, conflict_id: int) -> ConflictRow | None: ...

    def messages(
        self,
        *,
        recipient: str | None = None,
        space: str | None = None,
        party: str | None = None,
        unread_only: bool = False,
        since: float | None = None,
        after_id: int = 0,
        limit: int | None = None,
    ) -> list[MessageRow]:
        """Messages to ``recipient`` (direct), broadcasts to ``space``, or (``party``) the
        newest ``limit`` direct messages sent or received by an agent; by id, oldest first."""
        ...

    def message(self, message_id: int) -> MessageRow | None: ...

    def put_signed_head(self, head: SignedHead) -> None:
        """Keep a signed head of an agent's chain."""
        ...

    def signed_heads(self, agent: str) -> list[SignedHead]:
        """The agent's signed heads, by seq."""
        ...

    def value_bytes(self, namespace: str) -> int:
        """Total size of the stored values of a namespace, all versions."""
        ...

    def close(self) -> None: ...
