"""``install``: the dashboard's routes and static files on the server's FastAPI app."""

from __future__ import annotations

from typing import Any

from starlette.staticfiles import StaticFiles

from .._server.state import ServerState
from . import actions, agent_pages, live, pages
from .render import HERE
from .state import DashboardState

__all__ = ["install"]


class _Static(StaticFiles):
    """The package's static files with the dashboard's headers (cached for an hour)."""

    async def get_response(self, path: str, scope: Any) -> Any:
        response = await super().get_response(path, scope)
        response.headers["x-content-type-options"] = "nosniff"
        response.headers["cache-control"] = "public, max-age=3600"
        return response


def install(app: Any, server: ServerState) -> None:
    """Add the dashboard to ``app`` (pages at ``/``, assets under ``/static``)."""
    app.state.dashboard = DashboardState(server)
    app.include_router(pages.router)
    app.include_router(agent_pages.router)
    app.include_router(actions.router)
    app.include_router(live.router)
    app.mount("/static", _Static(directory=HERE / "static"), name="static")
