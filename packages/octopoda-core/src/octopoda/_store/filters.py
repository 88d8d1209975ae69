"""The conditions every read of current values shares (``Store.current``, search, vector
search): a key range for a prefix, and liveness, expiry, tags and kind of a version ``m``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .reads import Dialect

__all__ = ["key_range", "live_conditions", "prefix_upper_bound"]


def prefix_upper_bound(prefix: str) -> str | None:
    """The smallest string greater than every string starting with ``prefix``."""
    chars = list(prefix)
    while chars:
        last = ord(chars.pop())
        if last < 0x10FFFF:
            nxt = last + 1
            if 0xD800 <= nxt <= 0xDFFF:  # skip surrogates, which cannot be stored
                nxt = 0xE000
            return "".join(chars) + chr(nxt)
    return None


def key_range(column: str, prefix: str, param: str) -> tuple[list[str], list[Any]]:
    """``column`` starting with ``prefix`` as a range of the key index (no condition for
    ``""``)."""
    if not prefix:
        return [], []
    conditions, params = [f"{column} >= {param}"], [prefix]
    upper = prefix_upper_bound(prefix)
    if upper is not None:
        conditions.append(f"{column} < {param}")
        params.append(upper)
    return conditions, params


def live_conditions(
    d: Dialect,
    *,
    now: float | None,
    tags: Sequence[str],
    include_dead: bool = False,
    kinds: Sequence[str] = (),
) -> tuple[list[str], list[Any]]:
    """The conditions on a version ``m`` of every current read (``Store.current``, search,
    vector search): no tombstone or erased value and not expired at ``now`` (unless
    ``include_dead``), every tag of ``tags``, and a kind among ``kinds`` (if any given)."""
    conditions: list[str] = []
    params: list[Any] = []
    if not include_dead:
        conditions.append("m.encoding <> 'tombstone' AND NOT m.erased")
        if now is not None:
            conditions.append(f"(m.expires_at IS NULL OR m.expires_at > {d.param})")
            params.append(now)
    if tags:
        tag_conditions, tag_params = d.has_tags(tags)
        conditions += tag_conditions
        params += tag_params
    if kinds:
        kind_condition, kind_params = d.any_of("m.kind", kinds)
        conditions.append(kind_condition)
        params += kind_params
    return conditions, params
