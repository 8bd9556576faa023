"""Each topic's spread in a batch of moves: whether a move keeps its topic's replica and leader
counts no further from their bands (:func:`topic_ok`, :func:`count_ok`, :func:`within_budget`), how
much a move would cost them as a preference (:func:`topic_penalty`), and the order of a count goal's
candidates that weighs it against the other goals (:func:`fit_order`)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from kafka_balancer.model.cluster import BoolArray, FloatArray
from kafka_balancer.planner.base.arrays import Ints, ranks
from kafka_balancer.planner.base.measures import violation
from kafka_balancer.planner.base.pair_checks import Pair
from kafka_balancer.planner.base.round_bands import Bands
from kafka_balancer.planner.base.state import State
from kafka_balancer.planner.catalogue import Q_LEADERS, TOPIC_LEADER_GOAL, TOPIC_REPLICA_GOAL
from kafka_balancer.planner.tuning import TUNING


class CountBand(NamedTuple):
    """Per-topic counts on each broker (T, B) and each topic's band (``lo``, ``hi`` per topic)."""

    counts: Ints
    lo: FloatArray
    hi: FloatArray


def replica_band(st: State, b: Bands) -> CountBand:
    """Each topic's replicas per broker and its band (the topic-replica goal's)."""
    return CountBand(st.tcount, b.topic_lo, b.topic_hi)


def leader_band(st: State, b: Bands) -> CountBand:
    """Each topic's leaders per broker and its band (the topic-leader goal's)."""
    return CountBand(st.tlead, b.lead_lo, b.lead_hi)


def count_ok(band: CountBand, s: int | Ints, d: int | Ints, *, topics: Ints, k: Ints) -> BoolArray:
    """Items whose topic's distance to its band on ``s`` plus ``d`` (one pair, or one per item) does
    not grow when ``k`` of the topic move from ``s`` to ``d``."""
    counts, lo, hi = band
    cs, cd = counts[topics, s].astype(np.float64), counts[topics, d].astype(np.float64)
    lo_t, hi_t = lo[topics], hi[topics]
    after = violation(cs - k, lo_t, hi_t) + violation(cd + k, lo_t, hi_t)
    out: BoolArray = after <= violation(cs, lo_t, hi_t) + violation(cd, lo_t, hi_t)
    return out


def topic_ok(
    pair: Pair, topics: Ints, leaders: BoolArray, *, replicas_move: bool = True, cumulative: bool = True
) -> BoolArray:
    """Items (in preference order) whose topic's spread does not get worse when moved from ``s`` to ``d``.

    ``leaders`` marks items that carry leadership; ``replicas_move`` is False for leadership swaps.
    With ``cumulative`` the k-th item of a topic is checked as the k-th move of that topic (a batch);
    without it each item is checked alone (alternatives for one move). The distance is convex in k,
    so an item accepted as the k-th move is also fine when fewer items of its topic end up moving.
    """
    ok = np.ones(topics.size, dtype=np.bool_)
    if topics.size == 0:
        return ok
    st, b, s, d = pair.st, pair.b, pair.s, pair.d
    k = ranks(topics) + 1 if cumulative else np.ones(topics.size, dtype=np.int64)
    if b.topic_replica_on and replicas_move:
        ok &= count_ok(replica_band(st, b), s, d, topics=topics, k=k)
    on = b.topic_leader_on[topics] & leaders
    if on.any():
        ok &= ~on | count_ok(leader_band(st, b), s, d, topics=topics, k=k)
    return ok


