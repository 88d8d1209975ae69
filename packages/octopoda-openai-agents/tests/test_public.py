"""The public names, and the rule that the adapter uses only the core's public API."""

from __future__ import annotations

import ast
from pathlib import Path

import octopoda_openai_agents
from octopoda_openai_agents import RunPaused

import octopoda
import octopoda.integrations
from octopoda import AgentPaused

SRC = Path(octopoda_openai_agents.__file__).resolve().parent


def test_all_is_importable() -> None:
    names = octopoda_openai_agents.__all__  # its order is ruff's (RUF022)
    assert len(set(names)) == len(names)
    for name in names:
        assert getattr(octopoda_openai_agents, name) is not None
    assert (SRC / "py.typed").is_file()


def test_the_adapter_imports_only_public_core_names() -> None:
    # the core's public modules: the package and its adapter kit (octopoda.integrations)
    public = {"octopoda": octopoda.__all__, "octopoda.integrations": octopoda.integrations.__all__}
    for path in sorted(SRC.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                if node.module.startswith("octopoda") and node.module not in public:
                    assert node.module.startswith("octopoda_openai_agents"), (path, node.module)
                for alias in node.names if node.module in public else ():
                    assert alias.name in public[node.module], (path.name, alias.name)
            if isinstance(node, ast.Import):
                for alias in node.names:
                    assert not alias.name.startswith("octopoda."), (path.name, alias.name)


def test_run_paused_is_both_exceptions() -> None:
    from agents import AgentsException

    exc = RunPaused("agent 'a' is paused: x", "x", None, (("t", "c1", "{}"),))
    assert isinstance(exc, AgentPaused) and isinstance(exc, AgentsException)
    assert exc.reason == "x" and exc.calls == (("t", "c1", "{}"),) and exc.run_data is None
