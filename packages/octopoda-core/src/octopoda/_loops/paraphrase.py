"""Paraphrase: whether two short texts say the same thing in other words, without a model.

Only short texts are compared this way: a preview held whole (at most 120 characters, what
an event keeps of a call's arguments or result, of a message or a thought), or a memory
value of up to 1,024 characters. Longer texts must match exactly (after masking): two
long documents with the same opening are not the same document. The detectors compare
texts only once a cheap check found a candidate (the same tool returned a result it had
returned for other arguments, a key rewritten with nothing new since, a message to a
recent partner), so the cost below is paid rarely.

* ``paraphrase_similarity``: in [0, 1]. A text with code or a formula in it (any of
  ``= + * < > | & ^ ~ ` { } [ ] \\``) is the same only as the same tokens in another case
  or spacing ("set x = a + b" is not "set x = a - b"). Otherwise 0.0 when one text names
  something the other does not (``names``: a number, an identifier such as
  ``test_parse_date``, ``src/app.py`` or ``getUserById``, a capitalised word inside a
  sentence such as a place or a product, a number word from "two" up); else the larger
  of the Jaccard overlap of their content words (``word_gist``: filler dropped, crude
  stems) and of the character trigrams of those words ("restaurant" and "restaurants",
  "intro" and "introduction" share most).
  "best vegan restaurants in Lisbon" and "top vegan restaurants in Lisbon" score 0.79;
  "... in Lisbon" and "... in Porto" score 0.
* ``Statement`` / ``statement``: a preview's shape (its JSON with each free text, a
  string with a space, replaced) and its free text; two statements are the same
  (``same_statement``) when their shapes are equal and their texts paraphrases. So
  ``{"ticket": 4211, "note": "not my area"}`` and ``{"ticket": 4212, ...}`` never are.
* ``restates``: a statement said again in other words, not extended: a text that keeps
  all the content words of an earlier one and adds at least two (a running summary, a
  chain of thought that grows) tells something new.
* ``thought_text``: the free text of a (possibly cut) preview of a thought.
"""

import json
import re
from typing import Any, NamedTuple

from .._regex import lazy_pattern
from .chain import Bounded
from .gists import _STOPWORDS, word_gist

__all__ = [
    "PREVIEW_CHARS",
    "Statement",
    "extends",
    "paraphrase_similarity",
    "paraphrases",
    "restates",
    "same_statement",
    "statement",
    "thought_text",
    "whole",
]

PREVIEW_CHARS = 120
"""The characters of a preview (``record_tool_call``, handoffs and messages keep this
much of the text); a preview this long that ends with "..." was cut."""
VALUE_CHARS = 1024
"""Memory values up to this long are compared as paraphrases."""

_WORD = lazy_pattern(r"\w+", re.UNICODE)
_STRIP = ".,;:!?()[]{}<>\"'`*\u201c\u201d\u2018\u2019"
_LIST_MARKER = lazy_pattern(r"\(?\d{1,2}[.)]|[-*•]")
_RANDOM_HEX = lazy_pattern(r"[0-9a-f]{8,}")
_CAMEL = lazy_pattern(r"[a-z][A-Z]")
_DOTTED = lazy_pattern(r"\w[./:@#]\w")
_NUMBER_WORDS = frozenset(
    {"two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven"}
    | {"twelve", "twenty", "hundred", "thousand", "million", "second", "third", "fourth"}
    | {"fifth", "sixth", "seventh", "eighth", "ninth", "tenth"}
)
_SENTENCE_END = tuple(".!?:;")
_CODE = lazy_pattern(r"[=+*<>|&^~`{}\[\]\\]")  # (a text with any of these: code or a formula)
_TOKEN = lazy_pattern(r"\w+|[^\w\s]", re.UNICODE)
_CACHE = 4096


class _Profile(NamedTuple):
    code: tuple[str, ...] | None  # a text that is code or a formula: its tokens
    folded: str  # the text case-folded: where another text's longer names are looked for
    chunks: frozenset[str]  # its words as written, case-folded: where the others are
    names: frozenset[str]
    words: frozenset[str]
    trigrams: frozenset[str]


_profiles: Bounded[_Profile] = Bounded(_CACHE)


def _profile(text: str) -> _Profile:
    found = _profiles.get(text)
    if found is None:
        folded = text.casefold()
        padded = [f" {w} " for w in set(_WORD.findall(folded)) if w not in _STOPWORDS]
        trigrams = {p[i : i + 3] for p in padded for i in range(len(p) - 2)}
        chunks = frozenset(c.strip(_STRIP) for c in folded.split())
        code = tuple(_TOKEN.findall(folded)) if _CODE.search(text) else None
        found = _profiles.put(
            text,
            _Profile(
                code, folded, chunks, _names(text), word_gist(text).words, frozenset(trigrams)
            ),
        )
    return found


