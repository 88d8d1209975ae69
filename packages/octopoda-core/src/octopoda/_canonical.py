"""Canonical JSON as in RFC 8785 (JSON Canonicalization Scheme).

Object members sorted by their UTF-16 code units, no insignificant whitespace, strings
escaped minimally (``"``, ``\\`` and control characters only), numbers in the ECMAScript
``Number.prototype.toString`` form, UTF-8 output. Integers outside +-2**53 and
non-finite floats cannot be represented exactly and are refused.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from json import encoder as _json_encoder
from json.encoder import encode_basestring
from typing import Any

__all__ = ["c_encoder", "canonical_json", "canonical_text", "format_number"]

_MAX_SAFE_INT = 2**53


def canonical_json(obj: Any) -> bytes:
    """Return the RFC 8785 canonical form of ``obj`` as UTF-8 bytes."""
    return canonical_text(obj).encode("utf-8")


def canonical_text(obj: Any) -> str:
    """Return the RFC 8785 canonical form of ``obj`` as text (ValueError for what has none,
    a value nested too deeply to encode included)."""
    try:
        if _c_sorted is not None and _plain(obj):
            # Only str, bool, None, safe ints and ASCII object keys: the C encoder with
            # sorted keys produces exactly the canonical form.
            return "".join(_c_sorted(obj, 0))
        parts: list[str] = []
        _write(obj, parts.append)
        return "".join(parts)
    except RecursionError:
        raise ValueError("the value is nested too deeply (or contains itself) to encode") from None


def c_encoder(*, sort_keys: bool) -> Callable[[Any, int], Iterator[str]] | None:
    """CPython's C JSON encoder with compact separators, no NaN, no circular-reference check
    (built once; ``json.dumps`` builds one per call). None where the C module is missing."""
    make = getattr(_json_encoder, "c_make_encoder", None)
    if make is None:  # pragma: no cover - pure-Python json
        return None
    encoder: Callable[[Any, int], Iterator[str]] = make(
        None, None, encode_basestring, None, ":", ",", sort_keys, False, False
    )
    return encoder


_c_sorted = c_encoder(sort_keys=True)


def _plain(obj: Any) -> bool:
    """True when ``obj`` holds no float, no large int and no non-ASCII object key. False
    after a million containers too (a circular value never ends): ``_write`` then decides."""
    stack = [obj]
    budget = 1_000_000
    while stack:
        budget -= 1
        if not budget:
            return False
        o = stack.pop()
        t = type(o)
        if t is dict:
            for k in o:
                if type(k) is not str or not k.isascii():
                    return False
            values = o.values()
        elif t is list:
            values = o
        else:
            values = (o,)
        for v in values:
            tv = type(v)
            if tv is str or tv is bool or v is None:
                continue
            if tv is int:
                if not -_MAX_SAFE_INT <= v <= _MAX_SAFE_INT:
                    return False
            elif tv is dict or tv is list:
                stack.append(v)
            else:
                return False
    return True


def format_number(x: int | float) -> str:
    """Format a number as ECMAScript's ``Number.prototype.toString`` does."""
    if type(x) is float:  # fast path: Python's repr already is the ECMAScript form
        r = repr(x)
        if "e" not in r and not r.endswith(".0") and "n" not in r:
            return r
    if isinstance(x, bool):
        raise TypeError("booleans are not numbers in canonical JSON")
    if isinstance(x, int):
        if -_MAX_SAFE_INT <= x <= _MAX_SAFE_INT:
            return str(x)
        raise ValueError(f"integer {x} is outside +-2**53 and cannot be canonicalised exactly")
    if not math.isfinite(x):
        raise ValueError(f"{x!r} is not a finite number and has no JSON form")
    if x == 0:
        return "0"
    r = repr(x)
    if "e" not in r and "E" not in r:
        return r[:-2] if r.endswith(".0") else r
    return _es6_exponent_form(x)


def _es6_exponent_form(x: float) -> str:
    sign = "-" if x < 0 else ""
    mantissa, _, exp_text = repr(abs(x)).partition("e")
    digits = mantissa.replace(".", "").lstrip("0") or "0"
    # position of the decimal point relative to the first significant digit
    point = int(exp_text) + (mantissa.index(".") if "." in mantissa else len(mantissa))
    digits = digits.rstrip("0") or "0"
    k, n = len(digits), point
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * (-n) + digits
    e = n - 1
    e_text = f"e+{e}" if e >= 0 else f"e-{-e}"
    if k == 1:
        return sign + digits + e_text
    return sign + digits[0] + "." + digits[1:] + e_text


def _utf16_key(s: str) -> bytes:
    return s.encode("utf-16-be", "surrogatepass")


def _write(obj: Any, out: Any) -> None:
    if isinstance(obj, str):
        out(encode_basestring(obj))
    elif obj is None:
        out("null")
    elif obj is True:
        out("true")
    elif obj is False:
        out("false")
    elif isinstance(obj, (int, float)):
        out(format_number(obj))
    elif isinstance(obj, dict):
        keys = list(obj)
        for k in keys:
            if not isinstance(k, str):
                raise TypeError(f"object keys must be strings, got {type(k).__name__}")
        if not all(k.isascii() for k in keys):
            keys.sort(key=_utf16_key)
        else:
            keys.sort()
        out("{")
        first = True
        for k in keys:
            if not first:
                out(",")
            first = False
            out(encode_basestring(k))
            out(":")
            _write(obj[k], out)
        out("}")
    elif isinstance(obj, (list, tuple)):
        out("[")
        for i, item in enumerate(obj):
            if i:
                out(",")
            _write(item, out)
        out("]")
    else:
        raise TypeError(f"{type(obj).__name__} has no canonical JSON form")
