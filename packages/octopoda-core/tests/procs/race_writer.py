"""One of several processes that open the same store at the same moment and write.

usage: race_writer.py STORE INDEX CONFIG_JSON

CONFIG_JSON  {"agent": shared agent id, "unique": N, "shared": M, "own": bool,
              "until": a path (optional: write "shared" until that file exists, not M times)}

Protocol: prints "ready" once imported, then waits for a line "go <unix time>" on stdin and
sleeps until that time, so every process opens the store together. It then writes, under the
shared agent, N unique keys p<INDEX>-k<j> and M versions of the one key "shared"; with
"own", the same again under its own agent "own-<INDEX>". Prints one JSON object
{"acks": [[agent, key, version, seq, value], ...], "error": null | traceback text,
"finished_at": unix time}; exits 1 on any exception.
"""

from __future__ import annotations

import itertools
import json
import os
import sys
import time
import traceback
from collections.abc import Iterator
from typing import Any

from _barrier import wait_for_go  # (beside this script)

import octopoda


def writes(index: int, config: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """The (agent, key, value) writes of this process, unique and shared keys interleaved."""
    agents = [config["agent"]] + ([f"own-{index}"] if config["own"] else [])
    until = config.get("until")
    for j in itertools.count():
        more_shared = j < config["shared"] if until is None else not os.path.exists(until)
        if j >= config["unique"] and not more_shared:
            return
        for agent in agents:
            if j < config["unique"]:
                yield agent, f"p{index}-k{j}", {"proc": index, "j": j}
            if more_shared:
                yield agent, "shared", {"proc": index, "j": j, "agent": agent}


def main() -> int:
    store, index, config = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
    acks: list[list[Any]] = []
    error = None
    wait_for_go()
    try:
        runtimes: dict[str, octopoda.AgentRuntime] = {}
        for agent, key, value in writes(index, config):
            if agent not in runtimes:
                runtimes[agent] = octopoda.AgentRuntime(agent, store=store)
            record = runtimes[agent].remember(key, value)
            acks.append([agent, key, record.version, record.seq, value])
    except BaseException:
        error = traceback.format_exc()
    print(json.dumps({"acks": acks, "error": error, "finished_at": time.time()}))
    return 1 if error else 0


if __name__ == "__main__":
    sys.exit(main())
