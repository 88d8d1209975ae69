"""RFC 8785 (JSON Canonicalization Scheme) as implemented by ``octopoda._canonical``."""

from __future__ import annotations

import json
import random
import struct
from typing import Any

import pytest

from octopoda._canonical import _plain, _write, canonical_json, canonical_text, format_number

# -- numbers ------------------------------------------------------------------------------------

# RFC 8785 appendix B: IEEE 754 bit patterns and their canonical text.
RFC_NUMBER_VECTORS = [
    ("0000000000000000", "0"),
    ("8000000000000000", "0"),  # minus zero
    ("0000000000000001", "5e-324"),
    ("8000000000000001", "-5e-324"),
    ("7fefffffffffffff", "1.7976931348623157e+308"),
    ("ffefffffffffffff", "-1.7976931348623157e+308"),
    ("4340000000000000", "9007199254740992"),
    ("c340000000000000", "-9007199254740992"),
    ("4430000000000000", "295147905179352830000"),
    ("44b52d02c7e14af5", "9.999999999999997e+22"),
    ("44b52d02c7e14af6", "1e+23"),
    ("44b52d02c7e14af7", "1.0000000000000001e+23"),
    ("444b1ae4d6e2ef4e", "999999999999999700000"),
    ("444b1ae4d6e2ef4f", "999999999999999900000"),
    ("444b1ae4d6e2ef50", "1e+21"),
    ("3eb0c6f7a0b5ed8c", "9.999999999999997e-7"),
    ("3eb0c6f7a0b5ed8d", "0.000001"),
    ("41b3de4355555553", "333333333.3333332"),
    ("41b3de4355555554", "333333333.33333325"),
    ("41b3de4355555555", "333333333.3333333"),
    ("41b3de4355555556", "333333333.3333334"),
    ("41b3de4355555557", "333333333.33333343"),
    ("becbf647612f3696", "-0.0000033333333333333333"),
    ("43143ff3c1cb0959", "1424953923781206.2"),
]


@pytest.mark.parametrize(("bits", "expected"), RFC_NUMBER_VECTORS)
def test_rfc8785_number_vectors(bits: str, expected: str) -> None:
    (x,) = struct.unpack(">d", bytes.fromhex(bits))
    assert format_number(x) == expected
    assert canonical_text(x) == expected
    assert canonical_text([x]) == f"[{expected}]"


@pytest.mark.parametrize(
    ("number", "expected"),
    [
        (1.0, "1"),
        (-1.0, "-1"),
        (0.0, "0"),
        (-0.0, "0"),
        (1e21, "1e+21"),
        (1e20, "100000000000000000000"),
        (123456789012345680000.0, "123456789012345680000"),
        (1e-7, "1e-7"),
        (1.5e-7, "1.5e-7"),
        (0.000001, "0.000001"),
        (0.0000012, "0.0000012"),
        (0.1, "0.1"),
        (-0.5, "-0.5"),
        (100.0, "100"),
        (1.25e3, "1250"),
        (2.5e25, "2.5e+25"),
        (-1e-300, "-1e-300"),
        (333333333.3333333, "333333333.3333333"),
        (1e30, "1e+30"),
        (4.5, "4.5"),
        (0.002, "0.002"),
        (1e-27, "1e-27"),
        (0, "0"),
        (-7, "-7"),
        (2**53, "9007199254740992"),
        (-(2**53), "-9007199254740992"),
    ],
)
def test_numbers_are_formatted_as_ecmascript(number: float, expected: str) -> None:
    assert format_number(number) == expected
    assert canonical_text({"n": number}) == f'{{"n":{expected}}}'


@pytest.mark.parametrize(
    "value",
    [
        2**53 + 1,
        -(2**53) - 1,
        2**64,
        {"a": [2**60]},
        float("nan"),
        float("inf"),
        float("-inf"),
        [1, {"x": float("nan")}],
    ],
)
def test_unrepresentable_numbers_are_refused(value: Any) -> None:
    with pytest.raises(ValueError):
        canonical_text(value)


def test_booleans_are_not_numbers() -> None:
    with pytest.raises(TypeError):
        format_number(True)
    assert canonical_text([True, False, None]) == "[true,false,null]"


