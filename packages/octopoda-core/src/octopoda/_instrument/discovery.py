"""Which integrations are installed, and which framework versions: read from the
distributions' metadata folders on ``sys.path`` without importing ``importlib.metadata``;
and :class:`IntegrationStatus`, what ``init`` found of each.

``importlib.metadata`` costs about 40 ms to import, more than the whole budget of an
``octopoda.init()`` that finds nothing to do. The two facts ``init`` needs are cheap to read
directly: a distribution's name and version are in its ``*.dist-info`` (or ``*.egg-info``)
folder's name or ``METADATA``/``PKG-INFO`` header, and its entry points in
``entry_points.txt``. As in ``importlib.metadata``, the first distribution of a name on
``sys.path`` wins.
"""

import os
import sys
from collections.abc import Iterable
from typing import NamedTuple

from .._errors import ConfigError

__all__ = [
    "Distribution",
    "EntryPoint",
    "IntegrationStatus",
    "distributions",
    "entry_points",
    "normalize",
    "parse_release",
    "satisfies",
]


class Distribution(NamedTuple):
    name: str  # normalized (PEP 503): lower case, runs of -_. as one -
    version: str
    path: str  # the metadata folder


class EntryPoint(NamedTuple):
    name: str
    value: str  # "module:attribute"
    distribution: str


class IntegrationStatus(NamedTuple):
    """One integration as ``init`` found it.

    ``state``: ``"active"`` (hooked), ``"waiting"`` (hooked when ``modules`` are imported),
    ``"absent"`` (its framework is not installed), ``"unsupported"`` (the installed version
    is outside ``supported``), ``"disabled"`` (``$OCTOPODA_DISABLED_INTEGRATIONS``),
    ``"failed"`` (the entry point or ``activate`` raised: ``detail`` says what).
    """

    name: str
    adapter: str
    framework: str
    version: str | None
    supported: str
    state: str
    detail: str = ""


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
