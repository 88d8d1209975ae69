"""Run by the 3.3.4 interpreter: print 3.3.4's public surface as JSON (AgentRuntime's public
methods with their parameters, the octopoda package's public names, its console scripts, and
every environment variable its source reads)."""

import contextlib
import importlib.metadata
import inspect
import io
import json
import re
from pathlib import Path

with contextlib.redirect_stdout(io.StringIO()):
    from synrix_runtime.api.runtime import AgentRuntime

    import octopoda

methods = {}
for name, fn in inspect.getmembers(AgentRuntime, inspect.isfunction):
    if not name.startswith("_"):
        params = list(inspect.signature(fn).parameters.values())[1:]
        methods[name] = [[p.name, p.default is not inspect.Parameter.empty] for p in params]
dist = importlib.metadata.distribution("octopoda")
scripts = sorted(ep.name for ep in dist.entry_points if ep.group == "console_scripts")
site = Path(inspect.getfile(octopoda)).parent.parent
pattern = re.compile(
    r"(?:os\.environ\.get|os\.getenv|os\.environ\[|environ\.get|getenv)\(?[\"']([A-Z][A-Z_0-9]+)[\"']"
)
env = set()
for package in ("octopoda", "synrix", "synrix_runtime", "octopoda_zf"):
    for path in (site / package).rglob("*.py"):
        env.update(pattern.findall(path.read_text(encoding="utf-8", errors="replace")))
print(
    json.dumps(
        {
            "version": dist.version,
            "methods": methods,
            "names": sorted(
                {n for n in dir(octopoda) if not n.startswith("_")}
                | set(getattr(octopoda, "_ZF_LAZY", {}))  # lazy: init, audit_chain, ...
            ),
            "scripts": scripts,
            "env": sorted(env),
        }
    )
)
