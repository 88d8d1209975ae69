"""docs/server.md: its curl examples run against a fresh `octopoda serve`, in order, and
print what the page says (``"..."`` stands for a value that changes: times, hashes)."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")

DOC = Path(__file__).resolve().parents[3] / "docs" / "server.md"
DOC_URL = "http://127.0.0.1:7842"


def examples() -> list[tuple[str, str | None]]:
    """The ``$ curl`` commands of the page's console blocks, each with the line after it
    (its output) when that line is not another command."""
    out: list[tuple[str, str | None]] = []
    for block in re.findall(r"```console\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S):
        lines = block.strip("\n").splitlines()
        for i, line in enumerate(lines):
            if line.startswith("$ curl "):
                nxt = lines[i + 1] if i + 1 < len(lines) else None
                out.append((line[2:], None if nxt is None or nxt.startswith("$") else nxt))
    return out


def matches(expected: Any, actual: Any) -> bool:
    if expected == "...":
        return True
    if isinstance(expected, dict):
        return (
            isinstance(actual, dict)
            and expected.keys() == actual.keys()
            and all(matches(v, actual[k]) for k, v in expected.items())
        )
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(expected) == len(actual)
            and all(matches(e, a) for e, a in zip(expected, actual, strict=True))
        )
    return bool(expected == actual)


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_the_curl_examples_print_what_the_page_says(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location(
        "octopoda_test_serving", Path(__file__).with_name("serving.py")
    )
    assert spec is not None and spec.loader is not None
    serving = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(serving)
    found = examples()
    assert len(found) >= 10
    env = {"OCTOPODA_SERVER_TOKEN": serving.TOKEN}
    with serving.running_server("--store", str(tmp_path / "docs.db"), env=env) as url:
        for command, expected in found:
            line = command.replace(DOC_URL, url)
            if "Authorization" not in line:
                line += f" -H 'Authorization: Bearer {serving.TOKEN}'"
            result = subprocess.run(
                ["bash", "-c", line],
                capture_output=True,
                text=True,
                timeout=60,
                env={**os.environ, **env},
                check=False,
            )
            assert result.returncode == 0, (command, result.stderr)
            actual = json.loads(result.stdout)
            if expected is not None:
                assert matches(json.loads(expected), actual), (command, result.stdout)
