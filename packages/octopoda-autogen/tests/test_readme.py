"""The package README's Python blocks run, in order, as one program (offline)."""

from __future__ import annotations

import ast
import asyncio
import re
from pathlib import Path
from typing import Any

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"

pytestmark = pytest.mark.replay


def test_readme_python_blocks_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import scripted

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OCTOPODA_HOME", str(tmp_path))
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.DOTALL)
    assert len(blocks) == 3
    looping = [scripted.call("fetch", f"c{i}", url="https://example.test") for i in range(5)]
    namespace: dict[str, Any] = {
        "model_client": scripted.client("Try the mushroom risotto."),
        "looping_client": scripted.client(*looping),
    }

    async def program() -> None:
        for i, block in enumerate(blocks):
            flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
            code = compile(block, f"README.md python block {i + 1}", "exec", flags=flags)
            result = eval(code, namespace)  # a coroutine when the block awaits
            if asyncio.iscoroutine(result):
                await result

    asyncio.run(program())
    assert namespace["result"].stop_reason.startswith("Stopped: Octopoda paused run")
    assert [v.version for v in namespace["keeper"].history()] == [1]
