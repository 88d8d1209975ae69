"""Octopoda's warnings: on the ``octopoda`` logger (to stderr by logging's rules, never
stdout).

``logging`` is imported on the first warning, not with the package: it costs a fifth of
``import octopoda`` and most runtimes and stores never warn.
"""

from __future__ import annotations

__all__ = ["warn"]


def warn(message: str, *args: object) -> None:
    """Log ``message % args`` as a warning on the ``octopoda`` logger."""
    import logging

    logging.getLogger("octopoda").warning(message, *args)
