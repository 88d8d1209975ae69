"""Near-duplicate memories, pure (no I/O): which current values say the same thing under
different keys, for ``consolidate()`` and ``memory_health()``.

Two memories are near-duplicates when their values are equal (always), or

- by words (no embedder): the Jaccard overlap of their values' word sets (the lexical
  tokenizer's lower-cased, lightly stemmed words of every string in the value, stopwords
  left out; keys do not count, since duplicates live under different keys) is at least
  :func:`lexical_threshold` of the threshold asked for, or
- by meaning (an embedder): the cosine similarity of their values' vectors is at least the
  threshold.

Grouping is greedy and deterministic: memories are taken in the order given (newest first),
each one not yet grouped becomes a survivor and gathers every memory not yet grouped that is
similar enough to it (similarity to the survivor, not a chain of neighbours).

Cost. By words, candidate pairs come from a prefix filter (All-Pairs, Bayardo et al. 2007):
words are ordered rarest first and a memory is indexed by its first
``len - ceil(t * len) + 1`` words only, which every pair at Jaccard >= ``t`` shares; only
those candidates are compared, so thousands of memories of distinct content cost about
linear time (many memories made of the same few common words cost more). By meaning, each
survivor is compared with every memory: ``O(survivors * n * dimension)``, in numpy when it
is installed (:class:`~octopoda._search.vectors.VectorMatrix`).
"""

import hashlib
import json
import math
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from .embedders import pack, unit
from .lexical import STOPWORDS, _stem, string_leaves, tokenize
from .vectors import VectorMatrix

__all__ = [
    "DuplicateGroup",
    "duplicate_groups",
    "lexical_threshold",
    "value_digest",
    "value_text",
    "word_set",
]

_STEMMED_STOPWORDS = frozenset(_stem(w) for w in tokenize(" ".join(sorted(STOPWORDS))))


class DuplicateGroup(NamedTuple):
    """One group: the survivor's index, the duplicates' indexes (in the order given) and
    each duplicate's similarity to the survivor (1.0 for an equal value)."""

    keep: int
    duplicates: tuple[int, ...]
    scores: tuple[float, ...]


def lexical_threshold(threshold: float) -> float:
    """The Jaccard overlap that stands for a cosine ``threshold``: ``1 - 2.5 * (1 -
    threshold)``, at least 0 (0.9 -> 0.75, 0.8 -> 0.5, 1.0 -> 1.0). Word overlap is a
    much harsher measure than the cosine of sentence vectors: two phrasings of one fact
    rarely share 90% of their words."""
    return max(0.0, round(1.0 - 2.5 * (1.0 - threshold), 6))


def value_digest(value: Any) -> str:
    """A digest of a decoded value that equal values share (canonical JSON)."""
    if isinstance(value, (bytes, bytearray)):
        return "b:" + hashlib.sha256(bytes(value)).hexdigest()
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, default=repr)
    return "j:" + hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()


def value_text(value: Any) -> str:
    """The text of a value that is embedded: its strings, one per line (a value without
    strings: its JSON text; bytes: nothing)."""
    if isinstance(value, (bytes, bytearray)):
        return ""
    leaves = string_leaves(value)
    if leaves:
        return "\n".join(leaves)
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=repr)


def word_set(value: Any) -> frozenset[str]:
    """The words of a value's strings, lower-cased and lightly stemmed (the lexical
    tokenizer's words, stemmed once more), without stopwords (unless it has nothing else)."""
    # stemmed twice: "mornings" and "morning" meet at "morn" (one pass leaves "morning")
    words = {_stem(w) for text in string_leaves(value) for w in tokenize(text)}
    return frozenset(words - _STEMMED_STOPWORDS or words)


Neighbours = Callable[[int], dict[int, float]]


def _jaccard_neighbours(sets: Sequence[frozenset[str]], threshold: float) -> Neighbours:
    df = Counter(w for s in sets for w in s)
    ordered = [sorted(s, key=lambda w: (df[w], w)) for s in sets]
    index: defaultdict[str, list[int]] = defaultdict(list)
    for i, words in enumerate(ordered):
        size = len(words)
        prefix = size - math.ceil(threshold * size - 1e-9) + 1
        for w in words[: max(1, min(size, prefix))]:
            index[w].append(i)

    def neighbours(i: int) -> dict[int, float]:
        words = ordered[i]
        size = len(words)
        prefix = size - math.ceil(threshold * size - 1e-9) + 1
        mine = sets[i]
        found: dict[int, float] = {}
        for w in words[: max(1, min(size, prefix))]:
            for j in index[w]:
                if j != i and j not in found:
                    other = sets[j]
                    shared = len(mine & other)
                    found[j] = shared / (len(mine) + len(other) - shared)
        return {j: s for j, s in found.items() if s >= threshold}

    return neighbours


def _cosine_neighbours(vectors: Sequence[Sequence[float]], threshold: float) -> Neighbours:
    if not vectors:
        return lambda i: {}
    units = [unit(v) for v in vectors]
    matrix = VectorMatrix(
        [(str(i), 1, pack(v)) for i, v in enumerate(units)], dimension=len(units[0])
    )

    def neighbours(i: int) -> dict[int, float]:
        top = matrix.top(units[i], len(units))
        return {j: min(s, 1.0) for j, s in top if j != i and s >= threshold - 1e-6}

    return neighbours


def duplicate_groups(
    values: Sequence[Any],
    threshold: float,
    vectors: Sequence[Sequence[float]] | None = None,
) -> list[DuplicateGroup]:
    """The groups of near-duplicates among ``values`` (decoded, newest first: the first of
    a group survives), by the cosine of ``vectors`` (one per value) when given, else by
    the words of the values against :func:`lexical_threshold` of ``threshold``. Equal
    values are always a group."""
    if vectors is not None:
        near = _cosine_neighbours(vectors, threshold)
    else:
        near = _jaccard_neighbours([word_set(v) for v in values], lexical_threshold(threshold))
    equal: defaultdict[str, list[int]] = defaultdict(list)
    for i, value in enumerate(values):
        equal[value_digest(value)].append(i)
    digests = {i: d for d, members in equal.items() for i in members}
    grouped: set[int] = set()
    groups = []
    for i in range(len(values)):
        if i in grouped:
            continue
        scores = {j: round(s, 6) for j, s in near(i).items() if j not in grouped}
        scores.update({j: 1.0 for j in equal[digests[i]] if j != i and j not in grouped})
        if not scores:
            continue
        members = sorted(scores)
        grouped.update(members, (i,))
        groups.append(DuplicateGroup(i, tuple(members), tuple(scores[j] for j in members)))
    return groups
