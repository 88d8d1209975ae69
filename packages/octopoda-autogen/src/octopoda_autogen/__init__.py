"""Octopoda for AutoGen (autogen-agentchat / autogen-core 0.4.5 to 0.7.x).

* :class:`OctopodaMemory`: ``autogen_core.memory.Memory`` on versioned, audited memory
  (``AssistantAgent(memory=[...])``).
* :class:`OctopodaChatCompletionContext`: a ``ChatCompletionContext`` that writes every
  message through, so a new process resumes the conversation
  (``AssistantAgent(model_context=...)``).
* :class:`OctopodaGuard`: tool and model calls into loop detection, per team run, with
  the breaker inside the team; :class:`OctopodaTermination` stops a paused team.
* :class:`OctopodaTeamState`: a team's or agent's ``save_state()`` as a versioned memory.
"""

from ._context import (
    CONTEXT_AGENT_PREFIX,
    OctopodaChatCompletionContext,
    OctopodaChatCompletionContextConfig,
)
from ._guard import GUARD_AGENT_PREFIX, OctopodaGuard, OctopodaTermination, RunPaused
from ._memory import MEMORY_AGENT_PREFIX, OctopodaMemory, OctopodaMemoryConfig
from ._state import STATE_AGENT_PREFIX, OctopodaTeamState

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
