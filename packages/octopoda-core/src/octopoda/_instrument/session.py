"""``octopoda.init()`` and ``octopoda.shutdown()``: activate every installed framework
integration through the adapters' ``octopoda.integrations`` entry points.

``init`` reads the entry points (``discovery``), checks each framework's installed version
against the range its adapter supports, and activates the integration at once when the
framework is already imported, else when it is (``hooks``). Nothing is opened before an
integration activates: with no framework installed, ``init`` reads a few folder listings
and returns.
"""

from __future__ import annotations

import atexit
import os
import sys
from _thread import RLock

from .._errors import ConfigError, InvalidAgentId, InvalidInput
from .discovery import distributions, entry_points, normalize, satisfies
from .hooks import PostImportHooks

TYPE_CHECKING = False  # (not typing's: see below)
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping
    from logging import Logger
    from types import ModuleType
    from typing import Any, Final

    from .._loops import LoopPolicy
    from ..integrations._auto import Deactivate, InitContext, Integration
    from .status import IntegrationStatus

# A no-op init (no framework installed) must stay under 5 ms, imports included: typing,
# threading, logging, dataclasses and the value checks (hashlib, json) load only once there
# is work to do (`import octopoda` loads no typing either).

__all__ = [
    "ADAPTERS",
    "Instrumentation",
    "init",
    "parse_policy",
    "program_agent_id",
    "shutdown",
    "survey",
]


def _log() -> Logger:
    import logging

    return logging.getLogger("octopoda.init")


GROUP: Final = "octopoda.integrations"  # = integrations.ENTRY_POINT_GROUP, without its import

ADAPTERS: Final = {
    "langchain": "octopoda-langchain",
    "openai_agents": "octopoda-openai-agents",
    "crewai": "octopoda-crewai",
    "autogen": "octopoda-autogen",
}
"""The adapter distribution of each integration the project ships (for install hints)."""

_POLICY_OPTIONS: Final = {
    "min_confidence": float,
    "spend_cap_usd": float,
    "spend_window_seconds": float,
    "max_tool_calls": int,
    "pause_scope": str,
    "outage_runs": int,
    "outage_window_seconds": float,
}


class Instrumentation:
    """What ``octopoda.init()`` did: the agent everything is recorded under, and each
    integration's state (``instrumentation["crewai"].state``)."""

    __slots__ = ("agent_id", "integrations")

    def __init__(self, agent_id: str, integrations: tuple[IntegrationStatus, ...]) -> None:
        self.agent_id = agent_id
        self.integrations = integrations

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Instrumentation):
            return NotImplemented
        return (self.agent_id, self.integrations) == (other.agent_id, other.integrations)

    def __hash__(self) -> int:
        return hash((self.agent_id, self.integrations))

    def __repr__(self) -> str:
        states = ", ".join(f"{i.name}={i.state}" for i in self.integrations)
        return f"Instrumentation(agent_id={self.agent_id!r}, integrations=[{states}])"

    @property
    def active(self) -> tuple[str, ...]:
        return tuple(i.name for i in self.integrations if i.state == "active")

    def __getitem__(self, name: str) -> IntegrationStatus:
        for status in self.integrations:
            if status.name == name:
                return status
        raise KeyError(name)


def program_agent_id(argv: list[str] | None = None) -> str:
    """The agent id of a program that names none: its script's or module's name."""
    argv = sys.argv if argv is None else argv
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    if spec is not None and getattr(spec, "name", None):
        name = str(spec.name).removesuffix(".__main__")
        if name and name != "__main__":
            return name
    if argv and argv[0] not in ("", "-c", "-m"):
        base = os.path.basename(argv[0].rstrip("/\\"))
        stem = os.path.splitext(base)[0]
        if stem == "__main__":
            stem = os.path.basename(os.path.dirname(os.path.abspath(argv[0])))
        if stem:
            return stem
    return "python"


