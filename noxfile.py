"""Developer and CI sessions. Run `python3 tools/dev.py test` (or `nox`, `nox -s tests-3.12`).

Missing interpreters fail the run when the CI environment variable is set (nox's default)
and are skipped otherwise.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import nox
import nox.command

sys.path.insert(0, str(Path(__file__).parent / "tools"))
from pytest_args import cell_args, narrowed  # (tools/, beside this file)

nox.needs_version = ">=2025.2.9"
nox.options.default_venv_backend = "uv"
nox.options.reuse_venv = "yes"
nox.options.sessions = [
    "lint",
    "typecheck",
    "tests",
    "tests_postgres",
    "tests_server",
    "schemathesis",
]

ROOT = Path(__file__).parent
# `python3 tools/dev.py test` runs the sessions tagged ADAPTER_LANE (the framework adapters')
# as a nox process of their own beside the others, then those tagged ALONE by themselves:
# LangGraph's parity suites time their stream chunks (test_stream_subgraphs_during_execution
# failed with both lanes loading the 2 cores) and run four suites at once already.
ADAPTER_LANE = ["adapters"]
ALONE = ["alone"]
CORE = "packages/octopoda-core"
PYTHONS = ["3.10", "3.11", "3.12", "3.13"]
FULL_PYTHON = "3.11"  # the Python that runs every test (the others run the core set)
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
    session.install(
        "-e",
        f"{CORE}[cli,sign,postgres,mcp,server,remote]",
        MYPY,
        "click",
        "pytest",
        "types-requests",
    )
    session.run("mypy", "--strict", f"{CORE}/src")


CORE_TEST_DEPS = ("pytest", "pytest-socket", "hypothesis>=6.100")  # hypothesis: the fuzz suite


# The full suite runs on 3.11; the other Pythons run the core set: all but what behaves the
# same from every Python and costs the most time there. Left out: the PostgreSQL tests (the
# store conformance suite still runs on PostgreSQL: the driver's wheels are per Python), the
# tests that start other processes (crash, race and shared-state tests), the fuzzers
# (hypothesis explores the same inputs) and the 100,000-event chain.
CORE_SET_PYTHONS = tuple(python for python in PYTHONS if python != FULL_PYTHON)
CORE_SET_OMITS = (
    *(
        f"--ignore={CORE}/tests/{name}.py"
        for name in (
            "test_postgres",
            "test_postgres_retries",
            "test_fuzz_damage",
            "test_fuzz_stateful",
            "test_processes",
            "test_collab_processes",
            "test_shared_loops",
        )
    ),
    f"--deselect={CORE}/tests/test_audit.py::test_a_chain_of_100000_events_verifies",
)
CORE_SET_SELECTION = {"-k": "not postgres or test_store_conformance"}


@nox.session(python=PYTHONS)
def tests(session: nox.Session) -> None:
    """pytest on every supported Python (the core set on CORE_SET_PYTHONS); extra args go to
    pytest (`nox -s tests -- -k x`; a -k of your own narrows the core set's)."""
    # numpy (the [vectors] extra) on the newest Python only: vector search's numpy path
    # there, its pure-Python path on the others
    extras = "cli,sign,postgres" + (",vectors" if session.python == PYTHONS[-1] else "")
    session.install("-e", f"{CORE}[{extras}]", *CORE_TEST_DEPS)
    # Explicit paths in the extra args replace the default test directories.
    args = session.posargs
    if not any((ROOT / arg.split("::")[0]).exists() for arg in args if not arg.startswith("-")):
        # (the browser tests need playwright and chromium: the browser session runs them)
        args = [f"--ignore={CORE}/tests/browser", *(d for d in TEST_DIRS if (ROOT / d).is_dir())]
        if session.python in CORE_SET_PYTHONS:
            args = [*CORE_SET_OMITS, *narrowed(CORE_SET_SELECTION, [*args, *session.posargs])]
        else:
            args += session.posargs
    # The PostgreSQL acceptance run at full size (8 processes x 2,000 writes) on one Python.
    env = {"OCTOPODA_TEST_PG_WRITES": "2000"} if session.python == FULL_PYTHON else {}
    session.run("pytest", *args, env=env)


# Tests that drive the SQLite file itself (raw sqlite3 tampering, several processes on one
# file); the conformance suite and test_postgres.py cover the same ground on PostgreSQL.
SQLITE_ONLY = [
    "open_reader",  # (a SqliteStore's own method)
    "two_processes",
    "another_process",
    "across_processes",
    "survive_a_restart",
    "test_verify_detects_a_tampered_shared_version",
    "test_verify_detects_a_deleted_goal_version",
    "test_forged_signature_row_is_detected",
    "test_rewritten_chain_below_a_signed_head_is_detected",
    "test_truncation_below_a_signed_head_is_detected",
    "test_a_deep_value_stored_before_the_limit_never_raises_recursion_error",
]
RUNTIME_SUITES = [
    f"{CORE}/tests/{name}.py"
    for name in (
        "test_runtime",
        "test_audit",
        "test_decisions",
        "test_batch",
        "test_loops",
        "test_loop_traces",
        "test_breaker",
        "test_collab",
        "test_signing",
        "test_runs",
        "test_limits",
        "test_search",
        "test_search_vectors",
    )
]


@nox.session(python="3.11")
def tests_postgres(session: nox.Session) -> None:
    """The runtime test suites again, every store they open made a PostgreSQL schema
    (`--store-backend=postgresql`, see packages/octopoda-core/tests/conftest.py)."""
    session.install("-e", f"{CORE}[cli,sign,postgres]", *CORE_TEST_DEPS)
    deselect = " and ".join(f"not {name}" for name in SQLITE_ONLY)
    args = narrowed({"-k": deselect}, session.posargs)
    session.run("pytest", *RUNTIME_SUITES, "--store-backend=postgresql", *args)


# Octopoda 3.3.4 (the predecessor on PyPI) owns the same `octopoda` import package as our
# core, so it gets a venv of its own beside the session's; the tests run 3.3.4's API there to
# write real data at test time (nothing of it is committed) and migrate it with our core.
LEGACY_SPEC = "octopoda==3.3.4"
MIGRATE_TESTS = [
    f"{CORE}/tests/test_migrate.py",
    f"{CORE}/tests/test_migrating_doc.py",
    f"{CORE}/tests/test_install_conflict.py",  # both installed in one throwaway venv
]


def _legacy_venv(session: nox.Session) -> Path:
    """A venv holding octopoda 3.3.4 only (reused while it does); its interpreter."""
    venv = Path(session.virtualenv.location).parent / "migrate-334"
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    check = "import importlib.metadata as m; assert m.version('octopoda') == '3.3.4'"
    if python.exists() and subprocess.run([str(python), "-c", check], check=False).returncode == 0:
        session.log(f"reusing {venv} ({LEGACY_SPEC})")
        return python
    nox_venv = getattr(nox, "virtualenv", None)
    uv = getattr(nox_venv, "UV", None) if getattr(nox_venv, "HAS_UV", False) else None
    if uv:
        session.run(str(uv), "venv", "--quiet", "--python", "3.11", str(venv), external=True)
        session.run(
            str(uv),
            "pip",
            "install",
            "--quiet",
            "--python",
            str(python),
            LEGACY_SPEC,
            external=True,
        )
    else:
        session.run("python", "-m", "venv", "--clear", str(venv))
        session.run(str(python), "-m", "pip", "install", "--quiet", LEGACY_SPEC, external=True)
    return python


@nox.session(python="3.11")
def migrate(session: nox.Session) -> None:
    """`octopoda migrate` against real 3.3.4 data (tests/test_migrate.py) and
    docs/migrating.md against 3.3.4's package; extra args go to pytest."""
    legacy = _legacy_venv(session)
    session.install("-e", f"{CORE}[cli,postgres]", *CORE_TEST_DEPS)
    env = {"OCTOPODA_LEGACY_PYTHON": str(legacy), "OCTOPODA_REQUIRE_LEGACY": "1"}
    nox_venv = getattr(nox, "virtualenv", None)
    if getattr(nox_venv, "HAS_UV", False):
        env["OCTOPODA_TEST_UV"] = str(nox_venv.UV)  # type: ignore[union-attr]
    tests = [t for t in MIGRATE_TESTS if (ROOT / t).is_file()]
    session.run("pytest", *tests, *session.posargs, env=env)


nox.options.sessions.append("migrate")


MCP_TESTS = [
    f"{CORE}/tests/test_mcp.py",
    f"{CORE}/tests/test_mcp_stdio.py",
    f"{CORE}/tests/test_mcp_http.py",
    f"{CORE}/tests/test_mcp_extra.py",
    "tests/test_docs_mcp.py",
]


@nox.session(python="3.11")
def mcp(session: nox.Session) -> None:
    """The MCP server (the [mcp] extra, mcp 2.x): in-process, stdio subprocesses and
    streamable HTTP on a loopback port (`nox -s mcp -- -k stdio`)."""
    session.install("-e", f"{CORE}[cli,mcp]", *CORE_TEST_DEPS)
    session.run("pytest", *MCP_TESTS, *session.posargs)


nox.options.sessions.append("mcp")


SERVER_DEPS = ("requests",)  # (the remote store's and the tests' HTTP client)
SERVER_TESTS = [
    f"{CORE}/tests/{name}.py"
    for name in (
        "test_server",
        "test_server_mcp",
        "test_remote_store",
        "test_dashboard",
        "test_docs_server",  # (docs/server.md's curl examples, against a real server)
    )
] + [f"{CORE}/tests/test_audit.py::test_verify_is_not_fooled_by_a_writer_in_another_process"]
# Runtime tests that start other processes on a file, or reach into the SQLite file or
# a SqliteStore, cannot run through a server.
REMOTE_SKIP = [*SQLITE_ONLY, "sqlite", "tracer", "read_only", "readonly", "durability"]


@nox.session(python="3.11")
def tests_server(session: nox.Session) -> None:
    """`octopoda serve` and the remote store: the API and security tests (real server
    processes), the MCP tools at /mcp, the store conformance suite through a server over
    SQLite and PostgreSQL, and the runtime suite test_runtime.py through a server
    (`--store-backend=remote`)."""
    session.install("-e", f"{CORE}[cli,sign,postgres,server,remote,mcp]", *CORE_TEST_DEPS)
    session.run("pytest", *SERVER_TESTS, *session.posargs)
    deselect = " and ".join(f"not {name}" for name in REMOTE_SKIP)
    session.run("pytest", f"{CORE}/tests/test_runtime.py", "--store-backend=remote", "-k", deselect)


@nox.session(python="3.11")
def tests_remote(session: nox.Session) -> None:
    """Every runtime suite through a server process: `nox -s tests_remote` (over SQLite
    files) or `nox -s tests_remote -- --store-backend=remote-postgresql`."""
    session.install("-e", f"{CORE}[cli,sign,postgres,server,remote]", *CORE_TEST_DEPS)
    args = list(session.posargs)
    if not any(a.startswith("--store-backend") for a in args):
        args.append("--store-backend=remote")
    deselect = " and ".join(f"not {name}" for name in REMOTE_SKIP)
    session.run("pytest", *RUNTIME_SUITES, *narrowed({"-k": deselect}, args))


@nox.session(python="3.11")
def schemathesis(session: nox.Session) -> None:
    """Schemathesis against a running `octopoda serve`'s /openapi.json (bounded cases):
    no 5xx, no response that violates the schema."""
    session.install("-e", f"{CORE}[cli,server,remote]", "schemathesis", *CORE_TEST_DEPS)
    session.run("pytest", f"{CORE}/tests/test_server_schema.py", *session.posargs)


# The dashboard in a real browser: pip playwright drives Debian's /usr/bin/chromium (.ci/run
# installs it; `playwright install` downloads a browser build and is never run), and
# axe-playwright-python brings axe-core's script for the accessibility checks. Screenshots go
# to artifacts/screenshots/ (OCTOPODA_SCREENSHOTS overrides).
BROWSER_DEPS = ("playwright", "axe-playwright-python")


@nox.session(python="3.11")
def browser(session: nox.Session) -> None:
    """The dashboard's browser tests (packages/octopoda-core/tests/browser; extra args go to
    pytest). They skip without chromium or playwright, and fail instead when CI is set."""
    session.install("-e", f"{CORE}[cli,server,remote]", *BROWSER_DEPS, *CORE_TEST_DEPS)
    shots = os.environ.get("OCTOPODA_SCREENSHOTS", str(ROOT / "artifacts" / "screenshots"))
    env = {"OCTOPODA_SCREENSHOTS": shots}
    session.run("pytest", f"{CORE}/tests/browser", *session.posargs, env=env)


nox.options.sessions.append("browser")


@nox.session
def bench(session: nox.Session) -> None:
    """Benchmarks (bench/README.md): `nox -s bench`, or `nox -s bench -- --quick` for a smoke
    run; other flags (`--json PATH`, `--only NAMES`, `--no-predecessor`) go to bench/run_all.py.
    """
    if not (ROOT / "bench" / "run_all.py").is_file():
        session.skip("bench/run_all.py does not exist yet")
    # [postgres]: bench/postgres_bench.py; [server]: bench/bench_dashboard.py; [ai] (numpy and
    # octopoda-embed, from the checkout): vector search on numpy and the retrieval fixture's
    # vector and hybrid figures (bench/bench_search.py).
    session.install("-e", f"{CORE}[postgres,server,ai]", "-e", "packages/octopoda-embed")
    # The predecessor comparison installs octopoda==3.3.4 into its own venv
    # (.nox/bench-predecessor) with the uv nox itself uses, when nox found one.
    env: dict[str, str] = {}
    nox_venv = getattr(nox, "virtualenv", None)
    uv = getattr(nox_venv, "UV", None) if getattr(nox_venv, "HAS_UV", False) else None
    if uv:
        env["OCTOPODA_BENCH_UV"] = str(uv)
    session.run("python", "bench/run_all.py", *session.posargs, env=env)


@nox.session
def bench_smoke(session: nox.Session) -> None:
    """Every benchmark once with small samples (`bench/run_all.py --quick --no-predecessor`),
    in CI: a benchmark the code has outgrown fails here (exit 1 on a crash), not on the day
    someone needs its figures. Its timings are a smoke run's, not measurements."""
    session.install("-e", f"{CORE}[postgres]")
    session.run("python", "bench/run_all.py", "--quick", "--no-predecessor")


nox.options.sessions.append("bench_smoke")


@nox.session
def quickstart(session: nox.Session) -> None:
    """Run examples/quickstart.py against the installed core (with the CLI extra)."""
    if not (ROOT / "examples" / "quickstart.py").is_file():
        session.error("examples/quickstart.py does not exist")
    session.install("-e", f"{CORE}[cli]")
    session.run("python", "examples/quickstart.py", *session.posargs)


# ---------------------------------------------------------------------------- openai-agents
# octopoda-openai-agents, in its own environments: openai-agents 0.21+ needs openai>=3, which
# crewai refuses, so it never shares a lock or venv with the other adapters. The matrix:
# the newest release on every Python, 0.20.0 (the last on openai 2.x) and 0.8.x on 3.11.
OPENAI_AGENTS_PKG = "packages/octopoda-openai-agents"
OPENAI_AGENTS_NEWEST = "0.24.0"
OPENAI_AGENTS_CELLS = [
    *((python, OPENAI_AGENTS_NEWEST, ()) for python in PYTHONS),
    ("3.11", "0.20.0", ()),
    # openai 2.45 made ResponseUsage's cache_write_tokens required; 0.8.x does not fill it in.
    ("3.11", "0.8.4", ("openai<2.45",)),
]


@nox.session(tags=ADAPTER_LANE)
@nox.parametrize(
    "python,openai_agents,extra",
    OPENAI_AGENTS_CELLS,
    ids=[f"{version}-py{python}" for python, version, _ in OPENAI_AGENTS_CELLS],
)
def openai_agents(session: nox.Session, openai_agents: str, extra: tuple[str, ...]) -> None:
    """octopoda-openai-agents tests against one openai-agents release
    (`nox -s "openai_agents(0.8.4-py3.11)"`; extra args go to pytest)."""
    pins = [f"openai-agents=={openai_agents}", *extra]
    session.install("-e", f"{CORE}[cli]", "-e", OPENAI_AGENTS_PKG, "pytest", "pytest-socket", *pins)
    args = cell_args(
        str(session.python),
        newest=openai_agents == OPENAI_AGENTS_NEWEST,
        full_python=FULL_PYTHON,
        elsewhere=("processes",),  # (restarts, crashes: the same SDK on 3.11)
        posargs=session.posargs,
    )
    session.run("pytest", f"{OPENAI_AGENTS_PKG}/tests", *args)


@nox.session(python="3.11", tags=ADAPTER_LANE)
def typecheck_openai_agents(session: nox.Session) -> None:
    """mypy --strict on octopoda-openai-agents, against the newest openai-agents."""
    session.install(
        "-e", CORE, "-e", OPENAI_AGENTS_PKG, MYPY, f"openai-agents=={OPENAI_AGENTS_NEWEST}"
    )
    session.run("mypy", "--strict", f"{OPENAI_AGENTS_PKG}/src")


@nox.session(python="3.11", tags=ADAPTER_LANE)
def bench_openai_agents(session: nox.Session) -> None:
    """OctopodaSession vs SQLiteSession (bench/bench_openai_agents.py; `-- --quick`)."""
    session.install("-e", CORE, "-e", OPENAI_AGENTS_PKG, f"openai-agents=={OPENAI_AGENTS_NEWEST}")
    session.run("python", "bench/bench_openai_agents.py", *session.posargs)


# By default every cell but the newest release on 3.12 (3.11 and 3.13 bracket it); it runs
# on request: `nox -s "openai_agents(0.24.0-py3.12)"`.
nox.options.sessions += [
    f"openai_agents({version}-py{python})"
    for python, version, _ in OPENAI_AGENTS_CELLS
    if (version, python) != (OPENAI_AGENTS_NEWEST, "3.12")
]
nox.options.sessions += ["typecheck_openai_agents"]


# The Agents SDK's own session tests (from its source distribution on PyPI, never copied here)
# against OctopodaSession: tests/parity/openai_agents_swap.py swaps SQLiteSession for ours at
# collection time, tests/parity/allowlist.toml lists what cannot pass and why.
OPENAI_AGENTS_PARITY_VERSION = "0.24.0"
OPENAI_AGENTS_PARITY_TESTS = (
    "tests/memory/test_session.py",
    "tests/memory/test_session_limit.py",
    "tests/memory/test_session_persistence_sanitize.py",
    "tests/memory/test_compaction_model_visibility.py",
    "tests/memory/test_compaction_suffix.py",
    "tests/memory/test_openai_responses_compaction_session.py",
    "tests/extensions/memory/test_encrypt_session.py",
    # runner tests that drive a SQLiteSession through real (scripted) runs
    "tests/memory/test_session_context_wrapper.py",
    "tests/test_agent_runner.py",
    "tests/test_agent_runner_streamed.py",
    "tests/test_run_impl_resume_paths.py",
    "tests/test_tool_batch_failure_history.py",
    "tests/test_native_tool_failure_history.py",
    "tests/test_tool_failure_boundaries.py",
    "tests/test_soft_cancel.py",
    "tests/test_programmatic_tool_calling.py",
    "tests/test_max_turns.py",
)
OPENAI_AGENTS_PARITY_DEPS = (
    "pytest>=9.0.3",
    "pytest-asyncio",
    "pytest-mock",
    "pytest-socket",
    "inline-snapshot",
    "aiosqlite",
    "cryptography>=45.0,<51",
    "httpx",
)


def _unpacked_openai_agents_sdist(session: nox.Session, version: str) -> Path:
    """openai-agents==VERSION's source distribution, downloaded from PyPI into the session's
    tmp dir and unpacked there (kept for the next run)."""
    import tarfile

    tmp = Path(session.create_tmp()).resolve()
    unpacked = tmp / f"openai_agents-{version}"
    if (unpacked / "PKG-INFO").is_file():
        return unpacked
    session.install("pip")
    session.run(
        "python", "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
        f"openai-agents=={version}", "--dest", str(tmp),
    )  # fmt: skip
    safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}  # 3.10.12+, 3.11.4+
    with tarfile.open(tmp / f"openai_agents-{version}.tar.gz") as archive:
        archive.extractall(tmp, **safe)
    return unpacked


