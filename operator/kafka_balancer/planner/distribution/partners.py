"""Partners for the per-topic exchanges (:mod:`kafka_balancer.planner.distribution.topic_swaps`),
found by size: every candidate partner sorted by (broker key, size rank) in a :class:`PartnerIndex`,
and each offer looks at the TUNING.partner_window nearest in size, so the work per round is a few sorts over the
cluster; of those, the TUNING.partners nearest that pass the cheap tests go on to the bands."""

from __future__ import annotations

from typing import Final, NamedTuple

import numpy as np

from kafka_balancer.model.cluster import NO_BROKER, BoolArray, FloatArray
from kafka_balancer.planner.base.arrays import Ints, cells
from kafka_balancer.planner.base.round_bands import Bands
from kafka_balancer.planner.base.state import State
from kafka_balancer.planner.catalogue import TOPIC_LEADER_GOAL
from kafka_balancer.planner.tuning import TUNING


def size_share(st: State, size_rank: Ints) -> FloatArray:
    """Each partition's rank by size among its resource group's partitions, as a share (0 = smallest):
    per group, so that a group planned on its own caps the same partitions as in the whole cluster."""
    group = st.groups.partition.astype(np.int64)
    order = np.lexsort((size_rank, group))
    counts = np.bincount(group, minlength=len(st.groups.names))
    start = np.r_[0, np.cumsum(counts)[:-1]]
    rank = np.empty(group.size, dtype=np.float64)
    rank[order] = np.arange(group.size) - start[group[order]]
    out: FloatArray = rank / np.maximum(counts[group], 1)
    return out


def may_give_take(counts: Ints, lo: FloatArray, hi: FloatArray) -> tuple[BoolArray, BoolArray]:
    """(T, B) masks: a broker may give one of a topic (stays at or above the band's lower edge) /
    take one (stays at or below the upper edge) without its count ending further from the band."""
    give: BoolArray = counts > lo[:, None]
    take: BoolArray = counts < hi[:, None]
    return give, take


def _window(index: PartnerIndex, topics: Ints, query: FloatArray, segment: tuple[Ints, Ints]) -> tuple[Ints, BoolArray]:
    """Positions of the TUNING.partner_window keys on each side of ``query`` that are not of the offer's topic
    (``topics``), and which of them lie inside the offer's segment [lo, hi).

    The offer's own topic can never be its partner, and a topic of many equal partitions filled the
    whole window: at 96 brokers of bench.strong_skew, 55-60% of the 96 replicas nearest in size to
    an offer of a topic of 41,178 tiny replicas were of that topic. The walk steps over each run of
    them in one jump (:func:`_topic_runs`)."""
    size = index.keys.size
    pos = np.searchsorted(index.keys, query)
    idx = np.zeros((pos.size, 2 * TUNING.partner_window), dtype=np.int64)
    if size == 0:
        return idx, idx != 0
    run_start, run_end = index.runs
    right, left = pos, pos - 1
    last = max(size - 1, 0)
    for j in range(TUNING.partner_window):
        at = np.minimum(right, last)
        right = np.where((right < size) & (index.topics[at] == topics), run_end[at], right)
        idx[:, TUNING.partner_window + j] = right
        at = np.maximum(left, 0)
        left = np.where((left >= 0) & (index.topics[at] == topics), run_start[at] - 1, left)
        idx[:, TUNING.partner_window - 1 - j] = left
        right, left = right + 1, left - 1
    lo, hi = segment
    ok: BoolArray = (idx >= lo[:, None]) & (idx < hi[:, None])
    out: Ints = np.clip(idx, 0, last)
    return out, ok


def _topic_runs(topics: Ints) -> tuple[Ints, Ints]:
    """For each position, where its run of neighbours of the same topic starts, and one past where it ends."""
    n = topics.size
    changes = topics[1:] != topics[:-1]
    start: Ints = np.maximum.accumulate(np.where(np.r_[True, changes], np.arange(n), 0))
    end: Ints = np.minimum.accumulate(np.where(np.r_[changes, True], np.arange(1, n + 1), n)[::-1])[::-1]
    return start, end


