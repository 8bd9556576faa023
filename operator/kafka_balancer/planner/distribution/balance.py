"""Distribution goals: bring every broker inside its group's band, moving as few bytes as possible.

Each round pairs brokers that must give (over the band, or above average when others are under)
with brokers that must take, in amounts that just reach the band edge (plus a small margin), so
the bytes moved stay near the lower bound. For each pair it first moves leadership (free) when
the goal depends on leaders, then replicas chosen to fit the gap; all items of a pair move in one
vectorised step after the cumulative checks of :mod:`kafka_balancer.planner.base.pair_checks`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from kafka_balancer.model.cluster import BoolArray, FloatArray
from kafka_balancer.planner.base.arrays import Ints
from kafka_balancer.planner.base.candidates import leader_candidates, replica_candidates
from kafka_balancer.planner.base.pair_checks import Pair, PairCheck, take
from kafka_balancer.planner.base.round_bands import Bands, compute_bands
from kafka_balancer.planner.base.state import State
from kafka_balancer.planner.base.topic_spread import fit_order, topic_ok, topic_penalty
from kafka_balancer.planner.catalogue import Exchange
from kafka_balancer.planner.distribution.count_exchange import replica_count_exchange
from kafka_balancer.planner.distribution.leaders import leader_pass
from kafka_balancer.planner.distribution.swaps import leader_exchange, leader_trade, swap_batch
from kafka_balancer.planner.tuning import TUNING


def _transport(give: FloatArray, take_: FloatArray, *, sources: Ints, dests: Ints) -> list[tuple[int, int, float]]:
    """Greedy pairing of givers and takers (both in priority order) in matched amounts.

    ``give`` and ``take_`` (indexed by broker) are decreased by what is paired.
    """
    pairs: list[tuple[int, int, float]] = []
    i = j = 0
    while i < len(sources) and j < len(dests):
        s, d = int(sources[i]), int(dests[j])
        amount = min(float(give[s]), float(take_[d]))
        if amount > 0:
            pairs.append((s, d, amount))
        give[s] -= amount
        take_[d] -= amount
        if give[s] <= 1e-12 * max(1.0, amount):
            i += 1
        if take_[d] <= 1e-12 * max(1.0, amount):
            j += 1
    return pairs


def _transport_across_racks(
    st: State, give: FloatArray, take_: FloatArray, *, member: BoolArray
) -> list[tuple[int, int, float]]:
    """Like :func:`_transport`, but a giver only pairs with takers in other racks."""
    sources = np.flatnonzero(member & (give > 1e-12))
    dests = np.flatnonzero(member & (take_ > 1e-12))
    sources = sources[np.argsort(-give[sources], kind="stable")]
    dests = dests[np.argsort(-take_[dests], kind="stable")]
    pairs: list[tuple[int, int, float]] = []
    for s in sources.tolist():
        for d in dests.tolist():
            if give[s] <= 1e-12:
                break
            if st.rack[d] == st.rack[s] or take_[d] <= 1e-12:
                continue
            amount = min(float(give[s]), float(take_[d]))
            pairs.append((s, d, amount))
            give[s] -= amount
            take_[d] -= amount
    return pairs


def make_pairs(st: State, b: Bands, q: int) -> list[tuple[int, int, float]]:
    """(giver, taker, amount) triples that bring every broker of every group inside the band of ``q``.

    Over-band brokers give down to just inside the upper edge, under-band brokers take up to just
    inside the lower edge (``TUNING.fill_margin``): first to each other, then what is left of an over-band
    broker goes to brokers below average, and what is left of an under-band broker comes from
    brokers above average. Moving only what the band needs keeps the bytes near the lower bound.
    """
    load = st.load[:, q]
    lo, hi, avg = b.lower[:, q], b.upper[:, q], b.avg[:, q]
    tol = np.abs(avg) * 1e-9 + 1e-9
    over = np.isfinite(hi) & (load > hi + tol)
    under = np.isfinite(lo) & (load < lo - tol)
    # Brokers outside the balanced groups have infinite bands; keep them out of the arithmetic.
    lo, hi = np.where(np.isfinite(lo), lo, avg), np.where(np.isfinite(hi), hi, avg)
    catalogue = st.catalogue
    receiver = (st.can_lead if catalogue.leaders_only(q) else st.can_host) & st.active
    balanced = np.isfinite(b.upper[:, q]) & st.active
    if catalogue.count(q):
        # Whole items: the band edges are whole numbers; a broker may go up to the average rounded up.
        top, bottom, high, low = np.ceil(avg - tol), np.floor(avg + tol), hi, lo
    else:
        top, bottom = avg, avg
        high, low = hi - TUNING.fill_margin * (hi - avg), lo + TUNING.fill_margin * (avg - lo)
    excess = np.where(over, load - high, 0.0)
    need = np.where(under & receiver, low - load, 0.0)
    # In-band brokers take up to the average (rounded) first; only when that is not enough (e.g.
    # a rack whose brokers all sit above average) up to just inside the band's edge.
    room = np.where(balanced & receiver & ~under & (load < top), top - load, 0.0)
    spare = np.where(balanced & ~over & (load > bottom), load - bottom, 0.0)
    wide_room = np.where(balanced & receiver & ~over, np.maximum(high - np.maximum(load, top), 0.0), 0.0)
    wide_spare = np.where(balanced & ~under, np.maximum(np.minimum(load, bottom) - low, 0.0), 0.0)
    stages = ((excess, need), (excess, room), (spare, need), (excess, wide_room), (wide_spare, need))
    pairs: list[tuple[int, int, float]] = []
    # Replicas pair inside each rack first: when every partition already spans all racks (rf =
    # racks), a replica can only move within its rack, so cross-rack pairs would find nothing.
    # Leadership moves between the replicas of a partition, so racks do not matter for it.
    # Quantities that leadership carries (leaders, network out, CPU) first pair across racks, where
    # a partition led by the giver has a follower on the taker (same-rack brokers share none then).
    racks: list[int | None] = np.unique(st.rack).tolist()
    scopes = [None] if catalogue.leaders_only(q) else [*racks, None]
    for g in range(len(st.groups.names)):
        member = st.groups.broker == g
        if not ((over | under) & member).any():
            continue
        if catalogue.leadership_carries(q):
            for gives, takes in stages:
                pairs += _transport_across_racks(st, gives, takes, member=member)
        for rack in scopes:
            scope = member if rack is None else member & (st.rack == rack)
            for gives, takes in stages:
                sources = np.flatnonzero(scope & (gives > 1e-12))
                dests = np.flatnonzero(scope & (takes > 1e-12))
                sources = sources[np.argsort(-gives[sources], kind="stable")]
                dests = dests[np.argsort(-takes[dests], kind="stable")]
                pairs += _transport(gives, takes, sources=sources, dests=dests)
    return pairs


def _check(pair: Pair, amount: float) -> PairCheck:
    # Counts move in whole items: at least one, else a gap below 1 could never close.
    cap = max(1.0, float(np.floor(amount + 0.5))) if pair.st.catalogue.count(pair.q) else amount
    return PairCheck(pair, amount=cap)


def _leader_batch(pair: Pair, amount: float) -> float:
    """Move leadership from ``s`` to ``d`` (no data moves); returns the amount of ``q`` moved."""
    st, d, q = pair.st, pair.d, pair.q
    if not st.can_lead[d]:
        return 0.0
    parts, slots = leader_candidates(st, pair.index, pair.s, d)
    if parts.size == 0:
        return 0.0
    v = st.lead[parts] - st.follow[parts]
    useful = v[:, q] > 0
    parts, slots, v = parts[useful], slots[useful], v[useful]
    leaders = np.ones(parts.size, dtype=np.bool_)
    order = _topic_aware_order(pair, v, amount, topics=st.ptopic[parts], leaders=leaders)
    parts, slots, v = parts[order], slots[order], v[order]
    topics = st.ptopic[parts]
    ok = topic_ok(pair, topics, leaders, replicas_move=False)
    parts, slots, v = parts[ok], slots[ok], v[ok]
    chosen = _choose(pair, v, amount)
    st.swap_leader(parts[chosen], slots[chosen])
    return float(v[chosen, q].sum())


def _replica_batch(pair: Pair, amount: float) -> float:
    """Move replicas from ``s`` to ``d``; returns the amount of ``q`` moved."""
    st, d, q = pair.st, pair.d, pair.q
    if not st.can_host[d]:
        return 0.0
    leaders_only = st.catalogue.leaders_only(q)
    parts, slots = replica_candidates(st, pair.index, pair.s, d=d, nracks=pair.nracks, leaders_only=leaders_only)
    if parts.size == 0:
        return 0.0
    v = st.slot_loads(parts, slots)
    useful = v[:, q] > 0
    parts, slots, v = parts[useful], slots[useful], v[useful]
    order = _topic_aware_order(
        pair, v, amount, topics=st.ptopic[parts], leaders=slots == 0, share=st.model.copy_share[parts]
    )
    parts, slots, v = parts[order], slots[order], v[order]
    topics = st.ptopic[parts]
    ok = topic_ok(pair, topics, slots == 0)
    parts, slots, v = parts[ok], slots[ok], v[ok]
    # Items that keep their topic's spread (or improve it) first; the others only when those
    # cannot carry any of the amount.
    keeps = topic_penalty(pair, st.ptopic[parts], leaders=slots == 0, replicas_move=True) <= TUNING.keeps_topic
    if keeps.any() and not keeps.all():
        chosen = _choose(pair, v[keeps], amount)
        if chosen.any():
            idx = np.flatnonzero(keeps)[chosen]
            st.move(parts[idx], slots[idx], np.full(idx.size, d, dtype=np.int32))
            return float(v[idx, q].sum())
    chosen = _choose(pair, v, amount)
    st.move(parts[chosen], slots[chosen], np.full(int(chosen.sum()), d, dtype=np.int32))
    return float(v[chosen, q].sum())


def _choose(pair: Pair, v: FloatArray, amount: float) -> BoolArray:
    """Items (rows of ``v``, in preference order) to move: as many as fit ``amount`` under the pair check."""
    chosen = take(v, _check(pair, amount))
    if not chosen.any():
        # Every item is bigger than the gap: one item may overshoot it, the smallest that still
        # lowers the pair's distance to the band (so the goal gets better, never worse).
        fits = np.flatnonzero(_check(pair, np.inf)(v))
        if fits.size:
            chosen[fits[np.argmin(v[fits, pair.q])]] = True
    return chosen


def _topic_aware_order(
    pair: Pair, v: FloatArray, amount: float, *, topics: Ints, leaders: BoolArray, share: FloatArray | None = None
) -> Ints:
    """Preference order of candidates; the topic penalty counts each item as the k-th of its topic in
    the order being built, so it is computed on a first ordering and then once more. ``share``: for
    replica moves, each item's ClusterModel.copy_share (None for leadership moves, which copy nothing)."""
    order = np.arange(topics.size)
    for _ in range(2):
        penalty = topic_penalty(pair, topics[order], leaders=leaders[order], replicas_move=share is not None)
        full = np.empty(topics.size)
        full[order] = penalty
        order = _order(pair, v, amount, full, share)
    return order


