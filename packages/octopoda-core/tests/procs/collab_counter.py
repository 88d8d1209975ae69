"""Increment one shared counter with compare-and-set, racing other processes.

usage: collab_counter.py STORE AGENT SPACE N

Prints "ready", waits for a line "go <unix time>" on stdin and spins until that time, so
every process starts together. Then increments the shared key "counter" of SPACE N times,
each as read_shared -> share(value + 1, expected_version=<the version read>), retrying on
VersionConflict. Prints one JSON object {"won": [[version, value], ...], "conflicts": the
number of VersionConflicts met, "error": null | traceback text}; exits 1 on any other error.
"""

from __future__ import annotations

import json
import sys
import traceback
from typing import Any

from _barrier import wait_for_go  # (beside this script)

import octopoda


def main() -> int:
    store, agent_id, space, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    agent = octopoda.AgentRuntime(agent_id, store=store)
    wait_for_go(spin=True)
    won: list[list[Any]] = []
    conflicts = 0
    error = None
    try:
        for _ in range(n):
            while True:
                seen = agent.read_shared("counter", space=space)
                value = (seen.value if seen else 0) + 1
                try:
                    written = agent.share(
                        "counter", value, space=space, expected_version=seen.version or 0
                    )
                except octopoda.VersionConflict:
                    conflicts += 1
                    continue
                won.append([written.version, value])
                break
    except BaseException:
        error = traceback.format_exc()
    print(json.dumps({"won": won, "conflicts": conflicts, "error": error}))
    return 1 if error else 0


if __name__ == "__main__":
    sys.exit(main())
