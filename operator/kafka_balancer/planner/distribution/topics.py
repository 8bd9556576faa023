"""Per-topic spread goals: a topic's replicas (and leaders) spread evenly over its group's brokers.

These are the last goals. Each round, vectorised over every topic: every broker holding too many
of a topic (or, when some broker holds too few, more than it needs) offers its smallest partitions
of that topic; each gets the emptiest allowed broker for that topic (rack spread, confinement,
exclusions); one item per (topic, source) and per (topic, destination) per round. The round's
items are accepted together only where no broker's distance to any guarded band grows, so no
earlier goal gets worse.
"""

from __future__ import annotations

import numpy as np

from kafka_balancer.model.cluster import NO_BROKER, BoolArray
from kafka_balancer.planner.base.arrays import Ints, cells, ranks
from kafka_balancer.planner.base.round_bands import Bands, compute_bands
from kafka_balancer.planner.base.state import State
from kafka_balancer.planner.base.together import accept_together
from kafka_balancer.planner.catalogue import Q_DISK, Q_LEADERS, Q_REPLICAS, TOPIC_LEADER_GOAL
from kafka_balancer.planner.distribution.partners import PartnerIndex, leader_index, replica_index
from kafka_balancer.planner.distribution.topic_chains import leader_chains
from kafka_balancer.planner.distribution.topic_swaps import (
    Offers,
    leader_swaps,
    most_needed,
    replica_swaps,
)
from kafka_balancer.planner.distribution.topic_targets import Targets, TopicSpread, receivers, topic_spread
from kafka_balancer.planner.tuning import TUNING


def balance_topic_goal(
    st: State,
    goal: str,
    *,
    size_cap: float = TUNING.topic_swap_size_cap,
    rounds: int | None = None,
    chains_share: float = 1.0,
) -> int:
    """Rounds of batched moves until the topic goal holds or nothing can move. Returns moves made.

    ``chains_share`` scales the per-call caps of the leader chains that follow the rounds.
    """
    leaders = goal == TOPIC_LEADER_GOAL
    nracks = st.group_racks()
    size_rank = np.empty(st.model.num_partitions, dtype=np.int64)
    size_rank[np.argsort(st.model.copy_bytes, kind="stable")] = np.arange(st.model.num_partitions)
    total = 0
    index: PartnerIndex | None = None
    for rnd in range(rounds or st.options.max_rounds):
        if st.budget.spent():
            break
        b = compute_bands(st)
        parts, slots, dests = _proposals(st, b, leaders=leaders, nracks=nracks, size_rank=size_rank)
        moved = _apply(st, b, parts, slots, dests, leaders=leaders)
        # What is still out of band (one-way moves refused: the brokers' count or load bands are at
        # their edges) is traded for partners of other topics coming back. Every round, not only
        # when some offer was refused: a topic's plan must not depend on other groups' offers.
        b = compute_bands(st)
        parts, slots, dests = _proposals(st, b, leaders=leaders, nracks=nracks, size_rank=size_rank, for_swaps=True)
        if index is None or rnd % TUNING.topic_reindex == 0:
            index = leader_index(st, size_rank) if leaders else replica_index(st, b, size_rank)
        if leaders:
            moved += leader_swaps(st, b, parts, dests, index=index)
        else:
            moved += replica_swaps(st, b, Offers(parts, slots, dests), index=index, nracks=nracks, size_cap=size_cap)
        total += moved
        if moved == 0:
            break
    if leaders:
        total += leader_chains(st, compute_bands(st), share=chains_share)
        total += _leader_replica_trades(st, nracks=nracks, size_rank=size_rank)
    return total


def _leader_replica_trades(st: State, *, nracks: Ints, size_rank: Ints) -> int:
    """What the leaderships and chains leave of the leader spread out of band, where no path of the
    topic's own partitions reaches a broker with room (every broker they touch leads its share), by
    data: a leader replica of the topic goes to a broker leading fewer of it, and a leader replica of
    another topic of similar size comes back (leader and replica counts stay). Rounds until nothing
    moves. On the clusters of bench.strong_skew (96 and 270 brokers) small topics (band 0-1) kept a
    broker leading two: both partitions' only follower was one broker, which already led one."""
    total = 0
    for _ in range(st.options.max_rounds):
        if st.budget.spent():
            break
        b = compute_bands(st)
        spread = topic_spread(st, b, leaders=True)
        parts, slots = _offers(
            st, spread, leaders=True, size_rank=size_rank, per_source=TUNING.topic_swap_offers_per_source
        )
        if parts.size == 0:
            break
        cands, usable = receivers(st, spread, np.unique(st.ptopic[parts]))
        fill = st.load[:, Q_DISK] / np.maximum(b.avg[:, Q_DISK], 1e-12)
        offers = Offers(*Targets(st, spread, cands, usable, nracks, fill).place(parts, slots, leaders=False))
        index = replica_index(st, b, size_rank, leaders=True)
        moved = replica_swaps(st, b, offers, index=index, nracks=nracks, size_cap=1.0)
        total += moved
        if moved == 0:
            break
    return total


