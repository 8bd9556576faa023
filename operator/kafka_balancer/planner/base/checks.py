"""What a batch of moves must keep: the bands of the guarded goals, the capacity limits, and each
topic's spread.

A batch is a set of replicas (or leaderships) that move from broker ``s`` to broker ``d`` in one
vectorised step (a :class:`Pair`), or a set of moves between many brokers at once
(:func:`accept_together`). Every item must keep every hard goal, and the batch's running sums must
pass :class:`PairCheck`: for every guarded distribution goal the two brokers' distance to its band
does not grow. That is how a later goal never undoes an earlier one, and how applying a plan never
makes a statistic worse.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, NamedTuple

import numpy as np

from kafka_balancer.model.cluster import BoolArray, FloatArray
from kafka_balancer.planner.base.arrays import Ints, ranks, stable_order
from kafka_balancer.planner.base.measures import bands, topic_bands, topic_leader_applies, violation
from kafka_balancer.planner.base.state import State
from kafka_balancer.planner.catalogue import Q_LEADERS, TOPIC_LEADER_GOAL, TOPIC_REPLICA_GOAL

# Passes of "take the longest fitting prefix, drop the blocker, continue" per batch.
TAKE_PASSES: Final = 4


# Passes of "drop the items that push a broker out of a band, check again" in accept_together. Each
# pass reaches one link further along a chain of moves (dropping a move into a full broker leaves
# its source holding what arrived there, so the move into that source goes next), and a batch that
# has not settled moves nothing: 12 passes left a round of 13,454 one-way topic moves at 2.8M
# replicas with none, where 50 passes keep 6,669. A pass costs O(items); most settle in a few.
DROP_PASSES: Final = 64


# Weight of the topic-spread preference against the load-fit distance when ordering candidates.
TOPIC_WEIGHT: Final = 2.0


# topic_penalty below this: the move brings its topic's replica spread closer to its band (a
# negative change, see topic_penalty) without pushing its leader spread out.
EVENS_TOPIC: Final = 2.0


# For leader-count moves (free) the fit to the other goals matters more than the topic preference:
# a leadership that fits the count but not the traffic blocks the traffic goals' bands.
LEADER_TOPIC_WEIGHT: Final = 0.5


@dataclass
class Bands:
    """Bands of every quantity for one round; goals not guarded (``Scope.guarded``) get an infinite band."""

    lower: FloatArray  # (B, quantities)
    upper: FloatArray
    avg: FloatArray
    topic_lo: FloatArray  # (T,) replica-count band per topic
    topic_hi: FloatArray
    lead_lo: FloatArray  # (T,) leader-count band per topic
    lead_hi: FloatArray
    topic_replica_on: bool
    topic_leader_on: BoolArray  # (T,) topics the leader-spread goal applies to (when guarded)
    leader_spread: BoolArray  # (T,) topics the leader-spread goal would apply to (guarded or not)


def compute_bands(st: State) -> Bands:
    nb = st.model.num_brokers
    th = st.options.balance_threshold
    size = st.catalogue.size
    lower = np.full((nb, size), -math.inf)
    upper = np.full((nb, size), math.inf)
    avg = np.zeros((nb, size))
    scope = st.scope
    enabled = {st.catalogue.balances(g) for g in scope.guarded} - {None}
    for q in range(size):
        lo, hi, mean = bands(st, q, 1.0 if q in scope.exact else th)
        avg[:, q] = mean
        if q in enabled:
            lower[:, q], upper[:, q] = lo, hi
    goals = scope.guarded
    t_lo, t_hi = topic_bands(st, th, leaders=False)
    l_lo, l_hi = topic_bands(st, th, leaders=True)
    spread = topic_leader_applies(st)
    leader_on = spread if TOPIC_LEADER_GOAL in goals else np.zeros(len(t_lo), bool)
    return Bands(lower, upper, avg, t_lo, t_hi, l_lo, l_hi, TOPIC_REPLICA_GOAL in goals, leader_on, spread)


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


@dataclass(frozen=True)
class Pair:
    """A giving broker ``s`` and a taking broker ``d`` of a round, moving quantity ``q``, with what
    every step between them reads: the state, the round's bands, the replica slots by broker
    (``State.broker_index_by_slot``) and each group's number of racks (``State.group_racks``)."""

    st: State
    b: Bands
    s: int
    d: int
    q: int
    index: tuple[Ints, Ints]
    nracks: Ints

    def reversed(self) -> Pair:
        """The same pair the other way round (``d`` gives to ``s``)."""
        return dataclasses.replace(self, s=self.d, d=self.s)


