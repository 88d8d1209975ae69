"""Benchmark 6: beside the predecessor, ``octopoda==3.3.4`` from PyPI.

3.3.4 installs a top-level ``octopoda`` module too, so it lives in its own virtualenv
(default ``.nox/bench-predecessor``, reused while it holds 3.3.4). Both libraries then run
the same workload script (``_workload.py``) in a fresh process each: N ``remember`` of small
dicts under unpadded keys (``key-1`` is a prefix of ``key-10``), N ``recall``, and a few
prefix/case probes (``recall("user")`` after writing ``user`` and ``user_name``). 3.3.4 runs
in local mode with its data dir and HOME in temp dirs and no TTY. If it cannot be installed
(no network), that part is skipped with the reason; ours still runs the workload.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from _common import BENCH_DIR, ROOT, Check, Config, line, section

SPEC = "octopoda==3.3.4"
VERSION = "3.3.4"
DEFAULT_VENV = ROOT / ".nox" / "bench-predecessor"
INSTALL_TIMEOUT = 180.0
RUN_TIMEOUT = 300.0


def _python(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def _clean_env() -> dict[str, str]:
    drop = ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "CONDA_PREFIX")
    return {
        k: v
        for k, v in os.environ.items()
        if k not in drop and not k.startswith(("OCTOPODA_", "SYNRIX_"))
    }


def _find_uv() -> str | None:
    candidates = [
        os.environ.get("OCTOPODA_BENCH_UV"),
        shutil.which("uv"),
        str(Path(sys.executable).parent / "uv"),
        str(ROOT / ".venv" / "bin" / "uv"),
        str(ROOT / ".tools" / "bin" / "uv"),
    ]
    for c in candidates:
        if c and os.access(c, os.X_OK) and Path(c).is_file():
            return c
    return None


def _installed(venv: Path) -> bool:
    python = _python(venv)
    if not python.exists():
        return False
    code = "import importlib.metadata as m; print(m.version('octopoda'))"
    try:
        out = subprocess.run(
            [str(python), "-c", code],
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
            env=_clean_env(),
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0 and out.stdout.strip() == VERSION


def _run(cmd: list[str], timeout: float) -> None:
    env = _clean_env()
    env.setdefault("UV_HTTP_TIMEOUT", "30")  # fail fast without a network
    env.setdefault("PIP_DEFAULT_TIMEOUT", "30")
    env.setdefault("PIP_DISABLE_PIP_VERSION_CHECK", "1")
    proc = subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        env=env,
    )
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise RuntimeError(f"{Path(cmd[0]).name} {cmd[1]} failed: " + " | ".join(tail))


def ensure_venv(venv: Path) -> str | None:
    """Make ``venv`` hold octopoda 3.3.4. Returns None when ready, else why not."""
    if _installed(venv):
        line(f"reusing {venv}")
        return None
    shutil.rmtree(venv, ignore_errors=True)
    venv.parent.mkdir(parents=True, exist_ok=True)
    uv = _find_uv()
    try:
        if uv is not None:
            line(f"installing {SPEC} into {venv} with {uv}")
            _run([uv, "venv", "--quiet", "--python", sys.executable, str(venv)], INSTALL_TIMEOUT)
            _run(
                [uv, "pip", "install", "--quiet", "--python", str(_python(venv)), SPEC],
                INSTALL_TIMEOUT,
            )
        else:
            line(f"installing {SPEC} into {venv} with venv + pip (no uv found)")
            _run([sys.executable, "-m", "venv", str(venv)], INSTALL_TIMEOUT)
            _run(
                [str(_python(venv)), "-m", "pip", "install", "--quiet", SPEC],
                INSTALL_TIMEOUT,
            )
    except subprocess.TimeoutExpired as exc:
        return f"install timed out after {exc.timeout:.0f} s"
    except (OSError, RuntimeError) as exc:
        return str(exc)
    if not _installed(venv):
        return f"{SPEC} is not importable in {venv} after the install"
    return None


def run_workload(python: str, impl: str, ops: int, tmp: Path) -> dict[str, Any]:
    """Run ``_workload.py`` in a fresh process with its own HOME and data dir."""
    work = tmp / f"workload-{impl}"
    home, data = work / "home", work / "data"
    home.mkdir(parents=True, exist_ok=True)
    data.mkdir(parents=True, exist_ok=True)
    out = work / "report.json"
    env = _clean_env()
    env.update(HOME=str(home), USERPROFILE=str(home), OCTOPODA_HOME=str(data))
    cmd = [python, str(BENCH_DIR / "_workload.py"), "--impl", impl, "--ops", str(ops)]
    cmd += ["--out", str(out)]
    if impl == "ours":
        cmd += ["--store", str(data / "octopoda.db")]
    else:
        env.update(OCTOPODA_LOCAL_MODE="1", OCTOPODA_QUIET="1", SYNRIX_DATA_DIR=str(data))
    proc = subprocess.run(
        cmd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        env=env,
        cwd=work,
    )
    if proc.returncode != 0 or not out.exists():
        tail = " | ".join(proc.stderr.strip().splitlines()[-3:])
        raise RuntimeError(f"{impl} workload failed (rc {proc.returncode}): {tail}")
    report: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return report


def _describe(name: str, r: dict[str, Any]) -> str:
    return (
        f"{name} {r['version']}: remember {r['remember_ops_s']:,.0f}/s"
        f" (p50 {r['remember_p50_ms']:.3f} ms), recall {r['recall_ops_s']:,.0f}/s"
        f" (p50 {r['recall_p50_ms']:.3f} ms); wrong-key recalls {r['wrong_key_recalls']}/"
        f"{r['ops']}, probes wrong {len(r['probe_wrong'])}/{r['probes']};"
        f" import {r['import_ms']:.0f} ms, first runtime {r['ctor_ms']:.0f} ms"
    )


def bench_predecessor(cfg: Config, venv: Path | None = None, enabled: bool = True) -> list[Check]:
    section(f"6. beside the predecessor ({SPEC})")
    ops = cfg.scale(1000, 200)
    ours = run_workload(sys.executable, "ours", ops, cfg.tmp)
    line(_describe("ours", ours))
    checks = [
        Check.at_most(
            "predecessor",
            f"ours: wrong-key recalls ({ops} keys + {ours['probes']} prefix/case probes)",
            ours["wrong_key_recalls"] + len(ours["probe_wrong"]),
            0,
            probe_wrong=ours["probe_wrong"],
        )
    ]
    reason = "disabled (--no-predecessor)" if not enabled else ensure_venv(venv or DEFAULT_VENV)
    if reason is not None:
        line(f"predecessor: skipped ({reason})")
        checks.append(Check.skip("predecessor", f"{SPEC} comparison", reason))
        return checks
    try:
        old = run_workload(str(_python(venv or DEFAULT_VENV)), "predecessor", ops, cfg.tmp)
    except (RuntimeError, subprocess.TimeoutExpired) as exc:
        line(f"predecessor: skipped (its workload failed: {exc})")
        checks.append(Check.skip("predecessor", f"{SPEC} comparison", str(exc)))
        return checks
    line(_describe("predecessor", old))
    for text in old["probe_wrong"]:
        line(f"  3.3.4 {text}")
    write_x = ours["remember_ops_s"] / old["remember_ops_s"]
    read_x = ours["recall_ops_s"] / old["recall_ops_s"]
    line(f"ours / 3.3.4: remember {write_x:,.1f}x faster, recall {read_x:,.1f}x faster")
    checks += [
        Check.info(
            "predecessor",
            f"remember speed, ours / 3.3.4 ({ops} ops)",
            write_x,
            "x",
            ours=ours,
            predecessor=old,
        ),
        Check.info("predecessor", f"recall speed, ours / 3.3.4 ({ops} ops)", read_x, "x"),
        Check.info(
            "predecessor",
            f"3.3.4 wrong-key recalls ({ops} keys + {old['probes']} probes)",
            old["wrong_key_recalls"] + len(old["probe_wrong"]),
            probe_wrong=old["probe_wrong"],
        ),
    ]
    return checks
