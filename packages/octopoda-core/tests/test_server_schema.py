"""Schemathesis against our own OpenAPI document (`nox -s schemathesis`): over generated
requests to a real `octopoda serve`, no 5xx and no response that violates the schema.
The case count is bounded (OCTOPODA_SCHEMATHESIS_EXAMPLES, default 4 per operation)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("schemathesis")


def test_no_server_error_and_no_schema_violation(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location(
        "octopoda_test_serving", Path(__file__).with_name("serving.py")
    )
    assert spec is not None and spec.loader is not None
    serving = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(serving)
    st = shutil.which("st", path=str(Path(sys.executable).parent)) or "st"
    examples = os.environ.get("OCTOPODA_SCHEMATHESIS_EXAMPLES", "4")
    with serving.running_server("--store", str(tmp_path / "fuzz.db")) as url:
        result = subprocess.run(
            [
                st,
                "run",
                f"{url}/openapi.json",
                "--checks",
                "not_a_server_error,response_schema_conformance,content_type_conformance",
                "--phases",
                "examples,fuzzing",
                "--max-examples",
                examples,
                "--seed",
                "20",
                "--exclude-path-regex",
                "/events",  # (a long poll and a stream wait by design: test_server.py)
                "--request-timeout",
                "30",
                "--no-color",
            ],
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
    summary = result.stdout[-3000:]
    assert result.returncode == 0, summary + result.stderr[-2000:]
    assert " passed" in summary, summary