def band_distance(load: FloatArray, lower: FloatArray, upper: FloatArray) -> FloatArray:
    # Infinite bands (disabled goals, unbalanced groups) give 0 without inf - inf.
    over = np.where(np.isfinite(upper), load - upper, 0.0)
    under = np.where(np.isfinite(lower), lower - load, 0.0)
    out: FloatArray = np.maximum(over, 0.0) + np.maximum(under, 0.0)
    return out


class PairCheck:
    """Accepts a cumulative amount moved from ``s`` to ``d`` when, for every goal, the out-of-band
    distance of ``s`` plus that of ``d`` does not grow, and both stay under their capacity limits
    (an exchange can move a quantity back to ``s``: a swap for network-out can bring it more disk).

    Bands are fixed within a round (moves inside a group keep its totals), so a move that does not
    increase the two brokers' distances cannot increase the goal's total: no goal ever gets worse,
    and a goal that holds keeps holding. The test is convex in the amount, so along a list of items
    the accepted cumulative sums form a prefix.
    """

    def __init__(self, pair: Pair, *, amount: float = math.inf, q: int | None = None):
        st, b, s, d = pair.st, pair.b, pair.s, pair.d
        self.load_s, self.load_d = st.load[s].copy(), st.load[d].copy()
        self.lo_s, self.hi_s, self.lo_d, self.hi_d = b.lower[s], b.upper[s], b.lower[d], b.upper[d]
        self.limit = st.limit[d]
        # s may end no further above a limit than it is (it can start above one it is being relieved of).
        self.limit_s = np.maximum(st.limit[s], self.load_s)
        self.before = band_distance(self.load_s, self.lo_s, self.hi_s) + band_distance(
            self.load_d, self.lo_d, self.hi_d
        )
        self.q, self.amount = pair.q if q is None else q, amount

    def __call__(self, moved: FloatArray) -> BoolArray:
        after = band_distance(self.load_s - moved, self.lo_s, self.hi_s) + band_distance(
            self.load_d + moved, self.lo_d, self.hi_d
        )
        tol = _tol(self.before)
        ok: BoolArray = np.all(after <= self.before + tol, axis=-1)
        ok &= np.all(self.load_d + moved <= self.limit + _tol(self.limit), axis=-1)
        ok &= np.all(self.load_s - moved <= self.limit_s + _tol(self.limit_s), axis=-1)
        if self.q is not None:
            ok &= moved[..., self.q] <= self.amount * (1 + 1e-9) + 1e-9
        return ok


def limits_check(limits: FloatArray) -> Callable[[FloatArray], BoolArray]:
    """A check that only bounds each quantity's cumulative amount."""

    def check(moved: FloatArray) -> BoolArray:
        out: BoolArray = np.all(moved <= limits + _tol(limits), axis=-1)
        return out

    return check


