"""What the dashboard's routes share: the server's state, the renderer, the CSRF tokens and
the last verification of each agent's chain made through the dashboard."""

from __future__ import annotations

import threading
import time

from fastapi import Request
from fastapi.responses import HTMLResponse

from .._audit.trail import VerifyReport
from .._server.state import ServerState, token_of
from .render import Renderer
from .security import CsrfTokens

__all__ = ["DashboardState", "dashboard_of", "may_agent", "may_space", "not_found"]


class DashboardState:
    def __init__(self, server: ServerState) -> None:
        self.server = server
        self.csrf = CsrfTokens()
        self.render = Renderer(self.csrf)
        self._verified: dict[str, tuple[VerifyReport, float]] = {}
        self._lock = threading.Lock()

    def verified(self, agent: str) -> tuple[VerifyReport, float] | None:
        """The last verification of ``agent``'s chain made here, and when."""
        with self._lock:
            return self._verified.get(agent)

    def record_verify(self, report: VerifyReport) -> None:
        with self._lock:
            self._verified[report.agent] = (report, time.time())


def dashboard_of(request: Request) -> DashboardState:
    state: DashboardState = request.app.state.dashboard
    return state


def may_agent(request: Request, agent: str) -> bool:
    token = token_of(request)
    return token is None or token.may_agent(agent)


def may_space(request: Request, space: str) -> bool:
    token = token_of(request)
    return token is None or token.may_space(space)


def not_found(request: Request, what: str, status: int = 404) -> HTMLResponse:
    """The error page (a missing agent, key, run, space, or one the token may not see)."""
    title = "Not found" if status == 404 else "Refused"
    return dashboard_of(request).render.page(
        request, "error.html", {"title": title, "what": what}, status
    )
