"""``octopoda serve``: the JSON API over the runtime, and the store API the remote store uses.

Modules: :mod:`.settings` (bind address, tokens, limits: what may start), :mod:`.guard` (the
ASGI layer in front of every route: Host header, body size, bearer tokens and scopes),
:mod:`.problems` (``OctopodaError`` -> HTTP status and problem body), :mod:`.models`
(pydantic request and response bodies), :mod:`.agents` and :mod:`.collab` (the runtime
verbs), :mod:`.store_api` (the store protocol for ``RemoteStore``), :mod:`.events`
(server-sent events), :mod:`.docs_page` (the offline API page) and :mod:`.app`
(``create_app``, ``serve``). The dashboard at ``/`` is :mod:`octopoda._dashboard`. Needs the
``server`` extra (FastAPI, uvicorn, Jinja2).
"""
