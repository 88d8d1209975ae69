"""Applies ``octopoda.init()`` in a program that ``octopoda-run`` starts.

``octopoda-run`` puts this folder first on ``PYTHONPATH``, so Python's ``site`` imports this
module at start-up, before the program's code. It takes its folder off ``sys.path`` again,
runs the ``sitecustomize`` that the program would have had without it (Python imports only
the first one on the path), then calls ``octopoda.init()``, which reads its settings from
``OCTOPODA_AGENT_ID``, ``OCTOPODA_DATABASE_URL``, ``OCTOPODA_POLICY`` and
``OCTOPODA_DISABLED_INTEGRATIONS``. Problems go to stderr; the program runs either way.
"""

import os
import sys
import traceback


def _chain() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    ours = sys.modules.pop("sitecustomize", None)
    try:
        import sitecustomize  # type: ignore[import-not-found]  # noqa: F401  (the program's own)
    except ImportError as exc:
        if exc.name != "sitecustomize":
            traceback.print_exc()
        if ours is not None:
            sys.modules["sitecustomize"] = ours
    except Exception:
        traceback.print_exc()


def _init() -> None:
    try:
        import octopoda
    except ImportError:
        sys.stderr.write(
            f"octopoda-run: this Python ({sys.executable}) cannot import octopoda, so the"
            " program runs without it; run it with the Python that has octopoda-core\n"
        )
        return
    try:
        octopoda.init()
    except octopoda.OctopodaError as exc:
        sys.stderr.write(
            f"octopoda-run: octopoda.init() failed, the program runs without it: {exc}\n"
        )


_chain()
_init()
