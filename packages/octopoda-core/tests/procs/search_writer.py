"""Write memories and find each one by its words at once, racing other processes.

usage: search_writer.py STORE AGENT WORD N

Prints "ready", waits for a line "go <unix time>" on stdin and spins until that time, so
every process starts together. Then N times: remembers "WORD-i" with the text "WORDi
zebra" and searches for "WORDi" at once, which must find that key. Prints one JSON object
{"missed": [the keys a search right after their write did not find], "error": null |
traceback text}.
"""

from __future__ import annotations

import json
import sys
import traceback

from _barrier import wait_for_go  # (beside this script)

import octopoda


def main() -> int:
    store, agent_id, word, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    agent = octopoda.AgentRuntime(agent_id, store=store)
    wait_for_go(spin=True)
    missed: list[str] = []
    error = None
    try:
        for i in range(n):
            key = f"{word}-{i}"
            agent.remember(key, f"{word}{i} zebra")
            if [item.key for item in agent.search(query=f"{word}{i}")] != [key]:
                missed.append(key)
    except Exception:
        error = traceback.format_exc()
    finally:
        agent.close()
    print(json.dumps({"missed": missed, "error": error}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
