"""Run LangGraph's own test suites against Octopoda's saver and store (``nox -s
parity_langgraph``; see README.md in this folder).

For each suite: download the source distribution of the installed release from the package
registry (``pip download --no-deps --no-binary :all:``) into ``--work``, unpack it, and run
its tests there with the ``langgraph_swap`` plugin, as shipped and/or with ours
(``--mode``). Prints the counts per suite and run; with ``--mode both``, also every test that
fails with ours but passes as shipped. Exits non-zero when a run with ours failed: a failing
test not in ``allowlist.toml``, or an allowlisted test that passed.

    python tests/parity/langgraph_run.py --work DIR [--suite graph] [--mode both]
        [--repeat 3] [--jobs 4] [-- PYTEST ARGS]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tarfile
import time
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from importlib import metadata
from pathlib import Path

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Suite:
    name: str
    distribution: str
    paths: tuple[str, ...]
    pytest_args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    shards: int = 1  # pytest processes, each a share of the files, run at once
    label: str = ""  # how reports name it (a shard: "postgres[1/2]")

    def parts(self) -> list[Suite]:
        """The suite as ``shards`` suites, each with every ``shards``-th of the files."""
        if self.shards == 1:
            return [replace(self, label=self.name)]
        return [
            replace(
                self,
                paths=self.paths[i :: self.shards],
                label=f"{self.name}[{i + 1}/{self.shards}]",
            )
            for i in range(self.shards)
        ]


SUITES = {
    s.name: s
    for s in (
        Suite(
            "checkpoint", "langgraph-checkpoint", ("tests/test_store.py", "tests/test_memory.py")
        ),
        Suite(
            "sqlite",
            "langgraph-checkpoint-sqlite",
            (
                "tests/test_sqlite.py",
                "tests/test_aiosqlite.py",
                "tests/test_store.py",
                "tests/test_async_store.py",
                "tests/test_ttl.py",
            ),
        ),
        # A process per file: its TTL tests mostly sleep (17 s each), so the files overlap.
        Suite(
            "postgres",
            "langgraph-checkpoint-postgres",
            (
                "tests/test_sync.py",
                "tests/test_async.py",
                "tests/test_store.py",
                "tests/test_async_store.py",
            ),
            shards=4,
        ),
        # The graph tests over the SQLite checkpointers and the in-memory store (the other
        # parameters are LangGraph's InMemorySaver or need Docker).
        Suite(
            "graph",
            "langgraph",
            ("tests",),
            ("-k", "sqlite or in_memory"),
            {"NO_DOCKER": "true"},
        ),
    )
}


@dataclass
class Counts:
    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0
    xfailed: int = 0
    seconds: float = 0.0
    failing: set[str] = field(default_factory=set)

    def line(self) -> str:
        return (
            f"{self.passed} passed, {self.failed} failed, {self.errors} errors,"
            f" {self.skipped} skipped, {self.xfailed} xfailed (allowlisted)"
            f" in {self.seconds:.0f} s"
        )


def unpack(suite: Suite, work: Path) -> Path:
    """The unpacked sdist of the installed release of ``suite.distribution``."""
    version = metadata.version(suite.distribution)
    stem = f"{suite.distribution.replace('-', '_')}-{version}"
    target = work / stem
    if target.is_dir():
        return target
    downloads = work / "sdists"
    downloads.mkdir(parents=True, exist_ok=True)
    archive = downloads / f"{stem}.tar.gz"
    if not archive.is_file():
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--quiet",
                "--no-deps",
                "--no-binary",
                ":all:",
                f"{suite.distribution}=={version}",
                "-d",
                str(downloads),
            ],
            check=True,
        )
    with tarfile.open(archive) as tar:
        tar.extractall(work, filter="data")
    if not target.is_dir():
        raise SystemExit(f"{archive} did not unpack to {target}")
    return target


def node_id(case: ET.Element, root: Path) -> str:
    """A junit testcase as a pytest node id (``tests/test_x.py::Class::test[param]``)."""
    classname, name = case.get("classname", ""), case.get("name", "")
    parts = classname.split(".")
    for cut in range(len(parts), 0, -1):
        path = "/".join(parts[:cut]) + ".py"
        if (root / path).is_file():
            return "::".join([path, *parts[cut:], name])
    return f"{classname}::{name}"


def read_junit(path: Path, root: Path, seconds: float) -> Counts:
    counts = Counts(seconds=seconds)
    for case in ET.parse(path).getroot().iter("testcase"):
        outcome = {child.tag for child in case}
        skipped = case.find("skipped")
        if "failure" in outcome:
            counts.failed += 1
            counts.failing.add(node_id(case, root))
        elif "error" in outcome:
            counts.errors += 1
            counts.failing.add(node_id(case, root))
        elif skipped is not None and skipped.get("type") == "pytest.xfail":
            counts.xfailed += 1
        elif skipped is not None:
            counts.skipped += 1
        else:
            counts.passed += 1
    return counts


def run(
    suite: Suite, root: Path, mode: str, junit: Path, extra: list[str], log: Path | None
) -> tuple[int, Counts]:
    env = dict(os.environ, **suite.env)
    env["OCTOPODA_PARITY_SUITE"] = suite.name
    env["OCTOPODA_PARITY_MODE"] = mode
    env["OCTOPODA_PARITY_ALLOWLIST"] = str(HERE / "allowlist.toml")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE), env.get("PYTHONPATH")]))
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        *suite.paths,
        *suite.pytest_args,
        "-p",
        "langgraph_swap",
        "-p",
        "no:cacheprovider",
        "-q",
        "-q",
        "--tb=short",
        "-o",
        "console_output_style=classic",
        f"--junitxml={junit}",
        *extra,
    ]
    print(f"parity: [{suite.label}, {mode}] {' '.join(cmd[3:])}", flush=True)
    started = time.monotonic()
    if log is None:
        code = subprocess.run(cmd, cwd=root, env=env).returncode
    else:  # suites in parallel: each one's output in one piece, once it is done
        with log.open("w") as out:
            code = subprocess.run(cmd, cwd=root, env=env, stdout=out, stderr=out).returncode
        print(f"parity: [{suite.label}, {mode}] output:\n{log.read_text()}", flush=True)
    seconds = time.monotonic() - started
    if not junit.is_file():
        raise SystemExit(f"parity: [{suite.label}, {mode}] pytest wrote no report (exit {code})")
    return code, read_junit(junit, root, seconds)


def postgres_missing() -> str | None:
    """Why the PostgreSQL suite cannot run here (no server), or None."""
    url = os.environ.get(
        "OCTOPODA_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
    )
    try:
        import psycopg

        with psycopg.connect(url, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except Exception as exc:  # psycopg missing or no server: say which
        return f"no PostgreSQL at {url} ({type(exc).__name__}: {str(exc).strip()[:120]})"
    return None


def run_suite(
    suite: Suite,
    root: Path,
    work: Path,
    modes: tuple[str, ...],
    repeat: int,
    extra: list[str],
    parallel: bool,
) -> tuple[bool, list[str]]:
    """Run one suite (or shard) ``repeat`` times in each mode: (whether a run with ours
    failed, the report lines)."""
    name = suite.label
    stem = re.sub(r"[^\w.-]+", "-", name).strip("-")  # postgres[1/2] -> postgres-1-2
    failed = False
    results: dict[str, list[Counts]] = {}
    for attempt in range(repeat):
        for mode in modes:
            junit = work / f"junit-{stem}-{mode}-{attempt}.xml"
            log = work / f"log-{stem}-{mode}-{attempt}.txt" if parallel else None
            code, counts = run(suite, root, mode, junit, extra, log)
            results.setdefault(mode, []).append(counts)
            failed = failed or (mode == "ours" and code != 0)
    lines = [
        f"{name:<15} {mode:<7} run {attempt + 1}: {counts.line()}"
        for mode, runs in results.items()
        for attempt, counts in enumerate(runs)
    ]
    if "shipped" in results and "ours" in results:
        shipped = set().union(*(c.failing for c in results["shipped"]))
        ours = set().union(*(c.failing for c in results["ours"]))
        lines += [f"{name:<15} fails with ours only: {test}" for test in sorted(ours - shipped)]
    return failed, lines


def main(argv: list[str]) -> int:
    extra: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, extra = argv[:cut], argv[cut + 1 :]
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, required=True, help="download/unpack directory")
    parser.add_argument("--suite", action="append", choices=sorted(SUITES))
    parser.add_argument("--mode", choices=("ours", "shipped", "both"), default="ours")
    parser.add_argument("--repeat", type=int, default=1, help="run each suite this often")
    parser.add_argument("--jobs", type=int, default=4, help="suites run at once (default 4)")
    args = parser.parse_args(argv)
    modes = ("shipped", "ours") if args.mode == "both" else (args.mode,)
    work = args.work.resolve()
    report: list[str] = []
    units: list[tuple[Suite, Path]] = []
    for name in args.suite or list(SUITES):
        if name == "postgres" and (why := postgres_missing()):
            if os.environ.get("CI"):
                raise SystemExit(
                    f"parity: the postgres suite needs PostgreSQL when CI is set: {why}"
                )
            report.append(f"{name:<15} skipped: {why}")
            continue
        root = unpack(SUITES[name], work)  # one at a time: shards share it
        units += [(part, root) for part in SUITES[name].parts()]
    # the longest first: the graph tests keep a core busy, PostgreSQL's mostly wait (TTLs)
    order = ("graph", "postgres", "sqlite", "checkpoint")
    units.sort(key=lambda unit: order.index(unit[0].name))
    parallel = args.jobs > 1 and len(units) > 1
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [
            pool.submit(run_suite, suite, root, work, modes, args.repeat, extra, parallel)
            for suite, root in units
        ]
        outcomes = [f.result() for f in futures]
    print("\nparity: LangGraph's own suites against Octopoda")
    for _, lines in outcomes:
        print("\n".join(lines))
    print("\n".join(report))
    return 1 if any(failed for failed, _ in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
