"""Distribution goals: bring every broker inside its group's band, moving as few bytes as possible.

Each round pairs brokers that must give (over the band, or above average when others are under)
with brokers that must take, in amounts that just reach the band edge (plus a small margin), so
the bytes moved stay near the lower bound. For each pair it first moves leadership (free) when
the goal depends on leaders, then replicas chosen to fit the gap; all items of a pair move in one
vectorised step after the cumulative checks of :mod:`kafka_balancer.planner.select`.
"""

from __future__ import annotations

from typing import Final

import numpy as np

from kafka_balancer.model.cluster import FloatArray
from kafka_balancer.planner.goals import GOAL_QUANTITY
from kafka_balancer.planner.select import (
    Bands,
    compute_bands,
    fit_order,
    leader_candidates,
    replica_candidates,
    slack,
    take,
    topic_allowance,
    topic_penalty,
    topic_rank_ok,
)
from kafka_balancer.planner.state import COUNT_QUANTITIES, Q_CPU, Q_LEADER_IN, Q_LEADERS, Q_NET_OUT, Ints, State

# A receiving broker is filled this share of the way from the band's lower edge towards the
# average: enough headroom that later goals can still move items, little enough to keep bytes low.
MARGIN: Final = 0.15
LEADER_QUANTITIES: Final = frozenset({Q_LEADERS, Q_LEADER_IN})
LEADER_FIRST: Final = frozenset({Q_LEADERS, Q_LEADER_IN, Q_NET_OUT, Q_CPU})


def _transport(give: FloatArray, take_: FloatArray, sources: Ints, dests: Ints) -> list[tuple[int, int, float]]:
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


def _pair_by_rack(
    st: State, gives: FloatArray, takes: FloatArray, *, sources: Ints, dests: Ints
) -> list[tuple[int, int, float]]:
    """Pair inside each rack first: when every partition already spans all racks (rf = racks), a
    replica can only move within its rack, so cross-rack pairs would find nothing to move."""
    pairs: list[tuple[int, int, float]] = []
    for r in np.unique(st.rack[np.concatenate([sources, dests])]).tolist():
        pairs += _transport(gives, takes, sources[st.rack[sources] == r], dests[st.rack[dests] == r])
    sources = sources[gives[sources] > 1e-12]
    dests = dests[takes[dests] > 1e-12]
    return pairs + _transport(gives, takes, sources, dests)


def make_pairs(st: State, b: Bands, q: int) -> list[tuple[int, int, float]]:
    load = st.load[:, q]
    lo, hi, avg = b.lower[:, q], b.upper[:, q], b.avg[:, q]
    tol = np.abs(avg) * 1e-9 + 1e-9
    over = np.isfinite(hi) & (load > hi + tol)
    under = np.isfinite(lo) & (load < lo - tol)
    # Brokers outside the balanced groups have infinite bands; keep them out of the arithmetic.
    lo, hi = np.where(np.isfinite(lo), lo, avg), np.where(np.isfinite(hi), hi, avg)
    receiver = st.can_lead if q in LEADER_QUANTITIES else st.can_host
    pairs: list[tuple[int, int, float]] = []
    for g in range(len(st.groups.names)):
        member = st.groups.broker == g
        if not ((over | under) & member).any():
            continue
        if (under & member).any():
            takes = np.where(under & member & receiver, lo + MARGIN * (avg - lo) - load, 0.0)
            gives = np.where(member & st.active & (load > avg + tol), load - avg, 0.0)
            # Over-band brokers give first: their excess must go anyway.
            key = np.where(over, 1.0, 0.0) * (1 + gives.max()) + gives
            sources = np.flatnonzero(gives > 0)
            sources = sources[np.argsort(-key[sources], kind="stable")]
        else:
            gives = np.where(over & member, load - (hi - MARGIN * (hi - avg)), 0.0)
            takes = np.where(member & receiver & (load < avg - tol), avg - load, 0.0)
            sources = np.flatnonzero(gives > 0)
            sources = sources[np.argsort(-gives[sources], kind="stable")]
        dests = np.flatnonzero(takes > 0)
        dests = dests[np.argsort(-takes[dests], kind="stable")]
        if q in LEADER_QUANTITIES:
            pairs += _transport(gives, takes, sources, dests)
        else:
            pairs += _pair_by_rack(st, gives, takes, sources=sources, dests=dests)
    return pairs


