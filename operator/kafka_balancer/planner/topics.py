"""Per-topic spread goals: a topic's replicas (and leaders) spread evenly over its group's brokers.

These are the last goals, so every move must keep every earlier goal's band on both brokers
(the slack check of :mod:`select`). Moves are single items (one replica or one leadership of the
topic from its fullest broker to its emptiest), batched per round over all unbalanced topics.
"""

from __future__ import annotations

from typing import Final

import numpy as np

from kafka_balancer.planner.select import Bands, compute_bands, rack_ok, slack, topic_allowance
from kafka_balancer.planner.state import Ints, State

# Destinations tried per unbalanced topic and round (emptiest first).
DESTS_PER_TOPIC: Final = 4


def _topic_partitions(st: State) -> tuple[Ints, Ints]:
    order = np.argsort(st.ptopic, kind="stable").astype(np.int64)
    starts = np.searchsorted(st.ptopic[order], np.arange(len(st.model.topics) + 1)).astype(np.int64)
    return order, starts


def balance_topic_goal(st: State, goal: str) -> int:
    """Rounds of one-item moves until the topic goal holds or nothing can move. Returns moves made."""
    leaders = goal == "topic-leader-distribution"
    order, starts = _topic_partitions(st)
    nracks = st.group_racks()
    receiver = st.can_lead if leaders else st.can_host
    total = 0
    for _ in range(st.options.max_rounds):
        b = compute_bands(st)
        counts = st.tlead if leaders else st.tcount
        lo, hi = (b.lead_lo, b.lead_hi) if leaders else (b.topic_lo, b.topic_hi)
        groups = st.groups
        in_group = (groups.broker[None, :] == groups.topic[:, None]) & st.active[None, :]
        in_group &= groups.balanced[groups.topic][:, None]
        if leaders:
            in_group &= b.topic_leader_on[:, None]
        over = in_group & (counts > hi[:, None])
        under = in_group & (counts < lo[:, None]) & receiver[None, :]
        unbalanced = np.flatnonzero(over.any(axis=1) | under.any(axis=1))
        moved = 0
        for t in unbalanced.tolist():
            parts = order[starts[t] : starts[t + 1]]
            parts = parts[st.movable[parts]]
            if parts.size == 0:
                continue
            row = counts[t]
            s = int(np.argmax(np.where(in_group[t], row, -1)))
            dests = np.flatnonzero(in_group[t] & receiver)
            dests = dests[np.argsort(row[dests], kind="stable")][:DESTS_PER_TOPIC]
            for d in dests.tolist():
                if row[s] - row[d] < 2 or not (row[s] > hi[t] or row[d] < lo[t]):
                    break
                if _move_one(st, b, parts, s, d=d, leaders=leaders, nracks=nracks):
                    moved += 1
                    break
        total += moved
        if moved == 0:
            break
    return total


def _move_one(st: State, b: Bands, parts: Ints, s: int, *, d: int, leaders: bool, nracks: Ints) -> bool:
    rows = st.rep[parts]
    limits = slack(st, b, s, d)
    if leaders:
        led = rows[:, 0] == s
        hit = rows == d
        cand = np.flatnonzero(led & hit.any(axis=1))
        if cand.size:
            p = parts[cand]
            slots = np.argmax(hit[cand], axis=1).astype(np.int64)
            v = st.lead[p] - st.follow[p]
            ok = np.all(v <= limits + 1e-9, axis=1)
            ok &= (
                topic_allowance(
                    st, b, s, d, topics=st.ptopic[p], leaders=np.ones(p.size, dtype=np.bool_), replicas_move=False
                )
                >= 1
            )
            if ok.any() and st.can_lead[d]:
                i = int(np.flatnonzero(ok)[0])
                st.swap_leader(p[i : i + 1], slots[i : i + 1])
                return True
        return False
    on_s = rows == s
    cand = np.flatnonzero(on_s.any(axis=1) & ~(rows == d).any(axis=1))
    if cand.size == 0 or not st.can_host[d]:
        return False
    p = parts[cand]
    slots = np.argmax(on_s[cand], axis=1).astype(np.int64)
    keep = (st.groups.partition[p] == st.groups.broker[d]) & ((slots != 0) | st.can_lead[d])
    keep &= rack_ok(st, p, slots, d=d, nracks=nracks)
    p, slots = p[keep], slots[keep]
    if p.size == 0:
        return False
    v = np.where((slots == 0)[:, None], st.lead[p], st.follow[p])
    ok = np.all(v <= limits + 1e-9, axis=1)
    ok &= topic_allowance(st, b, s, d, topics=st.ptopic[p], leaders=slots == 0) >= 1
    if not ok.any():
        return False
    # Smallest partition first: the spread goal is about counts, so move the fewest bytes.
    idx = np.flatnonzero(ok)
    i = int(idx[np.argmin(st.model.size_bytes[p[idx]])])
    st.move(p[i : i + 1], slots[i : i + 1], np.array([d], dtype=np.int32))
    return True
