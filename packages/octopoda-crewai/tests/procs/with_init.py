"""Runs an unmodified script after ``octopoda.init()`` (the crewai integration activates
when the script imports crewai): ``octopoda.testing.run_script_with_init``.

python with_init.py DB AGENT MODE SCRIPT [ARGS...]
MODE: ``init``; ``init-twice`` (init again with the same settings); ``shutdown``
(init, then shutdown before the script runs: nothing may be recorded); ``activate-twice``
(no init: the integration's ``activate`` called twice with one context, as init would).
"""

from __future__ import annotations

import sys

from octopoda.testing import run_script_with_init

if __name__ == "__main__":
    run_script_with_init(
        "octopoda_crewai._integration", sys.argv[1:], prices={"scripted-gpt": (1.0, 2.0)}
    )