def topic_penalty(pair: Pair, topics: Ints, *, leaders: BoolArray, replicas_move: bool) -> FloatArray:
    """0 for replica moves that bring their topic's spread into its band, up to ~5 for moves that push
    it (or the topic's leader spread) out.

    Used as a preference (not a constraint) so that the broker-level goals already move the right
    topics, and the per-topic goals, which come last, have little left to move. Items are scored as
    the k-th move of their topic in the batch (in the given order), so one batch does not pile a
    topic onto ``d``.
    """
    penalty = np.zeros(topics.size)
    if topics.size == 0:
        return penalty
    st, b, s, d = pair.st, pair.b, pair.s, pair.d
    k = ranks(topics) + 1
    if replicas_move and TOPIC_REPLICA_GOAL in st.options.distribution_goals:
        change, uneven = _step(replica_band(st, b), s, d, topics=topics, k=k)
        penalty += change + 2.0 + 0.5 * uneven
    if TOPIC_LEADER_GOAL in st.options.distribution_goals:
        # Leaders only ever add a penalty: a bonus would make replica moves prefer leader replicas,
        # piling leadership onto the receiving brokers for the leader-count goal to undo.
        on = b.leader_spread[topics] & leaders
        change, uneven = _step(leader_band(st, b), s, d, topics=topics, k=k)
        penalty += np.where(on, np.maximum(change, 0.0) + 0.5 * uneven, 0.0)
    return penalty


def _step(band: CountBand, s: int, d: int, *, topics: Ints, k: Ints) -> tuple[FloatArray, FloatArray]:
    """(change of the topic's out-of-band distance, -2..2; 1.0 where the move does not even out the
    two brokers' counts) for the k-th move of each item's topic from ``s`` to ``d``."""
    counts, lo, hi = band
    cs = counts[topics, s].astype(np.float64) - (k - 1)
    cd = counts[topics, d].astype(np.float64) + (k - 1)
    lo_t, hi_t = lo[topics], hi[topics]
    change: FloatArray = (
        violation(cs - 1, lo_t, hi_t)
        + violation(cd + 1, lo_t, hi_t)
        - violation(cs, lo_t, hi_t)
        - violation(cd, lo_t, hi_t)
    )
    uneven: FloatArray = (cs - cd < 2).astype(np.float64)
    return change, uneven


def fit_order(
    pair: Pair, v: FloatArray, *, q: int, count: float, penalty: FloatArray, share: FloatArray | None = None
) -> Ints:
    """Order candidates for a count goal so ``count`` of them also carry what the other goals want moved.

    Each later quantity has a per-item target (what ``s`` has above its average and ``d`` lacks, split
    over the items); candidates closest to the targets come first, earlier goals weighing more. Among
    candidates that score alike the cheaper moves come first: ``share``, each item's copy_share (a
    tiered partition's new replica copies less than it takes off the disk).
    """
    st, b, s, d = pair.st, pair.b, pair.s, pair.d
    goals = [c for c in map(st.catalogue.balances, st.options.distribution_goals) if c is not None]
    score = penalty * (TUNING.topic_weight if q != Q_LEADERS else TUNING.leader_topic_weight)
    weight = 1.0
    per_item = np.maximum(b.avg[s, :], 1e-12) / max(float(b.avg[s, q]), 1e-12)
    for c in goals:
        if c in {q, Q_LEADERS}:
            continue
        want = min(st.load[s, c] - b.avg[s, c], b.avg[d, c] - st.load[d, c])
        target = max(want, 0.0) / max(count, 1.0)
        score += weight * np.abs(v[:, c] - target) / per_item[c]
        weight *= 0.6
    # Stable on ties, as np.argsort(kind="stable"): every share is 1 without tiered storage.
    order: Ints = np.lexsort((np.ones_like(score) if share is None else share, score)).astype(np.int64)
    return order


def within_budget(counts: Ints, lo: FloatArray, hi: FloatArray, *steps: tuple[Ints, Ints, int]) -> BoolArray:
    """Swaps (in preference order) whose every (topic, broker, +-1) step stays within that count's budget.

    A count may go down to the band's lower edge (or stay where it is if already below) and up to
    its upper edge: many swaps of one topic can then go in one round while the spread never ends
    further from the band than each swap was checked for on its own.
    """
    n = steps[0][0].size
    ok = np.ones(n, dtype=np.bool_)
    for topic, broker, sign in steps:
        c = counts[topic, broker].astype(np.float64)
        budget = np.maximum(c - lo[topic], 0) if sign < 0 else np.maximum(hi[topic] - c, 0)
        key = topic.astype(np.int64) * counts.shape[1] + broker  # dense (topic, broker) ids: a faster sort
        ok &= ranks(key) < budget
    return ok
