"""Octopoda loop breaker: a scripted agent retries a failing tool until the breaker stops it.

Offline: the "tool" is a plain Python function that always times out. The agent asks
``guard_tool_call`` before every call and reports every outcome with ``record_tool_call``;
with ``LoopPolicy(on_loop="pause")`` the third identical failure pauses the agent, and the
next guard raises ``AgentPaused``. The script then prints the loop report and checks the
audit chain. Runs on the default store ($OCTOPODA_HOME/octopoda.db, else
~/.octopoda/octopoda.db) with a new agent id each run, so it can be run again and again.
"""

from __future__ import annotations

import logging
import sys
import uuid
from typing import Any

from octopoda import AgentPaused, AgentRuntime, LoopPolicy

# Detections are logged to the "octopoda" logger at WARNING; show them on stderr.
logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(levelname)s %(message)s")


def get_weather(city: str) -> dict[str, Any]:
    """The tool: its upstream is down, and every call times out with a new request id."""
    raise TimeoutError(f"weather API timed out after 30000 ms (request {uuid.uuid4().hex})")


agent = AgentRuntime(f"weather-bot-{uuid.uuid4().hex[:8]}", policy=LoopPolicy(on_loop="pause"))
print(f"agent {agent.agent_id} on {agent.store.url}")

args = {"city": "Lisbon"}
for step in range(1, 11):
    try:
        agent.guard_tool_call("get_weather", args)
    except AgentPaused as stop:
        print(f"step {step}: breaker stopped the agent before calling get_weather")
        print(f"  reason: {stop.reason}")
        break
    try:
        forecast = get_weather(**args)
    except TimeoutError as exc:
        event = agent.record_tool_call("get_weather", args, error=exc, duration_ms=30000.0)
        print(f"step {step}: get_weather failed (event #{event.seq}): {exc}")
    else:
        agent.record_tool_call("get_weather", args, result=forecast)
        print(f"step {step}: {forecast}")
else:
    print("the breaker never tripped")
    raise SystemExit(1)

print("loop report:")
status = agent.loop_status()
print(f"  status: {status.state}")
for signal in status.signals:
    print(f"  {signal.kind} loop, confidence {signal.confidence:.0%}")
    print(f"    events: {', '.join(f'#{seq}' for seq in signal.seqs)}")
    for ref in signal.events:
        print(f"      #{ref.seq} {ref.kind} {ref.name}({ref.preview})")
    print(f"    why: {signal.explanation}")
    print(f"    fix: {signal.suggestion}")

stats = agent.stats()
print(
    f"stats: {stats.tool_calls} tool calls, {stats.loops_detected} loop(s) detected,"
    f" paused={stats.paused}"
)
print(f"history: {[(s.kind, s.seqs) for s in agent.loop_history()]}")

agent.resume()
print(f"after resume(): paused={agent.paused}, status {agent.loop_status().state}")

report = agent.audit.verify()
status_text = "verified" if report.ok else f"BROKEN at #{report.first_bad_seq}: {report.reason}"
print(f"audit chain: {status_text} ({report.checked} events, head #{report.head.seq})")
print("timeline:", ", ".join(f"#{e.seq} {e.kind}" for e in agent.timeline()))
