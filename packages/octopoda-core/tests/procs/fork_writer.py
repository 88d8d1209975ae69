"""Fork children that keep using the AgentRuntime they inherited.

usage: fork_writer.py STORE THREADED

The process remembers one key as agent "team", then forks 3 children with ``os.fork``. Each
child writes 40 versions of "shared" through the runtime it inherited, saves its
acknowledged writes to STORE.child-<n>.json and exits; the parent writes 40 more meanwhile.
With THREADED=1, a second thread of the parent is inside a remember (as agent "bg", on the
same store) when the children are forked, as a web server's or a worker pool's threads may
be: a pipeline processor holds that write transaction open until the forks are done (at
most 0.5 s, so a store that makes fork wait for open transactions is not deadlocked).

A child still running after 2 s dumps its stack to stderr and exits 1 (it hung); one that
raises prints the traceback and exits 2. Prints
{"acks": [[agent, key, version, seq, value], ...], "children": [exit status, ...]}.
"""

from __future__ import annotations

import faulthandler
import json
import os
import sys
import threading
import traceback
import warnings

import octopoda

CHILDREN = 3
WRITES = 40


def write_shared(agent: octopoda.AgentRuntime, who: str) -> list[list[object]]:
    acks = []
    for i in range(WRITES):
        value = {"who": who, "i": i}
        record = agent.remember("shared", value)
        acks.append(["team", "shared", record.version, record.seq, value])
    return acks


def child(agent: octopoda.AgentRuntime, store: str, n: int) -> None:
    faulthandler.dump_traceback_later(2, exit=True)
    acks = write_shared(agent, f"child-{n}")
    with open(f"{store}.child-{n}.json", "w") as f:
        json.dump(acks, f)


def main() -> None:
    store, threaded = sys.argv[1], sys.argv[2] == "1"
    warnings.filterwarnings("ignore", "This process .* is multi-threaded", DeprecationWarning)
    agent = octopoda.AgentRuntime("team", store=store)
    first = agent.remember("first", 1)
    acks: list[list[object]] = [["team", "first", first.version, first.seq, 1]]
    inside, forked = threading.Event(), threading.Event()

    def hold(event: octopoda.Event) -> octopoda.Event:
        inside.set()
        forked.wait(0.5)
        return event

    def background() -> None:
        octopoda.AgentRuntime("bg", store=store, processors=[hold]).remember("tick", 1)

    thread = threading.Thread(target=background)
    if threaded:
        thread.start()
        inside.wait(10)
    pids = []
    for n in range(CHILDREN):
        pid = os.fork()
        if pid == 0:
            status = 0
            try:
                child(agent, store, n)
            except BaseException:
                traceback.print_exc()
                status = 2
            os._exit(status)
        pids.append(pid)
    forked.set()
    acks += write_shared(agent, "parent")
    statuses = [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in pids]
    if threaded:
        thread.join()
    for n, status in enumerate(statuses):
        if status == 0:
            with open(f"{store}.child-{n}.json") as f:
                acks += json.load(f)
    print(json.dumps({"acks": acks, "children": statuses}))


if __name__ == "__main__":
    main()
