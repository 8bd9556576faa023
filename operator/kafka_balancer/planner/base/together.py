"""What a batch of moves between many brokers at once must keep: no broker it touches ends further
from a guarded band than it is, or above a capacity limit (:func:`accept_together` keeps the items
that fit, :func:`fits_together` and :func:`fits_with_each` say whether all do)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from kafka_balancer.model.cluster import BoolArray, FloatArray
from kafka_balancer.planner.base.arrays import Ints, stable_order
from kafka_balancer.planner.base.round_bands import Bands
from kafka_balancer.planner.base.state import State
from kafka_balancer.planner.tuning import TUNING


def accept_together(st: State, b: Bands, *, src: Ints, dst: Ints, v: FloatArray) -> BoolArray:
    """The items (each moving ``v`` from ``src`` to ``dst``, in preference order) kept when all move at once.

    All items are tried together; where a broker would end further from a guarded band than it is
    (or above a capacity limit), just enough of the items pushing it that way are dropped, the last
    ones first (incoming items when it would end too high, outgoing ones when too low), and the
    rest is checked again. Each broker on its own must not get worse, which is stricter than the
    pair check, so items moving in opposite directions (count-neutral exchanges) pass together.
    """
    keep = np.ones(src.size, dtype=np.bool_)
    if src.size == 0:
        return keep
    src, dst, reach = _Reach.of(st, b, src, dst)
    load0, top, bottom, tol = reach
    last_first = np.arange(src.size)[::-1]
    for _ in range(TUNING.drop_passes):
        load = _loads_after(load0, src[keep], dst[keep], v[keep])
        excess = np.maximum(load - top - tol, 0.0)  # (touched brokers, Q)
        deficit = np.maximum(bottom - load - tol, 0.0)
        if not (excess.any() or deficit.any()):
            return keep
        drop = np.zeros(src.size, dtype=np.bool_)
        for q in np.flatnonzero(excess.any(axis=0) | deficit.any(axis=0)).tolist():
            up, down = np.maximum(v[:, q], 0.0), np.maximum(-v[:, q], 0.0)
            # Too high: drop arrivals adding q (or departures of negative q); too low: the reverse.
            cases = (
                (dst, up, excess[:, q]),
                (src, down, excess[:, q]),
                (src, up, deficit[:, q]),
                (dst, down, deficit[:, q]),
            )
            for broker, push, need in cases:
                cand = last_first[(keep & (push > 0) & (need[broker] > 0))[last_first]]
                if cand.size == 0:
                    continue
                order = cand[stable_order(broker[cand])]
                drop[order[_covering(broker[order], push[order], need)]] = True
        if not drop.any():
            break
        keep &= ~drop
    keep[:] = False  # did not settle: move nothing rather than something unchecked
    return keep


def fits_together(st: State, b: Bands, *, src: Ints, dst: Ints, v: FloatArray) -> bool:
    """Whether :func:`accept_together` keeps every item: all moved at once, no touched broker ends
    further from a guarded band or above a limit (its first pass, without the drops; for the
    chains, which are tried one by one by the ten thousand and kept whole or not at all)."""
    if src.size == 0:
        return True
    src, dst, (load0, top, bottom, tol) = _Reach.of(st, b, src, dst)
    # The same sums and comparisons as accept_together's, so the two never disagree at a band's edge.
    load = _loads_after(load0, src, dst, v)
    return not ((load - top - tol > 0.0).any() or (bottom - load - tol > 0.0).any())


def fits_with_each(st: State, b: Bands, *, base: Moves, each: Moves) -> BoolArray:
    """For each of the moves ``each``, whether it fits together with all of ``base``
    (:func:`fits_together` of ``base`` plus that one move), for the whole lot at once: a chain's
    closings are picked among thousands."""
    src = np.concatenate([base.src, each.src])
    dst = np.concatenate([base.dst, each.dst])
    src, dst, (load0, top, bottom, tol) = _Reach.of(st, b, src, dst)
    n = base.src.size
    load = _loads_after(load0, src[:n], dst[:n], base.v)

    def out_of_reach(rows: Ints, loads: FloatArray) -> BoolArray:
        high: BoolArray = loads - top[rows] - tol[rows] > 0.0
        low: BoolArray = bottom[rows] - loads - tol[rows] > 0.0
        out: BoolArray = np.any(high | low, axis=1)
        return out

    # The base alone leaves some brokers out of reach: each move must take every one of them back,
    # and keep its own two brokers in reach.
    out = out_of_reach(np.arange(load.shape[0]), load)
    s, d = src[n:], dst[n:]
    left = int(out.sum()) - out[s].astype(np.int64) - out[d].astype(np.int64)
    ok: BoolArray = (left == 0) & ~out_of_reach(s, load[s] - each.v) & ~out_of_reach(d, load[d] + each.v)
    return ok


class Moves(NamedTuple):
    """Moves of loads ``v`` (rows) from brokers ``src`` to brokers ``dst``."""

    src: Ints
    dst: Ints
    v: FloatArray


def _loads_after(load0: FloatArray, src: Ints, dst: Ints, v: FloatArray) -> FloatArray:
    """The touched brokers' loads once every item (rows of ``v``) moved from ``src`` to ``dst``."""
    delta = np.zeros_like(load0)
    np.add.at(delta, src, -v)
    np.add.at(delta, dst, v)
    out: FloatArray = load0 + delta
    return out


class _Reach(NamedTuple):
    """How far each broker a batch touches may go (rows of the touched brokers, ascending)."""

    load: FloatArray
    top: FloatArray
    bottom: FloatArray
    tol: FloatArray

    @staticmethod
    def of(st: State, b: Bands, src: Ints, dst: Ints) -> tuple[Ints, Ints, _Reach]:
        """(src and dst as rows of the touched brokers, their reach)."""
        # Only the brokers the items touch can move (the others stay where they are, which is allowed):
        # the arrays are over those, so a batch costs its own size, not the cluster's broker count.
        touched, local = np.unique(np.concatenate([src, dst]), return_inverse=True)
        load0, limit = st.load[touched], st.limit[touched]
        # How far each broker may go: no further out of the band than it already is, never over a
        # limit. Slack for float sums: half the goals' own tolerance at the band's edge
        # (goals.tolerance), so accepted batches never add up to a broker counted as out of band; far
        # less where a broker is already outside (it must not drift further).
        edge = np.abs(b.avg[touched]) * 0.5e-9
        top = np.maximum(b.upper[touched] + edge, load0)
        top = np.where(np.isfinite(limit), np.minimum(top, np.maximum(limit, load0)), top)
        bottom = np.minimum(b.lower[touched] - edge, load0)
        tol = np.abs(load0) * 1e-13 + 1e-9
        return local[: src.size], local[src.size :], _Reach(load0, top, bottom, tol)


def _covering(key: Ints, value: FloatArray, need: FloatArray) -> BoolArray:
    """Within each key (sorted), the leading items whose sum first reaches ``need[key]``."""
    csum = np.cumsum(value)
    first = np.r_[True, key[1:] != key[:-1]]
    start = np.maximum.accumulate(np.where(first, np.arange(key.size), 0))
    before = csum - value - np.where(start > 0, csum[np.maximum(start - 1, 0)], 0.0)
    out: BoolArray = before < need[key]
    return out
