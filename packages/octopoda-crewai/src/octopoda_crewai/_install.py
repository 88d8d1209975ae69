"""``install()``: ``Memory(storage="octopoda")`` and a crew's default memory on Octopoda."""

from __future__ import annotations

import threading
from typing import Any

from octopoda import AgentRuntime, ConfigError
from octopoda.integrations import Target, resolve_runtime

from ._storage import OctopodaStorage

__all__ = ["SPEC", "install", "installed", "uninstall"]

SPEC = "octopoda"
"""The ``storage`` string that names Octopoda: ``Memory(storage="octopoda")``."""

DEFAULT_SPEC = "lancedb"
"""CrewAI's default ``storage`` string (``Memory()``, ``Crew(memory=True)``)."""

_lock = threading.Lock()
_state: dict[str, Any] = {}


def _set_factory(factory: Any) -> None:
    try:
        from crewai.memory.storage.factory import set_memory_storage_factory
    except ImportError as exc:
        raise ConfigError(
            "this crewai has no memory storage factory (crewai.memory.storage.factory);"
            " upgrade crewai, or pass Memory(storage=OctopodaStorage(...)) instead"
        ) from exc
    set_memory_storage_factory(factory)


def install(store: Target = None, *, agent_id: str = "crewai-memory", default: bool = True) -> None:
    """Register Octopoda as CrewAI's memory storage, process-wide: ``Memory(storage=
    "octopoda")`` gets an :class:`OctopodaStorage` on ``store`` (agent ``agent_id``), and so
    do ``Memory()`` and ``Crew(memory=True)`` when ``default`` is true (CrewAI's default
    spec, ``"lancedb"``). Other specs (a path, ``"qdrant-edge"``) keep CrewAI's own storage:
    the factory returns None for them. Idempotent: installing the same again does nothing;
    other arguments replace the previous installation. :func:`uninstall` undoes it."""
    with _lock:
        key = (store if isinstance(store, str) else id(store), agent_id, default)
        if _state.get("key") == key:
            return
        _uninstall_locked()
        runtime, owned = resolve_runtime(store, agent_id)
        specs = {SPEC, DEFAULT_SPEC} if default else {SPEC}

        def factory(spec: str) -> OctopodaStorage | None:
            if spec not in specs:
                return None
            return OctopodaStorage(runtime)

        try:
            _set_factory(factory)
        except BaseException:
            if owned:
                runtime.close()
            raise
        _state.update(key=key, runtime=runtime, owned=owned, factory=factory)


def _uninstall_locked() -> bool:
    if not _state:
        return False
    from crewai.memory.storage import factory as module

    if getattr(module, "_factory", None) is _state["factory"]:
        module.set_memory_storage_factory(None)
    if _state["owned"]:
        _state["runtime"].close()
    _state.clear()
    return True


def uninstall() -> bool:
    """Remove what :func:`install` registered (CrewAI's built-in storages again) and close
    the runtime it opened; whether anything was installed. Idempotent."""
    with _lock:
        return _uninstall_locked()


def installed() -> AgentRuntime | None:
    """The runtime :func:`install` registered, or None."""
    with _lock:
        runtime: AgentRuntime | None = _state.get("runtime")
        return runtime