@pytest.mark.parametrize("value", [{1: "a"}, {"ok": {None: 1}}, object(), {1, 2}, b"bytes", [1j]])
def test_values_without_json_form_are_refused(value: Any) -> None:
    with pytest.raises(TypeError):
        canonical_text(value)


# -- strings ------------------------------------------------------------------------------------

STRING_CASES = [
    ("\x00", "\\u0000"),
    ("\x01", "\\u0001"),
    ("\x0b", "\\u000b"),
    ("\x1f", "\\u001f"),
    ("\x0f", "\\u000f"),
    ("\b", "\\b"),
    ("\t", "\\t"),
    ("\n", "\\n"),
    ("\f", "\\f"),
    ("\r", "\\r"),
    ('"', '\\"'),
    ("\\", "\\\\"),
    ("/", "/"),
    ("\x7f", "\x7f"),
    ("\x80", "\x80"),
    ("\u2028", "\u2028"),
    ("\u2029", "\u2029"),
    ("é", "é"),
    ("€", "€"),
    ("😀", "😀"),
    ("\U0010ffff", "\U0010ffff"),
    ("a'b", "a'b"),
]


@pytest.mark.parametrize(
    ("shape", "template"),
    [
        pytest.param(lambda s: s, "{}", id="alone"),
        pytest.param(lambda s: [s, 1.5], "[{},1.5]", id="in-list-with-float"),  # slow path
        pytest.param(lambda s: {s: 1}, "{{{}:1}}", id="as-key"),
        pytest.param(lambda s: {"k": s}, '{{"k":{}}}', id="as-value"),
    ],
)
@pytest.mark.parametrize(("text", "escaped"), STRING_CASES)
def test_strings_are_escaped_minimally(shape: Any, template: str, text: str, escaped: str) -> None:
    assert canonical_text(shape(text)) == template.format(f'"{escaped}"')


def test_canonical_json_is_utf8_bytes() -> None:
    assert canonical_json({"é": "😀"}) == '{"é":"😀"}'.encode()
    assert canonical_json("\u2028") == b'"\xe2\x80\xa8"'


# -- objects ------------------------------------------------------------------------------------


def test_keys_sort_by_utf16_code_units() -> None:
    # Code point order would put U+FFFF first; UTF-16 puts the surrogate pair D83D DE00 first.
    assert canonical_text({"\uffff": 1, "\U0001f600": 2}) == '{"😀":2,"\uffff":1}'
    assert canonical_text({"\ue000": 1, "\U00010000": 2}) == '{"\U00010000":2,"\ue000":1}'


def test_rfc8785_sorting_example() -> None:
    value = {
        "\u20ac": "Euro Sign",
        "\r": "Carriage Return",
        "\ufb33": "Hebrew Letter Dalet With Dagesh",
        "1": "One",
        "\U0001f600": "Emoji: Grinning Face",
        "\u0080": "Control",
        "\u00f6": "Latin Small Letter O With Diaeresis",
    }
    assert canonical_text(value) == (
        '{"\\r":"Carriage Return","1":"One","\u0080":"Control",'
        '"ö":"Latin Small Letter O With Diaeresis","€":"Euro Sign",'
        '"😀":"Emoji: Grinning Face","\ufb33":"Hebrew Letter Dalet With Dagesh"}'
    )


def test_rfc8785_main_example() -> None:
    value = json.loads(
        r"""{
          "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
          "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
          "literals": [null, true, false]
        }"""
    )
    assert canonical_text(value) == (
        '{"literals":[null,true,false],'
        '"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],'
        '"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}'
    )


def test_nesting_whitespace_and_tuples() -> None:
    value = {"b": [1, {"d": None, "c": (True, "x")}], "a": {}, "": []}
    assert canonical_text(value) == '{"":[],"a":{},"b":[1,{"c":[true,"x"],"d":null}]}'


def test_ascii_keys_sort_by_code_point() -> None:
    keys = ["b", "a", "B", "_", "a1", "a10", "a2", "~", " ", "0"]
    text = canonical_text(dict.fromkeys(keys, 0))
    assert list(json.loads(text)) == sorted(keys)