def parse_policy(spec: str, source: str = "OCTOPODA_POLICY") -> tuple[str, dict[str, Any]]:
    """``"pause"`` or ``"pause,spend_cap_usd=5,pause_scope=agent"``: ``LoopPolicy``'s
    ``on_loop`` and keyword arguments."""
    parts = [part.strip() for part in spec.split(",")]
    on_loop, options = parts[0], parts[1:]
    if on_loop not in ("warn", "pause", "raise"):
        raise ConfigError(
            f"{source}={spec!r}: the policy starts with warn, pause or raise (what to do about"
            " a loop), then optional key=value settings, as in 'pause,spend_cap_usd=5'"
        )
    kwargs: dict[str, Any] = {}
    for option in filter(None, options):
        key, sep, raw = option.partition("=")
        key = key.strip()
        convert = _POLICY_OPTIONS.get(key)
        if not sep or convert is None:
            raise ConfigError(
                f"{source}={spec!r}: {option!r} is not a setting; use key=value with a key of"
                f" {', '.join(_POLICY_OPTIONS)}"
            )
        try:
            kwargs[key] = convert(raw.strip())
        except ValueError:
            raise ConfigError(
                f"{source}={spec!r}: {key} needs a {convert.__name__}, not {raw.strip()!r}"
            ) from None
    return on_loop, kwargs


class _Entry:
    __slots__ = ("deactivate", "integration", "lock", "status")

    def __init__(self, status: IntegrationStatus, integration: Integration | None = None) -> None:
        self.status = status
        self.integration = integration
        self.deactivate: Deactivate | None = None
        self.lock = RLock()


class _Session:
    """One ``init``: its settings, its integrations, and what undoes them."""

    def __init__(
        self,
        key: tuple[Any, ...],
        agent_id: str,
        store: Any,
        policy: Any,
        prices: Mapping[str, Any] | None,
    ) -> None:
        self.key = key
        self.agent_id = agent_id
        self.store = store
        self.policy = policy  # a LoopPolicy, (on_loop, kwargs), or None
        self.prices = prices
        self.entries: dict[str, _Entry] = {}
        self.hooks = PostImportHooks()
        self.context: InitContext | None = None
        self.order: list[str] = []  # activation order, undone in reverse
        self.lock = RLock()
        self.closed = False

    def snapshot(self) -> Instrumentation:
        return Instrumentation(
            self.agent_id, tuple(entry.status for entry in self.entries.values())
        )

    def loop_policy(self) -> LoopPolicy | None:
        from .._loops import LoopPolicy

        if isinstance(self.policy, tuple):
            on_loop, kwargs = self.policy
            self.policy = LoopPolicy(on_loop, **kwargs)
        return self.policy if isinstance(self.policy, LoopPolicy) else None

    def init_context(self) -> InitContext:
        with self.lock:
            if self.context is None:
                from ..integrations._auto import InitContext
                from ..integrations._target import AgentRuntimes

                policy = self.loop_policy()
                runtimes = AgentRuntimes(self.store, policy=policy, agent_id=self.agent_id)
                self.context = InitContext(self.agent_id, runtimes, policy, self.prices)
            return self.context

    def activate(self, name: str) -> None:
        entry = self.entries[name]
        with entry.lock:
            if self.closed or entry.status.state != "waiting" or entry.integration is None:
                return
            status = entry.status
            try:
                entry.deactivate = entry.integration.activate(self.init_context())
            except Exception as exc:
                _log().exception("octopoda: the %s integration failed to activate", name)
                entry.status = _replace(status, "failed", f"activate raised {exc!r}")
                return
            entry.status = _replace(status, "active", status.detail)
            with self.lock:
                self.order.append(name)
            # At exit, undo before the store (opened by this activation) closes: atexit
            # runs the last registered first.
            atexit.unregister(shutdown)
            atexit.register(shutdown)
            _log().info(
                "octopoda: %s %s instrumented (agent %r)",
                status.framework,
                status.version,
                self.agent_id,
            )

    def close(self) -> None:
        with self.lock:
            self.closed = True
            order, self.order = self.order, []
        self.hooks.close()
        for name in reversed(order):
            entry = self.entries[name]
            with entry.lock:
                undo, entry.deactivate = entry.deactivate, None
                entry.status = _replace(entry.status, "waiting", "shut down")
            if undo is not None:
                try:
                    undo()
                except Exception:
                    _log().exception("octopoda: undoing the %s integration failed", name)


