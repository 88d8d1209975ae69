"""What ``octopoda doctor`` checks beyond opening the store: whether the store's location
is writable, whether a configured server answers, and which frameworks ``octopoda.init()``
would instrument."""

from __future__ import annotations

import os
import tempfile
from typing import Any, Final

__all__ = [
    "FRAMEWORKS",
    "integrations_report",
    "server_report",
    "sqlite_access",
]

FRAMEWORKS: Final = (
    # (integration, the framework's distribution, the adapter that instruments it)
    ("langchain", "langchain-core", "octopoda-langchain"),
    ("openai_agents", "openai-agents", "octopoda-openai-agents"),
    ("crewai", "crewai", "octopoda-crewai"),
    ("autogen", "autogen-agentchat", "octopoda-autogen"),
)


def sqlite_access(path: str) -> str | None:
    """None when a store file at ``path`` can be created or written; else why not.

    Tried the way SQLite will need it: the file itself (if it exists) and its folder (the
    WAL and journal files are created beside it), or the nearest existing folder above a
    file that does not exist yet, by creating a temporary file there."""
    path = os.path.abspath(path)
    if os.path.exists(path):
        if os.path.isdir(path):
            return f"{path} is a folder, not a store file"
        if not os.access(path, os.R_OK | os.W_OK):
            return f"{path} is not readable and writable by this user"
    folder = os.path.dirname(path)
    while not os.path.exists(folder):
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    if not os.path.isdir(folder):
        return f"{folder} is not a folder, so {path} cannot be created"
    try:
        with tempfile.TemporaryFile(dir=folder, prefix=".octopoda-doctor-"):
            pass
    except OSError as exc:
        return f"cannot create files in {folder} ({exc.strerror or exc})"
    return None


def server_report(url: str) -> tuple[dict[str, Any], list[str]]:
    """What doctor says about an Octopoda server store (``http://``), and the problems."""
    import json
    import urllib.error
    import urllib.request

    report: dict[str, Any] = {"backend": "server", "url": url.rstrip("/")}
    health = f"{url.rstrip('/')}/v1/health"
    try:
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(health, timeout=10) as response:
            report["server_version"] = json.loads(response.read()).get("version")
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        problem = (
            f"the Octopoda server at {report['url']} does not answer ({reason}); start it"
            " with `octopoda serve` or fix the URL"
        )
        report["error"] = problem
        return report, [problem]
    from .._errors import OctopodaError
    from .._store.config import open_store

    try:
        store = open_store(url)
        try:
            report["agents"] = len(store.agents())
        finally:
            store.close()
    except OctopodaError as exc:
        report["error"] = str(exc)
        return report, [str(exc)]
    return report, []


def integrations_report() -> tuple[list[dict[str, Any]], list[str]]:
    """The frameworks ``octopoda.init()`` would instrument, and the notes for the user."""
    from .._instrument.discovery import distributions, normalize
    from .._instrument.session import survey

    dists = distributions()
    rows: list[dict[str, Any]] = []
    for status in survey():
        adapter_dist = dists.get(normalize(status.adapter))
        rows.append(
            {
                "integration": status.name,
                "adapter": status.adapter,
                "adapter_version": adapter_dist.version if adapter_dist else None,
                "framework": status.framework,
                "version": status.version,
                "supported": status.supported,
                "state": "ready" if status.state == "waiting" else status.state,
                "detail": status.detail,
            }
        )
    notes: list[str] = []
    found = {row["integration"] for row in rows}
    for name, framework, adapter in FRAMEWORKS:
        installed = dists.get(normalize(framework))
        if installed is not None and name not in found:
            rows.append(
                {
                    "integration": name,
                    "adapter": adapter,
                    "adapter_version": None,
                    "framework": framework,
                    "version": installed.version,
                    "supported": None,
                    "state": "no adapter",
                    "detail": f"pip install {adapter}",
                }
            )
            notes.append(f"{framework} {installed.version} is installed: pip install {adapter}")
    for row in rows:
        if row["state"] == "unsupported":
            notes.append(f"{row['detail']}; it is not instrumented")
    return rows, notes
