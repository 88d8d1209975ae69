"""OctopodaCallbackHandler: tool and model calls of any LangChain run, recorded in Octopoda."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.outputs import LLMResult
from langchain_core.runnables.config import var_child_runnable_config

from octopoda import AgentRuntime, InvalidInput
from octopoda.integrations import ActionRecorder, Prices, Target, check_prices, resolve_runtime

from ._recording import (
    cost_usd,
    is_control_flow,
    model_name,
    run_of_thread,
    thread_of_config,
    token_usage,
    tool_outcome,
)

__all__ = ["OctopodaCallbackHandler"]


class OctopodaCallbackHandler(BaseCallbackHandler):
    """Records tool calls (``on_tool_start``/``on_tool_end``/``on_tool_error``) and model calls
    (``on_llm_end``: tokens and cost) of chains that do not use ``create_agent``; pass it as
    ``config={"callbacks": [handler]}``.

    With ``guard=True`` it also checks the breaker in ``on_tool_start``: a paused agent's
    tool call raises :class:`~octopoda.AgentPaused` out of the run (callbacks cannot replace
    a tool's result; ``OctopodaMiddleware`` can). LangChain runs this synchronous handler in a
    worker thread for async runs, so it does not block an event loop.

    Each call is in its run: the LangGraph thread (the ``thread_id`` LangGraph puts in the
    callbacks' metadata), so loops are judged and paused per thread; calls outside a graph
    with no ``thread_id`` in their metadata are the agent's default run. Tool calls carry
    the model's tool call id (else LangChain's run id of the tool), model calls LangChain's
    run id of the LLM call.
    """

    def __init__(
        self,
        agent: AgentRuntime | str,
        *,
        store: Target = None,
        guard: bool = False,
        record_models: bool = True,
        prices: Prices | None = None,
    ) -> None:
        if isinstance(agent, AgentRuntime):
            self.agent = agent
        elif isinstance(agent, str):
            self.agent = resolve_runtime(store, agent)[0]
        else:
            raise InvalidInput(f"agent must be an AgentRuntime or an agent id, not {agent!r}")
        self.guard = guard
        self.raise_error = guard  # let AgentPaused leave the run
        self.record_models = record_models
        self.prices = check_prices(prices)
        self._tools: dict[UUID, tuple[str, Any, float, str | None, str]] = {}
        self._models: dict[UUID, tuple[str, str | None]] = {}
        self._lock = threading.Lock()
        self._runtime_lock = threading.Lock()  # one call at a time into the detectors
        self._recorder = ActionRecorder()

    def _run(self, run_id: UUID, kwargs: Mapping[str, Any]) -> str | None:
        """The Octopoda run of the callback of LangChain run ``run_id``."""
        return _run_of(kwargs)

    # -- tools ----------------------------------------------------------------------------

    def on_tool_start(
        self,
        serialized: dict[str, Any],
        input_str: str,
        *,
        run_id: UUID,
        inputs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        name = str((serialized or {}).get("name") or kwargs.get("name") or "tool")
        args: Any = inputs if inputs is not None else input_str
        run = self._run(run_id, kwargs)
        call_id = str(kwargs.get("tool_call_id") or run_id)
        with self._lock:
            self._tools[run_id] = (name, args, time.perf_counter(), run, call_id)
        if not self.guard:
            return
        try:
            with self._runtime_lock:
                verdict = self._recorder.guard(self.agent, name, args, run_id=run)
            if verdict is not None:
                raise verdict.error
        except BaseException:
            with self._lock:
                self._tools.pop(run_id, None)
            raise

    def _finish(self, run_id: UUID, result: Any, error: Any) -> None:
        with self._lock:
            started = self._tools.pop(run_id, None)
        if started is None:
            return
        name, args, t0, run, call_id = started
        with self._runtime_lock:
            self._recorder.tool_call(
                self.agent,
                name,
                args,
                result=result,
                error=error,
                duration_ms=(time.perf_counter() - t0) * 1e3,
                run_id=run,
                call_id=call_id,
            )

    def on_tool_end(self, output: Any, *, run_id: UUID, **kwargs: Any) -> None:
        result, error = tool_outcome(output)
        self._finish(run_id, result, error)

    def on_tool_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        if is_control_flow(error):
            with self._lock:
                self._tools.pop(run_id, None)
            return
        self._finish(run_id, None, error)

    # -- models ---------------------------------------------------------------------------

    def _model_started(self, serialized: Mapping[str, Any] | None, run_id: UUID, kw: Any) -> None:
        metadata = kw.get("metadata") or {}
        params = kw.get("invocation_params") or {}
        name = (
            metadata.get("ls_model_name")
            or params.get("model_name")
            or params.get("model")
            or ((serialized or {}).get("kwargs") or {}).get("model_name")
            or ((serialized or {}).get("id") or ["unknown"])[-1]
        )
        with self._lock:
            self._models[run_id] = (str(name), self._run(run_id, kw))

    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[Any]],
        *,
        run_id: UUID,
        **kwargs: Any,
    ) -> None:
        self._model_started(serialized, run_id, kwargs)

    def on_llm_start(
        self, serialized: dict[str, Any], prompts: list[str], *, run_id: UUID, **kwargs: Any
    ) -> None:
        self._model_started(serialized, run_id, kwargs)

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        with self._lock:
            started = self._models.pop(run_id, None)
        started_name, run = started if started is not None else (None, self._run(run_id, kwargs))
        if not self.record_models:
            return
        generation = (
            response.generations[0][0] if response.generations and response.generations[0] else None
        )
        message = getattr(generation, "message", None)
        tokens = token_usage(message, response.llm_output)
        name = model_name(
            message, None, (response.llm_output or {}).get("model_name") or started_name
        )
        with self._runtime_lock:
            self._recorder.llm_call(
                self.agent,
                name,
                cost_usd=cost_usd(message, name, tokens, self.prices),
                tokens_in=tokens[0],
                tokens_out=tokens[1],
                run_id=run,
                call_id=str(run_id),
            )

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        with self._lock:
            self._models.pop(run_id, None)


def _run_of(kwargs: Mapping[str, Any]) -> str | None:
    """The run of a callback: the thread of the invocation it fires in, else None.

    The invocation's own config (``configurable.thread_id`` of the runnable config LangChain
    keeps in a context variable, copied into the worker thread of async runs) comes first:
    langgraph 1.1 writes the first invocation's thread id into a compiled ``create_agent``
    graph's shared metadata, so later threads' callbacks carry the first thread's id in
    ``metadata``. The metadata's ``thread_id`` is the fallback (callbacks fired outside a
    runnable context)."""
    current = var_child_runnable_config.get()
    if current is not None and (run := thread_of_config(current)) is not None:
        return run
    metadata = kwargs.get("metadata")
    return run_of_thread(metadata.get("thread_id")) if isinstance(metadata, Mapping) else None
