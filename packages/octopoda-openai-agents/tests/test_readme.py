"""The package README's Python blocks run, in order, as one program (offline)."""

from __future__ import annotations

import ast
import asyncio
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import agents
import pytest
from agents import Agent
from octopoda_openai_agents.testing import ScriptedModel, assistant_message

README = Path(__file__).resolve().parents[1] / "README.md"


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OCTOPODA_HOME", str(tmp_path))
    yield tmp_path
    agents.set_trace_processors([])  # the tracing block installs a processor


def test_readme_python_blocks_run(in_tmp: Path) -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.DOTALL)
    assert len(blocks) >= 4
    model = ScriptedModel([[assistant_message(f"answer {i}")] for i in range(2)])
    namespace: dict[str, Any] = {"agent": Agent(name="assistant", model=model)}
    for i, block in enumerate(blocks):
        code = compile(
            block, f"README.md python block {i + 1}", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
        )
        result = eval(code, namespace)  # a coroutine when the block awaits
        if asyncio.iscoroutine(result):
            asyncio.run(result)
    assert namespace["session_ids"]("chat.db") == ["user-42"]
    assert namespace["result"].final_output == "answer 0"
    assert (in_tmp / "chat.db").is_file()
