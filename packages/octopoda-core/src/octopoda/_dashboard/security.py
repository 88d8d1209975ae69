"""What keeps the dashboard's forms and pages safe in a browser: the CSRF token and the
response headers.

Every mutating action is a POST carrying the CSRF token twice (double submit): in the
``octopoda_csrf`` cookie and in the form's ``csrf_token`` field. The token is a nonce
signed with a secret made when the process starts, so a token from another process (or a
forged cookie) is refused: a POST without a matching, validly signed pair is 403.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from typing import Final

__all__ = ["CSRF_COOKIE", "CSRF_FIELD", "HEADERS", "CsrfTokens"]

CSRF_COOKIE: Final = "octopoda_csrf"
CSRF_FIELD: Final = "csrf_token"
CSP: Final = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:;"
    " connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self';"
    " frame-ancestors 'none'"
)
HEADERS: Final = {
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    # same-origin: no Referer leaves the server, and a form posted from its own page
    # carries its real Origin (with no-referrer, Chromium sends "Origin: null")
    "referrer-policy": "same-origin",
    "x-frame-options": "DENY",
    "cache-control": "no-store",
}
"""The headers of every dashboard page and fragment (no inline script or style runs)."""


class CsrfTokens:
    """Issues and checks CSRF tokens signed with a per-process secret."""

    def __init__(self, secret: bytes | None = None) -> None:
        self._secret = secret or secrets.token_bytes(32)

    def _sign(self, nonce: str) -> str:
        return hmac.new(self._secret, nonce.encode("ascii"), hashlib.sha256).hexdigest()

    def issue(self) -> str:
        nonce = secrets.token_urlsafe(18)
        return f"{nonce}.{self._sign(nonce)}"

    def valid(self, token: str | None) -> bool:
        """Whether ``token`` is one this process issued."""
        if not token or token.count(".") != 1 or not token.isascii():
            return False
        nonce, signature = token.split(".")
        return hmac.compare_digest(signature, self._sign(nonce))

    def accepts(self, cookie: str | None, field: str | None) -> bool:
        """Whether a POST's cookie and form field carry the same valid token."""
        if cookie is None or field is None or not self.valid(cookie):
            return False
        return hmac.compare_digest(cookie.encode("ascii"), field.encode("ascii", "replace"))
