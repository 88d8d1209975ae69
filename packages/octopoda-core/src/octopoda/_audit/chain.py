"""The audit chain format: how an event is hashed and linked to its predecessor.

The agent's events pipeline (``octopoda._runtime.pipeline``) ends with :class:`AuditChainer`
(``chain_event``): it fixes the event's canonical form and its hash, inside the transaction
that stores the event, after which the event must not change.

Chain format (enough to write a verifier in another language)::

    payload_text = canonical_json(payload)                      # RFC 8785
    body = '{"agent":' + json_string(agent)
         + ',"kind":' + json_string(kind)
         + ',"payload":' + payload_text
         + ',"prev_hash":"' + prev_hash + '"'
         + ',"seq":' + decimal(seq)
         + ',"time":' + es6_number(time) + '}'
    hash = lowercase_hex(SHA-256(bytes.fromhex(prev_hash) || utf8(body)))

``body`` is exactly ``canonical_json({"agent", "kind", "payload", "prev_hash", "seq",
"time"})``: the event without its hash. ``prev_hash`` of seq 1 is 64 zeros (32 zero bytes);
``seq`` starts at 1 and has no gaps; ``time`` is Unix epoch seconds.

Payloads by kind are listed in ``docs/audit.md``. The store fills two of their fields:
``writes``, one entry per new memory version (``key``, ``version``, ``encoding``,
``sha256``, ...), and ``erased``, one entry per key whose values an ``erase`` event removed
(``{"key": "user_email", "versions": [1, 2]}``); an ``erase`` event also has ``reason`` when
one was given.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from json.encoder import encode_basestring

from .._canonical import canonical_text, format_number
from .._records import Event

__all__ = [
    "GENESIS_HASH",
    "AuditChainer",
    "chain_event",
    "chain_hasher",
    "event_body",
    "event_hash",
]

GENESIS_HASH = "0" * 64


def _body(agent_json: str, kind_json: str, payload_text: str, prev: str, seq: int, t: float) -> str:
    return "".join(
        (
            '{"agent":',
            agent_json,
            ',"kind":',
            kind_json,
            ',"payload":',
            payload_text,
            ',"prev_hash":"',
            prev,
            '","seq":',
            str(seq),
            ',"time":',
            format_number(t),
            "}",
        )
    )


def event_body(
    agent: str, kind: str, payload_text: str, prev_hash: str, seq: int, time: float
) -> str:
    """The canonical JSON of an event without its hash (see the module docstring)."""
    return _body(
        encode_basestring(agent), encode_basestring(kind), payload_text, prev_hash, seq, time
    )


def event_hash(
    agent: str, kind: str, payload_text: str, prev_hash: str, seq: int, time: float
) -> str:
    """SHA-256 of ``prev_hash`` bytes followed by the event's canonical body, as hex."""
    body = event_body(agent, kind, payload_text, prev_hash, seq, time)
    return hashlib.sha256(bytes.fromhex(prev_hash) + body.encode("utf-8")).hexdigest()


def chain_hasher(agent: str) -> Callable[[str, str, str, int, float], str]:
    """``event_hash`` for one agent, with its encoded name and kinds cached (for verifying
    long chains)."""
    agent_json = encode_basestring(agent)
    kinds: dict[str, str] = {}
    sha256 = hashlib.sha256
    fromhex = bytes.fromhex

    def hash_event(kind: str, payload_text: str, prev: str, seq: int, time: float) -> str:
        kind_json = kinds.get(kind)
        if kind_json is None:
            kind_json = kinds[kind] = encode_basestring(kind)
        body = _body(agent_json, kind_json, payload_text, prev, seq, time)
        return sha256(fromhex(prev) + body.encode("utf-8")).hexdigest()

    return hash_event


class AuditChainer:
    """The last processor: canonicalises the payload and links the event into the chain."""

    def __call__(self, event: Event) -> Event:
        return chain_event(event)


_names: dict[str, str] = {}  # agent ids and kinds as JSON strings (few distinct values)


def _json_name(text: str) -> str:
    encoded = _names.get(text)
    if encoded is None:
        encoded = encode_basestring(text)
        if len(_names) < 4096:
            _names[text] = encoded
    return encoded


def chain_event(event: Event) -> Event:
    """Fix ``event``'s canonical payload text and its hash (what ``AuditChainer`` does)."""
    text = event.payload_text = canonical_text(event.payload)
    prev = event.prev_hash
    t = event.time
    number = repr(t) if type(t) is float else ""
    if "e" in number or "n" in number or number.endswith(".0") or not number:
        number = format_number(t)
    body = "".join(
        (
            '{"agent":',
            _json_name(event.agent),
            ',"kind":',
            _json_name(event.kind),
            ',"payload":',
            text,
            ',"prev_hash":"',
            prev,
            '","seq":',
            str(event.seq),
            ',"time":',
            number,
            "}",
        )
    )
    event.hash = hashlib.sha256(bytes.fromhex(prev) + body.encode("utf-8")).hexdigest()
    return event