@nox.session(python="3.11", tags=ADAPTER_LANE)
def parity_openai_agents(session: nox.Session) -> None:
    """The Agents SDK's own session and runner tests with SQLiteSession swapped for
    OctopodaSession (tests/parity/README.md). `-- --parity-shipped` runs them as shipped,
    `-- --parity-control` checks the allowlist's "reserved" reasons; other args go to pytest
    (`-- -k close`, or test paths inside the unpacked source distribution)."""
    version = OPENAI_AGENTS_PARITY_VERSION
    session.install(
        "-e", CORE, "-e", OPENAI_AGENTS_PKG, f"openai-agents=={version}",
        *OPENAI_AGENTS_PARITY_DEPS,
    )  # fmt: skip
    sdist = _unpacked_openai_agents_sdist(session, version)
    args = list(session.posargs)
    if not any((sdist / arg.split("::")[0]).exists() for arg in args if not arg.startswith("-")):
        args += OPENAI_AGENTS_PARITY_TESTS  # no test paths given: the whole suite
    mode = next((m for m in ("shipped", "control") if f"--parity-{m}" in args), "ours")
    junit = Path(session.create_tmp()).resolve() / f"junit-{mode}.xml"  # to compare runs
    session.chdir(sdist)
    session.run(
        "pytest", "-p", "openai_agents_swap", "--disable-socket", "--allow-unix-socket",
        f"--junitxml={junit}", *args,
        env={"PYTHONPATH": str(ROOT / "tests" / "parity")},
    )  # fmt: skip


