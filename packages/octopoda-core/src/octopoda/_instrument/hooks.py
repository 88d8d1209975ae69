"""Post-import hooks: call a function once a top-level module has finished importing.

A finder at the front of ``sys.meta_path`` answers only for the watched names: it asks the
other finders for the module's spec and wraps the loader so that, once the module's code
has run, the hooks run. ``builtins.__import__`` is never replaced, and a module that is
never imported costs nothing but one set lookup per import of a new top-level name.
The technique is wrapt's ``register_post_import_hook``, without the dependency.
"""

from __future__ import annotations

import sys
from _thread import RLock
from _thread import _local as local

TYPE_CHECKING = False  # (not typing's: an init that finds nothing loads no typing)
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from importlib.machinery import ModuleSpec
    from types import ModuleType
    from typing import Any

    Hook = Callable[[ModuleType], None]

__all__ = ["PostImportHooks"]


class _Loader:
    """The real loader, then the hooks. The module keeps the real loader as its
    ``__loader__`` and ``__spec__.loader`` (source lookups, resources, reloads)."""

    def __init__(self, hooks: PostImportHooks, loader: Any) -> None:
        self._hooks = hooks
        self._loader = loader

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        create = getattr(self._loader, "create_module", None)
        return create(spec) if create is not None else None

    def exec_module(self, module: ModuleType) -> None:
        module.__loader__ = self._loader
        if module.__spec__ is not None:
            module.__spec__.loader = self._loader
        self._loader.exec_module(module)
        self._hooks.fire(module.__name__)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)


class PostImportHooks:
    """``add(name, hook)`` runs ``hook(module)`` once top-level module ``name`` is imported
    (at once if it already is). ``close()`` takes the finder off ``sys.meta_path``.

    Duck-typed as a meta path finder and a loader: ``importlib.abc`` alone costs more to
    import than a no-op ``init`` may take.
    """

    def __init__(self) -> None:
        self._hooks: dict[str, list[Hook]] = {}
        self._lock = RLock()
        self._resolving = local()
        self._installed = False

    def add(self, name: str, hook: Hook) -> None:
        if "." in name:
            raise ValueError(f"post-import hooks watch top-level modules, not {name!r}")
        with self._lock:
            module = sys.modules.get(name)
            if module is None:
                self._hooks.setdefault(name, []).append(hook)
                if not self._installed:
                    sys.meta_path.insert(0, self)
                    self._installed = True
                return
        hook(module)

    def watched(self) -> Sequence[str]:
        with self._lock:
            return sorted(self._hooks)

    def close(self) -> None:
        with self._lock:
            self._hooks.clear()
            if self._installed:
                if self in sys.meta_path:  # (else someone else took it off; no contextlib)
                    sys.meta_path.remove(self)
                self._installed = False

    def fire(self, name: str) -> None:
        with self._lock:
            hooks = self._hooks.pop(name, [])
        module = sys.modules.get(name)
        if module is None:
            return
        for hook in hooks:
            hook(module)

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None = None,
        target: ModuleType | None = None,
    ) -> ModuleSpec | None:
        if fullname not in self._hooks or getattr(self._resolving, "name", None) == fullname:
            return None
        self._resolving.name = fullname
        import importlib.util  # (here: contextlib and collections come with it)

        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            self._resolving.name = None
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _Loader(self, spec.loader)  # type: ignore[assignment]  # (duck-typed)
        return spec
