"""MiniLM: all-MiniLM-L6-v2 sentence embeddings with ONNX Runtime, no torch, no download."""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._wordpiece import WordPiece

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["MiniLM", "model_dir"]


def model_dir() -> Path:
    """The folder of the packaged model (model.onnx, vocab.txt, config.json)."""
    return Path(str(resources.files("octopoda_embed") / "model"))


class MiniLM:
    """all-MiniLM-L6-v2 (384 dimensions, unit length), computed by ONNX Runtime on the CPU.

    The model ships inside this package; nothing is downloaded. Texts longer than
    ``max_tokens`` word pieces (256, as sentence-transformers cuts them) are truncated.
    Texts are embedded in batches of similar length, ``batch_size`` at a time. The
    ONNX Runtime session is created on the first call (about 0.3 s) and is safe to use from
    several threads. ``threads`` sets ONNX Runtime's intra-op threads (default: its own).

    >>> vectors = MiniLM().embed(["The user is vegetarian", "what does the user eat?"])
    >>> len(vectors[0])
    384
    """

    name = "all-MiniLM-L6-v2"
    dimension = 384

    def __init__(
        self, *, max_tokens: int = 256, batch_size: int = 32, threads: int | None = None
    ) -> None:
        if (
            isinstance(max_tokens, bool)
            or not isinstance(max_tokens, int)
            or not 2 <= max_tokens <= 512
        ):
            raise ValueError(f"max_tokens must be an int from 2 to 512, not {max_tokens!r}")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive int, not {batch_size!r}")
        if threads is not None and (
            isinstance(threads, bool) or not isinstance(threads, int) or threads < 1
        ):
            raise ValueError(f"threads must be a positive int or None, not {threads!r}")
        folder = model_dir()
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        if config["dimension"] != self.dimension:  # pragma: no cover - a broken package
            raise RuntimeError(f"the packaged model in {folder} is not {self.name}")
        self.max_tokens = max_tokens
        self.batch_size = batch_size
        self._threads = threads
        self._model_path = folder / "model.onnx"
        self._tokenizer = WordPiece(folder / "vocab.txt")
        self._session: Any = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"MiniLM(max_tokens={self.max_tokens}, batch_size={self.batch_size})"

    def _get_session(self) -> Any:
        session = self._session
        if session is None:
            with self._lock:
                if self._session is None:
                    import onnxruntime as ort

                    options = ort.SessionOptions()
                    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
                    options.log_severity_level = 3  # warnings and up only, to stderr
                    if self._threads is not None:
                        options.intra_op_num_threads = self._threads
                        options.inter_op_num_threads = 1
                    self._session = ort.InferenceSession(
                        str(self._model_path), options, providers=["CPUExecutionProvider"]
                    )
                session = self._session
        return session

    def encode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """The embeddings of ``texts`` as a float32 array of shape (len(texts), 384)."""
        import numpy as np

        if isinstance(texts, str):
            raise TypeError("encode takes a sequence of str, not one str; wrap it in a list")
        items = list(texts)
        for i, text in enumerate(items):
            if not isinstance(text, str):
                raise TypeError(f"texts[{i}] is {type(text).__name__}, not str")
        out = np.zeros((len(items), self.dimension), dtype=np.float32)
        if not items:
            return out
        ids = self._tokenizer.encode_batch(items, self.max_tokens)
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        session = self._get_session()
        pad = self._tokenizer.pad_id
        for start in range(0, len(order), self.batch_size):
            chunk = order[start : start + self.batch_size]
            width = max(len(ids[i]) for i in chunk)
            input_ids = np.full((len(chunk), width), pad, dtype=np.int64)
            mask = np.zeros((len(chunk), width), dtype=np.int64)
            for row, i in enumerate(chunk):
                n = len(ids[i])
                input_ids[row, :n] = ids[i]
                mask[row, :n] = 1
            vectors = session.run(["embeddings"], {"input_ids": input_ids, "attention_mask": mask})[
                0
            ]
            out[chunk] = vectors
        return out

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """The embeddings of ``texts``, one list of 384 floats (unit length) each."""
        return [row.tolist() for row in self.encode(texts)]

    def __call__(self, texts: Sequence[str]) -> list[list[float]]:
        return self.embed(texts)
