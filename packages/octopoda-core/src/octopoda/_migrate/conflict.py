"""The install conflict with Octopoda 3.3.4: both distributions own the ``octopoda`` package.

``pip install octopoda-core`` over ``octopoda`` 3.3.4 (or the reverse) overwrites the other's
``octopoda/__init__.py`` without a word, and uninstalling one then deletes the file the other
needs. ``import octopoda`` checks for this only when 3.3.4's top-level ``synrix_runtime``
package sits beside it (one ``stat``); then it reads the ``octopoda-*.dist-info`` RECORD and
raises :class:`~octopoda.ConfigError` with the commands that fix it.
"""

from __future__ import annotations

import os
import sys

from .._errors import ConfigError

__all__ = ["check_install", "predecessor_owning", "resolution"]

_TELL = "synrix_runtime"  # a top-level package only 3.3.4 (and 3.x) installs


def predecessor_owning(site: str) -> str | None:
    """The version of an ``octopoda`` distribution (3.3.4's name) in ``site`` whose RECORD
    lists files of the ``octopoda/`` package, or None."""
    try:
        names = os.listdir(site)
    except OSError:
        return None
    for name in sorted(names):
        if not (name.startswith("octopoda-") and name.endswith(".dist-info")):
            continue
        version = name[len("octopoda-") : -len(".dist-info")]
        try:
            with open(os.path.join(site, name, "RECORD"), encoding="utf-8") as fh:
                owns = any(line.startswith("octopoda/") for line in fh)
        except OSError:
            owns = True  # no RECORD: assume the worst, it is installed there
        if owns:
            return version
    return None


def resolution(version: str, site: str) -> str:
    """What to tell the user: the conflict, and the exact commands that fix it."""
    python = sys.executable or "python"
    return (
        f"Octopoda {version} (the 'octopoda' distribution) is installed in {site} beside"
        " octopoda-core, and both own the 'octopoda' package: one overwrote the other's"
        " files, and uninstalling either now breaks the other. Fix it with:\n"
        f"    {python} -m pip uninstall -y octopoda octopoda-core\n"
        f"    {python} -m pip install octopoda-core\n"
        "(with uv: uv pip uninstall octopoda octopoda-core && uv pip install octopoda-core)."
        f" Octopoda {version}'s data (~/.synrix/data or $SYNRIX_DATA_DIR) is not touched;"
        " bring it in afterwards with `octopoda migrate` (docs/migrating.md)."
    )


def check_install(package_dir: str) -> None:
    """Raise ``ConfigError`` when 3.3.4 shares this installation of ``octopoda``."""
    site = os.path.dirname(package_dir)
    if not os.path.isdir(os.path.join(site, _TELL)):
        return
    version = predecessor_owning(site)
    if version is not None:
        raise ConfigError(resolution(version, site))
