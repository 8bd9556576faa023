"""Array types and helpers the planner's modules share."""

from __future__ import annotations

from typing import Any, Final

import numpy as np
import numpy.typing as npt

from kafka_balancer.model.cluster import BoolArray

# Index arrays: int32 from the model, int64 from numpy index functions; both are fine.
Ints = npt.NDArray[np.signedinteger[Any]]


# Below this many keys the range check costs more than the radix sort saves.
RADIX_FROM: Final = 4096


def stable_order(keys: Ints) -> Ints:
    """``np.argsort(keys, kind="stable")``, the same order, by radix sorts of 16-bit digits where the
    keys span fewer than 2**32 values (broker, topic and (topic, broker) ids: sorted again and again
    on large clusters, where numpy's stable sort of wider integers is 3 to 20 times slower)."""
    if keys.size < RADIX_FROM:
        return np.argsort(keys, kind="stable")
    low, high = int(keys.min()), int(keys.max())
    if high - low > np.iinfo(np.uint32).max:
        return np.argsort(keys, kind="stable")
    if high - low <= np.iinfo(np.uint16).max:
        return np.argsort((keys - low).astype(np.uint16), kind="stable")
    # Two passes, the low digit first: the second (stable) pass keeps the first's order among equals.
    shifted = (keys - low).astype(np.uint32)
    order = np.argsort((shifted & 0xFFFF).astype(np.uint16), kind="stable")
    high_digit = (shifted >> 16).astype(np.uint16)[order]
    out: Ints = order[np.argsort(high_digit, kind="stable")]
    return out


def row_sums(mask: BoolArray) -> Ints:
    """``mask.sum(axis=1)`` of a narrow (n, width) mask (a partition's replica slots), by adding its
    columns: numpy's reduction along a short last axis is 5 to 7 times slower."""
    out: Ints = np.zeros(mask.shape[0], dtype=np.int64)
    for column in mask.T:
        out += column
    return out


def row_any(mask: BoolArray) -> BoolArray:
    """``mask.any(axis=1)`` of a narrow (n, width) mask, by its columns (as :func:`row_sums`)."""
    out: BoolArray = np.zeros(mask.shape[0], dtype=np.bool_)
    for column in mask.T:
        out |= column
    return out


def ranks(keys: Ints) -> Ints:
    """Position of each item among the earlier items with the same key (e.g. the same topic)."""
    order = stable_order(keys)
    sorted_keys = keys[order]
    first = np.r_[True, sorted_keys[1:] != sorted_keys[:-1]]
    pos = np.arange(keys.size)
    start = np.maximum.accumulate(np.where(first, pos, 0))
    rank: Ints = np.empty(keys.size, dtype=np.int64)
    rank[order] = pos - start
    return rank


def cells(table: npt.NDArray[Any], rows: Ints, cols: Ints) -> npt.NDArray[Any]:
    """``table[rows, cols]`` of a 2-d table (``rows`` and ``cols`` broadcast), by one take on its
    flat cells: numpy's two-index gather is 2 to 3 times slower on the (offers x candidates)
    arrays of the per-topic goals."""
    flat = np.asarray(rows, dtype=np.int64) * table.shape[1] + cols
    out: npt.NDArray[Any] = np.take(table.reshape(-1), flat)
    return out


def first_of_each(keys: Ints) -> BoolArray:
    """Marks the first occurrence of each key (``np.unique(keys, return_index=True)``'s positions,
    by :func:`stable_order`'s faster sort)."""
    order = stable_order(keys)
    ordered = keys[order]
    out: BoolArray = np.zeros(keys.size, dtype=np.bool_)
    out[order[np.r_[True, ordered[1:] != ordered[:-1]]] if keys.size else order] = True
    return out