nox.options.sessions += ["parity_openai_agents"]


# ---------------------------------------------------------------------------- langchain
# octopoda-langchain against each supported LangChain/LangGraph line, each in its own venv.
# Cells: the newest installable releases on every Python (langchain 1.5 and langchain-core
# 1.8 need Python 3.11, so 3.10 gets the newest that supports it), then on 3.11 only
# langgraph-checkpoint 4.0.x (LangChain 1.2, LangGraph 1.1) and langchain-core 0.3.x with
# langgraph-checkpoint 3.0.x (LangGraph 0.6: no agent middleware, whose tests skip there).
# Pins are exact: the newest listed langchain-core (1.8.4) needs a langchain-protocol the
# registry does not have, so "newest" means newest that installs. The examples (three
# processes each) run once, in the newest cell on 3.11; the other cells run every other test.
LANGCHAIN_PKG = "packages/octopoda-langchain"
LANGCHAIN_NEWEST = (
    "langchain==1.5.2",
    "langchain-core==1.8.3",
    "langgraph==1.2.24",
    "langgraph-checkpoint==4.3.2",
)
LANGCHAIN_NEWEST_PY310 = (  # langchain 1.5 / langchain-core 1.8 need Python 3.11
    "langchain==1.4.10",
    "langchain-core==1.7.7",
    "langgraph==1.2.24",
    "langgraph-checkpoint==4.3.2",
)
LANGCHAIN_CELLS = [
    *(
        (python, "newest", LANGCHAIN_NEWEST_PY310 if python == "3.10" else LANGCHAIN_NEWEST)
        for python in PYTHONS
    ),
    (
        "3.11",
        "checkpoint-4.0",
        ("langchain==1.2.18", "langgraph==1.1.10", "langgraph-checkpoint==4.0.3"),
    ),
    (
        "3.11",
        "core-0.3",
        ("langchain-core==0.3.86", "langgraph==0.6.11", "langgraph-checkpoint==3.0.1"),
    ),
]
LANGCHAIN_TEST_DEPS = (
    "langgraph-checkpoint-conformance==0.0.2",
    # SqliteSaver, the oracle of the interleaving tests (uv picks the release that fits the
    # cell's langgraph-checkpoint: 3.1.x on 4.3, 3.0.x on 3.0 and 4.0).
    "langgraph-checkpoint-sqlite",
    "aiosqlite",
    "pytest",
    "pytest-socket",
    # The PostgreSQL conformance cell: creating its database, and the core's store.
    "psycopg[binary]>=3.2",
    "psycopg-pool>=3.2",
)


