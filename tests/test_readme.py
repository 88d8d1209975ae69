"""The README's Python examples and the quickstart run as documented."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", README, flags=re.DOTALL)


@pytest.fixture
def octopoda_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("OCTOPODA_HOME", str(home))
    monkeypatch.delenv("OCTOPODA_DATABASE_URL", raising=False)
    monkeypatch.chdir(tmp_path)
    return home


def test_readme_python_examples_run(octopoda_home: Path) -> None:
    blocks = _blocks("python")
    assert len(blocks) >= 3
    namespace: dict[str, object] = {"__name__": "readme"}
    for i, block in enumerate(blocks):
        exec(compile(block, f"README.md python block {i + 1}", "exec"), namespace)
    assert (octopoda_home / "octopoda.db").is_file()


def test_readme_has_exactly_two_setup_commands() -> None:
    setup = README.split("## Setup", 1)[1].split("\n## ", 1)[0]
    commands = [
        line.split("#", 1)[0].strip()
        for block in re.findall(r"```bash\n(.*?)```", setup, flags=re.DOTALL)
        for line in block.splitlines()
        if line.strip()
    ]
    assert commands == ["python3 tools/dev.py quickstart", "python3 tools/dev.py test"]


def test_quickstart_runs_twice_on_the_default_store(tmp_path: Path) -> None:
    env = {**os.environ, "OCTOPODA_HOME": str(tmp_path / "home")}
    env.pop("OCTOPODA_DATABASE_URL", None)
    script = str(ROOT / "examples" / "quickstart.py")
    first = subprocess.run(
        [sys.executable, script], env=env, capture_output=True, text=True, check=True
    )
    assert "audit chain: verified" in first.stdout
    assert "remembered from an earlier run" not in first.stdout
    second = subprocess.run(
        [sys.executable, script], env=env, capture_output=True, text=True, check=True
    )
    assert "remembered from an earlier run: user_name = 'Alice'" in second.stdout
    assert "restates decision" in second.stdout
    assert "plan = {'tier': 'pro', 'seats': 6} (version 5)" in second.stdout  # a seat more
    # a second run is new work, not the first one's changes undone and redone: no loop
    assert "loop" not in first.stderr + second.stderr, second.stderr
    assert "audit chain: verified" in second.stdout
    assert (tmp_path / "home" / "octopoda.db").is_file()


def _checkout_installs(text: str) -> list[str]:
    """The paths that the ``pip install -e`` lines of ``text`` install (extras kept)."""
    return [
        path.strip("'\"")
        for line in text.splitlines()
        if line.startswith("pip install -e ")
        for path in line.split("#", 1)[0].split()[3:]
        if path != "-e"
    ]


@pytest.mark.parametrize(
    "readme",
    [ROOT / "README.md", *sorted((ROOT / "packages").glob("*/README.md"))],
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_each_readme_shows_the_install_from_a_checkout(readme: Path) -> None:
    # until the first release nothing is on PyPI: a new user installs from this checkout,
    # an adapter together with the core it needs
    installs = _checkout_installs(readme.read_text(encoding="utf-8"))
    package = readme.parent.name if readme.parent.parent.name == "packages" else None
    wanted = {"packages/octopoda-core", *([f"packages/{package}"] if package else [])}
    named = {path.split("[", 1)[0] for path in installs}
    assert wanted <= named, f"{readme.relative_to(ROOT)} installs {sorted(named)}, not {wanted}"
    for path in installs:
        folder, _, extras = path.partition("[")
        pyproject = (ROOT / folder / "pyproject.toml").read_text(encoding="utf-8")
        for extra in filter(None, extras.rstrip("]").split(",")):
            assert re.search(rf"^{re.escape(extra)} = \[", pyproject, re.MULTILINE), (
                f"{readme.relative_to(ROOT)}: {folder} has no extra {extra!r}"
            )
