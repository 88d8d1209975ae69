"""What ``init`` found of each integration (:class:`IntegrationStatus`). A module of its own:
typing's ``NamedTuple`` loads only once there is an integration to report, so that an
``init`` that finds none imports no ``typing``."""

from typing import NamedTuple

__all__ = ["IntegrationStatus"]


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