@nox.session(tags=ADAPTER_LANE)
@nox.parametrize(
    "python,line,pins",
    LANGCHAIN_CELLS,
    ids=[f"{line}-py{python}" for python, line, _ in LANGCHAIN_CELLS],
)
def langchain(session: nox.Session, line: str, pins: tuple[str, ...]) -> None:
    """octopoda-langchain tests against one LangChain/LangGraph line
    (`nox -s "langchain(core-0.3-py3.11)"`; extra args go to pytest)."""
    session.install("-e", f"{CORE}[postgres]", "-e", LANGCHAIN_PKG, *LANGCHAIN_TEST_DEPS, *pins)
    args = cell_args(
        str(session.python),
        newest=line == "newest",
        full_python=FULL_PYTHON,
        elsewhere=("examples", "processes"),
        older=("examples",),
        posargs=session.posargs,
    )
    session.run("pytest", f"{LANGCHAIN_PKG}/tests", *args)


@nox.session(python="3.11", tags=ADAPTER_LANE)
def typecheck_langchain(session: nox.Session) -> None:
    """mypy --strict on octopoda-langchain, against the newest LangChain/LangGraph."""
    session.install("-e", CORE, "-e", LANGCHAIN_PKG, MYPY, *LANGCHAIN_NEWEST)
    session.run("mypy", "--strict", f"{LANGCHAIN_PKG}/src")


