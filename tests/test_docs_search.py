"""docs/search.md runs as written."""

from __future__ import annotations

import re
from pathlib import Path

DOC = (Path(__file__).resolve().parent.parent / "docs" / "search.md").read_text("utf-8")


def test_the_examples_run() -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOC, flags=re.DOTALL)
    assert blocks
    for block in blocks:
        namespace: dict[str, object] = {}
        exec(compile(block, "docs/search.md", "exec"), namespace)
        agent = namespace.get("agent")
        if agent is not None:
            agent.close()  # type: ignore[attr-defined]
