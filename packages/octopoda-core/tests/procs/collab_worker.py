"""An interactive agent process: runs AgentRuntime methods sent on stdin, one per line.

usage: collab_worker.py STORE

Opens ``octopoda.Octopoda(store=STORE)`` and prints "ready". Then reads one JSON command per
line from stdin and prints one JSON reply per line on stdout, until stdin closes or the
command {"op": "exit"} arrives.

Command  {"agent": id, "op": method name, "args": [...], "kwargs": {...}, "at": unix time}
         ``op`` is any public method of the agent's runtime (``client.agent(id)``, so one
         runtime per agent id for the life of the process), or "loop_kinds" (the kinds of
         the active loop signals), or "verify" (``audit.verify().ok``). With "at", the
         process spins until that time first: two processes given the same "at" act at
         the same moment (a barrier).
Reply    {"ok": result, "started": t, "finished": t}, or {"error": {"type", "types",
         "message", "expected", "actual"}, "started": t, "finished": t} when Octopoda raised.
         Records come back as dicts, bytes as {"$bytes": hex}. ``started``/``finished`` frame
         the call itself (after the barrier), in Unix seconds.
Anything that is not an Octopoda error ends the process with a traceback (exit status 1).
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import octopoda


def to_wire(obj: Any) -> Any:
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


def run(client: octopoda.Octopoda, command: dict[str, Any]) -> Any:
    agent = client.agent(command["agent"])
    op = command["op"]
    if op == "loop_kinds":
        return sorted({s.kind for s in agent.loop_status().signals})
    if op == "verify":
        return agent.audit.verify().ok
    if op.startswith("_") or not callable(getattr(agent, op, None)):
        raise SystemExit(f"unknown op {op!r}")
    args = from_wire(command.get("args", []))
    kwargs = from_wire(command.get("kwargs", {}))
    return getattr(agent, op)(*args, **kwargs)


def main() -> int:
    client = octopoda.Octopoda(store=sys.argv[1])
    print("ready", flush=True)
    for line in sys.stdin:
        command = json.loads(line)
        if command.get("op") == "exit":
            break
        at = command.get("at")
        if at is not None:
            while (left := at - time.time()) > 0:
                time.sleep(min(left, 0.0005) if left > 0.002 else 0)
        started = time.time()
        try:
            reply: dict[str, Any] = {"ok": to_wire(run(client, command))}
        except octopoda.OctopodaError as exc:
            reply = {
                "error": {
                    "type": type(exc).__name__,
                    "types": [t.__name__ for t in type(exc).__mro__],
                    "message": str(exc),
                    "expected": getattr(exc, "expected", None),
                    "actual": getattr(exc, "actual", None),
                }
            }
        reply["started"], reply["finished"] = started, time.time()
        print(json.dumps(reply), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
