"""Write memories in a loop until killed, acknowledging each write after it returned.

usage: crash_writer.py STORE MODE DURABILITY

MODE        "fresh": a new key per write (k0, k1, ...); "overwrite": five keys written over
            and over, so their versions grow.
DURABILITY  "normal" or "full".

Prints "opening" before the store is opened, then, after each ``remember`` RETURNS, one JSON
line {"key", "version", "seq", "value"} (flushed: a printed line is an acknowledged write).
Stops by itself after 60 s so a lost parent leaves nothing running.
"""

from __future__ import annotations

import json
import sys
import time

import octopoda

AGENT = "crash-agent"


def main() -> None:
    store, mode, durability = sys.argv[1], sys.argv[2], sys.argv[3]
    print("opening", flush=True)
    agent = octopoda.AgentRuntime(AGENT, store=store, durability=durability)
    deadline = time.monotonic() + 60
    i = 0
    while time.monotonic() < deadline:
        key = f"k{i}" if mode == "fresh" else f"k{i % 5}"
        # Values of varying size, some spanning several pages, so kills land in many places
        # (page splits, WAL growth, automatic checkpoints).
        value = {"i": i, "key": key, "pad": "x" * ((i * 37) % 1500), "tags": ["a", i % 3]}
        record = agent.remember(key, value)
        ack = {"key": key, "version": record.version, "seq": record.seq, "value": value}
        sys.stdout.write(json.dumps(ack) + "\n")
        sys.stdout.flush()
        i += 1


if __name__ == "__main__":
    main()