class PartnerIndex(NamedTuple):
    """Candidate partners sorted by (segment, size rank): partitions, slots, sort keys, and the size
    ranks keyed on (see :func:`replica_index`, :func:`leader_index`). A segment's bounds are found
    in the keys when asked for (a table of every segment's start would have one entry per broker
    pair: 10^8 at 10,000 brokers). ``size_share``: each partition's :func:`size_share` (kept with the
    index: it depends only on sizes and groups, and a round would sort every partition for it)."""

    parts: Ints
    slots: Ints
    keys: FloatArray
    size_rank: Ints
    size_share: FloatArray
    topics: Ints  # each entry's topic
    runs: tuple[Ints, Ints]  # :func:`_topic_runs` of ``topics``
    leaders: bool = False  # leader replicas only: partners for the topic-leader goal's trades

    @staticmethod
    def of(st: State, entries: tuple[Ints, Ints], keys: FloatArray, size_rank: Ints, *, leaders: bool) -> PartnerIndex:
        """The index of the entries (partitions, slots) sorted by ``keys``."""
        order = np.argsort(keys, kind="stable")
        parts, slots = entries[0][order], entries[1][order]
        topics = st.ptopic[parts].astype(np.int64)
        share = size_share(st, size_rank)
        return PartnerIndex(parts, slots, keys[order], size_rank, share, topics, _topic_runs(topics), leaders)

    def near(self, st: State, segments: Ints, parts: Ints) -> tuple[Ints, BoolArray]:
        """For each of ``parts``, the positions of the 2 x TUNING.partner_window partners of its segment nearest
        in size that are of another topic, and which of them are inside the segment."""
        nparts = max(st.model.num_partitions, 1)
        query = segments + self.size_rank[parts] / nparts
        segment = np.searchsorted(self.keys, segments), np.searchsorted(self.keys, segments + 1)
        return _window(self, st.ptopic[parts].astype(np.int64), query, segment)


def replica_index(st: State, b: Bands, size_rank: Ints, *, leaders: bool = False) -> PartnerIndex:
    """Every movable replica slot whose topic may leave its broker, sorted by (broker, leader or
    follower, size rank); with ``leaders``, the leader slots only (partners for the topic-leader
    goal's leader-replica trades, distribution.topics).

    Built once every few rounds (a sort over the cluster); entries that moved since are skipped
    when used (the slot no longer holds that broker).
    """
    rep = st.rep
    nparts = max(st.model.num_partitions, 1)
    valid = (rep != NO_BROKER) & st.scope.movable[:, None]
    if leaders:
        valid[:, 1:] = False
    elif TOPIC_LEADER_GOAL in st.scope.guarded:
        valid[:, 0] = False
    # Only replicas whose topic may leave their broker (as the bands stood when indexed): the others
    # can never be partners, and a window of them hid those that can. At 96 brokers of
    # bench.strong_skew, the brokers short of a topic of 16,473 tiny partitions had traded away every
    # other topic's replica of that size they could spare, and the partners nearest in size were all
    # of topics at their lower edge there.
    give, _ = may_give_take(st.tcount, b.topic_lo, b.topic_hi)
    valid &= cells(give, st.ptopic[:, None], np.maximum(rep, 0))
    yp, yk = np.nonzero(valid)
    seg = rep[yp, yk].astype(np.int64) * 2 + (yk == 0)
    return PartnerIndex.of(st, (yp, yk), seg + size_rank[yp] / nparts, size_rank, leaders=leaders)


def leader_index(st: State, size_rank: Ints) -> PartnerIndex:
    """Every (leader, follower) pair of every movable partition sorted by (leader, follower, size rank)."""
    rep = st.rep
    nb = st.model.num_brokers
    nparts = max(st.model.num_partitions, 1)
    fp, fk = np.nonzero((rep[:, 1:] != NO_BROKER) & st.scope.movable[:, None])
    fk = fk + 1
    seg = rep[fp, 0].astype(np.int64) * nb + rep[fp, fk]
    return PartnerIndex.of(st, (fp, fk), seg + size_rank[fp] / nparts, size_rank, leaders=False)


# Each window position's rank by distance from the offer (of two at the same distance, the smaller
# partner first), and the keys that put the positions failing a test after every one passing.
_BY_DISTANCE: Final = np.argsort(
    np.argsort(np.abs(np.arange(-TUNING.partner_window, TUNING.partner_window)), kind="stable")
)
_FAILED: Final = 2 * TUNING.partner_window + np.arange(2 * TUNING.partner_window)


def nearest(ok: BoolArray, idx: Ints) -> tuple[Ints, BoolArray]:
    """The cheap tests done, the TUNING.partners nearest in size of each offer (positions, still acceptable):
    those passing by distance, then those failing by position. The keys are distinct, so a partial
    sort of each row's first TUNING.partners gives what a stable sort of the whole window would."""
    key = np.where(ok, _BY_DISTANCE[None, :], _FAILED[None, :])
    first = np.argpartition(key, TUNING.partners - 1, axis=1)[:, : TUNING.partners]
    near = np.take_along_axis(first, np.argsort(np.take_along_axis(key, first, axis=1), axis=1), axis=1)
    return np.take_along_axis(idx, near, axis=1), np.take_along_axis(ok, near, axis=1)
