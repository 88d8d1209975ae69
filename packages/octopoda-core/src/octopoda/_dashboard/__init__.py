"""The local dashboard ``octopoda serve`` shows at ``/``: server-rendered pages over the runtime.

Modules: :mod:`.security` (the CSRF token of every form, the response headers: CSP
``default-src 'self'``), :mod:`.render` (Jinja2 templates, filters, pagination),
:mod:`.fleet` (the fleet's rows from store-level reads), :mod:`.waterfall` (a run's events as
timed rows with the loops' events marked), :mod:`.pages` (the GET routes), :mod:`.actions`
(the POST routes: resume, verify, forget, resolve), :mod:`.live` (server-sent rows for the
``live-events`` tables). ``templates/`` and ``static/`` (with ``static/vendor/``: htmx,
uPlot and Pico CSS, pinned, served by the app itself) are package data. Needs the
``server`` extra (FastAPI, Jinja2).
"""

from .routes import install

__all__ = ["install"]
