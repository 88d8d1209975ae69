"""One agent runtime in its own process, driven line by line for the loop and breaker tests.

usage: loop_agent.py STORE AGENT [POLICY_JSON]

STORE        a path or URL passed as ``store=``.
POLICY_JSON  keyword arguments of ``LoopPolicy`` as a JSON object (default: no policy).

Prints ``{"ready": true, "pid": ...}`` once the runtime is open, then reads one JSON command
per stdin line and answers each with one JSON line on stdout:

    {"op": "handoff", "to": AGENT, "content": ANY}
    {"op": "tool", "name": NAME, "args": ANY, "result": ANY} (or "error": TEXT instead of result)
    {"op": "guard", "name": NAME, "args": ANY}      guard_tool_call
    {"op": "status"} | {"op": "resume"} | {"op": "paused"} | {"op": "verify"} | {"op": "quit"}

A ``"run"`` field (a run id) scopes "tool", "guard", "status" and "resume" to that run.

Every answer is ``{"ok": true, "result": ..., "status": loop_status().to_dict(),
"paused": bool}``, or ``{"ok": false, "error": {"type", "message", "reason"}, ...}`` when
Octopoda raised. Anything else is a crash with a traceback on stderr (exit status 1).
"""

from __future__ import annotations

import json
import sys
from typing import Any

import octopoda


def run(agent: octopoda.AgentRuntime, command: dict[str, Any]) -> Any:
    op = command["op"]
    run_id = command.get("run")
    if op == "handoff":
        return agent.record_handoff(command["to"], command.get("content")).seq
    if op == "tool":
        if "error" in command:
            return agent.record_tool_call(
                command["name"], command.get("args"), error=command["error"], run_id=run_id
            ).seq
        return agent.record_tool_call(
            command["name"], command.get("args"), result=command.get("result"), run_id=run_id
        ).seq
    if op == "guard":
        agent.guard_tool_call(command["name"], command.get("args"), run_id=run_id)
        return None
    if op == "status":
        return agent.loop_status(run_id).to_dict() if run_id else None
    if op == "resume":
        return agent.resume(run_id)
    if op == "paused":
        return agent.paused
    if op == "verify":
        return agent.audit.verify().ok
    raise SystemExit(f"unknown op {op!r}")


def main() -> int:
    store, agent_id = sys.argv[1], sys.argv[2]
    policy = octopoda.LoopPolicy(**json.loads(sys.argv[3])) if len(sys.argv) > 3 else None
    agent = octopoda.AgentRuntime(agent_id, store=store, policy=policy)
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        command = json.loads(line)
        if command["op"] == "quit":
            break
        answer: dict[str, Any] = {"ok": True, "result": None, "error": None}
        try:
            answer["result"] = run(agent, command)
        except octopoda.OctopodaError as exc:
            answer["ok"] = False
            answer["error"] = {
                "type": type(exc).__name__,
                "message": str(exc),
                "reason": getattr(exc, "reason", None),
            }
        answer["status"] = agent.loop_status().to_dict()
        answer["paused"] = agent.paused
        print(json.dumps(answer), flush=True)
    agent.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