@nox.session(python="3.11", tags=ADAPTER_LANE)
def bench_langchain(session: nox.Session) -> None:
    """OctopodaSaver vs LangGraph's SqliteSaver (bench/bench_langchain.py; `-- --quick`)."""
    session.install(
        "-e", CORE, "-e", LANGCHAIN_PKG, *LANGCHAIN_NEWEST, "langgraph-checkpoint-sqlite==3.1.2"
    )
    session.run("python", "bench/bench_langchain.py", *session.posargs)


# By default every cell but the newest line on 3.12 (3.11 and 3.13 bracket it); it runs on
# request: `nox -s "langchain(newest-py3.12)"`.
nox.options.sessions += [
    f"langchain({line}-py{python})"
    for python, line, _ in LANGCHAIN_CELLS
    if (line, python) != ("newest", "3.12")
]
nox.options.sessions += ["typecheck_langchain"]


# LangGraph's own test suites, from the source distributions of the newest releases
# (downloaded by tests/parity/langgraph_run.py, never copied into this repository), run
# against OctopodaSaver and OctopodaStore (tests/parity/README.md).
PARITY_LANGGRAPH = (
    *LANGCHAIN_NEWEST,
    "langgraph-checkpoint-sqlite==3.1.2",
    "langgraph-checkpoint-postgres==3.2.0",
)
PARITY_LANGGRAPH_TEST_DEPS = (
    "pip",  # `pip download --no-binary :all:` fetches the sdists
    "pytest",
    "pytest-asyncio",
    "pytest-mock",
    "pytest-retry",
    "syrupy",
    "httpx",
    "redis",
    "pycryptodome",
    "aiosqlite",
    "dataclasses-json",
    "numpy",
    "pandas",
    "psycopg[binary]>=3.2",
    "psycopg-pool>=3.2",
    "langgraph-checkpoint-conformance==0.0.2",
)