def _replace(status: IntegrationStatus, state: str, detail: str) -> IntegrationStatus:
    return status._replace(state=state, detail=detail)


_lock = RLock()
_session: _Session | None = None


def _disabled() -> set[str]:
    raw = os.environ.get("OCTOPODA_DISABLED_INTEGRATIONS", "")
    return {name.strip() for name in raw.split(",") if name.strip()}


def _settings(
    agent_id: str | None,
    store: Any,
    policy: Any,
    integrations: Iterable[str] | None,
    prices: Mapping[str, Any] | None,
) -> tuple[str, Any, tuple[str, ...] | None]:
    if agent_id is None:
        agent_id = os.environ.get("OCTOPODA_AGENT_ID") or program_agent_id()
    if not isinstance(agent_id, str) or not agent_id.strip():
        raise InvalidAgentId(f"agent_id must name the agent (a non-blank str), not {agent_id!r}")
    if policy is None:
        spec = os.environ.get("OCTOPODA_POLICY", "").strip()
        policy = parse_policy(spec) if spec else None
    elif isinstance(policy, str):
        policy = parse_policy(policy, "policy")
    elif not _is_loop_policy(policy):
        raise InvalidInput(
            f"policy must be a LoopPolicy, 'warn', 'pause' or 'raise', not {policy!r:.60}"
        )
    names: tuple[str, ...] | None = None
    if integrations is not None:
        if isinstance(integrations, str):
            raise InvalidInput(
                f"integrations is a list of names, not one string; use [{integrations!r}]"
            )
        names = tuple(integrations)
        if not all(isinstance(name, str) for name in names):
            raise InvalidInput(f"integrations must be names (str), got {names!r:.80}")
    if prices is not None:
        from ..integrations._pricing import check_prices

        check_prices(prices)
    return agent_id, policy, names


def _is_loop_policy(policy: object) -> bool:
    from .._loops import LoopPolicy

    return isinstance(policy, LoopPolicy)


def init(
    agent_id: str | None = None,
    *,
    store: Any = None,
    policy: LoopPolicy | str | None = None,
    integrations: Iterable[str] | None = None,
    prices: Mapping[str, Any] | None = None,
) -> Instrumentation:
    """Instrument every installed framework that Octopoda has an adapter for.

    Each adapter distribution (``octopoda-langchain``, ``octopoda-crewai``,
    ``octopoda-autogen``, ``octopoda-openai-agents``) declares an integration; ``init``
    activates those whose framework is installed in a supported version, at once if the
    framework is imported already, else when it is. The integrations hook the frameworks'
    official extension points only, and record tool calls, LLM calls (with usage, and cost
    by ``prices``), handoffs and decisions per run into agent ``agent_id``'s memory and
    audit chain, with loop detection and ``policy``.

    ``agent_id``: default ``$OCTOPODA_AGENT_ID``, else the program's name. ``store``: a
    path, URL, ``Store`` or ``Octopoda`` client; default ``$OCTOPODA_DATABASE_URL``, else
    ``~/.octopoda/octopoda.db``. ``policy``: a ``LoopPolicy`` or its ``on_loop`` (``"warn"``,
    ``"pause"``, ``"raise"``); default ``$OCTOPODA_POLICY`` (``"pause,spend_cap_usd=5"``),
    else detect and report only. ``integrations``: only these (by name: ``"langchain"``,
    ``"openai_agents"``, ``"crewai"``, ``"autogen"``); ``$OCTOPODA_DISABLED_INTEGRATIONS``
    (comma-separated names) turns some off.

    Idempotent: calling it again with the same settings changes nothing and returns the
    current state; other settings raise ``ConfigError`` (call :func:`shutdown` first).
    """
    global _session
    agent, parsed_policy, names = _settings(agent_id, store, policy, integrations, prices)
    where = store if store is None or isinstance(store, str) else id(store)
    key = (agent, where, repr(parsed_policy), names, repr(prices))
    with _lock:
        if _session is not None:
            if _session.key == key:
                return _session.snapshot()
            raise ConfigError(
                f"octopoda.init() already ran with other settings (agent {_session.agent_id!r});"
                " call octopoda.shutdown() before init() with new ones"
            )
        session = _Session(key, agent, store, parsed_policy, prices)
        waiting = _discover(session, names)
        if waiting:  # bad settings fail here, not inside a framework's import
            from .._values import validate_agent_id

            validate_agent_id(agent)
            session.loop_policy()
        _session = session
        atexit.register(shutdown)
    for name in waiting:
        integration = session.entries[name].integration
        assert integration is not None
        for module in integration.modules:
            session.hooks.add(module, _activator(session, name))
    return session.snapshot()


