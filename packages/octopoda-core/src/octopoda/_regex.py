"""Regular expressions compiled on first use, not at import.

Compiling the core's module-level patterns cost about a twentieth of ``from octopoda
import AgentRuntime``, and most programs use few of them (the paraphrase rules only once
a cheap check found a candidate). ``lazy_pattern`` returns a stand-in that compiles on
first use and then puts the compiled pattern in its place in the module that defined it,
so later calls cost exactly what a compiled pattern's do (a stand-in's attribute lookup
costs ~350 instructions more, which hot paths such as the volatile-field masks at record
time cannot afford).
"""

import re
import sys
from typing import Any, cast

__all__ = ["lazy_pattern"]


class _LazyPattern:
    """``re.compile(pattern, flags)`` on the first attribute looked up."""

    __slots__ = ("_compiled", "_flags", "_globals", "_pattern")

    def __init__(self, pattern: str, flags: int, module_globals: dict[str, Any]) -> None:
        self._pattern = pattern
        self._flags = flags
        self._globals = module_globals
        self._compiled: re.Pattern[str] | None = None

    def __getattr__(self, name: str) -> Any:
        """Every attribute but the slots: compile (once), take this stand-in's place in
        its module's globals, answer from the compiled pattern."""
        compiled = self._compiled
        if compiled is None:
            compiled = self._compiled = re.compile(self._pattern, self._flags)
            module_globals = self._globals
            for key, value in list(module_globals.items()):
                if value is self:
                    module_globals[key] = compiled
        return getattr(compiled, name)

    def __repr__(self) -> str:
        return f"lazy_pattern({self._pattern!r})"


def lazy_pattern(pattern: str, flags: int = 0) -> "re.Pattern[str]":
    """A module-level pattern compiled on first use (assign it to a module global)."""
    module_globals = sys._getframe(1).f_globals
    return cast("re.Pattern[str]", _LazyPattern(pattern, flags, module_globals))
