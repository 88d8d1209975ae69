"""Names a package loads on first use (PEP 562), so that importing it stays cheap."""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # (not typing's: `import octopoda` loads neither it nor collections)
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping

__all__ = ["lazy_names"]


def lazy_names(
    package: str, where: Mapping[str, str], public: Iterable[str]
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """A package's module-level ``__getattr__`` and ``__dir__``: each name of ``where`` is
    imported from its module (``where[name]``, relative to ``package``'s package) when first used,
    then kept in the package's namespace; ``dir()`` lists ``public``. Use it as::

        __getattr__, __dir__ = lazy_names(__name__, {"Thing": "._things"}, __all__)
    """
    namespace = sys.modules[package].__dict__
    names = sorted(public)
    anchor = namespace.get("__package__") or package  # (a module's: its package)

    def __getattr__(name: str) -> object:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        from importlib import import_module

        value = getattr(import_module(module, anchor), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return list(names)

    return __getattr__, __dir__
