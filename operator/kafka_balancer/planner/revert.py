"""Undo moves the finished plan does not need: send moved replicas back where they started.

Goals are optimized one after another, so a replica moved early for one goal may no longer be
needed once later moves have balanced its brokers anyway. After the last goal, every replica that
left its original broker is offered a move back (largest first: the most bytes saved); a batch of
them is accepted together only where no broker ends further from any distribution goal's band or
over a capacity limit, no topic's spread gets worse, and every hard goal (racks, exclusions,
confinement) holds, so the plan moves fewer bytes and every goal that held still holds.
"""

from __future__ import annotations

from typing import Final

import numpy as np

from kafka_balancer.model.cluster import NO_BROKER, BoolArray, FloatArray
from kafka_balancer.planner.select import Bands, accept_together, compute_bands, ranks
from kafka_balancer.planner.state import Ints, State

ROUNDS: Final = 6


def revert_moves(st: State) -> int:
    """Rounds of moving replicas back to their original brokers where nothing gets worse. Returns moves undone."""
    orig = st.model.replicas
    if orig.shape != st.rep.shape:
        return 0  # the replication factor changed: the original slots do not line up
    nracks = st.group_racks()
    total = 0
    for _ in range(ROUNDS):
        parts, slots, homes = _candidates(st, orig)
        if parts.size == 0:
            break
        b = compute_bands(st)
        keep = _rack_ok(st, parts, slots, homes, nracks) & _topics_ok(st, b, parts, slots, homes)
        parts, slots, homes = parts[keep], slots[keep], homes[keep]
        src = st.rep[parts, slots]
        v = np.where((slots == 0)[:, None], st.lead[parts], st.follow[parts])
        acc = accept_together(st, b, src=src, dst=homes, v=v)
        st.move(parts[acc], slots[acc], homes[acc].astype(np.int32))
        moved = int(acc.sum())
        total += moved
        if moved == 0:
            break
    return total


def _candidates(st: State, orig: Ints) -> tuple[Ints, Ints, Ints]:
    """(partition, slot, original broker) for each replica that arrived where the partition was not,
    paired with a broker the partition left (one per partition per round), largest partitions first."""
    rep = st.rep
    valid = rep != NO_BROKER
    arrived = valid & ~(rep[:, :, None] == orig[:, None, :]).any(axis=2)
    left = (orig != NO_BROKER) & ~(orig[:, :, None] == rep[:, None, :]).any(axis=2)
    rows = np.flatnonzero(arrived.any(axis=1) & left.any(axis=1) & st.movable)
    if rows.size == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    slot = np.argmax(arrived[rows], axis=1).astype(np.int64)
    home = orig[rows, np.argmax(left[rows], axis=1)].astype(np.int64)
    ok = st.can_host[home] & (st.groups.broker[home] == st.groups.partition[rows])
    ok &= (slot != 0) | st.can_lead[home]
    rows, slot, home = rows[ok], slot[ok], home[ok]
    order = np.argsort(-st.model.size_bytes[rows], kind="stable")
    return rows[order].astype(np.int64), slot[order], home[order]


def _rack_ok(st: State, parts: Ints, slots: Ints, homes: Ints, nracks: Ints) -> BoolArray:
    if not st.options.hard("rack-awareness"):
        return np.ones(parts.size, dtype=np.bool_)
    rows = st.rep[parts]
    valid = rows != NO_BROKER
    racks = np.where(valid, st.rack[np.maximum(rows, 0)], -1)
    racks[np.arange(parts.size), slots] = -1
    same = (racks == st.rack[homes][:, None]).sum(axis=1)
    allowed = np.ceil(valid.sum(axis=1) / np.maximum(nracks[st.groups.partition[parts]], 1))
    out: BoolArray = same + 1 <= allowed
    return out


def _topics_ok(st: State, b: Bands, parts: Ints, slots: Ints, homes: Ints) -> BoolArray:
    """Moves under which no topic's replica (or leader) spread ends further from its band, counting
    every earlier move of the batch with the same topic and broker."""
    t = st.ptopic[parts].astype(np.int64)
    src = st.rep[parts, slots].astype(np.int64)
    ok = np.ones(parts.size, dtype=np.bool_)
    goals = st.options.distribution_goals
    if "topic-replica-distribution" in goals:
        ok &= _steps_ok(st.tcount, (b.topic_lo, b.topic_hi), t, src=src, dst=homes, nb=st.model.num_brokers)
    if "topic-leader-distribution" in goals:
        led = (slots == 0) & b.leader_spread[t]
        ok &= ~led | _steps_ok(st.tlead, (b.lead_lo, b.lead_hi), t, src=src, dst=homes, nb=st.model.num_brokers)
    return ok


def _steps_ok(
    counts: Ints, band: tuple[FloatArray, FloatArray], t: Ints, *, src: Ints, dst: Ints, nb: int
) -> BoolArray:
    """The k-th -1 on (t, src) stays at or above the band's lower edge, the k-th +1 on (t, dst) at
    or below the upper edge."""
    lo, hi = band
    down = counts[t, src] - ranks(t * nb + src) - 1
    up = counts[t, dst] + ranks(t * nb + dst) + 1
    out: BoolArray = (down >= lo[t]) & (up <= hi[t])
    return out
