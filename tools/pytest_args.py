"""pytest arguments for the noxfile's sessions: a session's own test selection joined to the
user's, and which markers an adapter's cell leaves out. Pure functions (no nox), so that
tests/test_dev_tools.py can run them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

__all__ = ["cell_args", "narrowed"]

SELECTORS = ("-k", "-m")
"""pytest's selection options: of each, pytest keeps only the last one given."""


def narrowed(ours: dict[str, str], posargs: Iterable[str]) -> list[str]:
    """``posargs`` after the session's own selection ``ours`` (``{"-k": expr, "-m": expr}``),
    each joined to the user's own of that option as ``(ours) and (theirs)``: a ``-k`` or
    ``-m`` of the user's narrows what the session selects instead of replacing it (pytest
    keeps only the last of each, so a user's ``-k`` would bring back the tests the session
    leaves out). Takes ``-k EXPR`` and ``-kEXPR``."""
    theirs: dict[str, str] = {}
    rest: list[str] = []
    args = iter(posargs)
    for arg in args:
        flag = arg[:2]
        if flag in ours and flag in SELECTORS:
            theirs[flag] = arg[2:] or next(args, "")
        else:
            rest.append(arg)
    selection: list[str] = []
    for flag, expr in ours.items():
        user = theirs.get(flag)
        selection += [flag, f"({expr}) and ({user})" if user else expr]
    return [*selection, *rest]


def cell_args(
    python: str,
    *,
    newest: bool,
    full_python: str,
    elsewhere: Sequence[str] = (),
    older: Sequence[str] = (),
    posargs: Iterable[str] = (),
) -> list[str]:
    """pytest's arguments for one cell of an adapter's matrix: the newest release on
    ``full_python`` runs every test; the newest on another Python leaves out the tests
    marked with one of ``elsewhere`` (they behave the same from every Python), an older
    release those marked with one of ``older``; then the user's ``posargs`` (a ``-m`` of
    theirs narrows the cell's)."""
    skip = (() if python == full_python else elsewhere) if newest else older
    ours = {"-m": " and ".join(f"not {marker}" for marker in skip)} if skip else {}
    return narrowed(ours, posargs) if ours else list(posargs)
