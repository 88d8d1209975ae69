"""OctopodaTeamState: ``save_state()`` of an AutoGen team or agent kept as a versioned,
audited memory, restorable in a new process after a crash.

Each state name is an Octopoda agent, ``"autogen-state:" + name``; every ``save`` is a new
version of the key ``state`` (``history()`` lists them, newest first), and ``load``
restores the newest, or a given version, with the team's or agent's own ``load_state``.
"""

from __future__ import annotations

from typing import Any, Protocol

from octopoda import InvalidInput, MemoryVersion, NotFound, VersionRecord
from octopoda.integrations import run_blocking, run_settled

from ._common import StoreArg, open_runtime

__all__ = ["STATE_AGENT_PREFIX", "OctopodaTeamState"]

STATE_AGENT_PREFIX = "autogen-state:"
STATE_KEY = "state"


class _Stateful(Protocol):
    async def save_state(self) -> Any: ...
    async def load_state(self, state: Any) -> None: ...


class OctopodaTeamState:
    """``await OctopodaTeamState("support-team", store).save(team)`` after a run (or each
    turn); ``await OctopodaTeamState("support-team", store).load(team)`` in a new process."""

    def __init__(
        self, name: str, store: StoreArg = None, *, agent_prefix: str = STATE_AGENT_PREFIX
    ) -> None:
        if not isinstance(name, str) or not name:
            raise InvalidInput(f"name must be a non-empty str, not {name!r}")
        self.name = name
        self.runtime, self._owns_store = open_runtime(store, agent_prefix + name)

    async def save(self, component: _Stateful) -> VersionRecord:
        """Save ``component.save_state()`` as the next version (durable when it returns)."""
        state = dict(await component.save_state())
        return await run_settled(self.runtime.remember, STATE_KEY, state)

    async def load(self, component: _Stateful, *, version: int | None = None) -> bool:
        """Restore the newest saved state (or ``version``) into ``component``; False when
        nothing was saved."""
        found = await run_blocking(self.runtime.recall, STATE_KEY, version=version)
        if not found.found:
            if version is not None:
                raise NotFound(f"state {self.name!r} has no version {version}; see history()")
            return False
        await component.load_state(found.value)
        return True

    def history(self) -> list[MemoryVersion]:
        """Every saved state, newest first."""
        return self.runtime.recall_history(STATE_KEY)

    def close(self) -> None:
        self.runtime.close()
        if self._owns_store:
            self.runtime.store.close()
