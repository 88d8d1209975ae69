"""BERT's uncased WordPiece tokenizer in plain Python (the vocabulary ships with the model).

The same steps as ``transformers.BertTokenizer`` / the ``tokenizers`` BERT pipeline with
``do_lower_case=True``: drop control characters and NUL/U+FFFD, map every whitespace
character to a space, put spaces around CJK ideographs, lower-case and strip accents (NFD,
then drop combining marks), split on whitespace and on every punctuation character, then cut
each word greedily into the longest vocabulary pieces (``##`` marks a continuation). A word
longer than 100 characters, or one that cannot be cut, becomes ``[UNK]``. The tests compare
the ids with the ``tokenizers`` package on a corpus of mixed text where it is installed.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from pathlib import Path

__all__ = ["WordPiece"]

_MAX_WORD_CHARS = 100


def _is_control(ch: str) -> bool:
    if ch in "\t\n\r":
        return False
    return unicodedata.category(ch) in ("Cc", "Cf")


def _is_whitespace(ch: str) -> bool:
    if ch in " \t\n\r":
        return True
    return unicodedata.category(ch) == "Zs"


def _is_punctuation(ch: str) -> bool:
    cp = ord(ch)
    # ASCII symbols count as punctuation for BERT even where Unicode says otherwise ($, ^, `).
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


def _is_cjk(cp: int) -> bool:
    return (
        0x4E00 <= cp <= 0x9FFF
        or 0x3400 <= cp <= 0x4DBF
        or 0x20000 <= cp <= 0x2A6DF
        or 0x2A700 <= cp <= 0x2B73F
        or 0x2B740 <= cp <= 0x2B81F
        or 0x2B820 <= cp <= 0x2CEAF
        or 0xF900 <= cp <= 0xFAFF
        or 0x2F800 <= cp <= 0x2FA1F
    )


def _basic_words(text: str) -> list[str]:
    """Clean, split CJK, lower-case, strip accents, split on whitespace and punctuation."""
    out: list[str] = []
    for ch in text:
        cp = ord(ch)
        if cp == 0 or cp == 0xFFFD or _is_control(ch):
            continue
        if _is_whitespace(ch):
            out.append(" ")
        elif _is_cjk(cp):
            out.extend((" ", ch, " "))
        else:
            out.append(ch)
    words: list[str] = []
    cleaned = "".join(out)
    # character by character, as the Rust tokenizer does (str.lower() turns a word-final
    # capital sigma into a final sigma, which BERT's vocabulary spells differently)
    lowered = "".join(c.lower() for c in cleaned) if "\u03a3" in cleaned else cleaned.lower()
    for token in lowered.split():
        token = "".join(
            c for c in unicodedata.normalize("NFD", token) if unicodedata.category(c) != "Mn"
        )
        start = 0
        for i, ch in enumerate(token):
            if _is_punctuation(ch):
                if start < i:
                    words.append(token[start:i])
                words.append(ch)
                start = i + 1
        if start < len(token):
            words.append(token[start:])
    return words


class WordPiece:
    """Text to token ids for a BERT uncased vocabulary (``vocab.txt``, one piece a line)."""

    def __init__(self, vocab_path: str | Path) -> None:
        pieces = Path(vocab_path).read_text(encoding="utf-8").split("\n")
        if pieces and pieces[-1] == "":
            pieces.pop()
        self.vocab: dict[str, int] = {piece: i for i, piece in enumerate(pieces)}
        self.cls_id = self.vocab["[CLS]"]
        self.sep_id = self.vocab["[SEP]"]
        self.unk_id = self.vocab["[UNK]"]
        self.pad_id = self.vocab["[PAD]"]
        self._words: dict[str, tuple[int, ...]] = {}

    def _pieces(self, word: str) -> tuple[int, ...]:
        cached = self._words.get(word)
        if cached is not None:
            return cached
        vocab = self.vocab
        if len(word) > _MAX_WORD_CHARS:
            ids: tuple[int, ...] = (self.unk_id,)
        else:
            found: list[int] = []
            start = 0
            while start < len(word):
                end = len(word)
                piece_id = None
                while start < end:
                    piece = word[start:end] if start == 0 else "##" + word[start:end]
                    piece_id = vocab.get(piece)
                    if piece_id is not None:
                        break
                    end -= 1
                if piece_id is None:
                    found = [self.unk_id]
                    break
                found.append(piece_id)
                start = end
            ids = tuple(found)
        if len(self._words) < 65536:
            self._words[word] = ids
        return ids

    def encode(self, text: str, max_tokens: int) -> list[int]:
        """``[CLS] pieces... [SEP]``, the pieces cut to fit ``max_tokens`` in all."""
        ids = [self.cls_id]
        room = max_tokens - 2
        for word in _basic_words(text):
            ids.extend(self._pieces(word))
            if len(ids) > room:
                del ids[room + 1 :]
                break
        ids.append(self.sep_id)
        return ids

    def encode_batch(self, texts: Iterable[str], max_tokens: int) -> list[list[int]]:
        return [self.encode(text, max_tokens) for text in texts]
