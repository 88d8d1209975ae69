"""An audited write storm that runs until it is killed (for the audit crash test).

usage: audit_writer.py STORE ACK_FILE SEED

Opens agent "storm" on STORE and prints "ready" (flushed). Then, chosen by a random.Random
seeded with SEED, runs remember of changing keys (some with tags or a TTL, values of varying
size), log_decision with context, forget (a no-op when the key is gone) and small
multi-version imports (several memory rows in one transaction). After each operation
RETURNS it appends one JSON line {"kind", "seq"} to ACK_FILE and flushes it: an
acknowledged operation, whose event must survive the kill. ``seq`` is null for a forget that
wrote nothing. Stops by itself after 60 s so a lost parent leaves nothing running.
"""

from __future__ import annotations

import json
import random
import sys
import time
from typing import Any

import octopoda

AGENT = "storm"


def import_bundle(i: int, rng: random.Random) -> dict[str, Any]:
    memories = []
    for k in range(rng.randint(2, 4)):
        versions: list[dict[str, Any]] = [
            {"version": v + 1, "created_at": 1000.0 + v, "encoding": "json", "value": [i, k, v]}
            for v in range(rng.randint(1, 3))
        ]
        if rng.random() < 0.3:
            versions.append({"version": 9, "created_at": 2000.5, "encoding": "tombstone"})
        memories.append({"key": f"imp{rng.randrange(6)}-{k}", "versions": versions})
    return {
        "format": "octopoda.memories",
        "format_version": 1,
        "agent": "src",
        "memories": memories,
    }


def main() -> None:
    store, ack_path, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
    rng = random.Random(seed)
    agent = octopoda.AgentRuntime(AGENT, store=store)
    print("ready", flush=True)
    deadline = time.monotonic() + 60
    i = 0
    with open(ack_path, "a", encoding="utf-8") as acks:
        while time.monotonic() < deadline:
            roll = rng.random()
            key = f"k{rng.randrange(12)}"
            seq: int | None
            if roll < 0.55:
                value = {"i": i, "key": key, "pad": "x" * rng.randrange(0, 3000)}
                tags = ["storm", f"t{i % 3}"] if i % 2 else None
                ttl = 3600 if i % 5 == 0 else None
                kind, seq = "remember", agent.remember(key, value, tags=tags, ttl=ttl).seq
            elif roll < 0.75:
                decision = agent.log_decision(
                    f"decision {i % 7}", reasoning="storm", context={"i": i, "key": key}
                )
                kind, seq = "decision", decision.seq
            elif roll < 0.92:
                record = agent.forget(key)
                kind, seq = "forget", None if record is None else record.seq
            else:
                kind, seq = "import", agent.import_memories(import_bundle(i, rng)).seq
            acks.write(json.dumps({"kind": kind, "seq": seq}) + "\n")
            acks.flush()
            i += 1


if __name__ == "__main__":
    main()
