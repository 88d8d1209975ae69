"""Octopoda quickstart: versioned memory, a decision, the timeline and a verified audit chain.

Runs on the embedded default store: $OCTOPODA_HOME/octopoda.db, else ~/.octopoda/octopoda.db.
Run it twice: the memory is still there, and every write is a new version.
"""

from __future__ import annotations

from datetime import datetime, timezone

from octopoda import AgentRuntime


def when(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%H:%M:%S")


agent = AgentRuntime("quickstart-bot")
print(f"store: {agent.store.url}")

before = agent.recall("user_name")
if before.found:
    print(f"remembered from an earlier run: user_name = {before.value!r} (v{before.version})")

run = before.version + 1 if before.found else 1  # (user_name is written once a run)
agent.remember("user_name", "Alice", tags=["profile"])
# the team grows by a seat each run (the same values again and again, with nothing new in
# between, would be a loop: run after run undoing and redoing the same changes)
agent.remember("plan", {"tier": "pro", "seats": 2 + run}, tags=["billing"])
agent.remember("plan", {"tier": "pro", "seats": 4 + run}, tags=["billing"])  # a new version

plan = agent.recall("plan")
print(f"plan = {plan.value} (version {plan.version})")
for version in agent.recall_history("plan", limit=3):
    print(f"  v{version.version} at {when(version.created_at)}: {version.value}")

decision = agent.log_decision(
    "Offer the annual discount",
    reasoning="five seats on the pro tier",
    context={"channel": "email"},
)
print(f"decision #{decision.seq}: {decision.decision}")
if decision.repeated:
    print(f"  (restates decision #{decision.repeats_seq}, similarity {decision.similarity})")
print(f"  what the agent knew then: {decision.memory().to_dict()}")

agent.remember("plan", {"tier": "enterprise", "seats": 49 + run}, tags=["billing"])
changes = agent.diff(decision.seq)
print(f"since the decision: changed {sorted(changes.changed)}")

print("timeline (last 5 events):")
for event in agent.timeline()[-5:]:
    print(f"  #{event.seq} {event.kind:<9} {event.hash[:16]}...")

report = agent.audit.verify()
status = "verified" if report.ok else f"BROKEN at #{report.first_bad_seq}: {report.reason}"
print(f"audit chain: {status} ({report.checked} events, head #{report.head.seq})")
