"""Per-topic spread goals: a topic's replicas (and leaders) spread evenly over its group's brokers.

These are the last goals. Each round, vectorised over every topic: every broker holding too many
of a topic (or, when some broker holds too few, more than it needs) offers its smallest partitions
of that topic; each gets the emptiest allowed broker for that topic (rack spread, confinement,
exclusions); one item per (topic, source) and per (topic, destination) per round. The round's
items are accepted together only where no broker's distance to any guarded band grows, so no
earlier goal gets worse.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import numpy as np

from kafka_balancer.model.cluster import NO_BROKER, BoolArray, FloatArray
from kafka_balancer.planner.base.arrays import Ints, cells, ranks
from kafka_balancer.planner.base.checks import Bands, accept_together, compute_bands
from kafka_balancer.planner.base.measures import topic_brokers
from kafka_balancer.planner.base.state import State
from kafka_balancer.planner.catalogue import Q_DISK, Q_LEADERS, Q_REPLICAS, TOPIC_LEADER_GOAL
from kafka_balancer.planner.distribution.topic_chains import leader_chains
from kafka_balancer.planner.distribution.topic_swaps import (
    MAX_OFFERS,
    SIZE_CAP,
    Offers,
    PartnerIndex,
    leader_index,
    leader_swaps,
    most_needed,
    replica_index,
    replica_swaps,
)

# Smallest partitions offered per (topic, source broker) and round: the spread goal is about
# counts, so the cheapest items go first; a few alternatives cover rack and placement conflicts.
OFFERS_PER_SOURCE: Final = 3
# Offers per (topic, source) for the swap pass, whose partners must also match in size.
SWAP_OFFERS: Final = 4
# Emptiest brokers (for the topic) per rack that an offered replica may go to; a topic with more
# replicas above its band than that gives all racks gets up to WIDE_DESTS_PER_RACK (a round moves at
# most one of a topic onto each broker: at 4 per rack, one topic of 16,473 partitions of
# bench.strong_skew, 1,500 replicas above its band, ran out of rounds at 24 moves a round).
DESTS_PER_RACK: Final = 4
WIDE_DESTS_PER_RACK: Final = 16
# Rounds between rebuilds of the swap pass's partner index (a sort over every replica).
REINDEX: Final = 8
# Candidates whose destination is chosen at once (bounds the candidates x brokers matrices).
CHUNK: Final = 16384
# One-way offers placed per round (at millions of replicas most are refused by one round's bands
# and per-destination limits; placing them all cost 0.5 s a round at 2.8M replicas).
ONE_WAY_OFFERS: Final = 4 * MAX_OFFERS


def balance_topic_goal(
    st: State, goal: str, *, size_cap: float = SIZE_CAP, rounds: int | None = None, chains_share: float = 1.0
) -> int:
    """Rounds of batched moves until the topic goal holds or nothing can move. Returns moves made.

    ``chains_share`` scales the per-call caps of the leader chains that follow the rounds.
    """
    leaders = goal == TOPIC_LEADER_GOAL
    nracks = st.group_racks()
    size_rank = np.empty(st.model.num_partitions, dtype=np.int64)
    size_rank[np.argsort(st.model.size_bytes, kind="stable")] = np.arange(st.model.num_partitions)
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
        if index is None or rnd % REINDEX == 0:
            index = leader_index(st, size_rank) if leaders else replica_index(st, size_rank)
        if leaders:
            moved += leader_swaps(st, b, parts, dests, index=index)
        else:
            moved += replica_swaps(st, b, Offers(parts, slots, dests), index=index, nracks=nracks, size_cap=size_cap)
        total += moved
        if moved == 0:
            break
    if leaders:
        total += leader_chains(st, compute_bands(st), share=chains_share)
    return total


@dataclass(frozen=True)
class TopicSpread:
    """One round's per-topic counts (T, B) and which brokers are over, under, or may give."""

    counts: Ints
    over: BoolArray
    under: BoolArray
    gives: BoolArray
    hi: Ints


