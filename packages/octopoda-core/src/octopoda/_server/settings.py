"""What a server may start with: its bind address, its tokens and its limits.

Tokens come from ``--token``/``OCTOPODA_SERVER_TOKEN`` (one read-write token for
everything) and from a token file (``--token-file``/``OCTOPODA_SERVER_TOKEN_FILE``), a JSON
list of ``{"token": "...", "scope": "read" | "write", "agents": [...], "spaces": [...]}``
(``agents``/``spaces`` absent or null: every one). A server bound anywhere but loopback
refuses to start without a token.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from .._errors import ConfigError

__all__ = [
    "DEFAULT_PORT",
    "MAX_BODY_BYTES",
    "ServerSettings",
    "Token",
    "is_loopback",
    "load_token_file",
    "require_server_extra",
]

DEFAULT_PORT: Final = 7842
MAX_BODY_BYTES: Final = 32 * 1024 * 1024
"""Request bodies above 32 MiB are refused (413) before they are read (a value at the
runtime's own limit, 16 MiB, fits base64-encoded in a remote store's commit)."""
INSTALL: Final = "pip install 'octopoda-core[server]'"


def require_server_extra() -> None:
    """Raise ConfigError naming the extra unless FastAPI and uvicorn import."""
    try:
        import fastapi  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        raise ConfigError(
            f"octopoda serve needs the server extra ({exc.name}): {INSTALL}"
        ) from None


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class Token:
    """A bearer token: ``scope`` ``read`` (GET only) or ``write``; ``agents``/``spaces``
    None for all, else the only ones it may touch."""

    secret: str
    scope: str = "write"
    agents: frozenset[str] | None = None
    spaces: frozenset[str] | None = None

    @property
    def unlimited(self) -> bool:
        return self.agents is None and self.spaces is None

    def may_agent(self, agent: str) -> bool:
        return self.agents is None or agent in self.agents

    def may_space(self, space: str) -> bool:
        return self.spaces is None or space in self.spaces

    def matches(self, offered: str) -> bool:
        return hmac.compare_digest(self.secret.encode(), offered.encode())


def _names(entry: dict[str, Any], what: str, where: str) -> frozenset[str] | None:
    value = entry.get(what)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ConfigError(f"{where}: {what!r} must be a list of names or null")
    return frozenset(value)


def load_token_file(path: str | os.PathLike[str]) -> list[Token]:
    """The tokens of a token file (see the module docstring)."""
    where = os.fspath(path)
    try:
        entries = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read the token file {where}: {exc}") from None
    if not isinstance(entries, list):
        raise ConfigError(f"{where}: the token file must hold a JSON list of tokens")
    tokens = []
    for i, entry in enumerate(entries):
        at = f"{where} entry {i}"
        if not isinstance(entry, dict) or not isinstance(entry.get("token"), str):
            raise ConfigError(f"{at}: each entry needs a 'token' string")
        scope = entry.get("scope", "write")
        if scope not in ("read", "write"):
            raise ConfigError(f"{at}: scope must be 'read' or 'write', not {scope!r}")
        if len(entry["token"]) < 16:
            raise ConfigError(f"{at}: a token needs at least 16 characters")
        tokens.append(
            Token(entry["token"], scope, _names(entry, "agents", at), _names(entry, "spaces", at))
        )
    return tokens


@dataclass
class ServerSettings:
    """How a server runs. ``check()`` refuses what must not start."""

    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    tokens: list[Token] = field(default_factory=list)
    allowed_hosts: tuple[str, ...] = ()
    cors_origins: tuple[str, ...] = ()
    max_body_bytes: int = MAX_BODY_BYTES

    @classmethod
    def from_options(
        cls,
        *,
        host: str = "127.0.0.1",
        port: int = DEFAULT_PORT,
        token: str | None = None,
        token_file: str | None = None,
        allowed_hosts: tuple[str, ...] = (),
        cors_origins: tuple[str, ...] = (),
        max_body_bytes: int = MAX_BODY_BYTES,
    ) -> ServerSettings:
        tokens: list[Token] = []
        token = token or os.environ.get("OCTOPODA_SERVER_TOKEN") or None
        if token:
            if len(token) < 16:
                raise ConfigError("a server token needs at least 16 characters")
            tokens.append(Token(token))
        token_file = token_file or os.environ.get("OCTOPODA_SERVER_TOKEN_FILE") or None
        if token_file:
            tokens.extend(load_token_file(token_file))
        settings = cls(host, port, tokens, allowed_hosts, cors_origins, max_body_bytes)
        settings.check()
        return settings

    def check(self) -> None:
        if not is_loopback(self.host) and not self.tokens:
            raise ConfigError(
                f"refusing to serve on {self.host}, which is not a loopback address, without"
                " a token: set OCTOPODA_SERVER_TOKEN (or --token / --token-file), or bind"
                " 127.0.0.1"
            )
        if self.max_body_bytes < 1024:
            raise ConfigError("max_body_bytes must be at least 1024")

    def host_allowed(self, host_header: str) -> bool:
        """Whether a request's Host header names this server (DNS rebinding defence)."""
        name = host_header.strip().lower()
        if name.startswith("["):
            name = name[: name.find("]") + 1]
        elif name.count(":") == 1:
            name = name.split(":", 1)[0]
        if name in {h.lower() for h in self.allowed_hosts} or "*" in self.allowed_hosts:
            return True
        if is_loopback(self.host):
            return is_loopback(name)
        if self.host in ("0.0.0.0", "::"):
            return not self.allowed_hosts  # (any name unless a list was given; tokens guard it)
        return name == self.host.lower()