def _names(text: str) -> frozenset[str]:
    """What a text names: numbers, identifiers, capitalised words inside a sentence,
    number words. List markers ("1)", "2.") and filler are not names."""
    names = set()
    initial = True  # the next word starts a sentence (or a list item)
    for chunk in text.split():
        starts, initial = initial, chunk.endswith(_SENTENCE_END)
        word = chunk.strip(_STRIP)
        if word.isalpha():  # (most words: a name when capitalised, camelCase or a number)
            if (
                (word[0].isupper() and not starts and len(word) > 1)
                or (len(word) > 1 and not word[1:].islower())
                or word.lower() in _NUMBER_WORDS
            ):
                folded = word.casefold()
                if folded not in _STOPWORDS:
                    names.add(folded)
            continue
        if _LIST_MARKER.fullmatch(chunk):
            initial = True
            continue
        folded = word.casefold()
        if any(c.isdigit() for c in word):
            if not (_RANDOM_HEX.fullmatch(folded) and not word.isdigit()):
                names.add(folded)
        elif (
            len(word) > 1
            and folded not in _STOPWORDS
            and (
                "_" in word
                or _DOTTED.search(word)
                or _CAMEL.search(word)
                or (word[0].isupper() and not starts)
            )
        ):
            names.add(folded)
    return frozenset(names)


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    union = len(a | b)
    return len(a & b) / union if union else 1.0


def paraphrase_similarity(a: str, b: str) -> float:
    """How much two short texts say the same in other words, in [0, 1] (see the module's
    docstring): 0.0 when one names something the other does not mention."""
    return 1.0 if a == b else _similarity(_profile(a), _profile(b), 0.0)


def paraphrases(a: str, b: str, threshold: float) -> bool:
    """Whether ``paraphrase_similarity(a, b) >= threshold``, rejecting early what cannot
    reach it (a Jaccard overlap is at most the smaller set's size over the larger's)."""
    return a == b or _similarity(_profile(a), _profile(b), threshold) >= threshold


def _similarity(pa: _Profile, pb: _Profile, threshold: float) -> float:
    if pa.code is not None or pb.code is not None:  # code: its tokens, or not the same
        return 1.0 if pa.code == pb.code else 0.0
    words = _within(pa.words, pb.words, threshold)
    trigrams = _within(pa.trigrams, pb.trigrams, threshold)
    if not (words or trigrams) or not (_mentions(pb, pa.names) and _mentions(pa, pb.names)):
        return 0.0
    return max(
        _jaccard(pa.words, pb.words) if words else 0.0,
        _jaccard(pa.trigrams, pb.trigrams) if trigrams else 0.0,
    )


def extends(text: str, earlier: str) -> bool:
    """Whether ``text`` says all that ``earlier`` said and more (its content words and at
    least two more): a running summary or a chain of thought that grows tells something
    new, where a rewording ("... needs escalating") does not."""
    old, new = _profile(earlier).words, _profile(text).words
    return old <= new and len(new) >= len(old) + 2


def restates(said: "Statement", earlier: "Statement", threshold: float) -> bool:
    """Whether ``said`` says what ``earlier`` said again, in other words: the same
    statement, and not one that extends it."""
    return same_statement(said, earlier, threshold) and not extends(said.text, earlier.text)


def _within(a: frozenset[str], b: frozenset[str], threshold: float) -> bool:
    small, large = sorted((len(a), len(b)))
    return small >= threshold * large


def _mentions(p: _Profile, names: frozenset[str]) -> bool:
    """Whether the text of ``p`` mentions each of ``names`` (a short one as a word)."""
    return all(n in p.chunks or (len(n) > 2 and n in p.folded) for n in names)


def whole(preview: str) -> bool:
    """Whether a preview holds its whole text (it was not cut at 120 characters)."""
    return len(preview) < PREVIEW_CHARS or not preview.endswith("...")


class Statement(NamedTuple):
    """A short JSON text as its shape (the JSON with each free text replaced by ``#``)
    and its free text (those strings, joined)."""

    shape: str
    text: str


_statements: Bounded[Statement | None] = Bounded(_CACHE)


def statement(preview: str, *, limit: int = PREVIEW_CHARS) -> Statement | None:
    """The statement of a JSON text (a preview, a message body, a memory value), or None
    when it was cut short, is longer than ``limit``, is not JSON or has no free text."""
    if len(preview) > limit or not whole(preview):
        return None
    if preview in _statements:
        return _statements[preview]
    try:
        value = json.loads(preview)
    except ValueError:
        value = None
    if isinstance(value, str):  # (most are: a query, a message, a note)
        found = Statement('"#"', value) if " " in value.strip() else None
        return _statements.put(preview, found)
    texts: list[str] = []
    shaped = _shape(value, texts)
    found = Statement(json.dumps(shaped, sort_keys=True), " \n ".join(texts)) if texts else None
    return _statements.put(preview, found)


def _shape(value: Any, texts: list[str]) -> Any:
    if isinstance(value, str):
        if " " in value.strip():
            texts.append(value)
            return "#"
        return value
    if isinstance(value, dict):
        return {k: _shape(v, texts) for k, v in value.items()}
    if isinstance(value, list):
        return [_shape(v, texts) for v in value]
    return value


def same_statement(a: Statement, b: Statement, threshold: float) -> bool:
    """Whether two statements say the same: equal shapes, paraphrased texts."""
    return a.shape == b.shape and paraphrases(a.text, b.text, threshold)


_STRING = lazy_pattern(r'"((?:[^"\\]|\\.)*)"?')


def thought_text(preview: str) -> str:
    """The free text of a preview of a thought (its JSON strings with a space, in order;
    a string cut short counts as far as it goes), or the preview itself if it has none."""
    texts = [
        t.replace("\\n", " ").replace('\\"', '"')
        for t in _STRING.findall(preview)
        if " " in t.strip()
    ]
    return " \n ".join(texts) if texts else preview