@nox.session(python="3.11", tags=ALONE)
def parity_langgraph(session: nox.Session) -> None:
    """LangGraph's store, saver and graph tests with its backends swapped for ours; a failure
    not in tests/parity/allowlist.toml fails. Arguments go to tests/parity/langgraph_run.py:
    `-- --mode both` (also as shipped), `--suite graph`, `--repeat 3`, `-- -k expr`."""
    session.install(
        "-e",
        f"{CORE}[postgres]",
        "-e",
        LANGCHAIN_PKG,
        *PARITY_LANGGRAPH,
        *PARITY_LANGGRAPH_TEST_DEPS,
    )
    work = session.create_tmp()
    session.run("python", "tests/parity/langgraph_run.py", "--work", work, *session.posargs)


nox.options.sessions += ["parity_langgraph"]


# ---------------------------------------------------------------------------- autogen
# octopoda-autogen against AutoGen lines (autogen-agentchat, -core and -ext at one version),
# each in its own venv. Microsoft has put AutoGen in maintenance mode; 0.7.5 is the last
# release. Cells: 0.4.5 (the first with the Memory protocol; it still installs), 0.5.7 (a
# middle line) and 0.7.5, on 3.11; 0.7.5 also on 3.10, 3.12 and 3.13. By default CI runs the
# oldest and newest on 3.11 only; the rest are non-default cells (`nox -s autogen`).
# autogen-ext is installed bare: its ReplayChatCompletionClient (the scripted model) needs
# no extra.
AUTOGEN_PKG = "packages/octopoda-autogen"
AUTOGEN_NEWEST = "0.7.5"
AUTOGEN_CELLS = [
    ("3.11", "0.4.5"),
    ("3.11", "0.5.7"),
    *((python, AUTOGEN_NEWEST) for python in PYTHONS),
]
AUTOGEN_TEST_DEPS = ("pytest", "pytest-socket", "pillow")  # pillow: image memories


