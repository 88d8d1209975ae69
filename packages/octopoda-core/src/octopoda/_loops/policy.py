"""The loop policy: what to do about loops and spend (opt-in; by default loops are only
detected and logged)."""

from __future__ import annotations

import math
from typing import Any, Final

from .._errors import InvalidInput
from .signals import SIGNAL_KINDS

__all__ = ["LoopPolicy", "non_negative"]

_ON_LOOP: Final = ("warn", "pause", "raise")
_PAUSE_SCOPES: Final = ("run", "agent")


def non_negative(value: Any, what: str, kind: type | tuple[type, ...] = (int, float)) -> Any:
    """``value`` if it is a finite number >= 0 (of ``kind``), else InvalidInput."""
    ok = not isinstance(value, bool) and isinstance(value, kind)
    if not ok or not math.isfinite(float(value)) or float(value) < 0:
        raise InvalidInput(f"{what} must be a finite number >= 0, not {value!r}")
    return value


class LoopPolicy:
    """What to do about loops and spend (opt-in; the default only detects and warns).

    ``on_loop``: ``"warn"`` logs, ``"pause"`` pauses the agent (persisted in the store, so
    every process sees it) and ``guard_tool_call`` raises ``AgentPaused`` until
    ``resume()``, ``"raise"`` raises ``LoopDetected`` from the call that completed the loop.
    ``min_confidence``: signals below it only warn. ``spend_cap_usd``: pause when reported
    ``cost_usd`` within ``spend_window_seconds`` exceeds it. ``max_tool_calls``: pause
    when this runtime has recorded that many tool calls (since it started or resumed).
    ``detectors``: thresholds per detector, e.g. ``{"retry": {"max_failures": 4}}`` (the
    arguments of the detector classes: ``octopoda._loops.retry.RetryDetector``, ...).

    Runs: loops are detected per run (the ``run_id`` an action carries: a thread, a
    session, a crew or team run; actions without one are the agent's default run).
    ``pause_scope="run"`` (the default) pauses the run the loop is in, and only it; the
    agent's other runs go on. ``"agent"`` pauses the whole agent for a loop in any run. A
    loop of the default run, and the spend and tool-call caps (which count every run),
    pause the agent. The same failure (tool and error) in ``outage_runs`` (3) distinct runs
    within ``outage_window_seconds`` (600) is an outage: reported by ``loop_status()`` and
    recorded once, never a pause by itself.
    """

    __slots__ = (
        "detectors",
        "max_tool_calls",
        "min_confidence",
        "on_loop",
        "outage_runs",
        "outage_window_seconds",
        "pause_scope",
        "spend_cap_usd",
        "spend_window_seconds",
    )

    def __init__(
        self,
        on_loop: str = "warn",
        *,
        min_confidence: float = 0.8,
        spend_cap_usd: float | None = None,
        spend_window_seconds: float = 3600.0,
        max_tool_calls: int | None = None,
        detectors: dict[str, dict[str, Any]] | None = None,
        pause_scope: str = "run",
        outage_runs: int = 3,
        outage_window_seconds: float = 600.0,
    ) -> None:
        if on_loop not in _ON_LOOP:
            raise InvalidInput(f"on_loop must be one of {', '.join(_ON_LOOP)}, not {on_loop!r}")
        if pause_scope not in _PAUSE_SCOPES:
            raise InvalidInput(f"pause_scope must be 'run' or 'agent', not {pause_scope!r}")
        if non_negative(outage_runs, "outage_runs", int) < 2:
            raise InvalidInput(f"outage_runs must be at least 2, not {outage_runs!r}")
        if non_negative(outage_window_seconds, "outage_window_seconds") == 0:
            raise InvalidInput("outage_window_seconds must be positive")
        if not 0.0 <= non_negative(min_confidence, "min_confidence") <= 1.0:
            raise InvalidInput(f"min_confidence must be between 0 and 1, not {min_confidence!r}")
        if spend_cap_usd is not None:
            non_negative(spend_cap_usd, "spend_cap_usd")
        if non_negative(spend_window_seconds, "spend_window_seconds") == 0:
            raise InvalidInput("spend_window_seconds must be positive")
        if max_tool_calls is not None:
            non_negative(max_tool_calls, "max_tool_calls", int)
        self.on_loop = on_loop
        self.min_confidence = float(min_confidence)
        self.spend_cap_usd = spend_cap_usd
        self.spend_window_seconds = float(spend_window_seconds)
        self.max_tool_calls = max_tool_calls
        self.pause_scope = pause_scope
        self.outage_runs = outage_runs
        self.outage_window_seconds = float(outage_window_seconds)
        self.detectors = dict(detectors or {})
        unknown = set(self.detectors) - set(SIGNAL_KINDS)
        if unknown or not all(isinstance(v, dict) for v in self.detectors.values()):
            raise InvalidInput(
                f"detectors maps detector names ({', '.join(SIGNAL_KINDS)}) to dicts of"
                f" their thresholds; got {detectors!r}"
            )

    def __repr__(self) -> str:
        return (
            f"LoopPolicy(on_loop={self.on_loop!r}, min_confidence={self.min_confidence},"
            f" spend_cap_usd={self.spend_cap_usd}, spend_window_seconds="
            f"{self.spend_window_seconds}, max_tool_calls={self.max_tool_calls},"
            f" pause_scope={self.pause_scope!r})"
        )
