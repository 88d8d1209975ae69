"""Regular expressions compiled on first use, not at import.

Compiling the core's 30-odd patterns cost about a tenth of ``from octopoda import
AgentRuntime``, and most programs use few of them (the paraphrase rules only once a
cheap check found a candidate). ``LazyPattern`` compiles on the first call of one of its
methods and keeps the compiled pattern's bound methods in its slots, so later calls cost
what a compiled pattern's do (one attribute lookup, then the call).
"""

import re
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["LazyPattern"]

_METHODS = ("findall", "finditer", "fullmatch", "match", "search", "split", "sub", "subn")


class LazyPattern:
    """``re.compile(pattern, flags)``, done when a method is first called."""

    __slots__ = ("_flags", "_pattern", *_METHODS)

    findall: Callable[..., list[Any]]
    finditer: Callable[..., Iterator[re.Match[str]]]
    fullmatch: Callable[..., re.Match[str] | None]
    match: Callable[..., re.Match[str] | None]
    search: Callable[..., re.Match[str] | None]
    split: Callable[..., list[Any]]
    sub: Callable[..., str]
    subn: Callable[..., tuple[str, int]]

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self._pattern = pattern
        self._flags = flags

    @property
    def pattern(self) -> str:
        return self._pattern

    def __getattr__(self, name: str) -> Any:
        """Only called while the slots are empty: compile, fill them, answer."""
        if name not in _METHODS:
            raise AttributeError(name)
        compiled = re.compile(self._pattern, self._flags)
        for method in _METHODS:
            setattr(self, method, getattr(compiled, method))
        return getattr(compiled, name)

    def __repr__(self) -> str:
        return f"LazyPattern({self._pattern!r})"
