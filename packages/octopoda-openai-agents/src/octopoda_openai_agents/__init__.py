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

Names load on first use: importing the package (as ``octopoda.init()`` does to find the
integration) does not import the SDK.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from octopoda.integrations import lazy_names

if TYPE_CHECKING:
    from ._common import RunPaused
    from ._hooks import (
        SDK_ERROR_PREFIXES,
        OctopodaRunHooks,
        Prices,
        RunIdOption,
        is_sdk_tool_error,
    )
    from ._session import (
        SESSION_AGENT_PREFIX,
        InvalidSessionSettings,
        OctopodaSession,
        SessionClosed,
        session_ids,
    )
    from ._tracing import OctopodaTracingProcessor


__version__ = "0.1.0"

_LAZY: dict[str, str] = {
    "InvalidSessionSettings": "._session",
    "OctopodaRunHooks": "._hooks",
    "OctopodaSession": "._session",
    "OctopodaTracingProcessor": "._tracing",
    "Prices": "._hooks",
    "RunIdOption": "._hooks",
    "RunPaused": "._common",
    "SDK_ERROR_PREFIXES": "._hooks",
    "SESSION_AGENT_PREFIX": "._session",
    "SessionClosed": "._session",
    "is_sdk_tool_error": "._hooks",
    "session_ids": "._session",
}


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

__getattr__, __dir__ = lazy_names(__name__, _LAZY, __all__)