def _offers(st: State, spread: TopicSpread, *, leaders: bool, size_rank: Ints, per_source: int) -> tuple[Ints, Ints]:
    """The smallest movable replica slots of each giving (topic, broker): ``per_source`` plus as many
    as the broker holds above the topic's band (so that one round can bring it down)."""
    rep = st.rep
    valid = rep != NO_BROKER
    if leaders:
        valid[:, 1:] = False
    safe = np.maximum(rep, 0)
    mask = valid & st.scope.movable[:, None] & cells(spread.gives, st.ptopic[:, None], safe)
    parts, slots = np.nonzero(mask)
    if parts.size == 0:
        return parts.astype(np.int64), slots.astype(np.int64)
    # Sorted by (topic, broker, leader or follower, size rank): each group's first items are its
    # smallest followers. A leader replica moves its leadership too, which the leader-count band of
    # both brokers must allow: where every broker sat at an edge of it, one topic's moves off the
    # busiest brokers of bench.strong_skew were all refused while it still had followers there to
    # offer. The keys are unique (one slot per partition and broker), so any sort gives the same,
    # deterministic order.
    group = st.ptopic[parts].astype(np.int64) * st.model.num_brokers + rep[parts, slots]
    lead = (slots == 0) & (not leaders)
    order = np.argsort((group * 2 + lead) * max(size_rank.size, 1) + size_rank[parts])
    parts, slots, group = parts[order], slots[order], group[order]
    first = np.r_[True, group[1:] != group[:-1]]
    start = np.maximum.accumulate(np.where(first, np.arange(parts.size), 0))
    t, b = st.ptopic[parts], rep[parts, slots]
    excess = np.maximum(spread.counts[t, b] - spread.hi[t], 0)
    keep = np.arange(parts.size) - start < per_source + excess
    return parts[keep].astype(np.int64), slots[keep].astype(np.int64)


