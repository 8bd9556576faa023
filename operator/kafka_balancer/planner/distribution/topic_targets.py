"""Where a per-topic round's offers may go: each topic's spread over the brokers (which hold too
many, too few, or may give one) and, per topic, the allowed brokers of each rack holding fewest of it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kafka_balancer.model.cluster import NO_BROKER, BoolArray, FloatArray
from kafka_balancer.planner.base.arrays import Ints, cells, ranks
from kafka_balancer.planner.base.measures import topic_brokers
from kafka_balancer.planner.base.round_bands import Bands
from kafka_balancer.planner.base.state import State
from kafka_balancer.planner.tuning import TUNING


@dataclass(frozen=True)
class TopicSpread:
    """One round's per-topic counts (T, B) and which brokers are over, under, or may give."""

    counts: Ints
    over: BoolArray
    under: BoolArray
    gives: BoolArray
    hi: Ints
    lo: Ints


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
    return TopicSpread(counts, over, under, gives, hi.astype(np.int64), lo.astype(np.int64))


def receivers(st: State, spread: TopicSpread, topics: Ints) -> tuple[Ints, BoolArray]:
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
    k = min(int(width.max(initial=TUNING.topic_dests_per_rack)), nb)
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
    one round, at least TUNING.topic_dests_per_rack, at most TUNING.topic_wide_dests_per_rack."""
    above = np.maximum(spread.counts[topics] - spread.hi[topics][:, None], 0).sum(axis=1)
    width: Ints = np.clip(
        -(-above // max(nracks, 1)), TUNING.topic_dests_per_rack, TUNING.topic_wide_dests_per_rack
    ).astype(np.int64)
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
class Targets:
    """Where a round's offers may go: per topic, the emptiest allowed brokers of each rack (``cands``
    and which of them it may use, see :func:`receivers`); ``fill`` is each broker's disk over its
    group's average."""

    st: State
    spread: TopicSpread
    cands: Ints
    usable: BoolArray
    nracks: Ints
    fill: FloatArray

    def place(self, parts: Ints, slots: Ints, *, leaders: bool) -> tuple[Ints, Ints, Ints]:
        """The offers that find a destination: (partitions, slots, destinations), in chunks of TUNING.topic_chunk.

        The r-th offer of a (topic, source) takes the r-th best destination, so that a broker far
        over a topic's band gives several replicas in one round (each to a different broker), and
        its swap offers look for partners on several brokers: all on the topic's emptiest broker,
        they found the same few partners there (at 96 brokers of bench.strong_skew a topic ended
        122 replicas out of band with a few swaps a round when its rounds ran out)."""
        st = self.st
        src_all = st.rep[parts, 0] if leaders else st.rep[parts, slots]
        pick = ranks(st.ptopic[parts].astype(np.int64) * st.model.num_brokers + src_all)
        out_p, out_s, out_d = [], [], []
        for start in range(0, parts.size, TUNING.topic_chunk):
            p, k = parts[start : start + TUNING.topic_chunk], slots[start : start + TUNING.topic_chunk]
            r = pick[start : start + TUNING.topic_chunk]
            d, ok = _leader_dest(st, p, self.spread) if leaders else self.replica_dest(p, k, r)
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
