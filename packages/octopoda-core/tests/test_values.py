"""Encoding and validation of values, keys, agent ids and tags (``octopoda._values``)."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from octopoda import InvalidAgentId, InvalidInput, InvalidKey, InvalidValue
from octopoda._values import (
    MAX_AGENT_ID_LENGTH,
    MAX_KEY_LENGTH,
    MAX_TAGS,
    decode_value,
    encode_value,
    validate_agent_id,
    validate_key,
    validate_tags,
)

# -- the stored form ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "encoding", "stored"),
    [
        pytest.param("Alice", "json", '"Alice"', id="str"),
        pytest.param({"b": 1, "a": [1, 2.5]}, "json", '{"b":1,"a":[1,2.5]}', id="compact-ordered"),
        pytest.param("é😀\u2028", "json", '"é😀\u2028"', id="non-ascii-literal"),
        pytest.param("a\x00\n", "json", '"a\\u0000\\n"', id="control-escaped"),
        pytest.param([None, True, False], "json", "[null,true,false]", id="literals"),
        pytest.param((1, (2,)), "json", "[1,[2]]", id="tuple"),
        pytest.param(2**80, "json", str(2**80), id="big-int"),
        pytest.param(1e21, "json", "1e+21", id="float-exponent"),
        pytest.param(b"\x00\xff", "bytes", b"\x00\xff", id="bytes"),
        pytest.param(bytearray(b"ab"), "bytes", b"ab", id="bytearray"),
        pytest.param(memoryview(b"mv"), "bytes", b"mv", id="memoryview"),
    ],
)
def test_encoded_form_and_digest(value: Any, encoding: str, stored: str | bytes) -> None:
    encoded = encode_value(value)
    raw = stored.encode("utf-8") if isinstance(stored, str) else stored
    assert (encoded.encoding, encoded.data) == (encoding, stored)
    assert type(encoded.data) is type(stored)
    assert encoded.sha256 == hashlib.sha256(raw).hexdigest()
    assert encoded.size == len(raw)


@pytest.mark.parametrize("value", [{"a": [1, {"b": None}]}, [1, "x"], "s", 1.5, None])
def test_decode_returns_equal_fresh_objects(value: Any) -> None:
    encoded = encode_value(value)
    first = decode_value(encoded.encoding, encoded.data)
    second = decode_value(encoded.encoding, encoded.data)
    assert first == second == value
    if isinstance(value, (dict, list)):
        assert first is not second


def test_decode_of_a_tombstone_is_none() -> None:
    assert decode_value("tombstone", None) is None


def test_bytes_decode_as_bytes() -> None:
    assert decode_value("bytes", bytearray(b"x")) == b"x"
    assert type(decode_value("bytes", memoryview(b"x"))) is bytes


# -- refusals name the problem and where it is ---------------------------------------------------


@pytest.mark.parametrize(
    ("value", "words"),
    [
        pytest.param({"a": [1, {"b": {2: "x"}}]}, ["2", "['a'][1]['b']", "str"], id="int-key-path"),
        pytest.param({"a": [0, float("nan")]}, ["nan", "['a'][1]"], id="nan-path"),
        pytest.param({"s": {1, 2}}, ["set", "['s']"], id="set-path"),
        pytest.param([b"x"], ["bytes", "[0]"], id="nested-bytes-path"),
        pytest.param(complex(1, 2), ["complex"], id="complex"),
        pytest.param("\ud83d", ["surrogate"], id="surrogate"),
    ],
)
def test_refusal_message_names_problem_and_place(value: Any, words: list[str]) -> None:
    with pytest.raises(InvalidValue) as info:
        encode_value(value)
    message = str(info.value)
    for word in words:
        assert word in message


@pytest.mark.parametrize("limit", [100, 9 * 2**20])  # small; large (hashed in chunks)
def test_size_limit_counts_stored_utf8_bytes(limit: int) -> None:
    at_limit = "x" * (limit - 2)  # plus two quotes
    encoded = encode_value(at_limit, limit)
    assert encoded.size == limit
    assert encoded.sha256 == hashlib.sha256(f'"{at_limit}"'.encode()).hexdigest()
    with pytest.raises(InvalidValue, match=f"{limit + 1:,} bytes; the limit is {limit:,}"):
        encode_value(at_limit + "x", limit)
    # half as many characters, but two bytes each in UTF-8
    with pytest.raises(InvalidValue, match=f"is {limit + 2:,} bytes"):
        encode_value("é" * (limit // 2), limit)
    wide = "é" * (limit // 2 - 1)  # exactly at the limit, quotes included
    assert encode_value(wide, limit).sha256 == hashlib.sha256(f'"{wide}"'.encode()).hexdigest()


def test_size_limit_for_bytes() -> None:
    assert encode_value(bytes(1000), 1000).size == 1000
    with pytest.raises(InvalidValue, match="limit"):
        encode_value(bytes(1001), 1000)
    with pytest.raises(InvalidValue, match="limit"):
        encode_value(memoryview(bytes(1001)), 1000)


# -- keys, agent ids, tags ----------------------------------------------------------------------


class _StrSubclass(str):
    pass


@pytest.mark.parametrize(
    ("validate", "error", "limit"),
    [
        pytest.param(validate_key, InvalidKey, MAX_KEY_LENGTH, id="key"),
        pytest.param(validate_agent_id, InvalidAgentId, MAX_AGENT_ID_LENGTH, id="agent-id"),
    ],
)
class TestTextValidation:
    def test_accepts_up_to_the_limit(self, validate: Any, error: Any, limit: int) -> None:
        for text in ("a", "x" * limit, "😀" * limit, "Key With Spaces", "a:b/c"):
            assert validate(text) == text

    @pytest.mark.parametrize(
        "bad", ["", "a\x00", "\x00", "\ud800", "ok\udfff", None, 1, b"k", ["k"]]
    )
    def test_refuses(self, validate: Any, error: Any, limit: int, bad: Any) -> None:
        with pytest.raises(error):
            validate(bad)

    def test_refuses_over_the_limit(self, validate: Any, error: Any, limit: int) -> None:
        with pytest.raises(error, match=str(limit)):
            validate("x" * (limit + 1))

    def test_errors_are_invalid_input(self, validate: Any, error: Any, limit: int) -> None:
        assert issubclass(error, InvalidInput)
        assert issubclass(error, ValueError)


def test_key_must_be_exactly_str() -> None:
    with pytest.raises(InvalidKey, match="str"):
        validate_key(_StrSubclass("k"))


@pytest.mark.parametrize(
    ("tags", "expected"),
    [
        (None, ()),
        ([], ()),
        (["a"], ("a",)),
        (["b", "a", "b", "a"], ("b", "a")),
        (("x", "y"), ("x", "y")),
        ((t for t in ["g1", "g2"]), ("g1", "g2")),
        (["É", "é"], ("É", "é")),
        ([str(i) for i in range(MAX_TAGS)], tuple(str(i) for i in range(MAX_TAGS))),
        ([*"ab", *"ab"] * MAX_TAGS, ("a", "b")),  # the limit counts distinct tags
    ],
)
def test_tags_are_distinct_and_ordered(tags: Any, expected: tuple[str, ...]) -> None:
    assert validate_tags(tags) == expected


@pytest.mark.parametrize(
    ("tags", "message"),
    [
        ("tag", "not one string"),
        ([1], "non-empty str"),
        ([""], "non-empty str"),
        ([None], "non-empty str"),
        ([str(i) for i in range(MAX_TAGS + 1)], str(MAX_TAGS)),
    ],
)
def test_bad_tags_are_refused(tags: Any, message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        validate_tags(tags)
