"""Developer and CI sessions. Run `python3 tools/dev.py test` (or `nox`, `nox -s tests-3.12`).

Missing interpreters fail the run when the CI environment variable is set (nox's default)
and are skipped otherwise.
"""

from __future__ import annotations

from pathlib import Path

import nox

nox.needs_version = ">=2025.2.9"
nox.options.default_venv_backend = "uv"
nox.options.reuse_venv = "yes"
nox.options.sessions = ["lint", "typecheck", "tests"]

ROOT = Path(__file__).parent
CORE = "packages/octopoda-core"
PYTHONS = ["3.10", "3.11", "3.12", "3.13"]
TEST_DIRS = [f"{CORE}/tests", "tests"]
# Linters are pinned so that a new release cannot fail CI on unchanged code; bump deliberately
# (and in the root pyproject.toml's dev group).
RUFF = "ruff==0.17.6"
MYPY = "mypy==2.4.1"


@nox.session
def lint(session: nox.Session) -> None:
    """Ruff lint and format check over the whole repository."""
    session.install(RUFF)
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session
def typecheck(session: nox.Session) -> None:
    """mypy --strict on the core package."""
    session.install("-e", f"{CORE}[cli,sign]", MYPY, "click", "pytest")
    session.run("mypy", "--strict", f"{CORE}/src")


@nox.session(python=PYTHONS)
def tests(session: nox.Session) -> None:
    """pytest on every supported Python; extra args go to pytest (`nox -s tests -- -k x`)."""
    session.install("-e", f"{CORE}[cli,sign]", "pytest", "pytest-socket")
    # Explicit paths in the extra args replace the default test directories.
    args = session.posargs
    if not any((ROOT / arg.split("::")[0]).exists() for arg in args if not arg.startswith("-")):
        args = [d for d in TEST_DIRS if (ROOT / d).is_dir()] + args
    session.run("pytest", *args)


@nox.session
def bench(session: nox.Session) -> None:
    """Benchmarks (bench/README.md): `nox -s bench`, or `nox -s bench -- --quick` for a smoke
    run; other flags (`--json PATH`, `--only NAMES`, `--no-predecessor`) go to bench/run_all.py.
    """
    if not (ROOT / "bench" / "run_all.py").is_file():
        session.skip("bench/run_all.py does not exist yet")
    session.install("-e", CORE)
    # The predecessor comparison installs octopoda==3.3.4 into its own venv
    # (.nox/bench-predecessor) with the uv nox itself uses, when nox found one.
    env: dict[str, str] = {}
    nox_venv = getattr(nox, "virtualenv", None)
    uv = getattr(nox_venv, "UV", None) if getattr(nox_venv, "HAS_UV", False) else None
    if uv:
        env["OCTOPODA_BENCH_UV"] = str(uv)
    session.run("python", "bench/run_all.py", *session.posargs, env=env)


@nox.session
def quickstart(session: nox.Session) -> None:
    """Run examples/quickstart.py against the installed core (with the CLI extra)."""
    if not (ROOT / "examples" / "quickstart.py").is_file():
        session.error("examples/quickstart.py does not exist")
    session.install("-e", f"{CORE}[cli]")
    session.run("python", "examples/quickstart.py", *session.posargs)
