"""Per-topic spread by exchanges: when one-way moves stall, trade a replica (or leadership) of an
over-represented topic for one of another topic that can go the other way.

After the broker-level goals, every broker's replica count, leader count and loads sit near their
band edges, so a one-way move of topic T's replica from ``s`` to ``d`` is refused (``d`` would get
one replica too many). A swap sends T's replica ``s -> d`` and a replica of another topic U
``d -> s``: both brokers keep their counts, and when the two partitions are of similar size and
traffic every byte load barely changes, so the guarded bands accept it. U is chosen so that its own
spread does not get worse (U over on ``d``, or simply not pushed out of its band). Leadership works
the same way inside replica sets: ``d`` takes the leadership of T's partition and hands back the
leadership of a U partition that has a follower on ``s``.

Partners are found by size (:mod:`kafka_balancer.planner.distribution.partners`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from kafka_balancer.model.cluster import NO_BROKER, BoolArray, FloatArray
from kafka_balancer.planner.base.arrays import Ints, cells, ranks
from kafka_balancer.planner.base.round_bands import Bands
from kafka_balancer.planner.base.state import State
from kafka_balancer.planner.base.together import accept_together
from kafka_balancer.planner.base.topic_spread import within_budget
from kafka_balancer.planner.catalogue import TOPIC_LEADER_GOAL
from kafka_balancer.planner.distribution.partners import (
    PartnerIndex,
    may_give_take,
    nearest,
)
from kafka_balancer.planner.tuning import TUNING


def _weights(st: State, b: Bands, s: Ints) -> FloatArray:
    """Per offer, 1/avg of each guarded non-count quantity (0 elsewhere): how much a net change costs."""
    guarded = np.isfinite(b.upper[s]) | np.isfinite(b.lower[s])
    avg = np.maximum(b.avg[s], 1e-12)
    w: FloatArray = np.where(guarded, 1.0 / avg, 0.0)
    for q in st.catalogue.counts:
        w[:, q] = 0.0
    return w


def _fits(st: State, b: Bands, s: Ints, d: Ints, net: FloatArray) -> BoolArray:
    """Candidates (``net`` of shape (n, K, Q), moving from s to d) under which neither broker ends
    further from a guarded band or above a capacity limit: the test ``accept_together`` applies."""
    top = np.maximum(b.upper, st.load)
    top = np.where(np.isfinite(st.limit), np.minimum(top, np.maximum(st.limit, st.load)), top)
    bottom = np.minimum(b.lower, st.load)
    tol = np.abs(b.avg) * 1e-9 + np.abs(st.load) * 1e-9 + 1e-9
    new_s = st.load[s][:, None, :] - net
    new_d = st.load[d][:, None, :] + net
    ok_s = (new_s <= (top[s] + tol[s])[:, None, :]) & (new_s >= (bottom[s] - tol[s])[:, None, :])
    ok_d = (new_d <= (top[d] + tol[d])[:, None, :]) & (new_d >= (bottom[d] - tol[d])[:, None, :])
    out: BoolArray = np.all(ok_s & ok_d, axis=2)
    return out


def _best_partners(ok: BoolArray, cost: FloatArray) -> tuple[Ints, Ints]:
    """For each offer (row) with an acceptable partner (column), the cheapest one: (offers, partner
    columns), best-fitting first."""
    j = np.argmin(np.where(ok, cost, np.inf), axis=1)
    found = np.flatnonzero(ok[np.arange(ok.shape[0]), j])
    found = found[np.argsort(cost[found, j[found]], kind="stable")]
    return found, j[found]


def _first_partition(p: Ints, q: Ints) -> BoolArray:
    """Swaps none of whose two partitions appears in an earlier swap of the batch."""
    allp = np.concatenate([p, q]).astype(np.int64)
    owner = np.tile(np.arange(p.size), 2)
    # Each partition belongs to the first swap naming it; the later swaps naming it are out.
    first_owner = np.full(allp.size, -1)
    order = np.lexsort((owner, allp))
    sp = allp[order]
    start = np.r_[True, sp[1:] != sp[:-1]]
    lead = np.maximum.accumulate(np.where(start, np.arange(sp.size), 0))
    first_owner[order] = owner[order][lead]
    bad = np.zeros(p.size, dtype=np.bool_)
    bad[owner[first_owner != owner]] = True
    out: BoolArray = ~bad
    return out


def most_needed(counts: Ints, hi: FloatArray, topics: Ints, src: Ints, *, limit: int = 0) -> Ints:
    """Indices of at most ``limit`` (default TUNING.topic_swap_offers) offers, taken one topic at a time: each
    topic's offer whose source holds most above its band, then each topic's second, and so on
    (bounds a round's memory and time at millions of replicas; later rounds take the rest). Kept in
    their original order. Most-needed first across topics instead gave one big topic a whole
    round, and its few destinations could take only a few hundred of the 16,384 offers."""
    limit = limit or TUNING.topic_swap_offers
    if topics.size <= limit:
        return np.arange(topics.size)
    excess = counts[topics, src] - hi[topics]
    by_need = np.argsort(-excess, kind="stable")
    turn = np.empty(topics.size, dtype=np.int64)
    turn[by_need] = ranks(topics[by_need].astype(np.int64))
    out: Ints = np.sort(np.lexsort((-excess, turn))[:limit])
    return out


class Offers(NamedTuple):
    """A round's offered moves: slot ``slots`` of ``parts`` to broker ``dests`` (for leaderships:
    the slot of the follower that takes over)."""

    parts: Ints
    slots: Ints
    dests: Ints


def replica_swaps(st: State, b: Bands, offers: Offers, *, index: PartnerIndex, nracks: Ints, size_cap: float) -> int:
    """Pair each offered move with a partner coming back.

    Partners: a replica on the destination, of the same kind (leader or follower, so leader counts
    stay), of another topic whose spread allows the way back, nearest in size. Returns swaps made.
    Only partitions in the smaller ``size_cap`` share of their group's sizes are offered; leader
    replicas only from an index of leader replicas once the topic-leader goal is guarded
    (:func:`_small_offers`).
    """
    if offers.parts.size == 0:
        return 0
    parts, slots, dests = offers = _small_offers(st, b, offers, index, size_cap=size_cap)
    src = st.rep[parts, slots].astype(np.int64)
    cp, ck, ok = _replica_partners(st, b, offers, index, nracks)
    vx = st.slot_loads(parts, slots)  # (n, Q)
    vy = st.slot_loads(cp.ravel(), ck.ravel()).reshape(*cp.shape, st.lead.shape[1])  # (n, PARTNERS, Q)
    net = vx[:, None, :] - vy
    ok &= _fits(st, b, src, dests.astype(np.int64), net)
    cost = (np.abs(net) * _weights(st, b, src)[:, None, :]).sum(axis=2)
    # A partner that lived on s before planning goes home: in the plan it is no move at all.
    cost -= TUNING.topic_swap_home_bonus * (st.model.replicas[cp] == src[:, None, None]).any(axis=2)
    found, j = _best_partners(ok, cost)
    p, k, d, s = parts[found], slots[found], dests[found], src[found]
    q, qk, net1 = cp[found, j], ck[found, j], net[found, j]
    tt, uu = st.ptopic[p], st.ptopic[q]
    keep = within_budget(st.tcount, b.topic_lo, b.topic_hi, (tt, s, -1), (tt, d, 1), (uu, d, -1), (uu, s, 1))
    lead_on = b.topic_leader_on[tt] & (k == 0)
    if lead_on.any():
        keep &= within_budget(st.tlead, b.lead_lo, b.lead_hi, (tt, s, -1), (tt, d, 1), (uu, d, -1), (uu, s, 1))
    keep &= _first_partition(p, q)
    p, k, d, s, q, qk, net1 = p[keep], k[keep], d[keep], s[keep], q[keep], qk[keep], net1[keep]
    acc = accept_together(st, b, src=s, dst=d, v=net1)
    p, k, d, s, q, qk = p[acc], k[acc], d[acc], s[acc], q[acc], qk[acc]
    st.move(p, k, d.astype(np.int32))
    st.move(q, qk, s.astype(np.int32))
    return int(p.size)


def _small_offers(st: State, b: Bands, offers: Offers, index: PartnerIndex, *, size_cap: float) -> Offers:
    """The offers of small partitions (followers only once the topic-leader goal is guarded, unless
    the index holds leader replicas: a leader swapped for the replica spread could crowd its topic's
    leaders), the most needed first (:func:`most_needed`)."""
    leaders = index.leaders
    parts, slots, dests = offers
    small = index.size_share < size_cap
    sel = small[parts]
    if TOPIC_LEADER_GOAL in st.scope.guarded and not leaders:
        sel &= slots != 0
    parts, slots, dests = parts[sel], slots[sel], dests[sel]
    counts, hi = (st.tlead, b.lead_hi) if leaders else (st.tcount, b.topic_hi)
    top = most_needed(counts, hi, st.ptopic[parts], st.rep[parts, slots])
    return Offers(parts[top], slots[top], dests[top])


def _replica_partners(
    st: State, b: Bands, offers: Offers, index: PartnerIndex, nracks: Ints
) -> tuple[Ints, Ints, BoolArray]:
    """For each offer, the PARTNERS nearest in size on its destination (partitions, slots) and which
    of them may go back to its source: another topic, same group, a broker that may host (and lead
    a leader), both topics' counts within their bands, racks kept."""
    rep = st.rep
    parts, slots, dests = offers
    src = rep[parts, slots].astype(np.int64)
    qseg = dests.astype(np.int64) * 2 + (slots == 0)
    idx, ok = index.near(st, qseg, parts)
    cp, ck = index.parts[idx], index.slots[idx]  # (n, 2W) partner partition and slot
    ok &= (cells(rep, cp, ck) == dests[:, None]) & ((ck == 0) == (slots == 0)[:, None])  # not moved since indexed
    t, u = st.ptopic[parts], st.ptopic[cp]
    ok &= u != t[:, None]
    ok &= st.groups.partition[cp] == st.groups.broker[src][:, None]
    ok &= st.can_host[src][:, None] & ((ck != 0) | st.can_lead[src][:, None])
    give, take = may_give_take(st.tcount, b.topic_lo, b.topic_hi)
    ok &= cells(give, u, dests[:, None]) & cells(take, u, src[:, None])
    idx, ok = nearest(ok, idx)
    cp, ck, u = index.parts[idx], index.slots[idx], st.ptopic[index.parts[idx]]
    for column in rep.T:  # the partner's partition not already on s (column by column: no (n, K, W) array)
        ok &= column[cp] != src[:, None]
    lead_on = b.topic_leader_on[u] & (ck == 0)
    if lead_on.any():
        lgive, ltake = may_give_take(st.tlead, b.lead_lo, b.lead_hi)
        ok &= ~lead_on | (lgive[u, dests[:, None]] & ltake[u, src[:, None]])
    if st.options.hard("rack-awareness"):
        rows = rep[cp]
        v = rows != NO_BROKER
        racks = np.where(v, st.rack[np.maximum(rows, 0)], -1)
        np.put_along_axis(racks, ck[..., None], -1, axis=2)
        same = (racks == st.rack[src][:, None, None]).sum(axis=2)
        allowed = np.ceil(v.sum(axis=2) / np.maximum(nracks[st.groups.partition[cp]], 1))
        ok &= same + 1 <= allowed
    return cp, ck, ok


