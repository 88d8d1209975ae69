"""The ``octopoda`` command line (``octopoda --help``; see docs/cli.md).

It needs the ``cli`` extra (click). Importing this module does not import click: :func:`main`
checks for it, says how to install it when it is missing, and only then builds the commands.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    import click

__all__ = ["MISSING_CLICK", "build_cli", "main"]

MISSING_CLICK: Final = (
    "octopoda: the command line needs click, which is not installed.\n"
    "Install the cli extra:\n"
    "\n"
    "    pip install 'octopoda-core[cli]'\n"
)


def build_cli() -> click.Group:
    """The ``octopoda`` click group (this imports click)."""
    from ._cli.app import cli

    return cli


def main(argv: Sequence[str] | None = None) -> None:
    """Run ``octopoda`` with ``argv`` (default: the process arguments) and exit."""
    try:
        import click  # noqa: F401  (only checks that the cli extra is installed)
    except ImportError:
        sys.stderr.write(MISSING_CLICK)
        raise SystemExit(1) from None
    args = None if argv is None else list(argv)
    build_cli().main(args=args, prog_name="octopoda")


if __name__ == "__main__":
    main()