def _order(pair: Pair, v: FloatArray, amount: float, penalty: FloatArray, share: FloatArray | None) -> Ints:
    q = pair.q
    if pair.st.catalogue.count(q):
        return fit_order(pair, v, q=q, count=amount, penalty=penalty, share=share)
    # Among items that fit: those that also even out their topic first, then the cheaper moves (copy
    # share, 1 without tiered storage), then largest first (fewest items for the amount); ties keep
    # partition order.
    fits = v[:, q] <= amount * (1 + 1e-9)
    cheap = np.ones(v.shape[0]) if share is None else share
    order: Ints = np.lexsort((-v[:, q], cheap, penalty, ~fits)).astype(np.int64)
    return order


# A way to move some of ``q`` between a pair (it returns how much it moved), and when to try it
# given what is ``left`` of the pair's ``amount``.
PairStep = tuple[Callable[[Pair, float], float], Callable[[float, float], bool]]


def _always(_left: float, _amount: float) -> bool:
    return True


def _beyond_share(left: float, amount: float) -> bool:
    """Exchanges move bytes both ways: only for more than TUNING.swap_min_share of the amount."""
    return left > TUNING.swap_min_share * amount


def _some_left(left: float, amount: float) -> bool:
    return left > 1e-9 * max(1.0, amount)