def topic_spread(st: State, b: Bands, *, leaders: bool) -> TopicSpread:
    counts = st.tlead if leaders else st.tcount
    # The band edges are whole numbers: compared as the counts' integers, not as floats (which
    # converts the whole topics x brokers matrix, twice the cost).
    lo, hi = (b.lead_lo, b.lead_hi) if leaders else (b.topic_lo, b.topic_hi)
    lo, hi = lo.astype(counts.dtype), hi.astype(counts.dtype)
    receiver = st.can_lead if leaders else st.can_host
    in_group = topic_brokers(st)
    if leaders:
        in_group &= b.topic_leader_on[:, None]
    over: BoolArray = in_group & (counts > hi[:, None])
    below = counts < lo[:, None]
    # Only the topics with a count below their band can have a broker under it (few, once the
    # goals have run): the rest of the T x B work is skipped for the others.
    rows = np.flatnonzero(below.any(axis=1))
    under: BoolArray = np.zeros_like(below)
    under[rows] = in_group[rows] & below[rows] & receiver[None, :]
    # A broker gives when it is over the band, or when another broker is under and it can spare one.
    short = rows[under[rows].any(axis=1)]
    gives = over.copy()
    gives[short] |= in_group[short] & (counts[short] > lo[short, None]) & (counts[short] > 0)
    return TopicSpread(counts, over, under, gives, hi.astype(np.int64))


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

    ``for_swaps``: SWAP_OFFERS per (topic, source) and no uniqueness; the swap pass picks among them
    by how well a partner fits, then keeps one per (topic, broker).
    """
    spread = topic_spread(st, b, leaders=leaders)
    per_source = SWAP_OFFERS if for_swaps else OFFERS_PER_SOURCE
    parts, slots = _offers(st, spread, leaders=leaders, size_rank=size_rank, per_source=per_source)
    # Place only the most needed offers (the swap pass pairs at most MAX_OFFERS per round, twice
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
        limit=2 * MAX_OFFERS if for_swaps else ONE_WAY_OFFERS,
    )
    parts, slots = parts[top], slots[top]
    fill = st.load[:, Q_DISK] / np.maximum(b.avg[:, Q_DISK], 1e-12)
    none = np.zeros((0, 0), dtype=np.int64)
    cands, usable = (none, none.astype(np.bool_)) if leaders else _receivers(st, spread, np.unique(st.ptopic[parts]))
    targets = _Targets(st, spread, cands, usable, nracks, fill)
    p, k, d = targets.place(parts, slots, leaders=leaders, spread_picks=not for_swaps)
    if for_swaps:
        return p, k, d
    t = st.ptopic[p]
    src = st.rep[p, 0] if leaders else st.rep[p, k]
    if not leaders:
        # Per topic, the sources furthest above its band first, then those holding the most disk for
        # their group, so that when two brokers could give to the same destination, the one that
        # needs it more does.
        above = spread.counts[t, src] - spread.hi[t]
        order = np.lexsort((size_rank[p], src, -np.minimum(fill[src], 5.0), -above, t))
        p, k, d, t, src = p[order], k[order], d[order], t[order], src[order]
    # Candidates come sorted by topic, source and size: per (topic, source) as many as it holds above
    # the band (one when it only gives to an under-band broker), then the first per (topic,
    # destination), then one per partition.
    excess = spread.counts[t, src] - spread.hi[t]
    allowed = np.where(leaders, 1, np.maximum(excess, 1))
    keep = (ranks(t.astype(np.int64) * st.model.num_brokers + src) < allowed) & _first(t, d) & _first(p)
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


def _receivers(st: State, spread: TopicSpread, topics: Ints) -> tuple[Ints, BoolArray]:
    """Per topic and rack, the allowed brokers holding fewest of the topic, fewest first: (T, R x K),
    and which of them the topic may use (its first :func:`_widths` of each rack).

    Choosing among these instead of every broker keeps the per-offer work independent of the
    cluster size; per rack, so that a replica that must stay in its rack still finds one.
    """
    nt, nb = spread.counts.shape
    # Ties in count broken by a fixed pseudo-random order per topic: the same first brokers for
    # every topic would draw a round's offers onto a handful of brokers, whose bands then refuse most.
    counts = spread.counts[topics].astype(np.float64) + _tie_break(topics, nb)
    # Only the topic's own group's brokers: another group's hold none of it and would take the places.
    own = st.groups.broker[None, :] == st.groups.topic[topics][:, None]
    racks = np.unique(st.rack[st.can_host])
    width = _widths(spread, topics, racks.size)
    k = min(int(width.max(initial=DESTS_PER_RACK)), nb)
    out, usable = [], []
    for r in racks.tolist():
        masked = np.where((st.can_host & (st.rack == r))[None, :] & own, counts, np.inf)
        idx = np.argpartition(masked, k - 1, axis=1)[:, :k] if k < nb else np.broadcast_to(np.arange(nb), masked.shape)
        idx = np.take_along_axis(
            idx, np.argsort(np.take_along_axis(masked, idx, axis=1), axis=1, kind="stable"), axis=1
        )
        out.append(idx)
        usable.append(np.arange(k)[None, :] < width[:, None])
    cands: Ints = np.zeros((nt, k * len(out)), dtype=np.int64)
    use: BoolArray = np.zeros((nt, k * len(out)), dtype=np.bool_)
    if out:
        cands[topics] = np.concatenate(out, axis=1)
        use[topics] = np.concatenate(usable, axis=1)
    return cands, use


def _widths(spread: TopicSpread, topics: Ints, nracks: int) -> Ints:
    """Destinations per rack for each of ``topics``: enough for all its replicas above its band in
    one round, at least DESTS_PER_RACK, at most WIDE_DESTS_PER_RACK."""
    above = np.maximum(spread.counts[topics] - spread.hi[topics][:, None], 0).sum(axis=1)
    width: Ints = np.clip(-(-above // max(nracks, 1)), DESTS_PER_RACK, WIDE_DESTS_PER_RACK).astype(np.int64)
    return width


def _tie_break(topics: Ints, nb: int) -> FloatArray:
    """(len(topics), nb) values in [0, 0.5), fixed per (topic, broker): a deterministic shuffle
    (the splitmix64 finaliser of the pair's index, so every broker comes first equally often)."""
    x = topics.astype(np.uint64)[:, None] * np.uint64(nb) + np.arange(nb, dtype=np.uint64)[None, :]
    x = x + np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    x = x ^ (x >> np.uint64(31))
    out: FloatArray = (x >> np.uint64(40)).astype(np.float64) / float(1 << 25)
    return out


@dataclass(frozen=True)
class _Targets:
    """Where a round's offers may go: per topic, the emptiest allowed brokers of each rack (``cands``
    and which of them it may use, see :func:`_receivers`); ``fill`` is each broker's disk over its
    group's average."""

    st: State
    spread: TopicSpread
    cands: Ints
    usable: BoolArray
    nracks: Ints
    fill: FloatArray

    def place(self, parts: Ints, slots: Ints, *, leaders: bool, spread_picks: bool) -> tuple[Ints, Ints, Ints]:
        """The offers that find a destination: (partitions, slots, destinations), in chunks of CHUNK.

        With ``spread_picks`` the r-th offer of a (topic, source) takes the r-th best destination, so
        that a broker far over a topic's band gives several replicas in one round (each to a
        different broker); else every offer takes the best one."""
        st = self.st
        src_all = st.rep[parts, 0] if leaders else st.rep[parts, slots]
        pick = ranks(st.ptopic[parts].astype(np.int64) * st.model.num_brokers + src_all)
        out_p, out_s, out_d = [], [], []
        for start in range(0, parts.size, CHUNK):
            p, k = parts[start : start + CHUNK], slots[start : start + CHUNK]
            r = pick[start : start + CHUNK]
            d, ok = (
                _leader_dest(st, p, self.spread) if leaders else self.replica_dest(p, k, r if spread_picks else 0 * r)
            )
            out_p.append(p[ok])
            out_s.append(k[ok])
            out_d.append(d[ok])
        if not out_p:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty, empty
        return np.concatenate(out_p), np.concatenate(out_s), np.concatenate(out_d)

    def replica_dest(self, p: Ints, k: Ints, pick: Ints) -> tuple[Ints, BoolArray]:
        """For each offered replica, the ``pick``-th (0 = best) allowed broker holding fewest of its topic
        (and whether it exists)."""
        st, spread, cands, nracks, fill = self.st, self.spread, self.cands, self.nracks, self.fill
        counts, over, under, hi = spread.counts, spread.over, spread.under, spread.hi
        rows = st.rep[p]
        t = st.ptopic[p]
        n = np.arange(p.size)
        src = rows[n, k]
        dest = cands[t]  # (n, C) broker indices
        c_dest = cells(counts, t[:, None], dest)
        c_src = counts[t, src]
        u = cells(under, t[:, None], dest)
        feas = self.usable[t] & st.can_host[dest] & (st.groups.broker[dest] == st.groups.partition[p][:, None])
        for column in rows.T:  # not onto a broker holding the partition (column by column: no (n, W, C) array)
            feas &= column[:, None] != dest
        feas &= (k != 0)[:, None] | st.can_lead[dest]
        feas &= c_dest <= c_src[:, None] - 2
        feas &= (c_dest + 1 <= hi[t][:, None]) | u
        feas &= over[t, src][:, None] | u
        if st.options.hard("rack-awareness"):
            valid = rows != NO_BROKER
            racks = np.where(valid, st.rack[np.maximum(rows, 0)], -1)
            racks[n, k] = -1
            dest_racks = st.rack[dest]
            same = np.zeros(dest.shape, dtype=np.int64)
            for column in racks.T:
                same += column[:, None] == dest_racks
            allowed = np.ceil(valid.sum(axis=1) / np.maximum(nracks[st.groups.partition[p]], 1))
            feas &= same + 1 <= allowed[:, None]
        # Fewest of the topic first; among equals, the broker with least disk for its group (a tie-break
        # below one count: where the bytes land should not add work for the disk goal).
        score = np.where(feas, c_dest + 0.1 * np.minimum(fill[dest], 5.0), np.inf)
        # The best is the first minimum (as a stable sort's first); only the later picks need a sort.
        j = np.argmin(score, axis=1)
        later = np.flatnonzero(pick > 0)
        if later.size:
            by_score = np.argsort(score[later], axis=1, kind="stable")
            j[later] = by_score[np.arange(later.size), np.minimum(pick[later], score.shape[1] - 1)]
        return dest[n, j], feas[n, j]


def _leader_dest(st: State, p: Ints, spread: TopicSpread) -> tuple[Ints, BoolArray]:
    """For each offered leadership, the slot of the follower whose broker leads fewest of the topic."""
    counts, over, under, hi = spread.counts, spread.over, spread.under, spread.hi
    rows = st.rep[p]
    t = st.ptopic[p]
    n = np.arange(p.size)
    safe = np.maximum(rows, 0)
    src = rows[:, 0]
    c = counts[t[:, None], safe]  # (n, W)
    c_src = c[:, 0]
    feas = (rows != NO_BROKER) & st.can_lead[safe] & st.active[safe]
    feas[:, 0] = False
    feas &= c <= c_src[:, None] - 2
    u = under[t[:, None], safe]
    feas &= (c + 1 <= hi[t][:, None]) | u
    feas &= over[t, src][:, None] | u
    score = np.where(feas, c, np.iinfo(np.int32).max)
    j = np.argmin(score, axis=1)
    # For leaders the "destination" returned is the slot of the new leader, not a broker.
    return j.astype(np.int64), feas[n, j]


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
