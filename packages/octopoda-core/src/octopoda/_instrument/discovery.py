"""Which integrations are installed, and which framework versions: read from the
distributions' metadata folders on ``sys.path`` without importing ``importlib.metadata``;
(:class:`~.status.IntegrationStatus` is what ``init`` found of each).

``importlib.metadata`` costs about 40 ms to import, more than the whole budget of an
``octopoda.init()`` that finds nothing to do. The two facts ``init`` needs are cheap to read
directly: a distribution's name and version are in its ``*.dist-info`` (or ``*.egg-info``)
folder's name or ``METADATA``/``PKG-INFO`` header, and its entry points in
``entry_points.txt``. As in ``importlib.metadata``, the first distribution of a name on
``sys.path`` wins.
"""

from __future__ import annotations

import os
import sys

from .._errors import ConfigError

TYPE_CHECKING = False  # (not typing's: an init that finds nothing loads no typing)
if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = [
    "Distribution",
    "EntryPoint",
    "distributions",
    "entry_points",
    "normalize",
    "parse_release",
    "satisfies",
]


class _Record:
    """A small record of strings, by position in ``_fields`` (typing's ``NamedTuple`` costs
    more to import than all of this module may)."""

    __slots__ = ()
    _fields: tuple[str, ...] = ()

    def __init__(self, *values: str) -> None:
        for name, value in zip(self._fields, values, strict=True):
            setattr(self, name, value)

    def _values(self) -> tuple[str, ...]:
        return tuple(getattr(self, name) for name in self._fields)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _Record) or type(other) is not type(self):
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        pairs = zip(self._fields, self._values(), strict=True)
        return f"{type(self).__name__}({', '.join(f'{n}={v!r}' for n, v in pairs)})"


class Distribution(_Record):
    """An installed distribution: ``name`` normalized (PEP 503: lower case, runs of -_. as
    one -), ``version``, ``path`` (its metadata folder)."""

    _fields = ("name", "version", "path")
    __slots__ = _fields
    name: str
    version: str
    path: str


class EntryPoint(_Record):
    """An entry point: ``name``, ``value`` (``"module:attribute"``), ``distribution``."""

    _fields = ("name", "value", "distribution")
    __slots__ = _fields
    name: str
    value: str
    distribution: str


_SUFFIXES = (".dist-info", ".egg-info")


def normalize(name: str) -> str:
    """A distribution name as PEP 503 compares it (no ``re``: it is not loaded yet)."""
    name = name.lower().replace("_", "-").replace(".", "-")
    while "--" in name:
        name = name.replace("--", "-")
    return name


def _header_version(folder: str) -> str:
    for meta in ("METADATA", "PKG-INFO"):
        try:
            with open(os.path.join(folder, meta), encoding="utf-8", errors="replace") as f:
                for line in f:
                    if line.startswith("Version:"):
                        return line.split(":", 1)[1].strip()
                    if not line.strip():
                        break  # the headers end at the first blank line
        except OSError:
            continue
    return ""


def _distribution(parent: str, entry: str) -> Distribution | None:
    stem = entry[: -len(".dist-info")] if entry.endswith(".dist-info") else entry[:-9]
    name, _, rest = stem.partition("-")
    version = rest.split("-", 1)[0]
    folder = os.path.join(parent, entry)
    if not version:
        version = _header_version(folder)
    if not name or not version:
        return None
    return Distribution(normalize(name), version, folder)


def distributions(path: Iterable[str] | None = None) -> dict[str, Distribution]:
    """Every distribution installed on ``path`` (default ``sys.path``), by normalized name."""
    found: dict[str, Distribution] = {}
    for parent in sys.path if path is None else path:
        try:
            entries = os.listdir(parent or ".")
        except OSError:  # a zip file, a missing folder
            continue
        for entry in entries:
            if entry.endswith(_SUFFIXES):
                dist = _distribution(parent or ".", entry)
                if dist is not None and dist.name not in found:
                    found[dist.name] = dist
    return found


def entry_points(group: str, dists: dict[str, Distribution]) -> list[EntryPoint]:
    """The entry points of ``group`` that ``dists`` declare, in distribution name order."""
    points: list[EntryPoint] = []
    header = f"[{group}]"
    for name in sorted(dists):
        try:
            with open(os.path.join(dists[name].path, "entry_points.txt"), encoding="utf-8") as f:
                text = f.read()
        except OSError:
            continue
        if header not in text:
            continue
        section = False
        for raw in text.splitlines():
            line = raw.strip()
            if line.startswith("["):
                section = line == header
            elif section and "=" in line and not line.startswith(("#", ";")):
                key, _, value = line.partition("=")
                points.append(EntryPoint(key.strip(), value.split("[", 1)[0].strip(), name))
    return points


def parse_release(version: str) -> tuple[int, ...]:
    """The release numbers a version starts with: ``"1.15.30"`` and ``"1.15.30rc1"`` are
    ``(1, 15, 30)``, ``"0.3.70.post1"`` is ``(0, 3, 70)``."""
    import re

    match = re.match(r"\s*v?(\d+(?:\.\d+)*)", version)
    if match is None:
        raise ConfigError(f"{version!r} is not a version (expected release numbers: 1.15.30)")
    return tuple(int(part) for part in match.group(1).split("."))


_OPS = {
    ">=": lambda a, b: a >= b,
    "<=": lambda a, b: a <= b,
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    ">": lambda a, b: a > b,
    "<": lambda a, b: a < b,
}


def satisfies(version: str, supported: str) -> bool:
    """Whether ``version`` meets ``supported``: comma-joined comparisons of release numbers
    (``">=1.10.1,<1.16"``; ``""`` accepts every version). Releases compare padded with
    zeros, so ``1.16.0rc1`` is ``1.16`` and outside ``<1.16``."""
    import re

    release = parse_release(version)
    for clause in filter(None, (part.strip() for part in supported.split(","))):
        match = re.fullmatch(r"(>=|<=|==|!=|>|<)\s*(\d+(?:\.\d+)*)", clause)
        if match is None:
            raise ConfigError(
                f"cannot read the version range {supported!r}: each comma-joined clause is an"
                " operator (>=, >, <=, <, ==, !=) and release numbers, as in '>=1.10,<2'"
            )
        bound = parse_release(match.group(2))
        width = max(len(release), len(bound))
        left = release + (0,) * (width - len(release))
        right = bound + (0,) * (width - len(bound))
        if not _OPS[match.group(1)](left, right):
            return False
    return True
