"""A vectorised leadership pass for goals that leadership carries (leaders, leader bytes-in, network out, CPU).

Leadership moves are free (no data), but between one giving and one taking broker there are only
the few partitions they share, so pairing brokers one by one stalls on large clusters. This pass
looks at every partition led by a giving broker at once: each may hand its leadership to the
follower whose broker has most room; the items are then capped per source by what it must give
and per destination by what it may take, and accepted together under
:func:`~kafka_balancer.planner.base.together.accept_together` (no broker gets further from any guarded
band). The pair-by-pair rounds then finish the job.
"""

from __future__ import annotations

import numpy as np

from kafka_balancer.model.cluster import NO_BROKER, BoolArray, FloatArray
from kafka_balancer.planner.base.arrays import Ints
from kafka_balancer.planner.base.round_bands import Bands
from kafka_balancer.planner.base.state import State
from kafka_balancer.planner.base.together import accept_together
from kafka_balancer.planner.base.topic_spread import within_budget
from kafka_balancer.planner.catalogue import Q_LEADERS
from kafka_balancer.planner.tuning import TUNING


def _within(key: Ints, value: FloatArray, limit: FloatArray) -> BoolArray:
    """Items (already sorted by ``key``) whose running sum of ``value`` within their key stays under ``limit``."""
    csum = np.cumsum(value)
    first = np.r_[True, key[1:] != key[:-1]]
    start = np.maximum.accumulate(np.where(first, np.arange(key.size), 0))
    base = np.where(start > 0, csum[np.maximum(start - 1, 0)], 0.0)
    out: BoolArray = (csum - base) <= limit + 1e-9 * np.maximum(np.abs(limit), 1.0)
    return out


def leader_pass(st: State, b: Bands, q: int) -> int:
    """Move leaderships from brokers above the band of ``q`` (or above average when some are below) to
    followers on brokers below it. Returns the number of leaderships moved."""
    amounts = _give_and_take(st, b, q)
    if amounts is None:
        return 0
    give, take = amounts
    rep = st.rep
    leader = rep[:, 0]
    parts = np.flatnonzero((leader != NO_BROKER) & (give[np.maximum(leader, 0)] > 0) & st.scope.movable)
    if parts.size == 0:
        return 0
    rows = rep[parts]
    safe = np.maximum(rows, 0)
    room_of = np.where((rows != NO_BROKER) & (take[safe] > 0) & st.lead_slots(parts), take[safe], -1.0)
    room_of[:, 0] = -1.0
    slot = np.argmax(room_of, axis=1)
    ok = room_of[np.arange(parts.size), slot] > 0
    parts, slot = parts[ok], slot[ok].astype(np.int64)
    v = st.lead[parts] - st.follow[parts]
    useful = v[:, q] > 0
    parts, slot, v = parts[useful], slot[useful], v[useful]
    if parts.size == 0:
        return 0
    src, dst = rep[parts, 0], rep[parts, slot]
    # Each topic's leader spread (when guarded) may use what its band leaves on either broker;
    # checked before the caps below, so that they fill up with leaderships that can move.
    t = st.ptopic[parts].astype(np.int64)
    keep = ~b.topic_leader_on[t] | within_budget(st.tlead, b.lead_lo, b.lead_hi, (t, src, -1), (t, dst, 1))
    parts, slot, v, src, dst = parts[keep], slot[keep], v[keep], src[keep], dst[keep]
    # Items that fit both ends on their own; per source in preference order up to what it must give
    # (leader bytes-in: the largest first, fewest leader changes), then per destination up to its room.
    fits = (v[:, q] <= give[src] * (1 + 1e-9)) & (v[:, q] <= take[dst] * (1 + 1e-9))
    parts, slot, v, src, dst = parts[fits], slot[fits], v[fits], src[fits], dst[fits]
    weight = _preference(st, b, q, v=v, src=src)
    order = np.lexsort((parts, weight, src))
    parts, slot, v, src, dst = parts[order], slot[order], v[order], src[order], dst[order]
    weight = weight[order]
    keep = _within(src, v[:, q], give[src])
    parts, slot, v, src, dst, weight = parts[keep], slot[keep], v[keep], src[keep], dst[keep], weight[keep]
    order = np.lexsort((parts, weight, dst))
    parts, slot, v, src, dst = parts[order], slot[order], v[order], src[order], dst[order]
    keep = _within(dst, v[:, q], take[dst])
    parts, slot, v, src, dst = parts[keep], slot[keep], v[keep], src[keep], dst[keep]
    keep = accept_together(st, b, src=src, dst=dst, v=v)
    st.swap_leader(parts[keep], slot[keep])
    return int(keep.sum())


