"""A steady audited writer that runs until it is killed (for verify under a concurrent writer).

usage: steady_writer.py STORE AGENT

Opens AGENT on STORE, writes once and prints "ready" (flushed), then remembers changing keys,
logs decisions and forgets, as fast as it can. Stops by itself after 60 s so a lost parent
leaves nothing running.
"""

from __future__ import annotations

import sys
import time

import octopoda


def main() -> None:
    store, agent_id = sys.argv[1], sys.argv[2]
    agent = octopoda.AgentRuntime(agent_id, store=store)
    agent.remember("k0", {"i": 0})
    print("ready", flush=True)
    deadline = time.monotonic() + 60
    i = 0
    while time.monotonic() < deadline:
        i += 1
        key = f"k{i % 9}"
        if i % 7 == 0:
            agent.log_decision(f"decision {i}", reasoning="steady", context={"key": key})
        elif i % 11 == 0:
            agent.forget(key)
        else:
            agent.remember(key, {"i": i, "pad": "x" * (i % 500)}, tags=["steady"])


if __name__ == "__main__":
    main()
