"""pytest plugin: the OpenAI Agents SDK's own session tests, run against OctopodaSession.

Loaded with ``-p openai_agents_swap`` (this folder on ``PYTHONPATH``) from the root of the
unpacked ``openai-agents`` source distribution; ``nox -s parity_openai_agents`` does all of it.

At collection time every test module (and every helper module under ``tests.``) that bound
the name ``SQLiteSession`` to the SDK's class gets :class:`OctopodaSQLiteSession` under that
name instead: ``OctopodaSession`` behind ``SQLiteSession``'s constructor. No test file is
edited. The SDK's own modules keep the real class, so the SDK treats ours exactly as it
treats any session a user brings (its ``isinstance(..., SQLiteSession)`` checks say no).

The tests listed in the ``[openai_agents]`` table of ``allowlist.toml`` are marked
``xfail(strict=True)`` with their reason: such a test must fail, and any failure not listed
fails the run. ``--parity-shipped`` runs the suite as shipped (no swap, no allowlist), for
the baseline counts. ``--parity-control`` checks the reasons that say a feature is reserved
for the SDK's own class: with :class:`ControlSQLiteSession` (the SDK's class without its
private fast paths) exactly those tests must fail.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import tomllib
from agents import SessionSettings
from agents.memory.sqlite_session import SQLiteSession as ShippedSQLiteSession
from octopoda_openai_agents import SESSION_AGENT_PREFIX, OctopodaSession

ALLOWLIST = Path(__file__).with_name("allowlist.toml")
SECTION = "openai_agents"
DEFAULT_TABLES = ("agent_sessions", "agent_messages")
RESERVED = "reserved for SQLiteSession itself"
"""How the reasons of tests that need the SDK's private fast paths for its own class begin."""
_SUMMARY = pytest.StashKey[tuple[int, int]]()  # (modules swapped, allowlisted tests collected)


class OctopodaSQLiteSession(OctopodaSession):
    """:class:`OctopodaSession` with ``SQLiteSession``'s constructor.

    ``db_path`` becomes the Octopoda store (``":memory:"``: a private in-memory store, as
    each in-memory ``SQLiteSession`` has its own database). Two sessions with one id but
    other table names are separate in ``SQLiteSession``; here the table names go into the
    agent prefix, so they are separate too. ``db_path``, ``sessions_table`` and
    ``messages_table`` are kept as the public attributes ``SQLiteSession`` has.
    """

    def __init__(
        self,
        session_id: str,
        db_path: str | Path = ":memory:",
        sessions_table: str = "agent_sessions",
        messages_table: str = "agent_messages",
        session_settings: SessionSettings | dict[str, Any] | None = None,
    ) -> None:
        tables = (sessions_table, messages_table)
        prefix = SESSION_AGENT_PREFIX
        if tables != DEFAULT_TABLES:
            prefix = f"openai-session[{sessions_table},{messages_table}]:"
        super().__init__(
            session_id,
            str(db_path),
            session_settings=session_settings,
            agent_prefix=prefix,
        )
        self.db_path = db_path
        self.sessions_table = sessions_table
        self.messages_table = messages_table


class ControlSQLiteSession(ShippedSQLiteSession):
    """The SDK's own ``SQLiteSession`` as any subclass of it is treated: the SDK's private
    fast paths for the exact class are off (``_get_compaction_snapshot`` returns None for
    subclasses; ``EncryptedSession`` authenticates a pop inside the delete only while
    ``pop_item`` is ``SQLiteSession.pop_item``). A test that fails with this class depends
    on those private hooks, not on how the history is stored."""

    async def pop_item(self) -> Any:
        return await super().pop_item()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("octopoda parity")
    group.addoption(
        "--parity-shipped",
        action="store_true",
        help="run the suite as shipped: keep SQLiteSession, ignore the allowlist",
    )
    group.addoption(
        "--parity-control",
        action="store_true",
        help="swap in ControlSQLiteSession (the SDK's class minus its private fast paths)"
        " instead of OctopodaSession: the allowlisted tests whose reason says 'reserved'"
        " must fail then, and every other test must pass",
    )


def load_allowlist() -> dict[str, str]:
    """The ``[openai_agents]`` table: pytest node id -> why the test cannot pass."""
    with ALLOWLIST.open("rb") as file:
        table = tomllib.load(file).get(SECTION, {})
    bad = [key for key, reason in table.items() if not isinstance(reason, str) or not reason]
    if bad:
        raise pytest.UsageError(f"{ALLOWLIST}: [{SECTION}] entries need a reason: {bad}")
    return dict(table)


def _modules_to_swap(items: list[pytest.Item]) -> Iterator[ModuleType]:
    seen: set[int] = set()
    candidates = [getattr(item, "module", None) for item in items]
    candidates += [m for name, m in list(sys.modules.items()) if name.startswith("tests.")]
    for module in candidates:
        if module is not None and id(module) not in seen:
            seen.add(id(module))
            yield module


def _swap(items: list[pytest.Item], replacement: type) -> int:
    swapped = 0
    for module in _modules_to_swap(items):
        if vars(module).get("SQLiteSession") is ShippedSQLiteSession:
            module.SQLiteSession = replacement  # type: ignore[attr-defined]
            swapped += 1
    return swapped


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("parity_shipped"):
        return
    allowlist = load_allowlist()
    if config.getoption("parity_control"):
        swapped = _swap(items, ControlSQLiteSession)
        allowlist = {k: v for k, v in allowlist.items() if v.startswith(RESERVED)}
    else:
        swapped = _swap(items, OctopodaSQLiteSession)
    collected = {item.nodeid for item in items}
    for item in items:
        reason = allowlist.get(item.nodeid)
        if reason is not None:
            item.add_marker(pytest.mark.xfail(strict=True, reason=f"allowlisted: {reason}"))
    stale = _stale_entries(config, allowlist, collected)
    if stale:
        raise pytest.UsageError(
            f"{ALLOWLIST} [{SECTION}] lists tests that no longer exist; remove them: {stale}"
        )
    config.stash[_SUMMARY] = (swapped, sum(1 for k in allowlist if k in collected))


def _stale_entries(
    config: pytest.Config, allowlist: dict[str, str], collected: set[str]
) -> list[str]:
    """Entries whose file is gone, and (when the run names whole files, not single tests)
    entries of a collected file that were not collected."""
    files = {nodeid.split("::")[0] for nodeid in collected}
    whole_files = not any("::" in str(arg) for arg in config.args)
    return sorted(
        key
        for key in allowlist
        if not (config.rootpath / key.split("::")[0]).is_file()
        or (whole_files and key.split("::")[0] in files and key not in collected)
    )


def pytest_report_header(config: pytest.Config) -> str:
    if config.getoption("parity_shipped"):
        return "octopoda parity: as shipped (SQLiteSession, no allowlist)"
    if config.getoption("parity_control"):
        return "octopoda parity: SQLiteSession -> ControlSQLiteSession, 'reserved' entries only"
    return f"octopoda parity: SQLiteSession -> OctopodaSQLiteSession, allowlist {ALLOWLIST}"


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    summary = config.stash.get(_SUMMARY, None)
    if summary is not None:
        swapped, listed = summary
        terminalreporter.write_line(
            f"octopoda parity: SQLiteSession swapped in {swapped} modules;"
            f" {listed} collected tests allowlisted"
        )
