"""Jinja2 templates, the filters they use, pagination, and the HTML response with the
dashboard's headers and CSRF cookie."""

import json
import math
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Final, NamedTuple
from urllib.parse import urlencode

from fastapi import Request
from fastapi.responses import HTMLResponse
from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

from .security import CSRF_COOKIE, HEADERS, CsrfTokens

__all__ = ["PER_PAGE", "Pager", "Renderer", "pretty", "when"]

HERE: Final = Path(__file__).parent
PER_PAGE: Final = 50


def when(t: float | None) -> str:
    """An epoch time as ISO 8601 UTC to the second ("" for None)."""
    if t is None:
        return ""
    return datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def ago(t: float | None) -> str:
    """How long ago ``t`` was, shortly ("never" for None)."""
    if t is None:
        return "never"
    s = max(0.0, time.time() - t)
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if s >= size:
            return f"{int(s // size)} {unit} ago"
    return f"{int(s)} s ago"


def pretty(value: Any) -> str:
    """A value as indented JSON (its repr when it is not JSON)."""
    if isinstance(value, (bytes, bytearray)):
        return f"<{len(value)} bytes>"
    try:
        return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        return repr(value)


def short(value: Any, n: int = 80) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=repr)
    return text if len(text) <= n else text[: n - 1] + "\u2026"


def usd(x: float | None) -> str:
    return "" if not x else f"${x:,.4f}"


class Pager(NamedTuple):
    """One page of a listing: its number (from 1), size, the total and the query to keep."""

    page: int
    per_page: int
    total: int
    query: dict[str, str]

    @classmethod
    def of(cls, request: Request, total: int, per_page: int = PER_PAGE) -> "Pager":
        raw = request.query_params.get("page", "1")
        page = int(raw) if raw.isdigit() and int(raw) > 0 else 1
        pages = max(1, math.ceil(total / per_page))
        query = {k: v for k, v in request.query_params.items() if k != "page"}
        return cls(min(page, pages), per_page, total, query)

    @property
    def pages(self) -> int:
        return max(1, math.ceil(self.total / self.per_page))

    @property
    def start(self) -> int:
        return (self.page - 1) * self.per_page

    @property
    def stop(self) -> int:
        return self.start + self.per_page

    def href(self, page: int) -> str:
        return "?" + urlencode({**self.query, "page": str(page)})


class Renderer:
    """Renders a template into a response with the dashboard's headers; sets the CSRF
    cookie when the browser has no valid one."""

    def __init__(self, csrf: CsrfTokens) -> None:
        self.csrf = csrf
        self.env = Environment(
            loader=FileSystemLoader(HERE / "templates"),
            autoescape=select_autoescape(default=True, default_for_string=True),
            undefined=StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self.env.filters.update(when=when, ago=ago, pretty=pretty, short=short, usd=usd)
        self.env.filters["tojson_attr"] = lambda v: json.dumps(v, separators=(",", ":"))

    def fragment(self, name: str, **context: Any) -> str:
        return self.env.get_template(name).render(**context)

    def page(
        self, request: Request, name: str, context: dict[str, Any], status: int = 200
    ) -> HTMLResponse:
        cookie = request.cookies.get(CSRF_COOKIE)
        fresh = not self.csrf.valid(cookie)
        token = self.csrf.issue() if fresh or cookie is None else cookie
        html = self.env.get_template(name).render(
            request=request, csrf_token=token, path=request.url.path, **context
        )
        response = HTMLResponse(html, status_code=status, headers=dict(HEADERS))
        if fresh:
            response.set_cookie(CSRF_COOKIE, token, httponly=True, samesite="strict", path="/")
        return response

    def fragment_or_page(
        self, request: Request, name: str, title: str, agent: str, **context: Any
    ) -> HTMLResponse:
        """Template ``name`` alone for htmx (which asks with ``HX-Request``), else inside a
        whole page (a link opened in a new tab, a browser without JavaScript)."""
        html = self.fragment(name, agent=agent, **context)
        if request.headers.get("hx-request"):
            return HTMLResponse(html, headers=dict(HEADERS))
        return self.page(request, "totals.html", {"title": title, "agent": agent, "body": html})
