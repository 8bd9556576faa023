"""Per-topic spread by exchanges: when one-way moves stall, trade a replica (or leadership) of an
over-represented topic for one of another topic that can go the other way.

After the broker-level goals, every broker's replica count, leader count and loads sit near their
band edges, so a one-way move of topic T's replica from ``s`` to ``d`` is refused (``d`` would get
one replica too many). A swap sends T's replica ``s -> d`` and a replica of another topic U
``d -> s``: both brokers keep their counts, and when the two partitions are of similar size and
traffic every byte load barely changes, so the guarded bands accept it. U is chosen so that its own
spread does not get worse (U over on ``d``, or simply not pushed out of its band). Leadership works
the same way inside replica sets: ``d`` takes the leadership of T's partition and hands back the
leadership of a U partition that has a follower on ``s``.

Partners are found by size: all candidate partners are sorted by (broker key, size rank), and each
offer looks at the WINDOW nearest in size, so the work per round is a few sorts over the cluster.
"""

from __future__ import annotations

from typing import Final

import numpy as np

from kafka_balancer.model.cluster import NO_BROKER, BoolArray, FloatArray
from kafka_balancer.planner.select import Bands, accept_together
from kafka_balancer.planner.state import COUNT_QUANTITIES, Ints, State

# Partners looked at on each side of the offer's size rank.
WINDOW: Final = 12


def _dist(c: FloatArray, lo: FloatArray, hi: FloatArray) -> FloatArray:
    out: FloatArray = np.maximum(c - hi, 0) + np.maximum(lo - c, 0)
    return out


def _spread_ok(counts: Ints, topic: Ints, frm: Ints, to: Ints, lo: FloatArray, hi: FloatArray) -> BoolArray:
    """Moving one of ``topic`` from ``frm`` to ``to`` does not take its spread further from the band."""
    cf, ct = counts[topic, frm].astype(np.float64), counts[topic, to].astype(np.float64)
    lo_t, hi_t = lo[topic], hi[topic]
    out: BoolArray = _dist(cf - 1, lo_t, hi_t) + _dist(ct + 1, lo_t, hi_t) <= _dist(cf, lo_t, hi_t) + _dist(
        ct, lo_t, hi_t
    )
    return out


def _window(keys: FloatArray, query: FloatArray, seg_lo: Ints, seg_hi: Ints) -> tuple[Ints, BoolArray]:
    """Positions of the 2 x WINDOW sorted keys nearest ``query`` inside each segment [seg_lo, seg_hi)."""
    pos = np.searchsorted(keys, query)
    offs = np.arange(-WINDOW, WINDOW)
    idx = pos[:, None] + offs[None, :]
    ok = (idx >= seg_lo[:, None]) & (idx < seg_hi[:, None])
    out: Ints = np.clip(idx, 0, max(keys.size - 1, 0))
    return out, ok


def _weights(st: State, b: Bands, s: Ints) -> FloatArray:
    """Per offer, 1/avg of each guarded non-count quantity (0 elsewhere): how much a net change costs."""
    guarded = np.isfinite(b.upper[s]) | np.isfinite(b.lower[s])
    avg = np.maximum(b.avg[s], 1e-12)
    w: FloatArray = np.where(guarded, 1.0 / avg, 0.0)
    for q in COUNT_QUANTITIES:
        w[:, q] = 0.0
    return w


def _unique_keys(*pairs: tuple[Ints, Ints]) -> BoolArray:
    """Swaps (in order) none of whose (topic, broker) keys is used by an earlier swap of the batch.

    Each (topic, broker) count then changes at most once per round, so every swap's own spread
    check stays valid when the whole batch is applied.
    """
    n = pairs[0][0].size
    keys = np.concatenate([t.astype(np.int64) * (1 << 32) + b.astype(np.int64) for t, b in pairs])
    owner = np.tile(np.arange(n), len(pairs))
    order = np.lexsort((owner, keys))
    ks, os = keys[order], owner[order]
    first = np.r_[True, ks[1:] != ks[:-1]]
    winner = np.maximum.accumulate(np.where(first, np.arange(ks.size), 0))
    clash = os[winner] != os
    bad = np.zeros(n, dtype=np.bool_)
    bad[os[clash]] = True
    out: BoolArray = ~bad
    return out


