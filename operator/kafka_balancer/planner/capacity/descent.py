"""Capacity repair by descent: moves and exchanges that shrink the total excess over the limits.

The one-way repair (:mod:`capacity`) only moves a replica where it fits. It stalls when every broker
that may take one (same group, and the right rack when each partition already has a replica in
every rack) is too near its limit for any of the over-limit broker's replicas: a packing problem.
Two steps get out of it, each accepted only when the total excess over the limit strictly shrinks
(so the repair cannot cycle):

- an exchange: the over-limit broker gives a big replica and takes back a small one, moving only
  the difference, which may fit where neither replica does;
- an exchange of one for several: the giver's replica goes to the taker, which sends back a run of
  replicas of consecutive sizes (smallest run that makes room), so both end under the limit;
- a move that puts the taker over its limit by less than it takes off the giver: the taker then
  passes on the smaller excess in the next step (an ejection chain).

For the loads leadership carries (network out, CPU), handing the leadership to a follower, or
exchanging two leaderships, is a step too, and moves no data: among equal gains it comes first.
With ``leadership_only`` (demote-brokers moves no data) it is the only step.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from kafka_balancer.model.cluster import BoolArray, FloatArray
from kafka_balancer.planner.base.arrays import Ints
from kafka_balancer.planner.base.candidates import leader_candidates, replica_candidates
from kafka_balancer.planner.base.state import State
from kafka_balancer.planner.capacity.repair_round import RepairRound
from kafka_balancer.planner.tuning import TUNING


class _Trade(NamedTuple):
    """An exchange between giver ``s`` (``excess`` above its limit) and taker ``d`` (``room`` under it)."""

    s: int
    d: int
    excess: float
    room: float


class _Step:
    """The best step found so far for one giver: the excess it removes, the bytes of ``q`` it moves."""

    def __init__(self) -> None:
        self.key: tuple[float, float] = (0.0, 0.0)
        self.moves: list[tuple[int, int, int]] = []  # (partition, slot, destination)
        self.leaders: list[tuple[int, int]] = []  # (partition, slot of the new leader)

    def offer(
        self, gain: float, moved: float, moves: list[tuple[int, int, int]], leaders: list[tuple[int, int]] | None = None
    ) -> None:
        if (gain, -moved) > self.key:
            self.key, self.moves, self.leaders = (gain, -moved), moves, leaders or []

    def apply(self, st: State) -> None:
        for p, slot in self.leaders:
            st.swap_leader(np.array([p]), np.array([slot]))
        for p, slot, to in self.moves:
            st.move(np.array([p]), np.array([slot]), np.array([to], dtype=np.int32))


def descend(rnd: RepairRound, s: int, takers: Ints) -> float:
    """Apply the step (a move or an exchange between ``s`` and one of ``takers``) that shrinks the
    total excess of ``q`` most, moving the fewest bytes among equals; returns how much it shrank."""
    st, q = rnd.st, rnd.q
    excess = float(st.load[s, q] - st.limit[s, q])
    step = _Step()
    # A leadership step can shrink the excess of a limit leadership carries.
    leadership = st.catalogue.leadership_carries(q)
    for d in takers.tolist():
        if leadership:
            _leadership(rnd, s, d, step, excess=excess)
        if rnd.leadership_only:
            continue
        xp, xs, xv = _side(rnd, s, d, largest=True, count=None)
        if xp.size == 0:
            continue
        room = float(st.limit[d, q] - st.load[d, q])
        ok = _fits_elsewhere(st, d, q, xv)
        gain = np.where(ok, _shrink(xv[:, q], excess, room), -np.inf)
        if gain.size and gain.max() > 0:
            m = _fewest_bytes(gain, xv[:, q])
            step.offer(float(gain[m]), float(xv[m, q]), [(int(xp[m]), int(xs[m]), d)])
        xp, xs, xv = xp[: TUNING.descent_side], xs[: TUNING.descent_side], xv[: TUNING.descent_side]
        yp, ys, yv = _side(rnd, d, s, largest=False, count=TUNING.descent_side)
        if yp.size == 0:
            continue
        net = xv[:, None, :] - yv[None, :, :]  # (X, Y, Q): what d gains and s loses
        ok = _fits_elsewhere(st, d, q, net) & _giver_fits(st, s, net) & (net[..., q] > 0)
        gain = np.where(ok, _shrink(net[..., q], excess, room), -np.inf)
        if gain.max() > 0:
            i, j = np.unravel_index(_fewest_bytes(gain, xv[:, None, q] + yv[None, :, q]), gain.shape)
            moved = float(xv[i, q] + yv[j, q])
            step.offer(float(gain[i, j]), moved, [(int(xp[i]), int(xs[i]), d), (int(yp[j]), int(ys[j]), s)])
        _one_for_several(rnd, _Trade(s, d, excess, room), step, x=(xp, xs, xv), y=(yp, ys, yv))
    step.apply(st)
    return step.key[0]


def _leadership(rnd: RepairRound, s: int, d: int, step: _Step, *, excess: float) -> None:
    """Offer handing a leadership of ``s`` to its follower ``d``, or exchanging it for one that ``d``
    leads and ``s`` follows (only the difference moves): no data moves."""
    st, q, index = rnd.st, rnd.q, rnd.index
    xp, xs = leader_candidates(st, index, s, d)
    if xp.size == 0:
        return
    xv = st.lead[xp] - st.follow[xp]
    first = np.argsort(-xv[:, q], kind="stable")[
        : TUNING.descent_side
    ]  # largest first, as in the exchanges of replicas
    xp, xs, xv = xp[first], xs[first], xv[first]
    room = float(st.limit[d, q] - st.load[d, q])
    gain = np.where(_fits_elsewhere(st, d, q, xv), _shrink(xv[:, q], excess, room), -np.inf)
    if gain.max() > 0:
        i = int(np.argmax(gain))
        step.offer(float(gain[i]), 0.0, [], [(int(xp[i]), int(xs[i]))])
    yp, ys = leader_candidates(st, index, d, s)
    if yp.size == 0:
        return
    yv = st.lead[yp] - st.follow[yp]
    first = np.argsort(yv[:, q], kind="stable")[: TUNING.descent_side]
    yp, ys, yv = yp[first], ys[first], yv[first]
    net = xv[:, None, :] - yv[None, :, :]
    ok = _fits_elsewhere(st, d, q, net) & _giver_fits(st, s, net) & (net[..., q] > 0)
    gain = np.where(ok, _shrink(net[..., q], excess, room), -np.inf)
    if gain.max() > 0:
        a, b = np.unravel_index(int(np.argmax(gain)), gain.shape)
        step.offer(float(gain[a, b]), 0.0, [], [(int(xp[a]), int(xs[a])), (int(yp[b]), int(ys[b]))])


def _one_for_several(
    rnd: RepairRound, trade: _Trade, step: _Step, *, x: tuple[Ints, Ints, FloatArray], y: tuple[Ints, Ints, FloatArray]
) -> None:
    """Offer the exchange of one replica of ``s`` for the cheapest run of ``d``'s replicas (in size
    order) that leaves both under their limits: s sheds ``x - run`` >= excess, d takes ``x - run`` <= room."""
    st, q = rnd.st, rnd.q
    s, d, excess, room = trade
    xp, xs, xv = x
    yp, ys, yv = y  # ascending in q
    lo = xv[:, q] - max(room, 0.0)  # the run must bring back at least this, so d ends under
    hi = xv[:, q] - excess  # and at most this, so s ends under
    prefix = np.concatenate([np.zeros((1, yv.shape[1])), np.cumsum(yv, axis=0)])  # (Y + 1, Q)
    starts = np.arange(yv.shape[0])
    # For each replica x and run start i, the shortest run i..j-1 bringing back at least lo[x].
    ends = np.searchsorted(prefix[:, q], prefix[starts, q][None, :] + lo[:, None] - 1e-9, side="left")
    ends = np.maximum(ends, starts[None, :] + 1)
    valid = (ends <= yv.shape[0]) & (lo[:, None] > 0)
    ends = np.minimum(ends, yv.shape[0])
    run = prefix[ends] - prefix[starts][None, :, :]  # (X, Y, Q)
    net = xv[:, None, :] - run
    valid &= run[..., q] <= hi[:, None] + 1e-9
    # lo already keeps d under its limit of q.
    valid &= _fits_elsewhere(st, d, q, net) & _giver_fits(st, s, net)
    if not valid.any():
        return
    moved = np.where(valid, xv[:, None, q] + run[..., q], np.inf)
    i, k = np.unravel_index(int(np.argmin(moved)), moved.shape)
    back = [(int(yp[j]), int(ys[j]), s) for j in range(k, int(ends[i, k]))]
    step.offer(excess, float(moved[i, k]), [(int(xp[i]), int(xs[i]), d), *back])


def _shrink(net: FloatArray, excess: float, room: float) -> FloatArray:
    """How much the total excess shrinks when ``net`` leaves the giver for a taker with ``room``."""
    out: FloatArray = np.minimum(net, excess) - np.maximum(net - max(room, 0.0), 0.0)
    return out


def _fits_elsewhere(st: State, d: int, q: int, net: FloatArray) -> BoolArray:
    """The taker ends no further above its limit of any quantity but ``q`` (whose excess the gain
    counts) than it is: under it, or not growing where it starts above one this repair does not
    mend (a demotion moves no data, so a broker over its disk limit stays so and may still lead)."""
    limit = np.maximum(st.limit[d], st.load[d])
    limit[q] = np.inf
    ok: BoolArray = np.all(st.load[d] + net <= limit * (1 + 1e-12) + 1e-9, axis=-1)
    return ok


def _giver_fits(st: State, s: int, net: FloatArray) -> BoolArray:
    """The giver ends no further above any limit than it is (it takes replicas back in an exchange)."""
    ok: BoolArray = np.all(st.load[s] - net <= np.maximum(st.limit[s], st.load[s]) + 1e-9, axis=-1)
    return ok


def _fewest_bytes(gain: FloatArray, moved: FloatArray) -> int:
    """Flat index of the largest gain, the fewest bytes moved among (nearly) equal gains."""
    best = float(gain.max())
    tie = gain >= best - 1e-9 * max(abs(best), 1.0)
    return int(np.argmin(np.where(tie, moved, np.inf)))


def _side(rnd: RepairRound, frm: int, to: int, *, largest: bool, count: int | None) -> tuple[Ints, Ints, FloatArray]:
    """Replicas of ``frm`` that may go to ``to``: the ``count`` largest (or smallest) in ``q``."""
    st = rnd.st
    parts, slots = replica_candidates(st, rnd.index, frm, d=to, nracks=rnd.nracks, leaders_only=False)
    v = st.slot_loads(parts, slots)
    order = np.argsort(-v[:, rnd.q] if largest else v[:, rnd.q], kind="stable")[:count]
    return parts[order], slots[order], v[order]
