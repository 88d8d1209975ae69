"""The adapter kit: what every framework adapter of Octopoda needs, once.

An adapter (``octopoda-langchain``, ``octopoda-openai-agents``, the CrewAI and AutoGen
ones) translates a framework's callbacks into Octopoda actions. This module is the part
that is the same for every framework; it imports nothing but the standard library and
``octopoda``:

* **Which runtime.** :data:`Target` is what an adapter accepts as "the store" (an
  ``AgentRuntime``, an ``Octopoda`` client, a ``Store``, a path or URL, None);
  :func:`resolve_runtime` turns it into an ``AgentRuntime``, and
  :class:`AgentRuntimes` keeps one runtime per framework agent name on one store, each
  behind a lock.
* **Prices.** :data:`Prices` (USD per million input and output tokens by model),
  :func:`check_prices` (checked once, at the adapter's construction) and :func:`cost_of`.
* **Offloading.** :func:`run_blocking` runs a store call in a worker thread;
  :func:`run_settled` does it for a write whose cancelled caller must know whether it
  happened. :func:`parse_arguments` reads a tool call's JSON arguments as sent.
* **Recording.** :class:`ActionRecorder` turns a framework's tool call (guarded before,
  recorded after with its result or error and duration), LLM call (model, tokens, cost)
  and handoff into events, each with its run (``run_id``: the framework's thread,
  session, crew or team run) and the framework's call id, remembers the framework's
  calls so that a pause can name them, and says which recorded call paused
  (``paused_by``).
* **The verdict.** :class:`Verdict` (from ``ActionRecorder.guard``) and the texts a
  framework shows when the breaker refuses: :func:`blocked_tool_text` (instead of a
  tool's result), :func:`stopped_text` (instead of the model's answer),
  :func:`paused_note` (appended to the result of the call that paused), and
  ``Verdict.message`` (for an exception, with the framework's calls named).
* **Activation.** :class:`Integration` declares an adapter to :func:`octopoda.init`;
  :class:`OneActivation` wraps an ``install(context)`` into its ``activate`` for a
  framework whose hooks are process-wide (the same context again changes nothing,
  another context replaces the previous one, the undo runs once).
* **Catching up.** :func:`changed_keys` names the keys of an agent's memory that its
  events after a seq wrote, forgot or erased (any process's), so that an adapter's cache of
  the memory reads those again instead of everything.
* **Cheap imports.** :func:`lazy_names` gives a package a PEP 562 ``__getattr__`` and
  ``__dir__`` that import each public name's module on first use.

A sketch of a tool hook::

    from octopoda.integrations import ActionRecorder, AgentRuntimes

    runtimes = AgentRuntimes("agent.db", policy=LoopPolicy("pause"))
    recorder = ActionRecorder()

    def before_tool(agent_name, tool, args, thread_id, call_id):
        runtime = runtimes.runtime(agent_name)
        verdict = recorder.guard(runtime, tool, args, run_id=thread_id)
        if verdict is not None:
            return verdict.blocked_tool_text(tool)  # what the model sees instead
        recorder.start(call_id)

    def after_tool(agent_name, tool, args, thread_id, call_id, result, error):
        recorder.tool_call(
            runtimes.runtime(agent_name), tool, args, result=result, error=error,
            duration_ms=recorder.elapsed_ms(call_id), run_id=thread_id, call_id=call_id,
        )
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_names

if TYPE_CHECKING:
    from ._auto import ENTRY_POINT_GROUP, Deactivate, InitContext, Integration, OneActivation
    from ._changes import CHANGED_KEYS_EVENTS, changed_keys
    from ._offload import parse_arguments, run_blocking, run_settled
    from ._pricing import Prices, check_prices, cost_of
    from ._recorder import ActionRecorder
    from ._target import AgentRuntimes, Target, resolve_runtime
    from ._verdicts import FrameworkCall, Verdict, blocked_tool_text, paused_note, stopped_text

# Each name loads its module on first use (PEP 562): an adapter's entry point, which
# ``octopoda.init`` loads at start-up, imports only ``Integration`` and stays cheap.
_LAZY: dict[str, str] = {
    "CHANGED_KEYS_EVENTS": "._changes",
    "changed_keys": "._changes",
    "ENTRY_POINT_GROUP": "._auto",
    "Deactivate": "._auto",
    "InitContext": "._auto",
    "Integration": "._auto",
    "OneActivation": "._auto",
    "parse_arguments": "._offload",
    "run_blocking": "._offload",
    "run_settled": "._offload",
    "Prices": "._pricing",
    "check_prices": "._pricing",
    "cost_of": "._pricing",
    "ActionRecorder": "._recorder",
    "AgentRuntimes": "._target",
    "Target": "._target",
    "resolve_runtime": "._target",
    "FrameworkCall": "._verdicts",
    "Verdict": "._verdicts",
    "blocked_tool_text": "._verdicts",
    "paused_note": "._verdicts",
    "stopped_text": "._verdicts",
}


del TYPE_CHECKING

__all__ = [
    "CHANGED_KEYS_EVENTS",
    "ENTRY_POINT_GROUP",
    "ActionRecorder",
    "AgentRuntimes",
    "Deactivate",
    "FrameworkCall",
    "InitContext",
    "Integration",
    "OneActivation",
    "Prices",
    "Target",
    "Verdict",
    "blocked_tool_text",
    "changed_keys",
    "check_prices",
    "cost_of",
    "lazy_names",
    "parse_arguments",
    "paused_note",
    "resolve_runtime",
    "run_blocking",
    "run_settled",
    "stopped_text",
]

__getattr__, __dir__ = lazy_names(__name__, _LAZY, __all__)
