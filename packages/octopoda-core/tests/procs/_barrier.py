"""The start barrier of the racing processes (imported by the scripts beside it).

A process prints "ready" once it is set up, then waits for a line "go <unix time>" on stdin
and waits until that time, so that every process starts together: spinning (``spin``,
the tightest start, for races of a few ms) or sleeping in 1 ms steps.
"""

from __future__ import annotations

import sys
import time


def wait_for_go(*, spin: bool = False) -> None:
    print("ready", flush=True)
    line = sys.stdin.readline().split()
    if not line or line[0] != "go":
        raise SystemExit(f"expected 'go <time>' on stdin, got {line!r}")
    start = float(line[1])
    while (left := start - time.time()) > 0:
        if not spin:
            time.sleep(min(left, 0.001))