def _proposals(
    st: State, b: Bands, *, leaders: bool, nracks: Ints, size_rank: Ints, for_swaps: bool = False
) -> tuple[Ints, Ints, Ints]:
    """(partitions, slots, destination brokers): at most one item per (topic, source) and (topic, destination).

    ``for_swaps``: ``TUNING.topic_swap_offers_per_source`` per (topic, source) and no uniqueness; the
    swap pass picks among them by how well a partner fits, then keeps one per (topic, broker).
    """
    spread = topic_spread(st, b, leaders=leaders)
    per_source = TUNING.topic_swap_offers_per_source if for_swaps else TUNING.topic_offers_per_source
    parts, slots = _offers(st, spread, leaders=leaders, size_rank=size_rank, per_source=per_source)
    # Place only the most needed offers (the swap pass pairs at most TUNING.topic_swap_offers per round, twice
    # that as some find no destination), not every offer of a cluster of millions of replicas: a
    # round's one-way moves are a fraction of its offers anyway; later rounds take the rest.
    src = st.rep[parts, 0] if leaders else st.rep[parts, slots]
    if not for_swaps:
        # A one-way move off a broker at the lower edge of a guarded count band is refused when
        # applied; offered, it would take a destination of its topic that another source could use.
        gives = _above_count_floor(st, b, src, lead=np.full(src.size, leaders) | (slots == 0))
        parts, slots, src = parts[gives], slots[gives], src[gives]
    top = most_needed(
        spread.counts,
        spread.hi.astype(np.float64),
        st.ptopic[parts],
        src,
        limit=2 * TUNING.topic_swap_offers if for_swaps else TUNING.topic_one_way_offers,
    )
    parts, slots = parts[top], slots[top]
    fill = st.load[:, Q_DISK] / np.maximum(b.avg[:, Q_DISK], 1e-12)
    none = np.zeros((0, 0), dtype=np.int64)
    cands, usable = (none, none.astype(np.bool_)) if leaders else receivers(st, spread, np.unique(st.ptopic[parts]))
    targets = Targets(st, spread, cands, usable, nracks, fill)
    p, k, d = targets.place(parts, slots, leaders=leaders)
    if for_swaps:
        return p, k, d
    t = st.ptopic[p]
    src = st.rep[p, 0] if leaders else st.rep[p, k]
    excess = spread.counts[t, src] - spread.hi[t]
    if not leaders:
        # Per topic, the sources furthest above its band first, then those holding the most disk for
        # their group, so that when two brokers could give to the same destination, the one that
        # needs it more does.
        order = np.lexsort((size_rank[p], src, -np.minimum(fill[src], 5.0), -excess, t))
        p, k, d, t, src, excess = p[order], k[order], d[order], t[order], src[order], excess[order]
    # Candidates come sorted by topic, source and size: per (topic, source) as many as it holds above
    # the band (one when it only gives to an under-band broker), one per partition, then per (topic,
    # destination) as many as it lacks below the band (one when it is not under it); leaderships
    # alike, their destination being the new leader's broker. At 96 brokers of bench.strong_skew,
    # one per destination left 9 brokers short of a topic by 40 to 214 replicas each when its 40
    # rounds ran out; one leadership per (topic, source) and per (topic, new leader's slot) stalled
    # the topic-leader goal's rounds at 1.3M replicas with 4,478 leaderships out of band.
    keep = (ranks(t.astype(np.int64) * st.model.num_brokers + src) < np.maximum(excess, 1)) & _first(p)
    p, k, d, t = p[keep], k[keep], d[keep], t[keep]
    dest = st.rep[p, d] if leaders else d  # for leaderships, d is the new leader's slot
    lacking = np.where(spread.under[t, dest], spread.lo[t] - spread.counts[t, dest], 1)
    keep = ranks(t.astype(np.int64) * st.model.num_brokers + dest) < lacking
    return p[keep], k[keep], d[keep]


def _above_count_floor(st: State, b: Bands, src: Ints, *, lead: BoolArray) -> BoolArray:
    """Sources that may lose a replica (and, where ``lead``, a leadership) without going below the
    lower edge of the replica-count (leader-count) band, where that goal is guarded."""
    above: BoolArray = st.load[src, Q_REPLICAS] > b.lower[src, Q_REPLICAS]
    above &= ~lead | (st.load[src, Q_LEADERS] > b.lower[src, Q_LEADERS])
    return above


def _first(*keys: Ints) -> BoolArray:
    """Marks the first occurrence (in the current order) of each key tuple."""
    order = np.lexsort((np.arange(keys[0].size), *reversed(keys)))
    sorted_keys = [k[order] for k in keys]
    new = np.ones(order.size, dtype=np.bool_)
    if order.size > 1:
        same = np.ones(order.size - 1, dtype=np.bool_)
        for k in sorted_keys:
            same &= k[1:] == k[:-1]
        new[1:] = ~same
    out = np.zeros(order.size, dtype=np.bool_)
    out[order] = new
    return out


def _apply(st: State, b: Bands, parts: Ints, slots: Ints, dests: Ints, *, leaders: bool) -> int:
    """Apply the largest subset of the proposals under which no broker gets further from any guarded band.

    All proposals are tried at once; each broker whose distance would grow on some quantity drops
    the items pushing it that way (incoming items when it would end too high, outgoing ones when
    too low), and the rest is checked again. Returns the number of items moved.
    """
    if parts.size == 0:
        return 0
    if leaders:
        src, dst, j = st.rep[parts, 0], st.rep[parts, dests], dests
        v = st.lead[parts] - st.follow[parts]
    else:
        src, dst, j = st.rep[parts, slots], dests, slots
        v = st.slot_loads(parts, slots)
        if TOPIC_LEADER_GOAL in st.scope.guarded:
            keep_followers = slots != 0  # a moving leader could crowd its topic's leaders: followers only
            parts, src, dst, j, v = (
                parts[keep_followers],
                src[keep_followers],
                dst[keep_followers],
                j[keep_followers],
                v[keep_followers],
            )
    keep = accept_together(st, b, src=src, dst=dst, v=v)
    p = parts[keep]
    if leaders:
        st.swap_leader(p, j[keep])
    else:
        st.move(p, j[keep], dst[keep].astype(np.int32))
    return int(p.size)