# -- fast path and slow path --------------------------------------------------------------------

_CHARS = 'aZ09 _-"\\/\x00\x01\x1f\x7f\n\t\bé€😀\u2028\uffff\U0010ffff'
_ASCII_KEY_CHARS = 'abcXYZ019 _-"\\\x00\x1f\n~'


def _text(rng: random.Random, chars: str) -> str:
    return "".join(rng.choice(chars) for _ in range(rng.randint(0, 8)))


def _int(rng: random.Random) -> int:
    return rng.choice([rng.randint(-10, 10), rng.randint(-(2**53), 2**53), 2**53, -(2**53), 0, -1])


def _plain_value(rng: random.Random, depth: int = 0) -> Any:
    """A value the fast path takes: str, bool, None, safe ints, lists, ASCII-keyed dicts."""
    kind = rng.choice(
        ["str", "int", "bool", "none"] + (["list", "dict", "dict"] if depth < 4 else [])
    )
    if kind == "str":
        return _text(rng, _CHARS)
    if kind == "int":
        return _int(rng)
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "none":
        return None
    if kind == "list":
        return [_plain_value(rng, depth + 1) for _ in range(rng.randint(0, 5))]
    return {_text(rng, _ASCII_KEY_CHARS): _plain_value(rng, depth + 1) for _ in range(5)}


def _any_value(rng: random.Random, depth: int = 0) -> Any:
    """Anything canonicalisable, including floats and non-ASCII keys (slow path only)."""
    kind = rng.choice(["plain", "float", "list", "dict"] if depth < 4 else ["plain", "float"])
    if kind == "plain":
        return _plain_value(rng, depth + 2)
    if kind == "float":
        return rng.choice(
            [
                rng.uniform(-1e6, 1e6),
                struct.unpack(">d", rng.getrandbits(64).to_bytes(8, "big"))[0],
                rng.choice([0.1, 1e21, 1e-7, 5e-324, -0.0, 1.0]),
            ]
        )
    if kind == "list":
        return [_any_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {_text(rng, _CHARS): _any_value(rng, depth + 1) for _ in range(4)}


def _slow(value: Any) -> str:
    parts: list[str] = []
    _write(value, parts.append)
    return "".join(parts)


def _finite(value: Any) -> bool:
    if isinstance(value, float):
        return value == value and abs(value) != float("inf")
    if isinstance(value, list):
        return all(_finite(v) for v in value)
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    return True


def _utf16_sorted(value: Any) -> Any:
    """An independent reference: dicts rebuilt in UTF-16 key order."""
    if isinstance(value, dict):
        keys = sorted(value, key=lambda k: k.encode("utf-16-be", "surrogatepass"))
        return {k: _utf16_sorted(value[k]) for k in keys}
    if isinstance(value, list):
        return [_utf16_sorted(v) for v in value]
    return value


def _keys_in_order(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [(k, _keys_in_order(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [_keys_in_order(v) for v in value]
    return []


def test_fast_and_slow_paths_agree_on_random_plain_values() -> None:
    rng = random.Random(8785)
    values = [_plain_value(rng) for _ in range(2000)]
    assert (
        sum(1 for v in values if isinstance(v, dict) and v) > 300
    )  # real objects, not just scalars
    for value in values:
        assert _plain(value)
        text = canonical_text(value)
        assert text == _slow(value)
        # independent reference for plain values: json with sorted keys, compact, no escaping
        assert text == json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        assert json.loads(text) == value


def test_random_values_with_floats_and_unicode_keys_canonicalise() -> None:
    rng = random.Random(2024)
    checked = 0
    for _ in range(2000):
        value = _any_value(rng)
        if not _finite(value):
            continue
        text = canonical_text(value)
        assert text == _slow(value)
        parsed = json.loads(text, parse_int=float)  # JSON numbers are doubles here
        assert parsed == value
        assert _keys_in_order(parsed) == _keys_in_order(_utf16_sorted(value))
        assert canonical_text(parsed) == text  # idempotent
        checked += 1
    assert checked > 1500
