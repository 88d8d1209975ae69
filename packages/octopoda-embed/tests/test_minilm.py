"""octopoda-embed: the packaged MiniLM against what sentence-transformers computes."""

from __future__ import annotations

import json
import math
import threading
from pathlib import Path

import pytest
from octopoda_embed import MiniLM, WordPiece, model_dir

REFERENCE = json.loads((Path(__file__).parent / "reference_vectors.json").read_text("utf-8"))


@pytest.fixture(scope="module")
def model() -> MiniLM:
    return MiniLM()


def _cos(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def test_vectors_match_sentence_transformers(model: MiniLM) -> None:
    texts = [row["text"] for row in REFERENCE["vectors"]]
    got = model.embed(texts)
    for row, vector in zip(REFERENCE["vectors"], got, strict=True):
        assert _cos(row["vector"], vector) > 0.9995, row["text"][:40]


def test_batching_does_not_change_vectors(model: MiniLM) -> None:
    texts = [row["text"] for row in REFERENCE["vectors"]]
    one_by_one = [model.embed([t])[0] for t in texts]
    together = MiniLM(batch_size=3).embed(texts)
    for a, b in zip(one_by_one, together, strict=True):
        assert _cos(a, b) > 0.99999


def test_vectors_have_unit_length_and_384_dimensions(model: MiniLM) -> None:
    vectors = model.embed(["a", "the user prefers tea", ""])
    assert [len(v) for v in vectors] == [384, 384, 384]
    for v in vectors:
        assert math.isclose(math.sqrt(sum(x * x for x in v)), 1.0, rel_tol=1e-4)
    assert (model.name, model.dimension) == ("all-MiniLM-L6-v2", 384)


def test_related_texts_are_closer_than_unrelated_ones(model: MiniLM) -> None:
    query, diet, unrelated = model.embed(
        [
            "what does the user eat?",
            "The user is vegetarian",
            "Deploy the staging cluster on Friday",
        ]
    )
    assert _cos(query, diet) > 0.5
    assert _cos(query, unrelated) < 0.1


def test_long_text_is_truncated_not_refused(model: MiniLM) -> None:
    long = " ".join(["word"] * 5000)
    short = " ".join(["word"] * 300)
    a, b = model.embed([long, short])
    assert _cos(a, b) > 0.999  # both cut at 256 word pieces


def test_empty_input_and_bad_input() -> None:
    m = MiniLM()
    assert m.embed([]) == []
    assert m.encode([]).shape == (0, 384)
    with pytest.raises(TypeError, match="sequence of str"):
        m.encode("one string")
    with pytest.raises(TypeError, match=r"texts\[1\] is int"):
        m.encode(["ok", 3])  # type: ignore[list-item]
    for bad in ({"max_tokens": 1}, {"max_tokens": 513}, {"batch_size": 0}, {"threads": 0}):
        with pytest.raises(ValueError):
            MiniLM(**bad)  # type: ignore[arg-type]


def test_threads_share_one_model(model: MiniLM) -> None:
    texts = [f"memory number {i} about project {i % 5}" for i in range(40)]
    expected = model.embed(texts)
    results: list[list[list[float]]] = []

    def work() -> None:
        results.append(model.embed(texts))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 4
    for r in results:
        for a, b in zip(r, expected, strict=True):
            assert _cos(a, b) > 0.99999


def test_package_has_no_local_paths() -> None:
    folder = model_dir()
    config = (folder / "config.json").read_text("utf-8")
    assert "/tmp" not in config and "/root" not in config and "/home" not in config
    assert json.loads(config)["license"] == "Apache-2.0"


# -- the tokenizer ---------------------------------------------------------------------------

CORPUS = [
    "Hello, World!",
    "The user's e-mail is alice@example.com; she's vegetarian.",
    "naïve café Ünïcödé über-Straße",
    "中文字符和English mixed",
    "emoji 🐙🎉 and ΟΔΟΣ ΣΟΦΟΣ",
    "tabs\tand\nnewlines\r\n\u200b\u00ad",
    "x" * 150,
    "$100 ^caret `tick` ~tilde",
    "supercalifragilisticexpialidocious",
    "\uff26\uff55\uff4c\uff4c-width \ufb01 ligature",  # full-width letters, a ligature
]


def test_wordpiece_known_ids() -> None:
    tok = WordPiece(model_dir() / "vocab.txt")
    assert tok.encode("Hello, World!", 256) == [101, 7592, 1010, 2088, 999, 102]
    assert tok.encode("", 256) == [101, 102]
    assert tok.encode("x" * 150, 256) == [101, tok.unk_id, 102]
    assert len(tok.encode(" ".join(["word"] * 400), 256)) == 256


def test_wordpiece_matches_the_rust_tokenizer() -> None:
    tokenizers = pytest.importorskip("tokenizers")
    vocab = model_dir() / "vocab.txt"
    from tokenizers import models, normalizers, pre_tokenizers

    reference = tokenizers.Tokenizer(models.WordPiece.from_file(str(vocab), unk_token="[UNK]"))
    reference.normalizer = normalizers.BertNormalizer(lowercase=True)
    reference.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    ours = WordPiece(vocab)
    for text in CORPUS:
        expected = [101, *reference.encode(text).ids, 102]
        assert ours.encode(text, 10**6) == expected, text