def accept_together(st: State, b: Bands, *, src: Ints, dst: Ints, v: FloatArray) -> BoolArray:
    """The items (each moving ``v`` from ``src`` to ``dst``, in preference order) kept when all move at once.

    All items are tried together; where a broker would end further from a guarded band than it is
    (or above a capacity limit), just enough of the items pushing it that way are dropped, the last
    ones first (incoming items when it would end too high, outgoing ones when too low), and the
    rest is checked again. Each broker on its own must not get worse, which is stricter than the
    pair check, so items moving in opposite directions (count-neutral exchanges) pass together.
    """
    keep = np.ones(src.size, dtype=np.bool_)
    if src.size == 0:
        return keep
    src, dst, reach = _Reach.of(st, b, src, dst)
    load0, top, bottom, tol = reach
    last_first = np.arange(src.size)[::-1]
    for _ in range(DROP_PASSES):
        load = _loads_after(load0, src[keep], dst[keep], v[keep])
        excess = np.maximum(load - top - tol, 0.0)  # (touched brokers, Q)
        deficit = np.maximum(bottom - load - tol, 0.0)
        if not (excess.any() or deficit.any()):
            return keep
        drop = np.zeros(src.size, dtype=np.bool_)
        for q in np.flatnonzero(excess.any(axis=0) | deficit.any(axis=0)).tolist():
            up, down = np.maximum(v[:, q], 0.0), np.maximum(-v[:, q], 0.0)
            # Too high: drop arrivals adding q (or departures of negative q); too low: the reverse.
            cases = (
                (dst, up, excess[:, q]),
                (src, down, excess[:, q]),
                (src, up, deficit[:, q]),
                (dst, down, deficit[:, q]),
            )
            for broker, push, need in cases:
                cand = last_first[(keep & (push > 0) & (need[broker] > 0))[last_first]]
                if cand.size == 0:
                    continue
                order = cand[stable_order(broker[cand])]
                drop[order[_covering(broker[order], push[order], need)]] = True
        if not drop.any():
            break
        keep &= ~drop
    keep[:] = False  # did not settle: move nothing rather than something unchecked
    return keep


def fits_together(st: State, b: Bands, *, src: Ints, dst: Ints, v: FloatArray) -> bool:
    """Whether :func:`accept_together` keeps every item: all moved at once, no touched broker ends
    further from a guarded band or above a limit (its first pass, without the drops; for the
    chains, which are tried one by one by the ten thousand and kept whole or not at all)."""
    if src.size == 0:
        return True
    src, dst, (load0, top, bottom, tol) = _Reach.of(st, b, src, dst)
    # The same sums and comparisons as accept_together's, so the two never disagree at a band's edge.
    load = _loads_after(load0, src, dst, v)
    return not ((load - top - tol > 0.0).any() or (bottom - load - tol > 0.0).any())


def fits_with_each(st: State, b: Bands, *, base: Moves, each: Moves) -> BoolArray:
    """For each of the moves ``each``, whether it fits together with all of ``base``
    (:func:`fits_together` of ``base`` plus that one move), for the whole lot at once: a chain's
    closings are picked among thousands."""
    src = np.concatenate([base.src, each.src])
    dst = np.concatenate([base.dst, each.dst])
    src, dst, (load0, top, bottom, tol) = _Reach.of(st, b, src, dst)
    n = base.src.size
    load = _loads_after(load0, src[:n], dst[:n], base.v)

    def out_of_reach(rows: Ints, loads: FloatArray) -> BoolArray:
        high: BoolArray = loads - top[rows] - tol[rows] > 0.0
        low: BoolArray = bottom[rows] - loads - tol[rows] > 0.0
        out: BoolArray = np.any(high | low, axis=1)
        return out

    # The base alone leaves some brokers out of reach: each move must take every one of them back,
    # and keep its own two brokers in reach.
    out = out_of_reach(np.arange(load.shape[0]), load)
    s, d = src[n:], dst[n:]
    left = int(out.sum()) - out[s].astype(np.int64) - out[d].astype(np.int64)
    ok: BoolArray = (left == 0) & ~out_of_reach(s, load[s] - each.v) & ~out_of_reach(d, load[d] + each.v)
    return ok


