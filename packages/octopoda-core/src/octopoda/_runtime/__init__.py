"""The runtime layer: ``AgentRuntime`` and the ``Octopoda`` client.

``base.py`` is the commit path every verb goes through (an event, the store's transaction
with the events pipeline of ``pipeline.py``, then the loop policy). The verbs are grouped by
what they are about, one mixin each: ``memory.py`` (remember, recall, listing, forget,
erase), ``search.py`` (search by words, recall_similar), ``history.py`` (snapshots,
restore, export and import, health), ``decisions.py`` (decisions, as-of views, timeline,
diff; the views themselves are in ``views.py``),
``actions.py`` (tool and LLM calls, handoffs, loop status), ``runs.py`` (the breaker's
controls, per agent and per run, and the runs listing),
``collab.py`` (shared spaces, messages, goals). ``runtime.py`` puts them together;
``client.py`` is ``Octopoda``, one store for many agents; ``bundle.py`` is the memory export
format.
"""
