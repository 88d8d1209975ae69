"""The events pipeline: every state-changing operation of an agent becomes an
:class:`~octopoda.Event` that passes through it before it is stored.

Inside the transaction that stores the change, the store assigns the event's ``seq`` and
``prev_hash`` and calls the agent's pipeline: an ordered list of processors, small callables
that take an event and return it (structlog's processors are the model). The loop detectors
are the first processor (``octopoda._loops``); a user's own processors follow. A processor may
raise to refuse the change; the transaction then rolls back and nothing is stored. The audit
chainer (``octopoda._audit.chain``) always runs last.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from .._audit.chain import chain_event
from .._records import Event

__all__ = ["Pipeline", "Processor"]

Processor = Callable[[Event], Event]
"""A pipeline step: takes an event, returns it (possibly enriched), or raises to refuse."""


class Pipeline:
    """An ordered list of processors every event passes through; the chainer runs last.

    Stores call ``run`` (a bound method is cheaper to call than an instance)."""

    __slots__ = ("processors", "run")

    def __init__(self, processors: Iterable[Processor] = ()) -> None:
        self.processors: list[Processor] = list(processors)
        self.run: Processor = self.__call__

    def __call__(self, event: Event) -> Event:
        for processor in self.processors:
            event = processor(event)
        return chain_event(event)
