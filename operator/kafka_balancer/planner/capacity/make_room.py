"""Capacity repair when the descent stalls: make room for a replica on a broker that is too full.

The descent (:mod:`descent`) moves one replica, or exchanges replicas between two brokers.
A replica too big for every broker's room gets stuck: the only brokers it may go to (its group, a
rack it does not crowd) would first have to shed several replicas, to other brokers than the giver
alone. Here stuck replicas go to such a taker, which passes on replicas that fit as they are on third
brokers (or on the giver, once they left it), the fewest bytes that bring it back under every limit:
as many of the giver's replicas at once as the taker can make room for, else one. Taken only when no
broker ends above a limit it was under and the giver's excess shrinks, so the repair still only
descends.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final, NamedTuple

import numpy as np

from kafka_balancer.model.cluster import BoolArray, FloatArray
from kafka_balancer.planner.base.arrays import Ints
from kafka_balancer.planner.base.candidates import may_go_to, movable_replicas, replica_candidates
from kafka_balancer.planner.base.state import State
from kafka_balancer.planner.capacity.repair_round import RepairRound
from kafka_balancer.planner.capacity.room import most_room
from kafka_balancer.planner.tuning import TUNING

TOL: Final = 1e-9

Move = tuple[int, int, int]  # (partition, slot, destination broker)


class _Pool(NamedTuple):
    """Replicas of the taker that may move (``ok[i, j]``: replica ``i`` may go to ``brokers[j]``)."""

    parts: Ints
    slots: Ints
    rows: FloatArray  # (n, Q) the load each one carries
    brokers: Ints
    ok: BoolArray


def make_room(rnd: RepairRound, s: int, hosts: Ints) -> float:
    """Move one replica of ``s`` to one of ``hosts`` that passes on replicas to make room for it;
    returns how much the excess of ``q`` on ``s`` shrank (0 when there is no such step)."""
    st, q = rnd.st, rnd.q
    excess = float(st.load[s, q] - st.limit[s, q])
    best: tuple[tuple[float, float], list[Move]] = ((TOL, 0.0), [])
    room = st.limit[:, q] - st.load[:, q]
    takers = most_room(
        st, room, hosts[hosts != s], s, overall=TUNING.room_takers, same_rack=TUNING.room_same_rack_takers
    )
    for d in takers.tolist():
        xp, xs = replica_candidates(st, rnd.index, s, d=d, nracks=rnd.nracks, leaders_only=False)
        if xp.size == 0:
            continue
        xv = st.slot_loads(xp, xs)
        pool = _pool(rnd, d, s, hosts=hosts)
        for batch in _batches(st, d, q, xv, excess=excess):
            shed = _shed(st, d, xv[batch].sum(axis=0), pool=pool)
            if shed is None or not (shed or batch.size > 1):
                continue  # one replica that fits as it is: a plain move, which the descent already offers
            arriving = float(xv[batch, q].sum())
            back = float(pool.rows[[j for j, to in shed if to == s], q].sum())
            gain = excess - max(0.0, excess - arriving + back)
            moved = float(arriving + pool.rows[[j for j, _ in shed], q].sum())
            if (gain, -moved) > best[0]:
                moves = [(int(pool.parts[j]), int(pool.slots[j]), to) for j, to in shed]
                best = ((gain, -moved), [*((int(xp[i]), int(xs[i]), d) for i in batch.tolist()), *moves])
            if batch.size > 1:
                break  # the largest batch the taker makes room for
    # Distinct partitions: the taker holds no replica of those it takes (replica_candidates).
    for p, k, to in best[1]:
        st.move(np.array([p]), np.array([k]), np.array([to], dtype=np.int32))
    return best[0][0] if best[1] else 0.0


def _batches(st: State, d: int, q: int, xv: FloatArray, *, excess: float) -> Iterator[Ints]:
    """What the giver offers taker ``d`` (rows of ``xv``): first the replicas lightest at ``d`` per
    unit of ``q`` that cover the excess, halved while ``d`` cannot make room for them; then single
    replicas, the smallest that covers the excess alone first, then the largest of the rest.

    One replica a round, a 24-broker cluster whose busiest broker held 669 replicas above its limit,
    every one with a replica in each rack (so only its rack could take them) and that rack's other
    brokers at their network-in limit, took 966 rounds and 163 s (bench.strong_skew, seed 2, 8,000
    partitions, maxReplicasPerBroker 923): past the time budget, the plan failed."""
    order = _lightest_first(st, d, q, xv)
    k = int(np.searchsorted(np.cumsum(xv[order, q]), excess - TOL, side="left")) + 1
    k = min(k, order.size)
    while k >= 2:
        yield order[:k]
        k //= 2
    single = np.lexsort((np.where(xv[:, q] >= excess, xv[:, q], -xv[:, q]), xv[:, q] < excess))
    for i in single[: TUNING.room_giver_replicas].tolist():
        yield np.array([i])


def _lightest_first(st: State, d: int, q: int, xv: FloatArray) -> Ints:
    """Rows of ``xv`` by their heaviest share of a limit of ``d`` other than ``q``, per share of ``q``."""
    limit = st.limit[d]
    finite = np.isfinite(limit) & (np.arange(limit.size) != q)
    share = xv[:, finite] / np.maximum(limit[finite], TOL)
    cost = share.max(axis=1, initial=0.0) / np.maximum(xv[:, q] / max(float(limit[q]), TOL), TOL)
    order: Ints = np.argsort(cost, kind="stable").astype(np.int64)
    return order


def _pool(rnd: RepairRound, d: int, s: int, *, hosts: Ints) -> _Pool:
    """The replicas of ``d`` that may go to a third broker with room, or to the giver ``s``."""
    st = rnd.st
    thirds = hosts[(hosts != s) & (hosts != d)]
    room = (st.limit[thirds] - st.load[thirds]).min(axis=1)
    brokers = np.append(thirds[np.argsort(-room, kind="stable")][: TUNING.room_third_brokers], s).astype(np.int64)
    mine = movable_replicas(st, rnd.index, d, leaders_only=False)
    found = [may_go_to(st, *mine, d=e, nracks=rnd.nracks) for e in brokers.tolist()]
    width = st.rep.shape[1]
    keys = [parts * width + slots for parts, slots in found]
    every = np.unique(np.concatenate(keys)) if keys else np.zeros(0, dtype=np.int64)
    ok = np.zeros((every.size, brokers.size), dtype=np.bool_)
    for j, key in enumerate(keys):
        ok[np.searchsorted(every, key), j] = True
    parts, slots = every // width, every % width
    return _Pool(parts, slots, st.slot_loads(parts, slots), brokers, ok)


def _shed(st: State, d: int, arriving: FloatArray, *, pool: _Pool) -> list[tuple[int, int]] | None:
    """Which replicas of the pool ``d`` passes on, and where (pool index, broker), so that it takes
    ``arriving`` from the giver (the pool's last broker) under every limit; None when it cannot."""
    limit = st.limit[d]
    need = st.load[d] + arriving - limit
    finite = np.isfinite(limit)
    load = st.load[pool.brokers].copy()
    load[-1] -= arriving  # the giver (last of the pool's brokers), once the replica left it
    cap = st.limit[pool.brokers] * (1 + 1e-12) + TOL
    usable: BoolArray = np.array(pool.ok.any(axis=1), dtype=np.bool_)
    shed: list[tuple[int, int]] = []
    while np.any(need > TOL):
        # The quantity furthest over its limit, relative to it.
        over = np.divide(need, np.maximum(limit, 1.0), out=np.full_like(need, -np.inf), where=finite)
        q = int(np.argmax(over))
        fits = pool.ok & np.all(load[None, :, :] + pool.rows[:, None, :] <= cap[None, :, :], axis=2)
        size = pool.rows[:, q]
        candidates = np.flatnonzero(usable & fits.any(axis=1) & (size > TOL))
        if candidates.size == 0:
            return None
        # Fewest bytes: the smallest replica that covers what is left, else the largest one.
        covers = candidates[size[candidates] >= need[q] - TOL]
        i = int(covers[np.argmin(size[covers])]) if covers.size else int(candidates[np.argmax(size[candidates])])
        room = np.where(fits[i], (cap - load - pool.rows[i]).min(axis=1), -np.inf)
        j = int(np.argmax(room))
        load[j] += pool.rows[i]
        need -= pool.rows[i]
        usable[i] = False
        shed.append((i, int(pool.brokers[j])))
    return shed
