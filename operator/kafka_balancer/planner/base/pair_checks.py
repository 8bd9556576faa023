"""What a batch of moves between two brokers must keep: the bands of the guarded goals and the
capacity limits.

A batch is a set of replicas (or leaderships) that move from broker ``s`` to broker ``d`` in one
vectorised step (a :class:`Pair`); its running sums must pass :class:`PairCheck`: for every guarded
distribution goal the two brokers' distance to its band does not grow. That is how a later goal
never undoes an earlier one, and how applying a plan never makes a statistic worse. Moves between
many brokers at once: :mod:`kafka_balancer.planner.base.together`; each topic's spread:
:mod:`kafka_balancer.planner.base.topic_spread`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from kafka_balancer.model.cluster import BoolArray, FloatArray
from kafka_balancer.planner.base.arrays import Ints
from kafka_balancer.planner.base.round_bands import Bands, band_distance
from kafka_balancer.planner.base.state import State
from kafka_balancer.planner.tuning import TUNING


@dataclass(frozen=True)
class Pair:
    """A giving broker ``s`` and a taking broker ``d`` of a round, moving quantity ``q``, with what
    every step between them reads: the state, the round's bands, the replica slots by broker
    (``State.broker_index_by_slot``) and each group's number of racks (``State.group_racks``)."""

    st: State
    b: Bands
    s: int
    d: int
    q: int
    index: tuple[Ints, Ints]
    nracks: Ints

    def reversed(self) -> Pair:
        """The same pair the other way round (``d`` gives to ``s``)."""
        return dataclasses.replace(self, s=self.d, d=self.s)


class PairCheck:
    """Accepts a cumulative amount moved from ``s`` to ``d`` when, for every goal, the out-of-band
    distance of ``s`` plus that of ``d`` does not grow, and both stay under their capacity limits
    (an exchange can move a quantity back to ``s``: a swap for network-out can bring it more disk).

    Bands are fixed within a round (moves inside a group keep its totals), so a move that does not
    increase the two brokers' distances cannot increase the goal's total: no goal ever gets worse,
    and a goal that holds keeps holding. The test is convex in the amount, so along a list of items
    the accepted cumulative sums form a prefix.
    """

    def __init__(self, pair: Pair, *, amount: float = math.inf, q: int | None = None):
        st, b, s, d = pair.st, pair.b, pair.s, pair.d
        self.load_s, self.load_d = st.load[s].copy(), st.load[d].copy()
        self.lo_s, self.hi_s, self.lo_d, self.hi_d = b.lower[s], b.upper[s], b.lower[d], b.upper[d]
        self.limit = st.limit[d]
        # s may end no further above a limit than it is (it can start above one it is being relieved of).
        self.limit_s = np.maximum(st.limit[s], self.load_s)
        self.before = band_distance(self.load_s, self.lo_s, self.hi_s) + band_distance(
            self.load_d, self.lo_d, self.hi_d
        )
        self.q, self.amount = pair.q if q is None else q, amount

    def __call__(self, moved: FloatArray) -> BoolArray:
        after = band_distance(self.load_s - moved, self.lo_s, self.hi_s) + band_distance(
            self.load_d + moved, self.lo_d, self.hi_d
        )
        tol = _tol(self.before)
        ok: BoolArray = np.all(after <= self.before + tol, axis=-1)
        ok &= np.all(self.load_d + moved <= self.limit + _tol(self.limit), axis=-1)
        ok &= np.all(self.load_s - moved <= self.limit_s + _tol(self.limit_s), axis=-1)
        if self.q is not None:
            ok &= moved[..., self.q] <= self.amount * (1 + 1e-9) + 1e-9
        return ok


def limits_check(limits: FloatArray) -> Callable[[FloatArray], BoolArray]:
    """A check that only bounds each quantity's cumulative amount."""

    def check(moved: FloatArray) -> BoolArray:
        out: BoolArray = np.all(moved <= limits + _tol(limits), axis=-1)
        return out

    return check


def _tol(values: FloatArray) -> FloatArray:
    finite = np.where(np.isfinite(values), np.abs(values), 0.0)
    out: FloatArray = finite * 1e-9 + 1e-9
    return out


def take(v: FloatArray, check: Callable[[FloatArray], BoolArray]) -> BoolArray:
    """Choose items (rows of ``v``, in preference order) whose running sums ``check`` accepts.

    Takes the longest accepted prefix, skips the item that broke it, and continues from there
    (a few passes), so one oversized item does not stop the batch.
    """
    count = v.shape[0]
    chosen = np.zeros(count, dtype=np.bool_)
    if count == 0:
        return chosen
    base = np.zeros(v.shape[1])
    avail = np.ones(count, dtype=np.bool_)
    for _ in range(TUNING.take_passes):
        fit = avail & check(base + v)
        idx = np.flatnonzero(fit)
        if idx.size == 0:
            break
        sums = base + np.cumsum(v[idx], axis=0)
        ok = check(sums)
        n = int(idx.size if ok.all() else np.argmin(ok))
        if n == 0:
            avail[idx[0]] = False
            continue
        chosen[idx[:n]] = True
        avail[idx[:n]] = False
        base = sums[n - 1]
        if n < idx.size:
            avail[idx[n]] = False
    return chosen