def _give_and_take(st: State, b: Bands, q: int) -> tuple[FloatArray, FloatArray] | None:
    """How much of ``q`` each broker should give and may take (None when nothing is to move):
    brokers above the band give down to just inside it, and above average when some broker of their
    group is under it; brokers under it take up to just inside it, and up to the average when some
    broker of their group is over it."""
    load = st.load[:, q]
    lo, hi, avg = b.lower[:, q], b.upper[:, q], b.avg[:, q]
    tol = np.abs(avg) * 1e-9 + 1e-9
    finite = np.isfinite(hi) & np.isfinite(lo) & st.active
    over = finite & (load > hi + tol)
    under = finite & (load < lo - tol) & st.can_lead
    if not (over.any() or under.any()):
        return None
    if st.catalogue.count(q):
        high, low = hi, lo
    else:
        # Brokers outside balanced groups have infinite bands: keep them out of the arithmetic.
        edge_hi, edge_lo = np.where(finite, hi, avg), np.where(finite, lo, avg)
        high, low = edge_hi - TUNING.fill_margin * (edge_hi - avg), edge_lo + TUNING.fill_margin * (avg - edge_lo)
    key, ng = st.balance_groups(q)
    group_under = np.bincount(key, weights=under, minlength=ng) > 0
    give = np.where(over, load - high, 0.0)
    give = np.where(~over & finite & group_under[key] & (load > avg + tol), load - avg, give)
    take = np.where(under, low - load, 0.0)
    group_over = np.bincount(key, weights=over, minlength=ng) > 0
    room = np.where(np.isfinite(avg), np.maximum(high - load, 0.0), 0.0)
    take = np.where(~under & finite & st.can_lead & group_over[key], np.minimum(avg - load, room), take)
    take = np.maximum(take, 0.0)
    if not (give > 0).any() or not (take > 0).any():
        return None
    return give, take


def _preference(st: State, b: Bands, q: int, *, v: FloatArray, src: Ints) -> FloatArray:
    """The order leaderships of ``q`` go in, lowest first (their loads ``v``, their leaders ``src``)."""
    catalogue = st.catalogue
    # Continuous quantities only leaders carry: the largest first, fewest leader changes.
    weight: FloatArray = -v[:, q]
    if catalogue.quantities[q].leadership == "part":
        # Leaderships of typical weight (near the group's average per leader), not the heaviest: a
        # taker packed with heavy leaderships reaches its traffic band with too few leaders, and
        # the leader-count goal, later, could not add any.
        per_leader = b.avg[src, q] / np.maximum(b.avg[src, Q_LEADERS], 1e-12)
        weight = np.abs(v[:, q] / np.maximum(per_leader, 1e-12) - 1.0)
    if catalogue.count(q):
        # For counts every item weighs one: take the lightest leaderships (least traffic and CPU to
        # shift), so the goals already balanced on those quantities have the most room to accept them.
        loads = catalogue.leader_loads
        scale = np.maximum(b.avg[src][:, loads], 1e-12)
        weight = (v[:, loads] / scale).sum(axis=1)
    return weight
