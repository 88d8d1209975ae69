"""Octopoda for the OpenAI Agents SDK.

    from agents import Runner
    from octopoda import LoopPolicy
    from octopoda_openai_agents import OctopodaRunHooks, OctopodaSession

    session = OctopodaSession("user-42", store="chat.db")
    hooks = OctopodaRunHooks("chat.db", policy=LoopPolicy("pause"))
    result = await Runner.run(agent, "Hi", session=session, hooks=hooks)

* :class:`OctopodaSession`: the SDK's ``Session``; versioned, audited, crash-safe history.
* :class:`OctopodaRunHooks`: tool calls, LLM calls (tokens, cost) and handoffs into the
  loop detectors, each in its conversation's run; a paused agent or conversation stops
  the run with :class:`RunPaused`.
* :class:`OctopodaTracingProcessor`: function spans into the same records; exports nothing.
"""

from ._common import RunPaused
from ._hooks import SDK_ERROR_PREFIXES, OctopodaRunHooks, Prices, RunIdOption, is_sdk_tool_error
from ._session import (
    SESSION_AGENT_PREFIX,
    InvalidSessionSettings,
    OctopodaSession,
    SessionClosed,
    session_ids,
)
from ._tracing import OctopodaTracingProcessor

__version__ = "0.1.0"

__all__ = [
    "SDK_ERROR_PREFIXES",
    "SESSION_AGENT_PREFIX",
    "InvalidSessionSettings",
    "OctopodaRunHooks",
    "OctopodaSession",
    "OctopodaTracingProcessor",
    "Prices",
    "RunIdOption",
    "RunPaused",
    "SessionClosed",
    "__version__",
    "is_sdk_tool_error",
    "session_ids",
]
