"""Validation and encoding of keys, agent ids, tags, kinds and values.

A value is stored as one of two encodings:

* ``json``: the value's JSON text (UTF-8, compact separators, key order kept);
* ``bytes``: the raw bytes, for ``bytes``/``bytearray``/``memoryview`` values.

Its digest (``sha256`` in audit events) is SHA-256 over exactly the stored bytes.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Iterable
from json import encoder as _json_encoder
from json.encoder import encode_basestring
from typing import Any, Final

from ._errors import ConfigError, InvalidAgentId, InvalidInput, InvalidKey, InvalidValue

__all__ = [
    "DEFAULT_MAX_VALUE_BYTES",
    "MAX_AGENT_ID_LENGTH",
    "MAX_DEPTH",
    "MAX_KEY_LENGTH",
    "MAX_KIND_LENGTH",
    "MAX_REASON_LENGTH",
    "MAX_VALUE_BYTES_CEILING",
    "EncodedValue",
    "check_depth",
    "decode_value",
    "encode_value",
    "validate_agent_id",
    "validate_int",
    "validate_key",
    "validate_kind",
    "validate_kinds",
    "validate_limit",
    "validate_prefix",
    "validate_reason",
    "validate_seconds",
    "validate_tags",
    "validate_time",
]

MAX_KEY_LENGTH: Final = 1024
MAX_AGENT_ID_LENGTH: Final = 256
DEFAULT_MAX_VALUE_BYTES: Final = 256 * 1024 * 1024
"""The largest stored value by default (its JSON text in UTF-8, or its bytes): 256 MiB, far
above what agents send (graph states, images, files). ``AgentRuntime(max_value_bytes=)`` or
``OCTOPODA_MAX_VALUE_BYTES`` changes it, up to :data:`MAX_VALUE_BYTES_CEILING`."""
MAX_VALUE_BYTES_CEILING: Final = 512 * 1024 * 1024
"""The largest limit a store can hold safely: SQLite refuses a cell over 1,000,000,000 bytes
and PostgreSQL a field over 1 GiB, and a write holds the value about twice (the object and
its encoded text) while it is bound."""
VALUE_LIMIT_ENV: Final = "OCTOPODA_MAX_VALUE_BYTES"
MAX_TAGS: Final = 64
MAX_TAG_LENGTH: Final = 256
MAX_KIND_LENGTH: Final = 64
"""The longest kind of a memory (``remember(kind=)``: ``"fact"``, ``"preference"``, ...)."""
MAX_REASON_LENGTH: Final = 4096
MAX_INT: Final = 2**63 - 1
"""The largest seq, version, id, limit or offset (the stores' 64-bit integers)."""
MAX_SECONDS: Final = 1e12
"""The longest duration (and the latest Unix time) a ttl, an age or a time filter may give:
about 31,700 years."""
MAX_DEPTH: Final = 128
"""The deepest nesting of lists and dicts a value (or a decision's context, an imported or
audited bundle's entry) may have: every read of it stays far from Python's recursion limit,
however deep the caller's own stack is."""

_py_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode


def _refuse(obj: Any) -> Any:
    raise TypeError(f"{type(obj).__name__} is not JSON-serialisable")


def _strict_encoder() -> Callable[[Any], str]:
    """JSON text for a value, refusing what JSON cannot hold (another type, NaN or an
    infinity, a circular reference) with TypeError or ValueError: CPython's C encoder,
    built once. Only non-str dict keys (which JSON would turn into strings) pass, so
    ``encode_value`` checks those itself."""
    make = getattr(_json_encoder, "c_make_encoder", None)
    if make is None:  # pragma: no cover - pure-Python json
        return _py_encode
    encoder = make({}, _refuse, encode_basestring, None, ":", ",", False, False, False)

    def encode(value: Any) -> str:
        return "".join(encoder(value, 0))

    return encode


_dumps = _strict_encoder()


_SCALARS: Final = (str, int, float, bool, type(None))


class EncodedValue:
    """A value ready for the store: its encoding, stored form and digest."""

    __slots__ = ("data", "encoding", "sha256")

    def __init__(self, encoding: str, data: str | bytes, sha256: str) -> None:
        self.encoding = encoding
        self.data = data
        self.sha256 = sha256

    @property
    def size(self) -> int:
        return len(self.data) if isinstance(self.data, bytes) else len(self.data.encode())


def _check_text(text: str, what: str, limit: int, exc: type[InvalidInput]) -> None:
    if not text:
        raise exc(f"{what} must not be empty")
    if len(text) > limit:
        raise exc(f"{what} is {len(text)} characters long; the limit is {limit}")
    if "\x00" in text:
        raise exc(f"{what} {text[:40]!r} contains a NUL character; remove it")
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise exc(f"{what} {text[:40]!r} is not valid Unicode (lone surrogate)") from None


def validate_limit(limit: object, what: str = "limit") -> int | None:
    """A limit (or offset): an int >= 0, or None for no limit."""
    if limit is None:
        return None
    if isinstance(limit, bool) or not isinstance(limit, int) or not 0 <= limit <= MAX_INT:
        raise InvalidInput(f"{what} must be None or an int from 0 to 2**63 - 1, not {limit!r:.60}")
    return limit


def validate_int(value: object, what: str, minimum: int = 0) -> int:
    """A seq, version or id: an int from ``minimum`` to 2**63 - 1."""
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= MAX_INT:
        raise InvalidInput(f"{what} must be an int from {minimum} to 2**63 - 1, not {value!r:.60}")
    return value


def _number(value: object) -> float | None:
    """``value`` as a float when it is a finite number no larger than MAX_SECONDS."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if not -MAX_SECONDS <= value <= MAX_SECONDS:  # (inf, nan and huge ints fail here)
        return None
    return float(value)


def validate_seconds(value: object, what: str, *, allow_zero: bool = False) -> float:
    """A finite number of seconds (a timedelta is accepted), positive unless allowed 0,
    at most :data:`MAX_SECONDS`."""
    if not isinstance(value, (int, float)) and hasattr(value, "total_seconds"):
        value = value.total_seconds()
    seconds = _number(value)
    if seconds is None:
        raise InvalidInput(
            f"{what} must be a number of seconds (or a timedelta) up to {MAX_SECONDS:.0e},"
            f" not {value!r:.60}"
        )
    if seconds < 0 or (seconds == 0 and not allow_zero):
        raise InvalidInput(f"{what} must be positive, not {value!r}")
    return seconds


def validate_time(value: object, what: str) -> float | None:
    """A point in time for a filter: None, Unix seconds, or a timezone-aware datetime."""
    if value is None:
        return None
    if not isinstance(value, (int, float)) and hasattr(value, "timestamp"):
        if getattr(value, "tzinfo", None) is None:
            raise InvalidInput(f"{what} is a naive datetime; give it a timezone (or Unix seconds)")
        value = value.timestamp()
    seconds = _number(value)
    if seconds is None:
        raise InvalidInput(
            f"{what} must be None, Unix seconds (a finite number) or a datetime, not {value!r:.60}"
        )
    return seconds


def validate_reason(reason: object) -> str | None:
    """Return a reason recorded in an audit event (None, or a non-blank str), else raise
    :class:`InvalidInput`."""
    if reason is None:
        return None
    if not isinstance(reason, str):
        raise InvalidInput(f"reason must be a str or None, not {type(reason).__name__}")
    if not reason.strip():
        raise InvalidInput("reason must not be blank; leave it out (None) instead")
    _check_text(reason, "reason", MAX_REASON_LENGTH, InvalidInput)
    return reason


def validate_prefix(prefix: object) -> str:
    """Return a search prefix (may be empty) if usable, else raise :class:`InvalidInput`."""
    if not isinstance(prefix, str):
        raise InvalidInput(f"prefix must be a str, not {type(prefix).__name__}")
    if prefix:
        _check_text(prefix, "prefix", MAX_KEY_LENGTH, InvalidInput)
    return prefix


def validate_key(key: object, what: str = "key") -> str:
    """Return ``key`` if it is a usable memory key (or snapshot or space name: ``what``),
    else raise :class:`InvalidKey`."""
    if type(key) is not str:
        raise InvalidKey(f"a {what} must be a str, not {type(key).__name__}; convert it with str()")
    _check_text(key, what, MAX_KEY_LENGTH, InvalidKey)
    return key


def validate_agent_id(agent_id: object) -> str:
    """Return ``agent_id`` if usable, else raise :class:`InvalidAgentId`."""
    if not isinstance(agent_id, str):
        raise InvalidAgentId(f"an agent id must be a str, not {type(agent_id).__name__}")
    _check_text(agent_id, "agent id", MAX_AGENT_ID_LENGTH, InvalidAgentId)
    if agent_id.isspace():
        raise InvalidAgentId(f"agent id {agent_id!r} is only whitespace; name the agent")
    return agent_id


def validate_tags(tags: Iterable[str] | None) -> tuple[str, ...]:
    """Return tags as a tuple of distinct strings in the given order."""
    if tags is None:
        return ()
    if isinstance(tags, str):
        raise InvalidInput(f"tags must be a list of strings, not one string; use [{tags!r}]")
    if isinstance(tags, (bytes, dict)) or not isinstance(tags, Iterable):
        raise InvalidInput(f"tags must be a list of strings or None, not {tags!r:.60}")
    out: list[str] = []
    for tag in tags:
        if not isinstance(tag, str) or not tag:
            raise InvalidInput(f"every tag must be a non-empty str; got {tag!r}")
        _check_text(tag, "tag", MAX_TAG_LENGTH, InvalidInput)
        if tag not in out:
            out.append(tag)
    if len(out) > MAX_TAGS:
        raise InvalidInput(f"{len(out)} tags given; the limit is {MAX_TAGS}")
    return tuple(out)


def validate_kind(kind: object) -> str | None:
    """Return a memory's kind (None: no kind), else raise :class:`InvalidInput`: a str of 1
    to :data:`MAX_KIND_LENGTH` printable characters (no control characters, not blank)."""
    if kind is None:
        return None
    if type(kind) is not str:
        raise InvalidInput(
            f"kind must be a str such as 'fact' or 'preference', or None, not {type(kind).__name__}"
        )
    if len(kind) > MAX_KIND_LENGTH:
        raise InvalidInput(
            f"kind is {len(kind)} characters long; the limit is {MAX_KIND_LENGTH} (a kind is a"
            " short label such as 'fact' or 'preference')"
        )
    if not kind or not kind.isprintable() or kind.isspace():
        raise InvalidInput(
            f"kind {kind!r} is not usable: a kind is 1 to {MAX_KIND_LENGTH} printable"
            " characters (no control characters, not only spaces), such as 'fact'; None"
            " means no kind"
        )
    return kind


def validate_kinds(kinds: Iterable[str] | None) -> tuple[str, ...]:
    """Return the kinds a search keeps (``search(kinds=)``) as a tuple of distinct kinds in
    the given order; None or an empty list: no filter."""
    if kinds is None:
        return ()
    if isinstance(kinds, str):
        raise InvalidInput(f"kinds must be a list of kinds, not one string; use [{kinds!r:.80}]")
    if isinstance(kinds, (bytes, dict)) or not isinstance(kinds, Iterable):
        raise InvalidInput(f"kinds must be a list of kinds (str) or None, not {kinds!r:.60}")
    out: list[str] = []
    for kind in kinds:
        if kind is None:
            raise InvalidInput("kinds lists kinds (str); None is not one")
        checked = validate_kind(kind)
        if checked is not None and checked not in out:
            out.append(checked)
    if len(out) > MAX_TAGS:
        raise InvalidInput(f"{len(out)} kinds given; the limit is {MAX_TAGS}")
    return tuple(out)


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether lists/dicts in ``value`` nest more than ``limit`` levels (no recursion)."""
    stack = [(value, 1)]
    pop, push = stack.pop, stack.append
    while stack:
        v, depth = pop()
        if depth > limit:
            return True
        for x in v.values() if isinstance(v, dict) else v:
            if isinstance(x, (dict, list, tuple)):
                push((x, depth + 1))
    return False


def check_depth(value: Any, text: str, what: str, limit: int = MAX_DEPTH) -> None:
    """Raise :class:`InvalidValue` when ``value`` (whose JSON is ``text``) nests lists and
    dicts more than ``limit`` levels deep. Cheap: fewer brackets than the limit in the text
    cannot nest deeper, so only texts with more are walked."""
    if text.count("[") + text.count("{") <= limit:
        return
    if isinstance(value, (dict, list, tuple)) and _deeper_than(value, limit):
        raise InvalidValue(
            f"{what} is nested too deeply: its depth passes the limit of {limit} levels of"
            " lists and dicts inside each other; flatten it, or store the deep part as a"
            " JSON string"
        )


def _check_json(value: Any, path: str, active: set[int] | None = None) -> None:
    """Refuse what JSON would silently change: non-str keys, NaN, other types, cycles."""
    if isinstance(value, (dict, list, tuple)):
        active = set() if active is None else active
        if id(value) in active:
            raise InvalidValue(
                f"value contains a circular reference at {path}; JSON cannot represent it"
            )
        active.add(id(value))
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for k, v in items:
            if isinstance(value, dict) and not isinstance(k, str):
                raise InvalidValue(
                    f"dict key {k!r} at {path} is of type {type(k).__name__}; JSON object keys"
                    " must be str, so it would come back changed. Convert the keys to str."
                )
            where = f"{path}[{k!r}]"
            if not isinstance(v, _SCALARS):
                _check_json(v, where, active)
            elif isinstance(v, float) and not math.isfinite(v):
                raise InvalidValue(f"{v!r} at {where} has no JSON form; store it as a string")
        active.discard(id(value))
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidValue(f"{value!r} has no JSON form; store it as a string")
    elif not isinstance(value, _SCALARS):
        raise InvalidValue(
            f"a {type(value).__name__} at {path} is not JSON-serialisable; store JSON types "
            "(dict, list, str, int, float, bool, None) or bytes"
        )


def _str_keys(value: Any) -> bool:
    """Whether every dict key in ``value`` (already encoded: no cycles) is a plain str."""
    stack = [value]
    pop, push = stack.pop, stack.append
    while stack:
        v = pop()
        if isinstance(v, dict):
            for k, x in v.items():
                if type(k) is not str:
                    return False
                if type(x) not in _SCALAR_TYPES:
                    push(x)
        elif isinstance(v, (list, tuple)):
            for x in v:
                if type(x) not in _SCALAR_TYPES:
                    push(x)
    return True


_SCALAR_TYPES: Final = frozenset(_SCALARS)


def max_value_bytes(limit: Any = None) -> int:
    """The value size limit: ``limit`` when given, else ``OCTOPODA_MAX_VALUE_BYTES``, else
    :data:`DEFAULT_MAX_VALUE_BYTES`; :class:`InvalidInput` (:class:`ConfigError` for the
    environment variable) when it is not an int in 1..:data:`MAX_VALUE_BYTES_CEILING`."""
    source = "max_value_bytes"
    if limit is None:
        import os

        text = os.environ.get(VALUE_LIMIT_ENV)
        if not text:
            return DEFAULT_MAX_VALUE_BYTES
        source = VALUE_LIMIT_ENV
        try:
            limit = int(text.replace("_", ""))
        except ValueError:
            raise ConfigError(
                f"{VALUE_LIMIT_ENV} must be a number of bytes, not {text!r:.40}"
            ) from None
    if type(limit) is not int or not 1 <= limit <= MAX_VALUE_BYTES_CEILING:
        error = ConfigError if source == VALUE_LIMIT_ENV else InvalidInput
        raise error(
            f"{source} must be an int from 1 to {MAX_VALUE_BYTES_CEILING:,} (bytes), not"
            f" {limit!r:.40}"
        )
    return limit


def _too_large(what: str, size: int, limit: int) -> InvalidValue:
    return InvalidValue(
        f"{what} is {size:,} bytes; the limit is {limit:,} bytes (max_value_bytes). Raise it"
        f" with AgentRuntime(..., max_value_bytes=N) or {VALUE_LIMIT_ENV}=N (up to"
        f" {MAX_VALUE_BYTES_CEILING:,}), or store the blob elsewhere and remember a reference"
        " to it"
    )


def encode_value(
    value: Any, limit: int = DEFAULT_MAX_VALUE_BYTES, what: str = "value"
) -> EncodedValue:
    """Encode a value for storage; raise :class:`InvalidValue` if it cannot round-trip or
    is over ``limit`` bytes (``what``: how the message names it, e.g. "the value of 'k'")."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        size = value.nbytes if isinstance(value, memoryview) else len(value)
        if size > limit:  # before copying it
            raise _too_large(what, size, limit)
        data = value if type(value) is bytes else bytes(value)
        encoding = "bytes"
        raw = data
    else:
        try:
            try:
                text = _dumps(value)
                if not isinstance(value, _SCALARS) and not _str_keys(value):
                    raise TypeError("a dict key is not a str")
            except (TypeError, ValueError):
                _check_json(value, "value")  # raises, saying where and why
                text = _dumps(value)  # (str subclasses as keys: fine)
        except RecursionError:
            raise InvalidValue(
                f"value is nested too deeply: its depth passes the limit of {MAX_DEPTH}"
                " levels of lists and dicts inside each other; flatten it, or store the deep"
                " part as a JSON string"
            ) from None
        except InvalidValue:
            raise
        except (TypeError, ValueError) as exc:
            raise InvalidValue(f"value cannot be stored as JSON: {exc}") from None
        check_depth(value, text, "value")
        if len(text) <= _CHUNK:
            try:
                raw = text.encode("utf-8")
            except UnicodeEncodeError:
                raise InvalidValue(
                    "value contains a lone surrogate; it is not valid Unicode"
                ) from None
        else:  # large: measured and hashed in chunks, never copied whole
            return EncodedValue("json", text, _utf8_digest(text, limit, what)[1])
        data = text  # type: ignore[assignment]
        encoding = "json"
    if len(raw) > limit:
        raise _too_large(what, len(raw), limit)
    return EncodedValue(encoding, data, hashlib.sha256(raw).hexdigest())


_CHUNK: Final = 1 << 22  # characters of a large value's text encoded at a time


def _utf8_digest(text: str, limit: int, what: str) -> tuple[int, str]:
    """The UTF-8 size and SHA-256 of a large text, encoded a chunk at a time (the value is
    not held twice); :class:`InvalidValue` when over ``limit`` or not valid Unicode."""
    if text.isascii() and len(text) > limit:
        raise _too_large(what, len(text), limit)
    sha = hashlib.sha256()
    size = 0
    for start in range(0, len(text), _CHUNK):
        try:
            chunk = text[start : start + _CHUNK].encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidValue("value contains a lone surrogate; it is not valid Unicode") from None
        size += len(chunk)
        if size <= limit:
            sha.update(chunk)
    if size > limit:
        raise _too_large(what, size, limit)
    return size, sha.hexdigest()


def decode_value(encoding: str, data: Any) -> Any:
    """Return a fresh Python object for a stored value."""
    if encoding == "json":
        return json.loads(data)
    if encoding == "bytes":
        return bytes(data)
    return None
