"""The public names, and the rule that the adapter uses only octopoda's public names."""

from __future__ import annotations

import ast
from pathlib import Path

import octopoda_langchain
import pytest

import octopoda
import octopoda.integrations
import octopoda.search

SRC = Path(octopoda_langchain.__file__).resolve().parent
# The public octopoda modules the adapter may import from, with their public names.
PUBLIC = {
    "octopoda": octopoda.__all__,
    "octopoda.integrations": octopoda.integrations.__all__,  # the adapter kit
    "octopoda.search": octopoda.search.__all__,
}


def test_all_is_sorted_and_every_name_loads() -> None:
    import importlib.util

    names = octopoda_langchain.__all__
    assert names == sorted(names)
    for name in names:
        if name == "OctopodaMiddleware" and importlib.util.find_spec("langchain") is None:
            with pytest.raises(ImportError, match=r"pip install 'octopoda-langchain\[agents\]'"):
                getattr(octopoda_langchain, name)
            continue
        assert getattr(octopoda_langchain, name) is not None
    assert dir(octopoda_langchain) == sorted(names)
    with pytest.raises(AttributeError):
        octopoda_langchain.Nothing  # noqa: B018


def test_the_adapter_imports_only_public_octopoda_names() -> None:
    for path in sorted(SRC.glob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.ImportFrom)
                and node.level == 0
                and (node.module or "").split(".")[0] == "octopoda"
            ):
                public = PUBLIC.get(node.module or "")
                assert public is not None, f"{path.name} imports {node.module}"
                for alias in node.names:
                    assert alias.name in public, f"{path.name}: {alias.name}"
            if isinstance(node, ast.Import):
                for alias in node.names:
                    top = alias.name.split(".")[0]
                    assert top != "octopoda" or alias.name in PUBLIC, f"{path.name}: {alias.name}"


def test_py_typed_ships() -> None:
    assert (SRC / "py.typed").is_file()


@pytest.mark.agents
def test_the_readme_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from langchain_core.tools import tool
    from octopoda_langchain.testing import ScriptedChatModel, tool_call

    @tool
    def lookup(order: str) -> str:
        """Look up an order."""
        return f"{order}: shipped"

    readme = (SRC.parents[1] / "README.md").read_text()
    code = readme.split("```python\n", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(tmp_path)
    scope = {
        "model": ScriptedChatModel(script=[tool_call("lookup", {"order": "A1"}), "Shipped."]),
        "tools": [lookup],
    }
    exec(compile(code, "README.md", "exec"), scope)
    assert scope["agent"].audit.verify().ok
    assert scope["agent"].stats().tool_calls == 1
