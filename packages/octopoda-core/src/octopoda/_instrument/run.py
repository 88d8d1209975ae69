"""``octopoda-run CMD...``: run a program with ``octopoda.init()`` applied before its code.

Like OpenTelemetry's ``opentelemetry-instrument``: the folder of a ``sitecustomize``
launcher goes first on ``PYTHONPATH`` and the command replaces this process (``exec``), so
its exit code, signals and standard streams are the program's own. Settings travel as
environment variables, so every Python process the command starts is instrumented too, and
several scripts with the same agent id share one memory and one audit chain. The settings
are checked here, before the program starts: a bad one is an error now, not a warning the
program's output might hide. Standard library only (no ``cli`` extra needed).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence

from .._errors import OctopodaError
from .._values import validate_agent_id
from .session import parse_policy

__all__ = ["LAUNCHER", "agent_id_of", "environment", "main"]

LAUNCHER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "launcher")

_EPILOG = """\
examples:
  octopoda-run python agent.py
  octopoda-run --agent-id support --policy pause python -m my_crew
  octopoda-run doctor          (what would be instrumented, and the store)

environment (the options set them for the program):
  OCTOPODA_AGENT_ID               the agent (default: the script's name)
  OCTOPODA_DATABASE_URL           the store: a path, sqlite:///, postgresql:// or http:// URL
  OCTOPODA_POLICY                 warn, pause or raise, then key=value settings
                                  (pause,spend_cap_usd=5,max_tool_calls=200,pause_scope=agent)
  OCTOPODA_DISABLED_INTEGRATIONS  integrations to leave off (langchain,crewai,...)
"""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="octopoda-run",
        description=(
            "Run a Python program with octopoda.init() applied before its code starts: every"
            " installed framework's tool and LLM calls recorded in Octopoda's audit chain,"
            " with loop detection."
        ),
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--agent-id", help="the Octopoda agent (sets OCTOPODA_AGENT_ID)")
    parser.add_argument("--store", help="the store path or URL (sets OCTOPODA_DATABASE_URL)")
    parser.add_argument("--policy", help="the loop policy (sets OCTOPODA_POLICY)")
    parser.add_argument(
        "--disable", metavar="NAMES", help="integrations to leave off, comma-separated"
    )
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the program and its arguments")
    return parser


def agent_id_of(command: Sequence[str]) -> str:
    """The agent id a command names: the script or module a Python runs (``python agent.py``
    is ``agent``, ``python -m pkg.tool`` is ``pkg.tool``), else the program's name."""
    program = os.path.basename(command[0])
    if program.lower().startswith(("python", "pypy")):
        args = list(command[1:])
        while args:
            arg = args.pop(0)
            if arg == "-m" and args:
                return args[0]
            if arg.startswith("-m") and len(arg) > 2:
                return arg[2:]
            if arg == "-c" or arg.startswith("-c"):
                return "python"
            if arg in ("-W", "-X", "--check-hash-based-pycs") and args:
                args.pop(0)
                continue
            if not arg.startswith("-") or arg == "-":
                if arg == "-":
                    return "python"
                path = arg.rstrip("/\\")
                stem = os.path.splitext(os.path.basename(path))[0]
                if stem == "__main__":  # python pkg/__main__.py is pkg
                    stem = os.path.basename(os.path.dirname(os.path.abspath(path)))
                return stem or "python"
        return "python"
    return os.path.splitext(program)[0] or "python"


def environment(
    options: argparse.Namespace, command: Sequence[str], base: Mapping[str, str]
) -> dict[str, str]:
    """The program's environment: ``base`` with the launcher first on ``PYTHONPATH`` and the
    settings, checked (``OctopodaError`` names what is wrong)."""
    env = dict(base)
    if options.agent_id is not None:
        env["OCTOPODA_AGENT_ID"] = options.agent_id
    elif not env.get("OCTOPODA_AGENT_ID"):
        env["OCTOPODA_AGENT_ID"] = agent_id_of(command)
    validate_agent_id(env["OCTOPODA_AGENT_ID"])
    if options.store is not None:
        env["OCTOPODA_DATABASE_URL"] = options.store
    if options.policy is not None:
        env["OCTOPODA_POLICY"] = options.policy
    if env.get("OCTOPODA_POLICY", "").strip():
        parse_policy(env["OCTOPODA_POLICY"])
    if options.disable is not None:
        env["OCTOPODA_DISABLED_INTEGRATIONS"] = options.disable
    spec = env.get("OCTOPODA_DATABASE_URL")
    if spec:
        from .._store.config import is_postgres_url, is_server_url, parse_store_url

        if not (is_postgres_url(spec) or is_server_url(spec)):
            parse_store_url(spec)
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != LAUNCHER]
    env["PYTHONPATH"] = os.pathsep.join([LAUNCHER, *paths])
    return env


def main(argv: Sequence[str] | None = None) -> None:
    """Run ``octopoda-run`` with ``argv`` (default: the process arguments)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["doctor"]:
        from ..cli import main as cli

        cli(["doctor", *args[1:]])
        return
    parser = _parser()
    options = parser.parse_args(args)
    command = list(options.command)
    if command[:1] == ["--"]:
        command = command[1:]
    if not command:
        parser.error("name the program to run, as in: octopoda-run python agent.py")
    try:
        env = environment(options, command, os.environ)
    except OctopodaError as exc:
        sys.stderr.write(f"octopoda-run: {exc}\n")
        raise SystemExit(2) from None
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        if os.name == "nt":  # no exec that keeps the console and the exit code
            raise SystemExit(subprocess.call(command, env=env))
        os.execvpe(command[0], command, env)
    except FileNotFoundError:
        sys.stderr.write(f"octopoda-run: {command[0]}: command not found\n")
        raise SystemExit(127) from None
    except PermissionError:
        sys.stderr.write(f"octopoda-run: {command[0]}: permission denied\n")
        raise SystemExit(126) from None


if __name__ == "__main__":
    main()
