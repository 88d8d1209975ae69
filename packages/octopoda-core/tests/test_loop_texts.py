"""What loop detection counts as the same text: the volatile parts masked before results,
errors and memory values are compared (``octopoda._loops.volatile``), and what says the
same in other words (``octopoda._loops.paraphrase``). The behaviour these rules give whole
traces is in test_loop_traces.py; here each rule on its own, with the near misses that
must stay different."""

from __future__ import annotations

import json

import pytest

from octopoda._loops.gists import THINKS, tool_kind
from octopoda._loops.paraphrase import (
    extends,
    paraphrase_similarity,
    restates,
    same_statement,
    statement,
    thought_text,
)
from octopoda._loops.volatile import (
    _ARGUMENT_NOISE,
    _RESULT_METADATA,
    _VOLATILE,
    _VOLATILE_ARGS,
    normalize_error,
    value_gist,
    volatile_gist,
)

NOW = 1_750_000_000.0  # 2025-06-15T15:06:40Z


def text(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


# -- results ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("one", "two"),
    [
        ("1 failed, 57 passed in 3.42s", "1 failed, 57 passed in 3.38s"),
        ("Ran 12 tests in 0.003s\nOK", "Ran 12 tests in 0.011s\nOK"),
        ("build ok, took 812 ms", "build ok, took 790 ms"),
        ("Tests: 4 passed\nTime: 1.2 s", "Tests: 4 passed\nTime: 1.9 s"),
        ("  ✓ parses dates (12ms)", "  ✓ parses dates (9ms)"),
        (
            "502 Bad Gateway. Request ID: Kf-QmZwXyPlRt",
            "502 Bad Gateway. Request ID: Hb-TrEwQaSdFg",
        ),
    ],
)
def test_elapsed_times_and_request_ids_in_text_are_masked(one: str, two: str) -> None:
    assert volatile_gist(text(one)) is not None
    assert volatile_gist(text(one)) == volatile_gist(text(two))


@pytest.mark.parametrize(
    ("one", "two"),
    [
        ("1 failed, 57 passed in 3.42s", "2 failed, 56 passed in 3.42s"),
        ("median latency 12 ms over 20 runs", "median latency 19 ms over 20 runs"),
        ("backup took 812 ms: 3 files", "backup took 812 ms: 4 files"),
    ],
)
def test_what_changes_beside_a_timing_is_still_news(one: str, two: str) -> None:
    assert (volatile_gist(text(one)) or one) != (volatile_gist(text(two)) or two)


def test_metadata_keys_are_masked_by_exact_name_only() -> None:
    for name in _RESULT_METADATA.split("|"):
        assert _VOLATILE.pattern.fullmatch(f'"{name}":1'), name
    for near in ("starts_at", "latency_ms", "updated", "tooks", "attempted", "t", "time"):
        assert not _VOLATILE.pattern.fullmatch(f'"{near}":1'), near
    for name in _ARGUMENT_NOISE.split("|"):
        assert _VOLATILE_ARGS.pattern.fullmatch(f'"{name}":"x"'), name
    assert not _VOLATILE_ARGS.pattern.fullmatch('"user_id":"x"')


def test_echoes_of_free_text_arguments_are_masked() -> None:
    """The same hits under two wordings of a query the API echoes (as written, in another
    case, URL-encoded) are one result; other hits are not."""
    hits = [{"url": "https://octopoda.dev/pricing", "title": "Pricing"}]

    def search(query: str, shown: str, found: object = hits) -> str | None:
        return volatile_gist(text({"query": shown, "results": found}), echoes={"q": query})

    one = search("octopoda pricing plans", "octopoda pricing plans")
    assert one is not None
    assert one == search("pricing plans for octopoda", "Pricing Plans For Octopoda")
    assert one == search("octopoda plans", "octopoda+plans")
    assert one != search("octopoda plans", "octopoda plans", [{"url": "https://x.org"}])
    assert volatile_gist(text({"id": 7}), echoes={"path": "/docs/install"}) is None  # no space


def test_a_result_that_is_mostly_the_echo_is_left_whole() -> None:
    assert volatile_gist(text("Hello world"), echoes={"text": "Hello world"}) is None


def test_errors_mask_request_ids_and_echoes_but_stay_apart_otherwise() -> None:
    e1 = "HTTPError: 409 Conflict: invoice exists (request id: req_QxZmWpLkTrBn)"
    e2 = "HTTPError: 409 Conflict: invoice exists (request id: req_HbVcNeRtYuIo)"
    assert normalize_error(e1) == normalize_error(e2)
    assert normalize_error(e1) != normalize_error("HTTPError: 422 Unprocessable: no line items")
    sql = 'column "revenue" does not exist\nLINE 1: {}'
    q1, q2 = (
        "SELECT revenue FROM sales WHERE year = 2024",
        "select revenue from sales where year = 2024",
    )
    assert normalize_error(sql.format(q1), {"query": q1}) == normalize_error(
        sql.format(q2), {"query": q2}
    )
    assert normalize_error(sql.format(q1)) != normalize_error('column "region" does not exist')


# -- memory values ----------------------------------------------------------------------------