def replica_swaps(
    st: State, b: Bands, parts: Ints, slots: Ints, dests: Ints, *, nracks: Ints, size_rank: Ints
) -> int:
    """Pair each offered move (slot ``slots`` of ``parts`` to ``dests``) with a partner coming back.

    Partners: a replica on the destination, of the same kind (leader or follower, so leader counts
    stay), of another topic whose spread allows the way back, nearest in size. Returns swaps made.
    """
    if parts.size == 0:
        return 0
    followers_only = "topic-leader-distribution" in st.guarded
    rep = st.rep
    nparts = max(st.model.num_partitions, 1)
    valid = (rep != NO_BROKER) & st.movable[:, None]
    if followers_only:
        valid[:, 0] = False
    yp, yk = np.nonzero(valid)
    yb = rep[yp, yk].astype(np.int64)
    kind = (yk == 0).astype(np.int64)
    seg = yb * 2 + kind
    key = seg + size_rank[yp] / nparts
    order = np.argsort(key, kind="stable")
    yp, yk, key = yp[order], yk[order], key[order]
    starts = np.searchsorted(key, np.arange(st.model.num_brokers * 2 + 1))

    if followers_only:
        sel = slots != 0
        parts, slots, dests = parts[sel], slots[sel], dests[sel]
    src = rep[parts, slots].astype(np.int64)
    qseg = dests.astype(np.int64) * 2 + (slots == 0)
    idx, ok = _window(key, qseg + size_rank[parts] / nparts, starts[qseg], starts[qseg + 1])
    cp, ck = yp[idx], yk[idx]  # (n, 2W) partner partition and slot
    t, u = st.ptopic[parts], st.ptopic[cp]
    ok &= u != t[:, None]
    ok &= ~(rep[cp] == src[:, None, None]).any(axis=2)  # partner's partition not already on s
    ok &= st.groups.partition[cp] == st.groups.broker[src][:, None]
    ok &= st.can_host[src][:, None] & ((ck != 0) | st.can_lead[src][:, None])
    ok &= _spread_ok(st.tcount, u, dests[:, None], src[:, None], b.topic_lo, b.topic_hi)
    lead_on = b.topic_leader_on[u] & (ck == 0)
    if lead_on.any():
        ok &= ~lead_on | _spread_ok(st.tlead, u, dests[:, None], src[:, None], b.lead_lo, b.lead_hi)
    if st.options.hard("rack-awareness"):
        rows = rep[cp]
        v = rows != NO_BROKER
        racks = np.where(v, st.rack[np.maximum(rows, 0)], -1)
        np.put_along_axis(racks, ck[..., None], -1, axis=2)
        same = (racks == st.rack[src][:, None, None]).sum(axis=2)
        allowed = np.ceil(v.sum(axis=2) / np.maximum(nracks[st.groups.partition[cp]], 1))
        ok &= same + 1 <= allowed
    vx = np.where((slots == 0)[:, None], st.lead[parts], st.follow[parts])  # (n, Q)
    vy = np.where((ck == 0)[..., None], st.lead[cp], st.follow[cp])  # (n, 2W, Q)
    net = vx[:, None, :] - vy
    cost = (np.abs(net) * _weights(st, b, src)[:, None, :]).sum(axis=2)
    j = np.argmin(np.where(ok, cost, np.inf), axis=1)
    n = np.arange(parts.size)
    found = ok[n, j]
    p, k, d, s = parts[found], slots[found], dests[found], src[found]
    q, qk, net1 = cp[n, j][found], ck[n, j][found], net[n, j][found]
    tt, uu = st.ptopic[p], st.ptopic[q]
    keep = _unique_keys((tt, s), (tt, d), (uu, d), (uu, s))
    allp = np.concatenate([p, q])
    first_p = np.zeros(allp.size, dtype=np.bool_)
    _, at = np.unique(allp, return_index=True)
    first_p[at] = True
    keep &= first_p[: p.size] & first_p[p.size :] & ~np.isin(q, p) & ~np.isin(p, q)
    p, k, d, s, q, qk, net1 = p[keep], k[keep], d[keep], s[keep], q[keep], qk[keep], net1[keep]
    acc = accept_together(st, b, src=s, dst=d, v=net1)
    import os
    if os.environ.get("H2DBG"):
        print("rs", parts.size, int(found.sum()), int(keep.sum()), int(acc.sum()))
    p, k, d, s, q, qk = p[acc], k[acc], d[acc], s[acc], q[acc], qk[acc]
    st.move(p, k, d.astype(np.int32))
    st.move(q, qk, s.astype(np.int32))
    return int(p.size)


