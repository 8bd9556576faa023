"""Replica-count exchanges: ``d`` takes several light replicas from ``s`` and hands one heavy one back.

A broker under the replica-count band that sits at its disk limit (or at the edge of a band its
other loads must keep) can take no replica one way: each one adds bytes. Handing ``s`` one of its
heavy replicas while taking ``n`` light ones moves ``n - 1`` replicas' worth of count and, with the
right ``n``, about as many bytes back as forth. Near-full clusters whose partitions differ much in
size end there: a broker filled to its disk limit with a few big replicas while others still hold
too many small ones. Each exchange must pass the pair check (capacities, and every guarded goal's
distance on ``s`` and ``d`` does not grow); it moves more bytes than one-way moves, so it only runs
for what they left, and only in the second pass of a plan that left the replica-count goal out of
band (``rebuild.exchange_pass``; docs/goals.md, "Count exchanges").
"""

from __future__ import annotations

import numpy as np

from kafka_balancer.model.cluster import FloatArray
from kafka_balancer.planner.base.arrays import Ints
from kafka_balancer.planner.base.candidates import replica_candidates
from kafka_balancer.planner.base.pair_checks import Pair, PairCheck
from kafka_balancer.planner.base.state import State
from kafka_balancer.planner.base.topic_spread import topic_ok
from kafka_balancer.planner.tuning import TUNING


def _weight(v: FloatArray, scale: FloatArray, loads: list[int]) -> FloatArray:
    """Each item's ``loads`` (the quantities that are not counts), each relative to the group's
    average broker, summed."""
    out: FloatArray = (v[:, loads] / scale[loads]).sum(axis=1)
    return out


def _added_bytes(st: State, parts: Ints, frm: int, to: int) -> FloatArray:
    """What moving a replica of each of ``parts`` from ``frm`` to ``to`` adds to the plan's bytes:
    its size when it leaves a broker that held it in the input, minus that when it goes back to one."""
    held = st.model.replicas[parts]
    size = st.model.copy_bytes[parts]
    out: FloatArray = size * ((held == frm).any(axis=1).astype(np.float64) - (held == to).any(axis=1))
    return out


def _side(pair: Pair, *, cumulative: bool) -> tuple[Ints, Ints, FloatArray, FloatArray, FloatArray]:
    """Replicas on ``s`` that may go to ``d``: going back to a broker that held them first, then
    lightest first; their loads, weights and the bytes each adds to the plan."""
    st, b, frm, to = pair.st, pair.b, pair.s, pair.d
    parts, slots = replica_candidates(st, pair.index, frm, d=to, nracks=pair.nracks, leaders_only=False)
    v = st.slot_loads(parts, slots)
    w = _weight(v, np.maximum(b.avg[frm], 1e-12), st.catalogue.loads)
    added = _added_bytes(st, parts, frm, to)
    order = np.lexsort((w, added >= 0))
    parts, slots, v, w, added = parts[order], slots[order], v[order], w[order], added[order]
    # The giver's items move together (a batch); each of the taker's is an alternative.
    ok = topic_ok(pair, st.ptopic[parts], slots == 0, cumulative=cumulative)
    return parts[ok], slots[ok], v[ok], w[ok], added[ok]


def replica_count_exchange(pair: Pair, amount: float) -> float:
    """Move about ``amount`` replicas' worth of count ``q`` from ``s`` to ``d`` by exchanges.

    Returns the count moved.
    """
    st, b, s, d, q = pair.st, pair.b, pair.s, pair.d, pair.q
    if not (st.can_host[d] and st.can_host[s]):
        return 0.0
    left = amount
    for _ in range(TUNING.count_exchanges_per_pair):
        want = int(np.floor(left + 0.5))
        if want < 1:
            break
        lp, ls, lv, _, la = _side(pair, cumulative=True)
        hp, hs, hv, hw, ha = _side(pair.reversed(), cumulative=False)
        if lp.size < 2 or hp.size == 0:
            break
        # The heaviest of d, and those going back to s (they take bytes off the plan).
        heaviest = np.argsort(-hw, kind="stable")[: TUNING.count_exchange_heavy_side]
        heavy = np.unique(np.concatenate([heaviest, np.flatnonzero(ha < 0)[: TUNING.count_exchange_heavy_side]]))
        # Row i: the first i + 2 of s together (i + 1 net); column: one heavy one of d.
        light_sums = np.cumsum(lv[: min(lp.size, TUNING.count_exchange_max_light)], axis=0)[1:]
        net = light_sums[:, None, :] - hv[heavy][None, :, :]
        added = np.cumsum(la[: min(lp.size, TUNING.count_exchange_max_light)])[1:, None] + ha[heavy][None, :]
        ok = PairCheck(pair)(net)
        if not ok.any():
            break
        # The count closest to what is left, an overshoot counting double (the pair check keeps
        # both brokers' distance to the band from growing, but bytes back and forth grow with it);
        # among those, the fewest bytes added to the plan, then the least of everything else
        # moved either way.
        gap = net[..., q] - want
        miss = np.where(gap > 0, 2 * gap, -gap)
        ok &= miss == miss[ok].min()
        ok &= added <= added[ok].min() + 1e-9 * max(1.0, abs(float(added[ok].min())))
        others = np.abs(net / np.maximum(b.avg[s], 1e-12)).sum(axis=2)
        i, j = np.unravel_index(int(np.argmin(np.where(ok, others, np.inf))), ok.shape)
        taken, back = slice(0, int(i) + 2), int(heavy[j])
        st.move(lp[taken], ls[taken], np.full(int(i) + 2, d, dtype=np.int32))
        st.move(hp[back : back + 1], hs[back : back + 1], np.array([s], dtype=np.int32))
        left -= float(net[i, j, q])
    return amount - left
