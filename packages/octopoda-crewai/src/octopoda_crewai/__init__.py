"""Octopoda for CrewAI.

    from crewai import Crew, Memory
    from octopoda_crewai import OctopodaStorage

    crew = Crew(agents=..., tasks=..., memory=Memory(storage=OctopodaStorage("crew.db")))

or, process-wide, ``octopoda_crewai.install(store="crew.db")``: then ``Memory()``,
``Memory(storage="octopoda")`` and ``Crew(memory=True)`` use it.

* :class:`OctopodaStorage`: CrewAI's memory ``StorageBackend``; every record a versioned,
  audited Octopoda memory (deletes are tombstones), searched by the embeddings CrewAI gives.
* :func:`install` / :func:`uninstall`: the storage factory, registered and removed.
"""

from ._install import SPEC, install, installed, uninstall
from ._storage import (
    RECORD_PREFIX,
    EmbeddingDimensionMismatchError,
    OctopodaStorage,
    record_key,
)

__version__ = "0.1.0"

__all__ = [
    "RECORD_PREFIX",
    "SPEC",
    "EmbeddingDimensionMismatchError",
    "OctopodaStorage",
    "__version__",
    "install",
    "installed",
    "record_key",
    "uninstall",
]
