"""Loop detection: one module per concept.

* ``signals``: what a detection is (``LoopSignal``, ``LoopEventRef``, ``LoopStatus``) and
  how it reads (``describe``).
* ``monitor``: ``LoopMonitor``, which holds an agent's active signals and lets them
  expire, and ``Detector``, the base of the five detectors.
* ``novelty``: ``NoveltyTracker``, the pipeline step: it counts each action, judges
  whether it brought something new and hands it to the detectors' ``observe_*`` methods.
* the five signals, one detector each with its thresholds documented: ``retry``,
  ``oscillation``, ``ping_pong``, ``reflection``, ``recall_write``.
* ``gists``: the rules for what a text says (a message's gist, a result without its
  metadata, error text with ids masked, a decision's content words, acknowledgements,
  bookkeeping, tools that wait).
* ``chain``: a stream's recent states as fixed-width records, and cycle finding.
* ``streams``: per-stream state (a memory key, a (tool, arguments) run of calls).
* ``payloads``: typed views of the event payloads the detectors read.
* ``passes``: what ping-pong reads from the store (an agent's recent passes, a shared
  key's writers, a partner's tool calls).
* ``runs``: the detection state of each run of an agent (``RunStates``); ``outages``: the
  same failure across many runs (``OutageWatch``).
* ``policy``: ``LoopPolicy``; ``guard``: ``LoopGuard``, an agent runtime's detectors,
  breaker and accounting.

``docs/loops.md`` is the user's guide.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_names
from .policy import LoopPolicy
from .signals import (
    SIGNAL_KINDS,
    LoopEventRef,
    LoopSignal,
    LoopStatus,
    Outage,
    describe,
    describe_outage,
)

if TYPE_CHECKING:
    from .guard import WARM_UP_EVENTS, LoopGuard, paused_error
    from .monitor import Detector, LoopMonitor
    from .novelty import NoveltyTracker
    from .oscillation import OscillationDetector
    from .ping_pong import PingPongDetector
    from .recall_write import RecallWriteDetector
    from .reflection import ReflectionDetector
    from .retry import RetryDetector

# The detectors load with the first runtime (``LoopGuard``), not with the import (PEP 562):
# ``from octopoda import AgentRuntime`` needs only the signals and the policy.
_LAZY: dict[str, str] = {
    "WARM_UP_EVENTS": ".guard",
    "LoopGuard": ".guard",
    "paused_error": ".guard",
    "Detector": ".monitor",
    "LoopMonitor": ".monitor",
    "NoveltyTracker": ".novelty",
    "OscillationDetector": ".oscillation",
    "PingPongDetector": ".ping_pong",
    "RecallWriteDetector": ".recall_write",
    "ReflectionDetector": ".reflection",
    "RetryDetector": ".retry",
}


__all__ = [
    "SIGNAL_KINDS",
    "WARM_UP_EVENTS",
    "Detector",
    "LoopEventRef",
    "LoopGuard",
    "LoopMonitor",
    "LoopPolicy",
    "LoopSignal",
    "LoopStatus",
    "NoveltyTracker",
    "OscillationDetector",
    "Outage",
    "PingPongDetector",
    "RecallWriteDetector",
    "ReflectionDetector",
    "RetryDetector",
    "describe",
    "describe_outage",
    "paused_error",
]

__getattr__, __dir__ = lazy_names(__name__, _LAZY, __all__)
