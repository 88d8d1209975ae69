"""What ``octopoda.init()`` installs in LangChain: one callback handler in every run.

LangChain's official seam for a process-wide handler is
``langchain_core.tracers.context.register_configure_hook``: every callback manager a
Runnable, a chain, a model or a LangGraph graph configures adds the handler that a
registered context variable holds (inheritable: child runs get it too). The variable is
registered once per process, on the first activation, and its value in every context and
thread is one dispatcher (its default: a bare ``threading.Thread`` or a
``ThreadPoolExecutor`` worker starts from an empty context and still gets it). The
dispatcher passes each callback to the active handler; ``Deactivate`` takes that handler
out, and from then on LangChain skips the dispatcher (its ``ignore_*`` flags are set:
LangChain has no call that unregisters a hook).

The handler is :class:`OctopodaCallbackHandler` with ``guard=True``, recording into the
one agent of ``InitContext``: a paused run raises :class:`~octopoda.AgentPaused` at its
next tool call and at its next model call (callbacks cannot hand a blocked tool back as
text, so the run stops). Each call's run is the LangGraph thread
(``configurable.thread_id``) when there is one, else LangChain's root run of the
invocation (one ``invoke`` of an agent: one run).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from contextvars import ContextVar
from typing import Any, Final
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.tracers.context import register_configure_hook

from octopoda.integrations import Deactivate, InitContext

from ._callbacks import OctopodaCallbackHandler, _run_of

__all__ = ["DISPATCHER", "Dispatcher", "InitCallbackHandler", "activate", "active_handler"]

_KEEP_RUNS: Final = 4096  # LangChain runs whose parent is remembered (the newest)

_STATE_LOCK = threading.Lock()
_REGISTERED: list[bool] = []  # the hook is registered once per process
_ACTIVE: list[InitCallbackHandler] = []  # activations, oldest first; the newest is in use


class InitCallbackHandler(OctopodaCallbackHandler):
    """The handler ``init`` puts into every run: tool and model calls guarded and recorded
    under the one agent of the :class:`InitContext`, each in its thread or root run."""

    def __init__(self, context: InitContext) -> None:
        super().__init__(context.runtime, guard=True, prices=context.prices)
        # one lock per Octopoda agent for every integration of the process
        self._runtime_lock = context.runtimes.get(context.agent_id)[1]
        self._parents: OrderedDict[UUID, UUID | None] = OrderedDict()
        self._parents_lock = threading.Lock()

    def _note_parent(self, run_id: UUID, kwargs: Mapping[str, Any]) -> None:
        parent = kwargs.get("parent_run_id")
        with self._parents_lock:
            self._parents[run_id] = parent if isinstance(parent, UUID) else None
            while len(self._parents) > _KEEP_RUNS:
                self._parents.popitem(last=False)

    def _root(self, run_id: UUID) -> UUID:
        with self._parents_lock:
            for _ in range(256):  # nesting is shallow; the bound guards against cycles
                parent = self._parents.get(run_id)
                if parent is None:
                    break
                run_id = parent
        return run_id

    def _run(self, run_id: UUID, kwargs: Mapping[str, Any]) -> str | None:
        thread = _run_of(kwargs)
        if thread is not None:
            return thread
        self._note_parent(run_id, kwargs)
        return f"lc-{self._root(run_id)}"

    def on_chain_start(
        self, serialized: dict[str, Any], inputs: Any, *, run_id: UUID, **kwargs: Any
    ) -> None:
        self._note_parent(run_id, kwargs)

    def _guard_model(self, run_id: UUID) -> None:
        """A paused agent or run does not call its model: raise before it is called."""
        with self._lock:
            started = self._models.get(run_id)
        if started is None:
            return
        name, run = started
        with self._runtime_lock:
            verdict = self._recorder.guard(self.agent, f"model:{name}", run_id=run)
        if verdict is not None:
            with self._lock:
                self._models.pop(run_id, None)
            raise verdict.error

    def on_chat_model_start(
        self, serialized: dict[str, Any], messages: list[list[Any]], *, run_id: UUID, **kwargs: Any
    ) -> None:
        super().on_chat_model_start(serialized, messages, run_id=run_id, **kwargs)
        self._guard_model(run_id)

    def on_llm_start(
        self, serialized: dict[str, Any], prompts: list[str], *, run_id: UUID, **kwargs: Any
    ) -> None:
        super().on_llm_start(serialized, prompts, run_id=run_id, **kwargs)
        self._guard_model(run_id)


class Dispatcher(BaseCallbackHandler):
    """What the registered variable holds everywhere: it passes the callbacks the
    integration handles to ``target``, the active handler; with none, LangChain skips it
    (every ``ignore_*`` is true), so it is never called."""

    def __init__(self) -> None:
        self.target: InitCallbackHandler | None = None
        self.raise_error = True  # a paused run's AgentPaused leaves the run

    @property
    def ignore_llm(self) -> bool:
        return self.target is None

    @property
    def ignore_chain(self) -> bool:
        return self.target is None

    @property
    def ignore_agent(self) -> bool:
        return self.target is None

    @property
    def ignore_retriever(self) -> bool:
        return True

    @property
    def ignore_retry(self) -> bool:
        return True

    @property
    def ignore_custom_event(self) -> bool:
        return True

    @property
    def ignore_chat_model(self) -> bool:
        return self.target is None

    def on_chain_start(self, *args: Any, **kwargs: Any) -> None:
        if (target := self.target) is not None:
            target.on_chain_start(*args, **kwargs)

    def on_tool_start(self, *args: Any, **kwargs: Any) -> None:
        if (target := self.target) is not None:
            target.on_tool_start(*args, **kwargs)

    def on_tool_end(self, *args: Any, **kwargs: Any) -> None:
        if (target := self.target) is not None:
            target.on_tool_end(*args, **kwargs)

    def on_tool_error(self, *args: Any, **kwargs: Any) -> None:
        if (target := self.target) is not None:
            target.on_tool_error(*args, **kwargs)

    def on_chat_model_start(self, *args: Any, **kwargs: Any) -> None:
        if (target := self.target) is not None:
            target.on_chat_model_start(*args, **kwargs)

    def on_llm_start(self, *args: Any, **kwargs: Any) -> None:
        if (target := self.target) is not None:
            target.on_llm_start(*args, **kwargs)

    def on_llm_end(self, *args: Any, **kwargs: Any) -> None:
        if (target := self.target) is not None:
            target.on_llm_end(*args, **kwargs)

    def on_llm_error(self, *args: Any, **kwargs: Any) -> None:
        if (target := self.target) is not None:
            target.on_llm_error(*args, **kwargs)


DISPATCHER: Final = Dispatcher()
_HANDLER: ContextVar[Dispatcher | None] = ContextVar("octopoda_langchain_init", default=DISPATCHER)


def active_handler() -> InitCallbackHandler | None:
    """The handler LangChain runs get now (None: not activated)."""
    return DISPATCHER.target


def activate(context: InitContext) -> Deactivate:
    """Register the configure hook (once per process) and make a new handler for
    ``context`` the one every run gets; the returned function undoes exactly this
    activation (a second activation replaces the first's handler, never adds to it)."""
    handler = InitCallbackHandler(context)
    with _STATE_LOCK:
        if not _REGISTERED:
            register_configure_hook(_HANDLER, True)
            _REGISTERED.append(True)
        _ACTIVE.append(handler)
        DISPATCHER.target = handler
    done: list[bool] = []

    def deactivate() -> None:
        with _STATE_LOCK:
            if done:
                return
            done.append(True)
            if handler in _ACTIVE:
                _ACTIVE.remove(handler)
            DISPATCHER.target = _ACTIVE[-1] if _ACTIVE else None

    return deactivate
