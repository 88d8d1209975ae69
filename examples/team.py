"""Octopoda team example: two agents share findings in a space, a stale write surfaces a
conflict, the conflict is resolved, and nothing is lost.

Offline. Runs on the embedded default store: $OCTOPODA_HOME/octopoda.db, else
~/.octopoda/octopoda.db. Every run uses fresh agent and space names (a run id), so it can be
run again and again on the same store.
"""

from __future__ import annotations

import sys
import uuid
from datetime import datetime, timezone

from octopoda import Octopoda


def when(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%H:%M:%S.%f")[:-3]


run = uuid.uuid4().hex[:8]
client = Octopoda()  # the default store
researcher = client.agent(f"researcher-{run}")
analyst = client.agent(f"analyst-{run}")
space = f"market-study-{run}"
print(f"store: {client.store.url}")

# A space only its members may read or write (spaces are open by default).
researcher.create_space(space, members=[analyst.agent_id])
print(f"space {space!r}: members {researcher.agent_id}, {analyst.agent_id}")

# Share findings: every write is a new version that carries its author.
researcher.share("market_size", "$2.1B by 2027", space=space, tags=["estimate"])
researcher.share("sources", ["analyst report 2024", "survey of 40 vendors"], space=space)
seen = analyst.read_shared("market_size", space=space)
print(f"{analyst.agent_id} reads market_size = {seen.value!r} (v{seen.version}, {seen.author})")
analyst.share("market_size", "$2.4B by 2027", space=space)  # it read v1: no conflict

# The researcher writes again without having read the analyst's version: a stale write.
# It still succeeds (nothing is lost) and a conflict is recorded for review.
stale = researcher.share("market_size", "$2.2B by 2027", space=space)
print(f"{researcher.agent_id} wrote v{stale.version} without seeing v{stale.version - 1}")
for conflict in analyst.shared_conflicts(space=space):
    print(
        f"conflict #{conflict.id} on {conflict.key!r}: {conflict.mine_author} wrote"
        f" {conflict.mine_value!r} (v{conflict.mine_version}) over {conflict.theirs_author}'s"
        f" {conflict.theirs_value!r} (v{conflict.theirs_version}), having seen"
        f" v{conflict.seen_version}"
    )

# The analyst resolves it with a merged value ("mine" and "theirs" are the other choices).
merged = {"low": "$2.1B", "high": "$2.4B", "year": 2027}
assert stale.conflict_id is not None
resolved = analyst.resolve_conflict(stale.conflict_id, keep=merged)
assert resolved is not None
print(f"conflict #{stale.conflict_id} resolved by {analyst.agent_id}: v{resolved.version}")
print(f"open conflicts left: {len(analyst.shared_conflicts(space=space))}")

analyst.send_message(researcher.agent_id, "merged our estimates into a range", "status")
for message in researcher.read_messages():
    print(f"message to {researcher.agent_id} from {message.sender}: {message.body!r}")
    researcher.mark_read(message.id)

current = researcher.read_shared("market_size", space=space)
print(f"market_size is now {current.value} (v{current.version}, {current.author})")
print("shared history of market_size (newest first):")
for version in researcher.shared_history("market_size", space=space):
    print(
        f"  v{version.version} by {version.author} at {when(version.created_at)}: {version.value}"
    )

ok = True
for agent in (researcher, analyst):
    report = agent.audit.verify()
    ok = ok and report.ok
    status = "verified" if report.ok else f"BROKEN at #{report.first_bad_seq}: {report.reason}"
    print(f"audit chain of {agent.agent_id}: {status} ({report.checked} events)")
sys.exit(0 if ok else 1)
