"""The price table: USD per million tokens by model, checked once, and what a call cost."""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping

from .._errors import InvalidInput

__all__ = ["Prices", "check_prices", "cost_of"]

Prices = Mapping[str, tuple[float, float]]
"""USD per million tokens, ``{model: (input, output)}``, e.g. ``{"gpt-4.1": (2.0, 8.0)}``."""


def _price(value: object) -> bool:
    return (
        isinstance(value, numbers.Real)
        and not isinstance(value, bool)
        and math.isfinite(float(value))
        and float(value) >= 0
    )


def check_prices(prices: Prices | None) -> dict[str, tuple[float, float]]:
    """A price table as a plain dict of floats (empty for None), or ``InvalidInput`` naming
    the entry that is not ``(input, output)`` USD per million tokens, two numbers >= 0."""
    if prices is None:
        return {}
    if not isinstance(prices, Mapping):
        raise InvalidInput(
            "prices must map model names to (input, output) USD per million tokens,"
            f" e.g. {{'gpt-4.1': (2.0, 8.0)}}; got {type(prices).__name__}"
        )
    checked: dict[str, tuple[float, float]] = {}
    for model, pair in prices.items():
        ok = isinstance(pair, (tuple, list)) and len(pair) == 2 and all(map(_price, pair))
        if not ok or not isinstance(model, str):
            raise InvalidInput(
                f"prices[{model!r}] must be (input, output) USD per million tokens, two"
                f" numbers >= 0 such as (2.0, 8.0), keyed by the model's name; not {pair!r}"
            )
        checked[model] = (float(pair[0]), float(pair[1]))
    return checked


def cost_of(
    prices: Mapping[str, tuple[float, float]], model: str, tokens_in: int, tokens_out: int
) -> float:
    """What a call of ``model`` cost in USD by the price table (0 for a model it does not
    name)."""
    pair = prices.get(model) if prices else None
    if pair is None:
        return 0.0
    return (tokens_in * pair[0] + tokens_out * pair[1]) / 1_000_000
