"""Run AgentRuntime operations in a fresh interpreter and print the results as one JSON object.

usage: ops.py STORE OPS_JSON [HOLD_SECONDS]

STORE     a path or URL passed as ``store=``, or ``-`` to pass no store (the default path).
OPS_JSON  a JSON list of operations {"op", "agent", "args": [...], "kwargs": {...}}, run in
          order on one AgentRuntime per agent id. op is one of: open (construct the runtime
          only), remember, forget, recall, history (recall_history), keys, search, snapshot,
          restore, export (export_memories), import (import_memories), store_url.
HOLD      if given, the first write transaction pauses inside (holding the write lock, after
          its reads): a pipeline processor prints "inside" on its own stdout line and sleeps
          HOLD_SECONDS, so another process can act meanwhile.

Values travel as JSON, bytes as {"$bytes": "<hex>"}; results (records) as dicts.
Prints (on the last line) {"results": [...], "error": null | {"type", "types", "message"},
"started_at", "finished_at"}. Exit status: 0 when every operation succeeded, 3 when
Octopoda raised (reported in "error"), 1 on anything else (a traceback on stderr).
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from typing import Any

import octopoda


def to_wire(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_wire(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, tuple) and hasattr(obj, "_asdict"):  # a NamedTuple record
        return {k: to_wire(v) for k, v in obj._asdict().items()}
    if isinstance(obj, bytes):
        return {"$bytes": obj.hex()}
    if isinstance(obj, (list, tuple)):
        return [to_wire(v) for v in obj]
    if isinstance(obj, dict):
        return {k: to_wire(v) for k, v in obj.items()}
    return obj


def from_wire(obj: Any) -> Any:
    if isinstance(obj, dict):
        if set(obj) == {"$bytes"}:
            return bytes.fromhex(obj["$bytes"])
        return {k: from_wire(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [from_wire(v) for v in obj]
    return obj


def holder(seconds: float) -> octopoda.Processor:
    """A processor that pauses the first transaction it runs in for ``seconds``."""
    held = []

    def hold(event: octopoda.Event) -> octopoda.Event:
        if not held:
            held.append(event.seq)
            print("inside", flush=True)
            time.sleep(seconds)
        return event

    return hold


def main() -> int:
    store_arg, ops = sys.argv[1], json.loads(sys.argv[2])
    processors = [holder(float(sys.argv[3]))] if len(sys.argv) > 3 else []
    store_kwargs = {} if store_arg == "-" else {"store": store_arg}
    runtimes: dict[str, octopoda.AgentRuntime] = {}

    def runtime(agent: str) -> octopoda.AgentRuntime:
        if agent not in runtimes:
            runtimes[agent] = octopoda.AgentRuntime(agent, processors=processors, **store_kwargs)
        return runtimes[agent]

    calls = {
        "open": lambda rt: None,
        "remember": lambda rt, key, value, **kw: rt.remember(key, from_wire(value), **kw),
        "forget": lambda rt, key: rt.forget(key),
        "recall": lambda rt, key, **kw: rt.recall(key, **kw),
        "history": lambda rt, key: rt.recall_history(key),
        "keys": lambda rt: rt.keys(),
        "search": lambda rt, **kw: rt.search(**kw),
        "snapshot": lambda rt, name: rt.snapshot(name),
        "restore": lambda rt, name: rt.restore(name),
        "export": lambda rt: rt.export_memories(),
        "import": lambda rt, bundle, **kw: rt.import_memories(bundle, **kw),
        "store_url": lambda rt: rt.store.url,
    }
    out: dict[str, Any] = {"results": [], "error": None, "started_at": time.time()}
    status = 0
    try:
        for op in ops:
            call = calls[op["op"]]
            result = call(runtime(op["agent"]), *op.get("args", ()), **op.get("kwargs", {}))
            out["results"].append(to_wire(result))
    except octopoda.OctopodaError as exc:
        out["error"] = {
            "type": type(exc).__name__,
            "types": [t.__name__ for t in type(exc).__mro__],
            "message": str(exc),
        }
        status = 3
    out["finished_at"] = time.time()
    print(json.dumps(out))
    return status


if __name__ == "__main__":
    sys.exit(main())
