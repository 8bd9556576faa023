"""The capacity repair's one-way rounds: moves from each broker above a limit to the brokers with most
room, leadership first where leadership carries the load, in passes that first fill each taker only
up to the band of the distribution goal that follows (:func:`one_way_repair`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kafka_balancer.model.cluster import FloatArray
from kafka_balancer.planner.base import measures
from kafka_balancer.planner.base.arrays import Ints, ranks
from kafka_balancer.planner.base.candidates import leader_candidates, replica_candidates
from kafka_balancer.planner.base.pair_checks import Pair, limits_check, take
from kafka_balancer.planner.base.round_bands import compute_bands
from kafka_balancer.planner.base.state import State
from kafka_balancer.planner.base.topic_spread import fit_order, topic_penalty
from kafka_balancer.planner.capacity.room import destinations, over_limit_brokers, room_in_group
from kafka_balancer.planner.catalogue import Q_LEADERS, Q_REPLICAS, TOPIC_REPLICA_GOAL
from kafka_balancer.planner.tuning import TUNING


def one_way_repair(st: State, q: int, nracks: Ints, *, fewest_bytes: bool, leadership_only: bool) -> None:
    """Every one-way pass for ``q`` (:func:`_passes`), each repairing what the ones before it left."""
    for rules in _passes(q, fewest_bytes=fewest_bytes, leadership_only=leadership_only):
        _one_way_rounds(st, q, nracks, rules)


def _one_way_rounds(st: State, q: int, nracks: Ints, rules: _Rules) -> None:
    """Rounds of one-way moves of ``q`` from each broker above its limit to the brokers with most
    room, until none is above or a round moves nothing."""
    for _ in range(st.options.max_rounds):
        over = over_limit_brokers(st, q)
        if over.size == 0 or st.budget.spent():
            break
        index = st.broker_index_by_slot()
        bands = compute_bands(st)
        moved = 0.0
        ceiling = np.minimum(st.limit, _band_tops(st, q)) if rules.to_band else st.limit
        for s in over:
            room = room_in_group(st, int(s), q, index, leadership_only=rules.leadership_only)
            room = np.minimum(room, np.maximum(ceiling[:, q] - st.load[:, q], 0.0))
            for d in destinations(st, room, int(s)):
                if st.load[s, q] <= st.limit[s, q]:
                    break
                pair = Pair(st, bands, int(s), int(d), q, index, nracks)
                moved += _repair_pair(pair, float(room[d]), ceiling[d], rules)
        if moved <= 0:
            break


@dataclass(frozen=True)
class _Rules:
    """How one pass of the one-way capacity repair chooses what moves (see :mod:`.repair`)."""

    count_cap: bool  # no more replicas per pair than the replica-count goal would move
    fewest_bytes: bool  # the fewest bytes that cover the excess (no distribution goal follows)
    leadership_only: bool  # leadership moves only (demote-brokers)
    to_band: bool = False  # takers fill up to their bands' upper edges, not to the limits (_band_tops)


def _passes(q: int, *, fewest_bytes: bool, leadership_only: bool) -> list[_Rules]:
    """The one-way passes for ``q``, each repairing what the ones before it left.

    Where a distribution goal follows, the first pass fills each taker only up to the band that
    goal will hold it to. Filled up to their limits, the new brokers of bench.strong_skew at 270
    brokers took the busiest brokers' traffic in a few replicas each: they ended at their network
    limits with 0.72-0.80x the average replica count, which the replica-count goal could then only
    mend by exchanges, in a second pass of every goal (21 s of a 72 s plan).
    """
    shaped = not fewest_bytes and not leadership_only
    count_cap = q != Q_REPLICAS and shaped
    first = [_Rules(count_cap, fewest_bytes, leadership_only, to_band=True)] if shaped else []
    return [*first, _Rules(count_cap, fewest_bytes, leadership_only), _Rules(False, fewest_bytes, leadership_only)]


def _band_tops(st: State, q: int) -> FloatArray:
    """(B, Q): each broker's upper band edge of ``q`` where a distribution goal balances it, and in
    the replica-count repair of the leader count too (inf elsewhere).

    The replicas moved for the count take their leaderships along: at 96 brokers of
    bench.strong_skew (``maxReplicasPerBroker`` 8000) a new broker took 2,444 leaderships (1.8x the
    average) and its network-out band then kept the leader-count goal from bringing it back. Not
    in the other repairs: there the leader band of a cluster of one-replica partitions is the
    replica band, and a disk repair capped by it left tests/planner/test_planner_count_exchange.py's
    12/30/8 cluster in a state its count exchanges could not mend.
    """
    tops = np.full(st.load.shape, np.inf)
    for goal in st.options.distribution_goals:
        balanced = st.catalogue.balances(goal)
        if balanced is not None and (balanced == q or (q == Q_REPLICAS and balanced == Q_LEADERS)):
            _, tops[:, balanced], _ = measures.bands(st, balanced, st.options.balance_threshold)
    return tops


def _repair_pair(pair: Pair, room: float, ceiling: FloatArray, rules: _Rules) -> float:
    """Move up to the excess of ``q`` from s to d (leadership first where it carries ``q``), d's loads
    staying under ``ceiling``; returns the amount."""
    st, s, d, q = pair.st, pair.s, pair.d, pair.q
    moved = 0.0
    if st.catalogue.leadership_carries(q):
        limits = np.maximum(ceiling - st.load[d], 0.0)
        limits[q] = room
        parts, slots = leader_candidates(st, pair.index, s, d)
        v = st.lead[parts] - st.follow[parts]
        if rules.leadership_only:
            # No goal follows to even the leaders out again: no more elections than the excess needs.
            excess = float(st.load[s, q] - st.limit[s, q])
            limits[q] = min(room, excess + float(v[:, q].max(initial=0.0)))
        # Unmanaged partitions' leadership (State.unmanaged) last: only where the others are not enough.
        ordered = np.lexsort((-v[:, q], st.unmanaged[parts]))
        chosen = take(v[ordered], limits_check(limits))
        st.swap_leader(parts[ordered][chosen], slots[ordered][chosen])
        moved += float(v[ordered][chosen, q].sum())
    excess = float(st.load[s, q] - st.limit[s, q])
    if excess <= 0 or rules.leadership_only:
        return moved
    parts, slots = replica_candidates(st, pair.index, s, d=d, nracks=pair.nracks, leaders_only=False)
    v = st.slot_loads(parts, slots)
    wanted = _count_wanted(pair)
    limits = np.maximum(ceiling - st.load[d], 0.0)
    if rules.fewest_bytes:
        ordered, cover = _fewest_bytes_order(v[:, q], excess)
        limits[q] = min(room, cover)
    else:
        over = _over_limits(st, s) if q == Q_REPLICAS else {}
        if over:
            ordered = _topic_first(pair, parts, slots, _shed_order(v, over, count=excess))
        else:
            ordered = _count_order(pair, parts, slots, v, count=excess if q == Q_REPLICAS else wanted)
        ordered = _source_keeps_topics(pair, parts, ordered)
        limits[q] = min(room, excess + float(v[:, q].max(initial=0.0)))
    if rules.count_cap:
        limits[Q_REPLICAS] = min(limits[Q_REPLICAS], wanted)
    picked = ordered[take(v[ordered], limits_check(limits))]
    st.move(parts[picked], slots[picked], np.full(picked.size, d, dtype=np.int32))
    return moved + float(v[picked, q].sum())


def _count_wanted(pair: Pair) -> float:
    """Replicas the replica-count goal would move from s to d, at least one."""
    load, avg = pair.st.load[:, Q_REPLICAS], pair.b.avg[:, Q_REPLICAS]
    return max(min(float(load[pair.s] - avg[pair.s]), float(avg[pair.d] - load[pair.d])), 1.0)


def _count_order(pair: Pair, parts: Ints, slots: Ints, v: FloatArray, *, count: float) -> Ints:
    """Candidates in the order the replica-count goal would move them: their topics' spread first,
    then replicas whose loads are what the other goals want moved per replica.

    Taken in partition order (replica counts), a 2.8M-replica cluster's repair put up to 1,991
    replicas of its first topic on each new broker against a band of 286, which the per-topic
    goals could not undo in time; taken largest first (disk), it filled the new brokers to their
    disk limit with a few big replicas, leaving nothing the replica-count goal could bring them.
    """
    penalty = topic_penalty(pair, pair.st.ptopic[parts], leaders=slots == 0, replicas_move=True)
    return fit_order(
        pair, v, q=Q_REPLICAS, count=max(count, 1.0), penalty=penalty, share=pair.st.model.copy_share[parts]
    )


def _over_limits(st: State, s: int) -> dict[int, float]:
    """The other hard capacity quantities ``s`` is above its limit in, with its excess in each."""
    excess = st.load[s] - st.limit[s]
    return {
        q: float(excess[q])
        for goal, q in st.catalogue.capacity_goals
        if q != Q_REPLICAS and st.options.hard(goal) and excess[q] > 0
    }


def _shed_order(v: FloatArray, over: dict[int, float], *, count: float) -> Ints:
    """Candidates for the replica-count repair of a broker also above other limits: each replica it
    sheds should carry its share of those excesses (excess / replicas to shed), closest first. In the
    order the replica-count goal prefers (small replicas, the bands' wishes), a broker holding 9x its
    share of replicas and 6x its disk limit shed its smallest replicas and kept its largest ones,
    above its disk limit, for the ladder's exchanges to fix at minutes per round."""
    score = np.zeros(v.shape[0])
    for q, excess in over.items():
        share = max(excess / max(count, 1.0), 1e-12)
        # Falling short of the share costs most (the kept replicas would stay above the limit); above
        # it, the nearest first (fewer bytes moved).
        score += TUNING.shortfall_weight * np.maximum(share - v[:, q], 0.0) / share + np.abs(v[:, q] - share) / share
    order: Ints = np.argsort(score, kind="stable").astype(np.int64)
    return order


def _topic_first(pair: Pair, parts: Ints, slots: Ints, ordered: Ints) -> Ints:
    """``ordered`` (candidate indices) with the moves that even out their topic's spread first.

    A broker far above its limits sheds most of its replicas anyway; which ones it keeps decides
    its topics' spread. In the share order alone, broker 76 of bench.strong_skew (6.3x the average
    replicas) kept its smallest: 2,116 of its 3,383 of one topic of tiny partitions, against that
    topic's band of 386-472, which the per-topic goals could not move later (the broker sat at the
    edge of its disk band, and no other topic had partitions that small to trade back). Moves that
    even out their topic carry little of the excess, so the rest carry a little more each.
    """
    topics = pair.st.ptopic[parts[ordered]]
    penalty = topic_penalty(pair, topics, leaders=slots[ordered] == 0, replicas_move=True)
    out: Ints = ordered[np.argsort(penalty >= TUNING.evens_topic, kind="stable")]
    return out


def _source_keeps_topics(pair: Pair, parts: Ints, ordered: Ints) -> Ints:
    """``ordered`` with the moves that take their topic below its band on ``s`` last.

    The topic penalty weighs ``s`` and ``d`` alike, but a broker the repair relieves ends at its
    limits, where the per-topic goal can bring a topic back only by exchanges: at 1.3M replicas
    (bench.strong_skew) the busiest broker gave all 2,252 of its replicas of one topic to the new
    brokers, which lacked them, and the per-topic goal brought back 110 of the 198 its band needs.
    """
    st = pair.st
    if TOPIC_REPLICA_GOAL not in st.options.distribution_goals:
        return ordered
    topics = st.ptopic[parts[ordered]]
    # The k-th move of a topic in this order leaves s with k fewer of it.
    left = st.tcount[topics, pair.s] - ranks(topics) - 1
    out: Ints = ordered[np.argsort(left < pair.b.topic_lo[topics], kind="stable")]
    return out


def _fewest_bytes_order(v: FloatArray, excess: float) -> tuple[Ints, float]:
    """Candidates (their amounts ``v``) in the order that covers ``excess`` with the fewest bytes,
    and the amount to stop at: the smallest one that covers it alone first, else the largest ones
    until they do (fewest moves)."""
    covers = v >= excess
    if covers.any():
        # Then the rest largest first, should the covering ones not fit the taker's other limits.
        order = np.lexsort((np.where(covers, v, -v), ~covers))
        return order.astype(np.int64), float(v[covers].min())
    order = np.argsort(-v, kind="stable").astype(np.int64)
    sums = np.cumsum(v[order])
    if sums.size == 0:
        return order, 0.0
    return order, float(sums[min(int(np.searchsorted(sums, excess - 1e-9)), sums.size - 1)])
