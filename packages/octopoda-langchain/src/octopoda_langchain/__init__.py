"""Octopoda for LangChain and LangGraph.

* :class:`OctopodaSaver`: a LangGraph checkpointer (crash resume, time travel) whose every
  checkpoint is an audited, versioned Octopoda write.
* :class:`OctopodaStore`: a LangGraph ``BaseStore`` (long-term memory: get, put, search,
  TTL) on Octopoda memory.
* :class:`OctopodaMiddleware`: a LangChain 1.x agent middleware that records every tool and
  model call, detects loops and, with a pause policy, stops the agent.
* :class:`OctopodaCallbackHandler`: the same recording for chains without ``create_agent``.
* :class:`OctopodaChatMessageHistory`: chat history for ``RunnableWithMessageHistory``.

Names load on first use, so importing one does not import the others' frameworks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from octopoda.integrations import lazy_names

__version__ = "0.1.0"

if TYPE_CHECKING:
    from ._callbacks import OctopodaCallbackHandler
    from ._history import OctopodaChatMessageHistory
    from ._middleware import OctopodaMiddleware
    from ._saver import OctopodaSaver
    from ._store import OctopodaStore

_LAZY: dict[str, str] = {
    "OctopodaCallbackHandler": "._callbacks",
    "OctopodaChatMessageHistory": "._history",
    "OctopodaMiddleware": "._middleware",
    "OctopodaSaver": "._saver",
    "OctopodaStore": "._store",
}


__all__ = [
    "OctopodaCallbackHandler",
    "OctopodaChatMessageHistory",
    "OctopodaMiddleware",
    "OctopodaSaver",
    "OctopodaStore",
    "__version__",
]

__getattr__, __dir__ = lazy_names(__name__, _LAZY, __all__)