def leader_swaps(st: State, b: Bands, parts: Ints, slots: Ints, *, size_rank: Ints) -> int:
    """Pair each offered leadership move (``parts`` led by s, new leader at ``slots`` on d) with a
    leadership of another topic going from d back to s, inside a replica set holding both.

    Leader counts stay; leader bytes-in, network out and CPU move by the difference, so the partner
    is the one nearest in size. Returns swaps made.
    """
    if parts.size == 0:
        return 0
    rep = st.rep
    nb = st.model.num_brokers
    nparts = max(st.model.num_partitions, 1)
    # Every (leader, follower) pair of every movable partition: partner candidates.
    fp, fk = np.nonzero((rep[:, 1:] != NO_BROKER) & st.movable[:, None])
    fk = fk + 1
    lead_b = rep[fp, 0].astype(np.int64)
    fol_b = rep[fp, fk].astype(np.int64)
    seg = lead_b * nb + fol_b
    key = seg + size_rank[fp] / nparts
    order = np.argsort(key, kind="stable")
    fp, fk, key = fp[order], fk[order], key[order]
    starts = np.searchsorted(key, np.arange(nb * nb + 1))

    s = rep[parts, 0].astype(np.int64)
    d = rep[parts, slots].astype(np.int64)
    qseg = d * nb + s  # partitions led by d with a follower on s
    idx, ok = _window(key, qseg + size_rank[parts] / nparts, starts[qseg], starts[qseg + 1])
    cp, ck = fp[idx], fk[idx]
    t, u = st.ptopic[parts], st.ptopic[cp]
    ok &= u != t[:, None]
    ok &= st.can_lead[s][:, None]
    on = b.topic_leader_on[u]
    ok &= ~on | _spread_ok(st.tlead, u, d[:, None], s[:, None], b.lead_lo, b.lead_hi)
    vx = st.lead[parts] - st.follow[parts]
    vy = st.lead[cp] - st.follow[cp]
    net = vx[:, None, :] - vy
    cost = (np.abs(net) * _weights(st, b, s)[:, None, :]).sum(axis=2)
    j = np.argmin(np.where(ok, cost, np.inf), axis=1)
    n = np.arange(parts.size)
    found = ok[n, j]
    p, k, ss, dd = parts[found], slots[found], s[found], d[found]
    q, qk, net1 = cp[n, j][found], ck[n, j][found], net[n, j][found]
    tt, uu = st.ptopic[p], st.ptopic[q]
    keep = _unique_keys((tt, ss), (tt, dd), (uu, dd), (uu, ss))
    allp = np.concatenate([p, q])
    first_p = np.zeros(allp.size, dtype=np.bool_)
    _, at = np.unique(allp, return_index=True)
    first_p[at] = True
    keep &= first_p[: p.size] & first_p[p.size :] & ~np.isin(q, p) & ~np.isin(p, q)
    p, k, ss, dd, q, qk, net1 = p[keep], k[keep], ss[keep], dd[keep], q[keep], qk[keep], net1[keep]
    acc = accept_together(st, b, src=ss, dst=dd, v=net1)
    st.swap_leader(p[acc], k[acc])
    st.swap_leader(q[acc], qk[acc])
    return int(acc.sum())
