"""A second reader in its own process: counts a session's items whenever asked.

    python count_items.py DB SESSION_ID

Each line on stdin makes it print the number of items the session holds now (what a fresh
``OctopodaSession`` reads from DB), one count per line; end of input ends it.
"""

from __future__ import annotations

import asyncio
import sys

from octopoda_openai_agents import OctopodaSession


def main(db: str, session_id: str) -> None:
    print("ready", flush=True)
    for _ in sys.stdin:
        session = OctopodaSession(session_id, db)
        print(len(asyncio.run(session.get_items())), flush=True)
        session.close()


if __name__ == "__main__":
    main(*sys.argv[1:3])
