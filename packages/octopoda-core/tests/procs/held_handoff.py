"""One handoff whose commit is held open, for the out-of-order commit test.

usage: held_handoff.py STORE AGENT TO CONTENT_JSON

Records ``AGENT``'s handoff of ``CONTENT_JSON`` to ``TO`` with a pipeline processor that,
inside the commit (after the store drew the message's id), prints ``{"holding": true}``
and waits for one line on stdin; then the commit ends and it prints ``{"seq": N}``.
"""

from __future__ import annotations

import json
import sys

import octopoda


def main() -> int:
    store, agent_id, to, content = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]

    def hold(event: octopoda.Event) -> octopoda.Event:
        if event.kind == "handoff":
            print(json.dumps({"holding": True}), flush=True)
            sys.stdin.readline()
        return event

    agent = octopoda.AgentRuntime(agent_id, store=store, processors=[hold])
    event = agent.record_handoff(to, json.loads(content))
    print(json.dumps({"seq": event.seq}), flush=True)
    agent.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
