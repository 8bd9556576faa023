"""Replica swaps: when one-way moves stall, exchange a replica of ``s`` with one of ``d``.

A one-way move changes both brokers' replica counts; when those counts already sit on the band's
edge (a goal optimized earlier guards them), only a swap can still shift bytes: ``s`` gives a big
replica and takes back a small one, so the counts stay and the difference moves. Swaps move more
bytes than a one-way move of the same effect, so they come last and pick the pair whose
difference best fits the gap.
"""

from __future__ import annotations

import numpy as np

from kafka_balancer.model.cluster import BoolArray, FloatArray
from kafka_balancer.planner.base.arrays import Ints
from kafka_balancer.planner.base.candidates import leader_candidates, replica_candidates
from kafka_balancer.planner.base.pair_checks import Pair, PairCheck
from kafka_balancer.planner.base.topic_spread import topic_ok
from kafka_balancer.planner.tuning import TUNING


def _closest(moved: FloatArray, ok: BoolArray, left: float) -> tuple[int, int] | None:
    """The accepted candidate (row, column of ``moved``) whose amount is closest to what is
    ``left``, an overshoot counting double (it only helps when nothing fits); None when even that
    one would overshoot by the whole gap or more (the distance would not shrink)."""
    gap = moved - left
    score = np.where(ok, np.where(gap > 0, 2 * gap, -gap), np.inf)
    i, j = np.unravel_index(int(np.argmin(score)), score.shape)
    if gap[i, j] > 0 and moved[i, j] >= 2 * left:
        return None
    return int(i), int(j)


def _side(pair: Pair) -> tuple[Ints, Ints, FloatArray]:
    """Replicas of ``s`` that may go to ``d``, each alone keeping its topic's spread."""
    st = pair.st
    parts, slots = replica_candidates(st, pair.index, pair.s, d=pair.d, nracks=pair.nracks, leaders_only=False)
    v = st.slot_loads(parts, slots)
    ok = topic_ok(pair, st.ptopic[parts], slots == 0, cumulative=False)
    return parts[ok], slots[ok], v[ok]


def swap_batch(pair: Pair, amount: float) -> float:
    """Swap replicas between ``s`` and ``d`` so that about ``amount`` of ``q`` moves from ``s`` to ``d``.

    Returns the net amount of ``q`` moved. Each swap is accepted only when the pair check (every
    guarded goal's distance on ``s`` and ``d`` does not grow, capacities hold) accepts the net change.
    """
    st, s, d, q = pair.st, pair.s, pair.d, pair.q
    if not (st.can_host[d] and st.can_host[s]):
        return 0.0
    xp, xs, xv = _side(pair)
    yp, ys, yv = _side(pair.reversed())
    if xp.size == 0 or yp.size == 0:
        return 0.0
    xo = np.argsort(-xv[:, q], kind="stable")[: TUNING.swap_side]
    yo = np.argsort(yv[:, q], kind="stable")[: TUNING.swap_side]
    xp, xs, xv = xp[xo], xs[xo], xv[xo]
    yp, ys, yv = yp[yo], ys[yo], yv[yo]
    x_free = np.ones(xp.size, dtype=np.bool_)
    y_free = np.ones(yp.size, dtype=np.bool_)
    left = amount
    for _ in range(TUNING.swaps_per_pair):
        if left <= 1e-9 * max(1.0, amount):
            break
        # For each x, the y whose value makes the difference closest to what is left (yv is ascending).
        yi = np.flatnonzero(y_free)
        if yi.size == 0:
            break
        want = xv[:, q] - left
        pos = np.clip(np.searchsorted(yv[yi, q], want), 0, yi.size - 1)
        lower = np.maximum(pos - 1, 0)
        cand_y = np.stack([yi[pos], yi[lower]], axis=1)  # (X, 2)
        net = xv[:, None, :] - yv[cand_y]  # (X, 2, Q)
        check = PairCheck(pair, amount=np.inf)
        ok = check(net) & x_free[:, None] & (net[..., q] > 0)
        if not ok.any():
            break
        best = _closest(net[..., q], ok, left)
        if best is None:
            break
        i, j = best
        k = int(cand_y[i, j])
        st.move(xp[i : i + 1], xs[i : i + 1], np.array([d], dtype=np.int32))
        st.move(yp[k : k + 1], ys[k : k + 1], np.array([s], dtype=np.int32))
        # Each side's topic check saw the counts before this swap: no further swap of these topics
        # on this pair, or a topic's spread could drift by more than the one step checked.
        used = st.ptopic[[xp[i], yp[k]]]
        x_free &= ~np.isin(st.ptopic[xp], used)
        y_free &= ~np.isin(st.ptopic[yp], used)
        left -= float(net[i, j, q])
    return amount - left


