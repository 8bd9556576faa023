"""Array types and helpers the planner's modules share."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

# Index arrays: int32 from the model, int64 from numpy index functions; both are fine.
Ints = npt.NDArray[np.signedinteger[Any]]


def ranks(keys: Ints) -> Ints:
    """Position of each item among the earlier items with the same key (e.g. the same topic)."""
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    first = np.r_[True, sorted_keys[1:] != sorted_keys[:-1]]
    pos = np.arange(keys.size)
    start = np.maximum.accumulate(np.where(first, pos, 0))
    rank: Ints = np.empty(keys.size, dtype=np.int64)
    rank[order] = pos - start
    return rank