def leader_swaps(st: State, b: Bands, parts: Ints, slots: Ints, *, index: PartnerIndex) -> int:
    """Pair each offered leadership move (``parts`` led by s, new leader at ``slots`` on d) with a
    leadership of another topic going from d back to s, inside a replica set holding both.

    Leader counts stay; leader bytes-in, network out and CPU move by the difference, so the partner
    is the one nearest in size. Returns swaps made.
    """
    if parts.size == 0:
        return 0
    rep = st.rep
    nb = st.model.num_brokers
    fp, fk = index.parts, index.slots
    top = most_needed(st.tlead, b.lead_hi, st.ptopic[parts], rep[parts, 0])
    parts, slots = parts[top], slots[top]
    s = rep[parts, 0].astype(np.int64)
    d = rep[parts, slots].astype(np.int64)
    qseg = d * nb + s  # partitions led by d with a follower on s
    idx, ok = index.near(st, qseg, parts)
    cp, ck = fp[idx], fk[idx]
    ok &= (rep[cp, 0] == d[:, None]) & (rep[cp, ck] == s[:, None])  # not changed since indexed
    t, u = st.ptopic[parts], st.ptopic[cp]
    ok &= u != t[:, None]
    ok &= st.can_lead[s][:, None]
    on = b.topic_leader_on[u]
    lgive, ltake = may_give_take(st.tlead, b.lead_lo, b.lead_hi)
    ok &= ~on | (lgive[u, d[:, None]] & ltake[u, s[:, None]])
    idx, ok = nearest(ok, idx)
    cp, ck = fp[idx], fk[idx]
    vx = st.lead[parts] - st.follow[parts]
    vy = st.lead[cp] - st.follow[cp]
    net = vx[:, None, :] - vy
    ok &= _fits(st, b, s, d, net)
    cost = (np.abs(net) * _weights(st, b, s)[:, None, :]).sum(axis=2)
    found, j = _best_partners(ok, cost)
    p, k, ss, dd = parts[found], slots[found], s[found], d[found]
    q, qk, net1 = cp[found, j], ck[found, j], net[found, j]
    tt, uu = st.ptopic[p], st.ptopic[q]
    keep = within_budget(st.tlead, b.lead_lo, b.lead_hi, (tt, ss, -1), (tt, dd, 1), (uu, dd, -1), (uu, ss, 1))
    keep &= _first_partition(p, q)
    p, k, ss, dd, q, qk, net1 = p[keep], k[keep], ss[keep], dd[keep], q[keep], qk[keep], net1[keep]
    acc = accept_together(st, b, src=ss, dst=dd, v=net1)
    st.swap_leader(p[acc], k[acc])
    st.swap_leader(q[acc], qk[acc])
    return int(acc.sum())
