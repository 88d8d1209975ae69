"""Hold a transaction on an SQLite file with a raw sqlite3 connection, then end it.

usage: lock_holder.py PATH MODE SECONDS

MODE  "write": BEGIN IMMEDIATE (the write lock), "read": BEGIN and a SELECT (a read
      snapshot, which in WAL mode must not block writers).

Prints {"event": "locked", "t": <unix time>} once the transaction is open, sleeps SECONDS,
commits, and prints {"event": "released", "t": <unix time>} right after the commit.
"""

from __future__ import annotations

import json
import sqlite3
import sys
import time


def say(event: str) -> None:
    print(json.dumps({"event": event, "t": time.time()}), flush=True)


def main() -> None:
    path, mode, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
    conn = sqlite3.connect(path, isolation_level=None, timeout=10)
    if mode == "write":
        conn.execute("BEGIN IMMEDIATE")
    else:
        conn.execute("BEGIN")
        conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
    say("locked")
    time.sleep(seconds)
    conn.execute("COMMIT")
    say("released")
    conn.close()


if __name__ == "__main__":
    main()