def test_a_value_without_volatile_parts_keeps_its_own_record() -> None:
    data = text({"state": "waiting", "job": "etl-42"})
    rec, parts = value_gist(data, NOW)
    assert parts == 0
    assert rec == value_gist(text({"job": "etl-42", "state": "waiting"}), NOW)[0]


@pytest.mark.parametrize(
    "stamp",
    [
        lambda now: {"updated_at": "2025-01-01T00:00:00Z"},
        lambda now: {"attempt": int(now) % 7},
        lambda now: {"since": now},
        lambda now: {"since_ms": int(now * 1000)},
        lambda now: {"note": f"checked at {now:.0f}"},
        lambda now: {"at": "2025-06-15T15:06:40Z" if now == NOW else "2025-06-15T15:07:30Z"},
    ],
)
def test_volatile_parts_of_a_value_are_masked(stamp: object) -> None:
    def value(now: float) -> str:
        return text({"state": "waiting", **stamp(now)})  # type: ignore[operator]

    one, two = value_gist(value(NOW), NOW), value_gist(value(NOW + 50), NOW + 50)
    assert one[1] > 0 and one[0] == two[0]


def test_a_time_that_is_not_now_is_data() -> None:
    tomorrow = text({"meeting": "standup", "at": "2025-06-16T09:00:00Z"})
    assert value_gist(tomorrow, NOW)[1] == 0
    assert value_gist(text({"reading": 1750000999.0}), NOW)[1] == 0  # 17 minutes ahead


# -- in other words ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("best vegan restaurants in Lisbon", "top vegan restaurants in Lisbon"),
        ("octopoda pricing plans", "pricing plans for octopoda"),
        (
            "Still waiting on the DBA to approve the migration.",
            "The migration is still waiting for DBA approval.",
        ),
        (
            "Plan: 1) search flights 2) compare prices 3) book",
            "Plan: search flights, compare prices, book",
        ),
    ],
)
def test_rewordings_are_paraphrases(a: str, b: str) -> None:
    assert paraphrase_similarity(a, b) >= 0.6
    assert paraphrase_similarity(a, b) == paraphrase_similarity(b, a)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("best vegan restaurants in Lisbon", "best vegan restaurants in Porto"),  # a place
        ("summarize chapter two", "summarize chapter three"),  # a number word
        ("refund order 4411", "refund order 4412"),  # a number
        ("FAILED test_parse_date", "FAILED test_parse_time"),  # an identifier
        ("open src/app.py", "open src/api.py"),  # a path
        ("call getUserById", "call getUserByName"),  # camelCase
        ("set x = a + b", "set x = a - b"),  # code: tokens
        ("translate this into French", "translate this into German"),
    ],
)
def test_texts_that_name_other_things_are_not(a: str, b: str) -> None:
    assert paraphrase_similarity(a, b) == 0.0


def test_code_is_the_same_only_as_its_tokens() -> None:
    assert paraphrase_similarity("x = a + b", "X  =  A + B") == 1.0
    assert paraphrase_similarity("x = a + b", "x = b + a") == 0.0


def test_statements_need_equal_non_text_parts() -> None:
    a = statement(text({"ticket": 4211, "note": "not my area, passing it on"}))
    b = statement(text({"ticket": 4211, "note": "Not my area; passing it on."}))
    c = statement(text({"ticket": 4212, "note": "not my area, passing it on"}))
    assert a is not None and b is not None and c is not None
    assert same_statement(a, b, 0.6) and not same_statement(a, c, 0.6)
    assert statement(text({"ticket": 4211})) is None  # no free text
    assert statement("x" * 117 + "...") is None  # a preview cut short
    assert statement(text("a " * 300), limit=1024) is not None  # a memory value


def test_a_text_that_grows_is_not_a_restatement() -> None:
    base = "Summary: the user asked about pricing plans, seats and the hosted dashboard"
    grown = base + ", then about refunds and invoice tax"
    assert paraphrase_similarity(base, grown) >= 0.6
    assert extends(grown, base) and not extends(base, grown)
    said, earlier = statement(text(grown)), statement(text(base))
    assert said is not None and earlier is not None
    assert not restates(said, earlier, 0.6)
    assert restates(earlier, said, 0.6)  # saying less is no news
    assert not extends(base + ", refunds", base)  # one more word: a rewording


def test_thoughts_are_read_from_cut_previews() -> None:
    preview = '{"thought":"I should check the schema before the migration","thoughtNumber":3}'
    assert thought_text(preview) == "I should check the schema before the migration"
    assert thought_text('{"thought":"I should check the schema bef...') == (
        "I should check the schema bef..."
    )


@pytest.mark.parametrize(
    ("name", "thinks"),
    [
        ("think", True),
        ("Think", True),
        ("think_tool", True),
        ("reflect", True),
        ("self_critique", True),
        ("sequentialthinking", True),
        ("sequential_thinking", True),
        ("reflect_changes", False),
        ("critique_essay", False),
        ("get_thoughts", False),
        ("thinkific_api", False),
    ],
)
def test_which_tools_think(name: str, thinks: bool) -> None:
    assert (tool_kind(name) == THINKS) is thinks