def _activator(session: _Session, name: str) -> Callable[[ModuleType], None]:
    def activate(_module: ModuleType) -> None:
        session.activate(name)

    return activate


def survey() -> list[IntegrationStatus]:
    """Every installed integration as ``init`` would find it now, activating none
    (``octopoda doctor``): ``"waiting"`` means it would be instrumented."""
    session = _Session((), "doctor", None, None, None)
    _discover(session, None)
    return [entry.status for entry in session.entries.values()]


def _discover(session: _Session, names: tuple[str, ...] | None) -> list[str]:
    """Fill ``session.entries``; return the integrations to activate on import."""
    dists = distributions()
    points = entry_points(GROUP, dists)
    found = {point.name for point in points}
    if names is not None:
        unknown = [name for name in names if name not in found]
        if unknown:
            hints = [f"pip install {ADAPTERS[name]}" for name in unknown if name in ADAPTERS]
            raise ConfigError(
                f"no installed adapter provides the integration {', '.join(map(repr, unknown))}"
                f" (installed: {', '.join(sorted(found)) or 'none'})"
                + (f"; install it: {'; '.join(hints)}" if hints else "")
            )
    if not points:
        return []  # (nothing installed: no statuses, and none of their imports)
    from .status import IntegrationStatus

    disabled = _disabled()
    waiting: list[str] = []
    for point in points:
        if point.name in session.entries or (names is not None and point.name not in names):
            continue
        blank = IntegrationStatus(point.name, point.distribution, "", None, "", "failed")
        if point.name in disabled:
            session.entries[point.name] = _Entry(
                _replace(blank, "disabled", "OCTOPODA_DISABLED_INTEGRATIONS")
            )
            continue
        try:
            integration = _load(point.value)
        except Exception as exc:
            _log().exception("octopoda: cannot load the %s integration", point.name)
            session.entries[point.name] = _Entry(_replace(blank, "failed", repr(exc)))
            continue
        framework = dists.get(normalize(integration.distribution))
        status = IntegrationStatus(
            point.name,
            point.distribution,
            integration.distribution,
            framework.version if framework else None,
            integration.supported,
            "waiting",
            integration.description,
        )
        if framework is None:
            status = _replace(status, "absent", f"{integration.distribution} is not installed")
        elif not satisfies(framework.version, integration.supported):
            status = _replace(
                status,
                "unsupported",
                f"{integration.distribution} {framework.version} is installed;"
                f" {point.distribution} supports {integration.supported}",
            )
            _log().warning("octopoda: %s; not instrumented", status.detail)
        else:
            waiting.append(point.name)
        session.entries[point.name] = _Entry(status, integration)
    return waiting


def _load(value: str) -> Integration:
    from importlib import import_module

    module, _, attribute = value.partition(":")
    obj: Any = import_module(module)
    for part in filter(None, attribute.split(".")):
        obj = getattr(obj, part)
    from ..integrations._auto import Integration

    if not isinstance(obj, Integration):
        raise ConfigError(
            f"entry point {value!r} is a {type(obj).__name__}, not an"
            " octopoda.integrations.Integration"
        )
    return obj


def shutdown() -> None:
    """Undo :func:`init`: every activated integration is deactivated (its hooks, listeners,
    processors and factories removed, what it replaced restored) and the import hooks go.
    Calling it without ``init``, or twice, does nothing."""
    global _session
    with _lock:
        session, _session = _session, None
    if session is None:
        return
    atexit.unregister(shutdown)
    session.close()
