"""``octopoda.init()``, ``octopoda.shutdown()`` and ``octopoda-run``: every installed
framework instrumented through its adapter's integration, with no code change.

* :mod:`.discovery`: the installed distributions and their ``octopoda.integrations``
  entry points, read from their metadata folders (cheaper than ``importlib.metadata``);
  version ranges.
* :mod:`.hooks`: post-import hooks (a ``sys.meta_path`` finder; no ``__import__`` override).
* :mod:`.session`: ``init`` and ``shutdown`` (one init session at a time);
  :mod:`.status`: :class:`IntegrationStatus`, what ``init`` found of each integration.
* :mod:`.run`: the ``octopoda-run`` command; ``launcher/sitecustomize.py`` applies ``init``
  in the program it runs, before the program's code, and chains to the program's own
  ``sitecustomize``.
"""

from .._lazy import lazy_names
from .session import Instrumentation, init, shutdown

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .status import IntegrationStatus

__all__ = ["Instrumentation", "IntegrationStatus", "init", "shutdown"]

__getattr__, __dir__ = lazy_names(__name__, {"IntegrationStatus": ".status"}, __all__)