def _limits(st: State, b: Bands, s: int, d: int, *, q: int, amount: float) -> FloatArray:
    limits = slack(st, b, s, d)
    if q in COUNT_QUANTITIES:
        limits[q] = max(1.0, float(np.floor(amount + 0.5)))
    else:
        limits[q] = amount
    return limits


def _leader_batch(st: State, b: Bands, index: tuple[Ints, Ints], s: int, *, d: int, q: int, amount: float) -> float:
    """Move leadership from ``s`` to ``d`` (no data moves); returns the amount of ``q`` moved."""
    if not st.can_lead[d]:
        return 0.0
    parts, slots = leader_candidates(st, index, s, d)
    if parts.size == 0:
        return 0.0
    v = st.lead[parts] - st.follow[parts]
    useful = v[:, q] > 0
    parts, slots, v = parts[useful], slots[useful], v[useful]
    penalty = topic_penalty(
        st, s, d, st.ptopic[parts], leaders=np.ones(parts.size, dtype=np.bool_), replicas_move=False
    )
    order = _order(st, b, s, d, v=v, q=q, amount=amount, penalty=penalty)
    parts, slots, v = parts[order], slots[order], v[order]
    topics = st.ptopic[parts]
    ok = topic_rank_ok(
        topics,
        topic_allowance(st, b, s, d, topics=topics, leaders=np.ones(parts.size, dtype=np.bool_), replicas_move=False),
    )
    parts, slots, v = parts[ok], slots[ok], v[ok]
    chosen = take(v, _limits(st, b, s, d, q=q, amount=amount))
    st.swap_leader(parts[chosen], slots[chosen])
    return float(v[chosen, q].sum())


def _replica_batch(
    st: State, b: Bands, index: tuple[Ints, Ints], s: int, *, d: int, q: int, amount: float, nracks: Ints
) -> float:
    """Move replicas from ``s`` to ``d``; returns the amount of ``q`` moved."""
    if not st.can_host[d]:
        return 0.0
    parts, slots = replica_candidates(st, index, s, d=d, nracks=nracks, leaders_only=q in LEADER_QUANTITIES)
    if parts.size == 0:
        return 0.0
    v = np.where((slots == 0)[:, None], st.lead[parts], st.follow[parts])
    useful = v[:, q] > 0
    parts, slots, v = parts[useful], slots[useful], v[useful]
    penalty = topic_penalty(st, s, d, st.ptopic[parts], leaders=slots == 0, replicas_move=True)
    order = _order(st, b, s, d, v=v, q=q, amount=amount, penalty=penalty)
    parts, slots, v = parts[order], slots[order], v[order]
    topics = st.ptopic[parts]
    ok = topic_rank_ok(topics, topic_allowance(st, b, s, d, topics=topics, leaders=slots == 0))
    parts, slots, v = parts[ok], slots[ok], v[ok]
    chosen = take(v, _limits(st, b, s, d, q=q, amount=amount))
    st.move(parts[chosen], slots[chosen], np.full(int(chosen.sum()), d, dtype=np.int32))
    return float(v[chosen, q].sum())


def _order(st: State, b: Bands, s: int, d: int, *, v: FloatArray, q: int, amount: float, penalty: FloatArray) -> Ints:
    if q in COUNT_QUANTITIES:
        return fit_order(st, b, s, d, v=v, q=q, count=amount, penalty=penalty)
    # Among items that fit: those that also even out their topic first, then largest first (fewest
    # items for the amount); ties keep partition order.
    fits = v[:, q] <= amount * (1 + 1e-9)
    order: Ints = np.lexsort((-v[:, q], penalty, ~fits)).astype(np.int64)
    return order


def balance_goal(st: State, goal: str) -> int:
    """Run rounds of one distribution goal until it holds or nothing more can move. Returns rounds run."""
    q = GOAL_QUANTITY[goal]
    nracks = st.group_racks()
    rounds = 0
    for rounds in range(1, st.options.max_rounds + 1):  # noqa: B007 - the count is returned
        b = compute_bands(st)
        pairs = make_pairs(st, b, q)
        if not pairs:
            break
        index = st.broker_index_by_slot()
        moved = 0.0
        for s, d, amount in pairs:
            left = amount
            if q in LEADER_FIRST:
                left -= _leader_batch(st, b, index, s, d=d, q=q, amount=left)
            if left > 1e-9 * max(1.0, amount) and (q not in COUNT_QUANTITIES or left >= 0.5):
                left -= _replica_batch(st, b, index, s, d=d, q=q, amount=left, nracks=nracks)
            moved += amount - left
        if moved <= 0:
            break
    return rounds