class Moves(NamedTuple):
    """Moves of loads ``v`` (rows) from brokers ``src`` to brokers ``dst``."""

    src: Ints
    dst: Ints
    v: FloatArray


def _loads_after(load0: FloatArray, src: Ints, dst: Ints, v: FloatArray) -> FloatArray:
    """The touched brokers' loads once every item (rows of ``v``) moved from ``src`` to ``dst``."""
    delta = np.zeros_like(load0)
    np.add.at(delta, src, -v)
    np.add.at(delta, dst, v)
    out: FloatArray = load0 + delta
    return out


class _Reach(NamedTuple):
    """How far each broker a batch touches may go (rows of the touched brokers, ascending)."""

    load: FloatArray
    top: FloatArray
    bottom: FloatArray
    tol: FloatArray

    @staticmethod
    def of(st: State, b: Bands, src: Ints, dst: Ints) -> tuple[Ints, Ints, _Reach]:
        """(src and dst as rows of the touched brokers, their reach)."""
        # Only the brokers the items touch can move (the others stay where they are, which is allowed):
        # the arrays are over those, so a batch costs its own size, not the cluster's broker count.
        touched, local = np.unique(np.concatenate([src, dst]), return_inverse=True)
        load0, limit = st.load[touched], st.limit[touched]
        # How far each broker may go: no further out of the band than it already is, never over a
        # limit. Slack for float sums: half the goals' own tolerance at the band's edge
        # (goals.tolerance), so accepted batches never add up to a broker counted as out of band; far
        # less where a broker is already outside (it must not drift further).
        edge = np.abs(b.avg[touched]) * 0.5e-9
        top = np.maximum(b.upper[touched] + edge, load0)
        top = np.where(np.isfinite(limit), np.minimum(top, np.maximum(limit, load0)), top)
        bottom = np.minimum(b.lower[touched] - edge, load0)
        tol = np.abs(load0) * 1e-13 + 1e-9
        return local[: src.size], local[src.size :], _Reach(load0, top, bottom, tol)


def _covering(key: Ints, value: FloatArray, need: FloatArray) -> BoolArray:
    """Within each key (sorted), the leading items whose sum first reaches ``need[key]``."""
    csum = np.cumsum(value)
    first = np.r_[True, key[1:] != key[:-1]]
    start = np.maximum.accumulate(np.where(first, np.arange(key.size), 0))
    before = csum - value - np.where(start > 0, csum[np.maximum(start - 1, 0)], 0.0)
    out: BoolArray = before < need[key]
    return out


def _tol(values: FloatArray) -> FloatArray:
    finite = np.where(np.isfinite(values), np.abs(values), 0.0)
    out: FloatArray = finite * 1e-9 + 1e-9
    return out


def take(v: FloatArray, check: Callable[[FloatArray], BoolArray]) -> BoolArray:
    """Choose items (rows of ``v``, in preference order) whose running sums ``check`` accepts.

    Takes the longest accepted prefix, skips the item that broke it, and continues from there
    (a few passes), so one oversized item does not stop the batch.
    """
    count = v.shape[0]
    chosen = np.zeros(count, dtype=np.bool_)
    if count == 0:
        return chosen
    base = np.zeros(v.shape[1])
    avail = np.ones(count, dtype=np.bool_)
    for _ in range(TAKE_PASSES):
        fit = avail & check(base + v)
        idx = np.flatnonzero(fit)
        if idx.size == 0:
            break
        sums = base + np.cumsum(v[idx], axis=0)
        ok = check(sums)
        n = int(idx.size if ok.all() else np.argmin(ok))
        if n == 0:
            avail[idx[0]] = False
            continue
        chosen[idx[:n]] = True
        avail[idx[:n]] = False
        base = sums[n - 1]
        if n < idx.size:
            avail[idx[n]] = False
    return chosen


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
    score = penalty * (TOPIC_WEIGHT if q != Q_LEADERS else LEADER_TOPIC_WEIGHT)
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