def _item_left(left: float, amount: float) -> bool:
    """Counts move in whole items: at least half of one must be left."""
    return _some_left(left, amount) and left >= 0.5


def _whole_item(left: float, _amount: float) -> bool:
    return left >= 0.5


def pair_steps(st: State, goal: str, *, leadership_only: bool) -> list[PairStep]:
    """What a goal's pairs try, in order, each on what the steps before it left: leadership moves
    (where leadership carries the quantity), trades, replica moves, then the exchanges the goal's
    catalogue record lists (count exchanges only where the stage's scope allows them)."""
    catalogue, allowed = st.catalogue, st.scope.exchanges
    q = catalogue.balances(goal)
    assert q is not None, goal
    moves_data = not leadership_only
    steps: list[PairStep] = []
    if catalogue.leadership_carries(q):
        steps.append((_leader_batch, _always))
    if catalogue.uses(goal, Exchange.TRADES, allowed):
        steps.append((leader_trade, _beyond_share))
    if moves_data:
        steps.append((_replica_batch, _item_left if catalogue.count(q) else _some_left))
    if moves_data and catalogue.uses(goal, Exchange.COUNT_EXCHANGES, allowed):
        steps.append((replica_count_exchange, _whole_item))
    if moves_data and catalogue.uses(goal, Exchange.SWAPS, allowed):
        steps.append((swap_batch, _beyond_share))
    if catalogue.uses(goal, Exchange.LEADER_EXCHANGES, allowed):
        steps.append((leader_exchange, _whole_item))
    return steps


def balance_goal(st: State, goal: str, *, leadership_only: bool = False) -> int:
    """Run rounds of one distribution goal until it holds or nothing more can move. Returns rounds run.

    With ``leadership_only`` no data moves: only leaderships move or are exchanged.
    """
    q = st.catalogue.balances(goal)
    assert q is not None, goal
    steps = pair_steps(st, goal, leadership_only=leadership_only)
    nracks = st.group_racks()
    rounds = 0
    for rounds in range(1, st.options.max_rounds + 1):  # noqa: B007 - the count is returned
        if st.budget.spent():
            break
        b = compute_bands(st)
        led = leader_pass(st, b, q) if st.catalogue.leadership_carries(q) else 0
        pairs = make_pairs(st, b, q)
        if not pairs:
            break
        index = st.broker_index_by_slot()
        moved = float(led)
        for s, d, amount in pairs:
            pair = Pair(st, b, s, d, q, index, nracks)
            left = amount
            for step, wanted in steps:
                if wanted(left, amount):
                    left -= step(pair, left)
            moved += amount - left
        if moved <= 0:
            break
    return rounds