def _autogen_pins(version: str) -> tuple[str, ...]:
    return tuple(
        f"{name}=={version}" for name in ("autogen-agentchat", "autogen-core", "autogen-ext")
    )


# ---------------------------------------------------------------------------- crewai
# octopoda-crewai against each supported CrewAI line, each in its own venv: 1.10.1 (the first
# with the unified Memory and its StorageBackend), 1.13.0 (a middle line) and 1.15.30 (the
# newest) on Python 3.11, and the newest on 3.10, 3.12 and 3.13 (crewai needs <3.14). CrewAI
# is a 1 GB install, so the default run has one cell per line, on 3.11; the newest on the
# other Pythons runs on request (`nox -s "crewai(1.15.30-py3.13)"`).
CREWAI_PKG = "packages/octopoda-crewai"
CREWAI_NEWEST = "1.15.30"
CREWAI_OLDEST = "1.10.1"
CREWAI_MIDDLE = "1.13.0"
CREWAI_CELLS = [
    ("3.11", CREWAI_OLDEST),
    ("3.11", CREWAI_MIDDLE),
    *((python, CREWAI_NEWEST) for python in PYTHONS),
]
CREWAI_TEST_DEPS = ("pytest", "pytest-socket", "psycopg[binary]>=3.2", "psycopg-pool>=3.2")
CREWAI_ENV = {  # CrewAI's telemetry and tracing off in every session
    "CREWAI_DISABLE_TELEMETRY": "true",
    "OTEL_SDK_DISABLED": "true",
    "CREWAI_TRACING_ENABLED": "false",
}


@nox.session(tags=ADAPTER_LANE)
@nox.parametrize(
    "python,autogen",
    AUTOGEN_CELLS,
    ids=[f"{version}-py{python}" for python, version in AUTOGEN_CELLS],
)
def autogen(session: nox.Session, autogen: str) -> None:
    """octopoda-autogen tests against one AutoGen line (`nox -s "autogen(0.4.5-py3.11)"`;
    extra args go to pytest). The examples run in the newest cell on 3.11 only."""
    session.install(
        "-e", f"{CORE}[postgres]", "-e", AUTOGEN_PKG, *AUTOGEN_TEST_DEPS, *_autogen_pins(autogen)
    )
    args = cell_args(
        str(session.python),
        newest=autogen == AUTOGEN_NEWEST,
        full_python=FULL_PYTHON,
        elsewhere=("examples",),
        older=("examples",),
        posargs=session.posargs,
    )
    session.run("pytest", f"{AUTOGEN_PKG}/tests", *args)


@nox.session(python="3.11", tags=ADAPTER_LANE)
def autogen_pyautogen(session: nox.Session) -> None:
    """The install path of the design card: `pip install pyautogen` (0.10, a proxy for
    autogen-agentchat>=0.6.4) and nothing else from AutoGen: octopoda-autogen goes in with
    --no-deps, so every AutoGen package comes from pyautogen. Without autogen-ext there is no
    scripted model, so the tests that run an agent skip; memory and context tests run."""
    session.install("-e", f"{CORE}[postgres]", "pyautogen", *AUTOGEN_TEST_DEPS)
    session.install("--no-deps", "-e", AUTOGEN_PKG)
    session.run("python", "-c", "import pyautogen, autogen_agentchat, autogen_core")
    session.run(
        "pytest", f"{AUTOGEN_PKG}/tests", *narrowed({"-m": "not examples"}, session.posargs)
    )


@nox.session(python="3.11", tags=ADAPTER_LANE)
def typecheck_autogen(session: nox.Session) -> None:
    """mypy --strict on octopoda-autogen, against the newest AutoGen."""
    session.install("-e", CORE, "-e", AUTOGEN_PKG, MYPY, *_autogen_pins(AUTOGEN_NEWEST))
    session.run("mypy", "--strict", f"{AUTOGEN_PKG}/src")


@nox.session(python="3.11", tags=ADAPTER_LANE)
def bench_autogen(session: nox.Session) -> None:
    """OctopodaMemory vs ListMemory (and ChromaDB's memory where chromadb installs), our
    context vs UnboundedChatCompletionContext (bench/bench_autogen.py; `-- --quick`)."""
    session.install("-e", CORE, "-e", AUTOGEN_PKG, *_autogen_pins(AUTOGEN_NEWEST))
    try:  # ChromaDB's memory beside ours where chromadb installs (the bench says if not)
        session.install("chromadb>=1.0.0")
    except nox.command.CommandFailed:
        session.warn("chromadb does not install here; the bench skips ChromaDB's memory")
    session.run("python", "bench/bench_autogen.py", *session.posargs)


