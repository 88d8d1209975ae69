"""The local dashboard ``octopoda serve`` shows at ``/``: server-rendered pages over the runtime.

Modules: :mod:`.security` (the CSRF tokens of the forms, the response headers: CSP
``default-src 'self'``), :mod:`.render` (Jinja2 templates, filters, pagination),
:mod:`.state` (what the routes share), :mod:`.fleet` (the fleet's rows from store-level
reads), :mod:`.waterfall` (a run's events as timed rows with the loops' events marked),
:mod:`.pages` (fleet, runs, spaces, messages, goals) and :mod:`.agent_pages` (an agent,
its memory, history, as-of views, decisions, events): GET routes that never write;
:mod:`.actions` (the POST routes: resume, verify, forget, resolve), :mod:`.live`
(server-sent rows for the ``live-events`` tables), :mod:`.routes` (``install``).
``templates/`` and ``static/`` (with ``static/vendor/``: htmx, uPlot and Pico CSS, pinned,
served by the app itself) are package data. Needs the ``server`` extra (FastAPI, Jinja2).
"""

from .routes import install

__all__ = ["install"]