def _keeps_leader_spread(pair: Pair, parts: Ints) -> BoolArray:
    """Leaderships of ``parts`` that, each moved alone from ``s`` to ``d``, keep their topic's
    leader spread (all of them while the topic-leader goal is not guarded)."""
    leaders = np.ones(parts.size, dtype=np.bool_)
    return topic_ok(pair, pair.st.ptopic[parts], leaders, replicas_move=False, cumulative=False)


def leader_exchange(pair: Pair, amount: float) -> float:
    """Shift leader *count* from ``s`` to ``d`` when plain leadership moves would crowd ``d``'s traffic.

    ``d`` takes two light leaderships from ``s`` and hands one heavy leadership back: ``d`` leads
    one more partition while its network out and CPU barely change, so goals already balanced on
    those keep holding. Each exchange must pass the pair check. Returns the count moved.
    """
    st, b, s, d, index = pair.st, pair.b, pair.s, pair.d, pair.index
    if not (st.can_lead[d] and st.can_lead[s]):
        return 0.0
    moved = 0.0
    for _ in range(int(min(amount + 0.5, TUNING.leader_exchanges_per_pair))):
        ap, aslot = leader_candidates(st, index, s, d)
        bp, bslot = leader_candidates(st, index, d, s)
        if ap.size < 2 or bp.size == 0:
            break
        # Each leadership on its own keeps its topic's leader spread; two of the same topic from s
        # would be a second move of it, so such pairs are left out below.
        fine_a, fine_b = _keeps_leader_spread(pair, ap), _keeps_leader_spread(pair.reversed(), bp)
        ap, aslot, bp, bslot = ap[fine_a], aslot[fine_a], bp[fine_b], bslot[fine_b]
        if ap.size < 2 or bp.size == 0:
            break
        scale = np.maximum(b.avg[s], 1e-12)
        va, vb = st.lead[ap] - st.follow[ap], st.lead[bp] - st.follow[bp]
        wa, wb = (va / scale).sum(axis=1), (vb / scale).sum(axis=1)
        light = np.argsort(wa, kind="stable")[: TUNING.leader_exchange_side]
        heavy = np.argsort(-wb, kind="stable")[: TUNING.leader_exchange_side]
        i, j = np.triu_indices(light.size, k=1)
        net = (va[light[i]] + va[light[j]])[:, None, :] - vb[heavy][None, :, :]  # (pairs, heavy, Q)
        ok = PairCheck(pair, amount=1.0)(net)
        ta = st.ptopic[ap[light]]
        ok &= (ta[i] != ta[j])[:, None]
        if not ok.any():
            break
        others = np.abs(net / scale).sum(axis=2) - np.abs(net[..., pair.q] / scale[pair.q])
        pick = int(np.argmin(np.where(ok, others, np.inf)))
        x, y = divmod(pick, heavy.size)
        a1, a2, h = light[i[x]], light[j[x]], heavy[y]
        st.swap_leader(ap[[a1, a2]], aslot[[a1, a2]])
        st.swap_leader(bp[h : h + 1], bslot[h : h + 1])
        moved += 1.0
    return moved


def leader_trade(pair: Pair, amount: float) -> float:
    """Shift a leader-borne load (leader bytes-in, network out, CPU) from ``s`` to ``d`` without
    changing either broker's leader count: ``d`` takes a heavy leadership from ``s`` and hands a
    light one back. No data moves. Each trade must pass the pair check and, once the topic-leader
    goal is guarded, keep both topics' leader spread. Returns the amount moved."""
    st, s, d, q, index = pair.st, pair.s, pair.d, pair.q, pair.index
    if not (st.can_lead[d] and st.can_lead[s]):
        return 0.0
    left = amount
    for _ in range(TUNING.trades_per_pair):
        if left <= 1e-9 * max(1.0, amount):
            break
        ap, aslot = leader_candidates(st, index, s, d)
        bp, bslot = leader_candidates(st, index, d, s)
        # Each side alone (a trade of two leaderships of one topic changes nothing for it).
        fine_a, fine_b = _keeps_leader_spread(pair, ap), _keeps_leader_spread(pair.reversed(), bp)
        ap, aslot, bp, bslot = ap[fine_a], aslot[fine_a], bp[fine_b], bslot[fine_b]
        if ap.size == 0 or bp.size == 0:
            break
        va, vb = st.lead[ap] - st.follow[ap], st.lead[bp] - st.follow[bp]
        heavy = np.argsort(-va[:, q], kind="stable")[: TUNING.trade_side]
        light = np.argsort(vb[:, q], kind="stable")[: TUNING.trade_side]
        net = va[heavy][:, None, :] - vb[light][None, :, :]  # (heavy, light, Q)
        ok = PairCheck(pair, amount=np.inf)(net) & (net[..., q] > 0)
        if not ok.any():
            break
        best = _closest(net[..., q], ok, left)
        if best is None:
            break
        i, j = best
        x, y = heavy[i], light[j]
        st.swap_leader(ap[x : x + 1], aslot[x : x + 1])
        st.swap_leader(bp[y : y + 1], bslot[y : y + 1])
        left -= float(net[i, j, q])
    return amount - left
