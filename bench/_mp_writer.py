"""One writer process of the multi-process benchmark (run by bench_multiproc.py).

    python _mp_writer.py STORE AGENT WORKER UNIQUE SHARED_EVERY OUT

Opens the store, prints ``ready``, waits for a line on stdin, then writes ``UNIQUE`` keys
``w{WORKER}-k{i}`` and, after every ``SHARED_EVERY``-th of them, one version of the key
``shared``. Every acknowledged write (key, version, value id) and every error goes to OUT.
"""

from __future__ import annotations

import json
import sys
import time


def main() -> int:
    store, agent_id, worker, unique, every, out = sys.argv[1:7]
    w, n, k = int(worker), int(unique), int(every)
    from octopoda import AgentRuntime

    agent = AgentRuntime(agent_id, store=store)
    print("ready", flush=True)
    sys.stdin.readline()
    acks: list[tuple[str, int, int]] = []
    errors: list[str] = []
    started = time.time()
    for i in range(n):
        writes = [(f"w{w}-k{i}", {"w": w, "i": i})]
        if k and (i + 1) % k == 0:
            writes.append(("shared", {"w": w, "i": i}))
        for key, value in writes:
            try:
                record = agent.remember(key, value)
            except Exception as exc:
                errors.append(f"{key}: {type(exc).__name__}: {exc}")
            else:
                acks.append((key, record.version, i))
    ended = time.time()
    with open(out, "w", encoding="utf-8") as f:
        json.dump(
            {"worker": w, "started": started, "ended": ended, "acks": acks, "errors": errors}, f
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