nox.options.sessions += [
    "autogen(0.4.5-py3.11)",
    f"autogen({AUTOGEN_NEWEST}-py3.11)",
    "autogen_pyautogen",
    "typecheck_autogen",
]


@nox.session(tags=ADAPTER_LANE)
@nox.parametrize(
    "python,crewai", CREWAI_CELLS, ids=[f"{version}-py{python}" for python, version in CREWAI_CELLS]
)
def crewai(session: nox.Session, crewai: str) -> None:
    """octopoda-crewai tests against one crewai release
    (`nox -s "crewai(1.10.1-py3.11)"`; extra args go to pytest)."""
    session.install(
        "-e", f"{CORE}[postgres]", "-e", CREWAI_PKG, f"crewai=={crewai}", *CREWAI_TEST_DEPS
    )
    args = cell_args(
        str(session.python),
        newest=crewai == CREWAI_NEWEST,
        full_python=FULL_PYTHON,
        elsewhere=("processes",),  # the crash test and the extra init scripts: once
        older=("processes",),
        posargs=session.posargs,
    )
    session.run("pytest", f"{CREWAI_PKG}/tests", *args, env=CREWAI_ENV)


@nox.session(python="3.11", tags=ADAPTER_LANE)
def typecheck_crewai(session: nox.Session) -> None:
    """mypy --strict on octopoda-crewai, against the newest crewai (not in the default run:
    another 1 GB venv; run it when the package changes)."""
    session.install("-e", CORE, "-e", CREWAI_PKG, MYPY, f"crewai=={CREWAI_NEWEST}")
    session.run("mypy", "--strict", f"{CREWAI_PKG}/src", env=CREWAI_ENV)


@nox.session(python="3.11", tags=ADAPTER_LANE)
def bench_crewai(session: nox.Session) -> None:
    """OctopodaStorage vs CrewAI's LanceDB storage (bench/bench_crewai.py; `-- --quick`)."""
    session.install("-e", CORE, "-e", CREWAI_PKG, f"crewai=={CREWAI_NEWEST}")
    session.run("python", "bench/bench_crewai.py", *session.posargs, env=CREWAI_ENV)


nox.options.sessions += [
    f"crewai({CREWAI_OLDEST}-py3.11)",
    f"crewai({CREWAI_MIDDLE}-py3.11)",
    f"crewai({CREWAI_NEWEST}-py3.11)",
]


# CrewAI's own memory tests (from its source distribution on PyPI, never copied here) against
# OctopodaStorage: tests/parity/crewai_swap.py puts it behind LanceDBStorage and the Qdrant
# Edge suite's storage fixture, tests/parity/allowlist.toml [crewai] lists what cannot pass.
CREWAI_PARITY_TESTS = (
    "tests/memory/test_qdrant_edge_storage.py",
    "tests/memory/test_storage_factory.py",
    "tests/memory/test_dimension_mismatch.py",
    "tests/memory/test_unified_memory.py",
    "tests/memory/test_memory_root_scope.py",
)


@nox.session(python="3.11", tags=ADAPTER_LANE)
def parity_crewai(session: nox.Session) -> None:
    """CrewAI's own memory tests with its storage swapped for OctopodaStorage
    (tests/parity/README.md). `-- --parity-shipped` runs them as shipped; other args go to
    pytest (`-- -k scope`, or test paths inside the unpacked source distribution)."""
    import tarfile

    version = CREWAI_NEWEST
    session.install(
        "-e", CORE, "-e", CREWAI_PKG, f"crewai=={version}", "pip", "pytest", "pytest-socket",
        "pytest-asyncio",
    )  # fmt: skip
    tmp = Path(session.create_tmp()).resolve()
    sdist = tmp / f"crewai-{version}"
    if not (sdist / "PKG-INFO").is_file():
        session.run(
            "python", "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
            f"crewai=={version}", "--dest", str(tmp),
        )  # fmt: skip
        safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
        with tarfile.open(tmp / f"crewai-{version}.tar.gz") as archive:
            archive.extractall(tmp, **safe)
    args = list(session.posargs)
    if not any((sdist / arg.split("::")[0]).exists() for arg in args if not arg.startswith("-")):
        args += CREWAI_PARITY_TESTS
    session.chdir(sdist)
    session.run(
        # -c: the sdist's own pytest settings, not this repository's (the sdist is unpacked
        # below it, in .nox/, and ours turn warnings into errors)
        "pytest", "-c", "pyproject.toml", "--rootdir", ".", "-p", "crewai_swap",
        "--disable-socket", "--allow-unix-socket",
        "-W", "ignore::pytest.PytestDeprecationWarning", *args,
        env={**CREWAI_ENV, "PYTHONPATH": str(ROOT / "tests" / "parity")},
    )  # fmt: skip


nox.options.sessions += ["parity_crewai"]
