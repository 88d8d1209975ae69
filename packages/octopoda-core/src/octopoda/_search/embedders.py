"""Embedders: what turns texts into vectors for search by meaning.

An :class:`Embedder` has a ``name`` (the model: stored with the vectors, so a changed model
is detected), a ``dimension`` and ``embed(texts) -> vectors``. Any object with those three
works (``octopoda_embed.MiniLM`` is one); a plain callable ``texts -> vectors`` is wrapped by
:func:`as_embedder` (its name from the function, its dimension from its first answer).

Nothing here downloads anything: ``OCTOPODA_EMBEDDER=octopoda-embed`` (or ``minilm``) loads
the model shipped inside the ``octopoda-embed`` distribution (``pip install
'octopoda-core[ai]'``); ``OCTOPODA_EMBEDDER=package.module:factory`` calls ``factory()``.
Unset (the default), there is no embedder and search is lexical.
"""

from __future__ import annotations

import array
import math
import os
from collections.abc import Callable, Sequence
from typing import Any, Final, Protocol, runtime_checkable

from .._errors import ConfigError, InvalidInput

__all__ = [
    "EMBEDDER_ENV",
    "Embedder",
    "as_embedder",
    "checked_vectors",
    "embedder_from_env",
    "pack",
    "resolve_embedder",
    "unit",
    "unpack",
]

EMBEDDER_ENV: Final = "OCTOPODA_EMBEDDER"
_BUILTIN: Final = ("octopoda-embed", "octopoda_embed", "minilm")
_AI_EXTRA: Final = "pip install 'octopoda-core[ai]'"


@runtime_checkable
class Embedder(Protocol):
    """Texts to vectors: ``embed(["..."])`` returns one vector of ``dimension`` floats per
    text, in order. ``name`` identifies the model (vectors of different models are never
    compared)."""

    name: str
    dimension: int

    def embed(self, texts: Sequence[str]) -> Sequence[Sequence[float]]: ...


class _CallableEmbedder:
    """A plain ``texts -> vectors`` callable as an :class:`Embedder`."""

    def __init__(self, fn: Callable[[Sequence[str]], Any], name: str, dimension: int) -> None:
        self._fn = fn
        self.name = name
        self.dimension = dimension

    def embed(self, texts: Sequence[str]) -> Sequence[Sequence[float]]:
        out: Sequence[Sequence[float]] = self._fn(list(texts))
        if self.dimension == 0 and len(out):
            self.dimension = len(out[0])
        return out

    def __repr__(self) -> str:
        return f"<embedder {self.name!r} ({self.dimension or '?'} dimensions)>"


def as_embedder(obj: Any, *, name: str | None = None, dimension: int | None = None) -> Embedder:
    """``obj`` as an :class:`Embedder`: an embedder itself, or a callable from a list of
    texts to a list of vectors (named after the callable unless ``name`` is given; its
    dimension is learned from its first answer unless ``dimension`` is given)."""
    if isinstance(obj, Embedder) and name is None and dimension is None:
        return obj
    if isinstance(obj, Embedder):
        return _CallableEmbedder(obj.embed, name or obj.name, dimension or obj.dimension)
    if not callable(obj):
        raise InvalidInput(
            f"embedder must have name, dimension and embed(texts), or be a callable from a"
            f" list of texts to a list of vectors; got {obj!r:.80}"
        )
    label = name or getattr(obj, "__qualname__", None) or type(obj).__qualname__
    return _CallableEmbedder(obj, str(label), int(dimension or 0))


def _builtin() -> Embedder:
    try:
        from octopoda_embed import MiniLM  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        raise ConfigError(
            f"{EMBEDDER_ENV} names octopoda-embed, which is not installed: {_AI_EXTRA}"
        ) from None
    embedder: Embedder = MiniLM()
    return embedder


def _factory(spec: str) -> Embedder:
    import importlib

    module_name, _, attr = spec.partition(":")
    try:
        factory = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(
            f"{EMBEDDER_ENV}={spec!r} cannot be loaded ({exc}); set it to octopoda-embed or"
            " to package.module:factory (a callable returning an embedder)"
        ) from None
    return as_embedder(factory())


def resolve_embedder(spec: Any) -> Embedder | None:
    """An embedder from what ``AgentRuntime(embedder=...)`` accepts: None or ``""`` (none),
    ``"octopoda-embed"``/``"minilm"``, ``"package.module:factory"``, an embedder, or a
    callable."""
    if spec is None or spec == "" or spec is False:
        return None
    if isinstance(spec, str):
        if spec.strip().lower() in _BUILTIN:
            return _builtin()
        if ":" in spec:
            return _factory(spec.strip())
        raise ConfigError(
            f"embedder {spec!r} is not known: use 'octopoda-embed' (the [ai] extra's model,"
            " " + _AI_EXTRA + "), 'package.module:factory', or pass an embedder object"
        )
    return as_embedder(spec)


def embedder_from_env() -> Embedder | None:
    """The embedder ``OCTOPODA_EMBEDDER`` names, or None when it is unset or empty."""
    return resolve_embedder(os.environ.get(EMBEDDER_ENV, "").strip() or None)


def unit(vector: Sequence[float]) -> list[float]:
    """``vector`` scaled to length 1 (all zeros stays all zeros)."""
    values = [float(x) for x in vector]
    norm = math.sqrt(sum(x * x for x in values))
    return [x / norm for x in values] if norm else values


def checked_vectors(vectors: Any, count: int, dimension: int | None, who: str) -> list[list[float]]:
    """``vectors`` (from an embedder, or a caller) as ``count`` unit-length lists of
    ``dimension`` finite floats; anything else raises :class:`InvalidInput` naming ``who``."""
    try:
        rows = [list(map(float, v)) for v in vectors]
    except (TypeError, ValueError):
        raise InvalidInput(f"{who} returned something that is not a list of vectors") from None
    if len(rows) != count:
        raise InvalidInput(f"{who} returned {len(rows)} vectors for {count} texts")
    for row in rows:
        if dimension is not None and len(row) != dimension:
            raise InvalidInput(f"{who} returned a vector of {len(row)} numbers, not {dimension}")
        if not row or not all(math.isfinite(x) for x in row):
            raise InvalidInput(f"{who} returned an empty vector or one with NaN or infinity")
    return [unit(row) for row in rows]


def pack(vector: Sequence[float]) -> bytes:
    """A vector as little-endian float32 bytes (the SQLite BLOB)."""
    data = array.array("f", vector)
    if data.itemsize != 4:  # pragma: no cover - every supported platform has 4-byte floats
        raise RuntimeError("float is not 32 bits on this platform")
    return data.tobytes() if _LITTLE else _swapped(data)


def unpack(blob: bytes) -> list[float]:
    """The inverse of :func:`pack`."""
    data = array.array("f")
    data.frombytes(blob)
    if not _LITTLE:  # pragma: no cover - big-endian hosts
        data.byteswap()
    return data.tolist()


def _swapped(data: array.array[float]) -> bytes:  # pragma: no cover - big-endian hosts
    data.byteswap()
    return data.tobytes()


_LITTLE: Final = array.array("H", [1]).tobytes() == b"\x01\x00"
