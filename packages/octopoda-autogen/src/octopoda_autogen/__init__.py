"""Octopoda for AutoGen (autogen-agentchat / autogen-core 0.4.5 to 0.7.x).

* :class:`OctopodaMemory`: ``autogen_core.memory.Memory`` on versioned, audited memory
  (``AssistantAgent(memory=[...])``).
* :class:`OctopodaChatCompletionContext`: a ``ChatCompletionContext`` that writes every
  message through, so a new process resumes the conversation
  (``AssistantAgent(model_context=...)``).
* :class:`OctopodaGuard`: tool and model calls into loop detection, per team run, with
  the breaker inside the team; :class:`OctopodaTermination` stops a paused team.
* :class:`OctopodaTeamState`: a team's or agent's ``save_state()`` as a versioned memory.

``octopoda.init()`` (entry point ``autogen``, ``_integration.py``) records every agent's
tool and model calls from AutoGen's event loggers, with no wrapping.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from octopoda.integrations import lazy_names

if TYPE_CHECKING:
    from ._context import (
        CONTEXT_AGENT_PREFIX,
        OctopodaChatCompletionContext,
        OctopodaChatCompletionContextConfig,
    )
    from ._guard import GUARD_AGENT_PREFIX, OctopodaGuard, OctopodaTermination, RunPaused
    from ._memory import MEMORY_AGENT_PREFIX, OctopodaMemory, OctopodaMemoryConfig
    from ._state import STATE_AGENT_PREFIX, OctopodaTeamState

# The names are imported on first use (PEP 562): importing the package, or its
# ``_integration`` module (the ``octopoda.integrations`` entry point, which ``octopoda.init``
# loads in every program), does not import AutoGen.
_WHERE = {
    "CONTEXT_AGENT_PREFIX": "._context",
    "OctopodaChatCompletionContext": "._context",
    "OctopodaChatCompletionContextConfig": "._context",
    "GUARD_AGENT_PREFIX": "._guard",
    "OctopodaGuard": "._guard",
    "OctopodaTermination": "._guard",
    "RunPaused": "._guard",
    "MEMORY_AGENT_PREFIX": "._memory",
    "OctopodaMemory": "._memory",
    "OctopodaMemoryConfig": "._memory",
    "STATE_AGENT_PREFIX": "._state",
    "OctopodaTeamState": "._state",
}


__all__ = [
    "CONTEXT_AGENT_PREFIX",
    "GUARD_AGENT_PREFIX",
    "MEMORY_AGENT_PREFIX",
    "STATE_AGENT_PREFIX",
    "OctopodaChatCompletionContext",
    "OctopodaChatCompletionContextConfig",
    "OctopodaGuard",
    "OctopodaMemory",
    "OctopodaMemoryConfig",
    "OctopodaTeamState",
    "OctopodaTermination",
    "RunPaused",
]

__getattr__, __dir__ = lazy_names(__name__, _WHERE, __all__)
