"""Octopoda for CrewAI.

    from crewai import Crew, Memory
    from octopoda_crewai import OctopodaStorage

    crew = Crew(agents=..., tasks=..., memory=Memory(storage=OctopodaStorage("crew.db")))

or, process-wide, ``octopoda_crewai.install(store="crew.db")``: then ``Memory()``,
``Memory(storage="octopoda")`` and ``Crew(memory=True)`` use it.

* :class:`OctopodaStorage`: CrewAI's memory ``StorageBackend``; every record a versioned,
  audited Octopoda memory (deletes are tombstones), searched by the embeddings CrewAI gives.
* :func:`install` / :func:`uninstall`: the storage factory, registered and removed.
* :func:`install_breaker` / :func:`uninstall_breaker`: every tool and model call of every
  crew recorded in its run (``crew:<crew id>/<kickoff>``); a run the loop policy paused ends its
  ``kickoff()`` with :class:`CrewPaused`, naming the loop and its calls.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from octopoda.integrations import lazy_names

if TYPE_CHECKING:
    from ._breaker import (
        TOOL_ERROR_PREFIX,
        CrewBreaker,
        CrewLoopDetected,
        CrewPaused,
        install_breaker,
        uninstall_breaker,
    )
    from ._events import crew_run_id
    from ._install import SPEC, install, installed, uninstall
    from ._storage import (
        RECORD_PREFIX,
        EmbeddingDimensionMismatchError,
        OctopodaStorage,
        record_key,
    )

# The names are imported on first use (PEP 562): importing the package, or its
# ``_integration`` module (the ``octopoda.integrations`` entry point, which ``octopoda.init``
# loads in every program), does not import crewai.
_WHERE = {
    "TOOL_ERROR_PREFIX": "._breaker",
    "CrewBreaker": "._breaker",
    "crew_run_id": "._events",
    "CrewLoopDetected": "._breaker",
    "CrewPaused": "._breaker",
    "install_breaker": "._breaker",
    "uninstall_breaker": "._breaker",
    "SPEC": "._install",
    "install": "._install",
    "installed": "._install",
    "uninstall": "._install",
    "RECORD_PREFIX": "._storage",
    "EmbeddingDimensionMismatchError": "._storage",
    "OctopodaStorage": "._storage",
    "record_key": "._storage",
}


__version__ = "0.1.0"

__all__ = [
    "RECORD_PREFIX",
    "SPEC",
    "TOOL_ERROR_PREFIX",
    "CrewBreaker",
    "CrewLoopDetected",
    "CrewPaused",
    "EmbeddingDimensionMismatchError",
    "OctopodaStorage",
    "__version__",
    "crew_run_id",
    "install",
    "install_breaker",
    "installed",
    "record_key",
    "uninstall",
    "uninstall_breaker",
]

__getattr__, __dir__ = lazy_names(__name__, _WHERE, __all__)
