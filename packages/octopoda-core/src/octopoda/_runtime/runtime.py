"""AgentRuntime: one agent's versioned, audited memory on a store, its verbs put together."""

from __future__ import annotations

from .actions import ActionsMixin
from .collab import CollabMixin
from .compat import LegacyMixin
from .consolidate import ConsolidateMixin
from .decisions import DecisionsMixin
from .history import HistoryMixin
from .memory import MemoryMixin
from .runs import RunsMixin
from .search import SearchMixin
from .shared_search import SharedSearchMixin

__all__ = ["AgentRuntime"]


class AgentRuntime(
    SearchMixin,
    MemoryMixin,
    HistoryMixin,
    DecisionsMixin,
    ActionsMixin,
    RunsMixin,
    SharedSearchMixin,
    CollabMixin,
    ConsolidateMixin,
    LegacyMixin,  # 3.3.4's method names (last: any other method of the name wins)
):
    """One agent's memory: every write a new version, every change an audited event.

    ``store`` is a path, ``"sqlite:///..."`` URL, ``":memory:"``, an open
    :class:`~octopoda.SqliteStore`, or None for the default
    (``$OCTOPODA_HOME/octopoda.db``, else ``~/.octopoda/octopoda.db``).
    ``processors`` run on every event of this agent before it is chained and stored.
    ``policy`` (a :class:`~octopoda.LoopPolicy`) turns loop detection into intervention;
    by default loops are detected and logged only.
    ``embedder`` makes ``recall_similar`` hybrid (by meaning and by words): an
    :class:`~octopoda.Embedder`, a callable from texts to vectors, ``"octopoda-embed"`` (the
    ``[ai]`` extra's MiniLM, shipped in the package: nothing is downloaded), or None for
    ``OCTOPODA_EMBEDDER`` if set; without one, search is lexical.
    ``max_value_bytes``: the largest value (or message body) a write takes, in bytes of its
    JSON text or raw bytes; default ``$OCTOPODA_MAX_VALUE_BYTES``, else 256 MiB; at most
    512 MiB.
    """

    def __enter__(self) -> AgentRuntime:
        return self
