"""Undo moves the finished plan does not need: send moved replicas back where they started.

Goals are optimized one after another, so a replica moved early for one goal may no longer be
needed once later moves have balanced its brokers anyway. After the last goal, every replica that
left its original broker is offered a move back (largest first: the most bytes saved); a batch of
them is accepted together only where no broker ends further from any distribution goal's band or
over a capacity limit, no topic's spread gets worse, and every hard goal (racks, exclusions,
confinement) holds, so the plan moves fewer bytes and every goal that held still holds.
"""

from __future__ import annotations

import numpy as np

from kafka_balancer.model.cluster import BoolArray
from kafka_balancer.planner.base.arrays import Ints, row_any
from kafka_balancer.planner.base.candidates import rack_ok
from kafka_balancer.planner.base.round_bands import Bands, compute_bands
from kafka_balancer.planner.base.state import State, arrived_replicas
from kafka_balancer.planner.base.together import accept_together
from kafka_balancer.planner.base.topic_spread import within_budget
from kafka_balancer.planner.catalogue import TOPIC_LEADER_GOAL, TOPIC_REPLICA_GOAL
from kafka_balancer.planner.tuning import TUNING


def revert_moves(st: State) -> int:
    """Rounds of moving replicas back to their original brokers where nothing gets worse. Returns moves undone."""
    orig = st.model.replicas
    if orig.shape != st.rep.shape:
        return 0  # the replication factor changed: the original slots do not line up
    nracks = st.group_racks()
    total = 0
    for _ in range(TUNING.revert_rounds):
        parts, slots, homes = _candidates(st, orig)
        if parts.size == 0:
            break
        b = compute_bands(st)
        keep = rack_ok(st, parts, slots, d=homes, nracks=nracks) & _topics_ok(st, b, parts, slots, homes)
        parts, slots, homes = parts[keep], slots[keep], homes[keep]
        src = st.rep[parts, slots]
        v = st.slot_loads(parts, slots)
        acc = accept_together(st, b, src=src, dst=homes, v=v)
        st.move(parts[acc], slots[acc], homes[acc].astype(np.int32))
        moved = int(acc.sum())
        total += moved
        if moved == 0:
            break
    return total


def moved_replicas(st: State, orig: Ints) -> tuple[Ints, Ints, Ints]:
    """(partition, slot, original broker) for each replica that arrived where the partition was not,
    paired with a broker the partition left (one per partition) that may take it back."""
    rep = st.rep
    arrived = arrived_replicas(rep, orig)
    left = arrived_replicas(orig, rep)  # original replicas no longer where they were
    rows = np.flatnonzero(row_any(arrived) & row_any(left) & st.scope.movable)
    slot = np.argmax(arrived[rows], axis=1).astype(np.int64)
    home = orig[rows, np.argmax(left[rows], axis=1)].astype(np.int64)
    ok = st.can_host[home] & (st.groups.broker[home] == st.groups.partition[rows])
    ok &= (slot != 0) | st.can_lead[home]
    return rows[ok].astype(np.int64), slot[ok], home[ok]


def _candidates(st: State, orig: Ints) -> tuple[Ints, Ints, Ints]:
    """:func:`moved_replicas`, largest partitions first (the most bytes saved)."""
    rows, slot, home = moved_replicas(st, orig)
    order = np.argsort(-st.model.copy_bytes[rows], kind="stable")
    return rows[order], slot[order], home[order]


def _topics_ok(st: State, b: Bands, parts: Ints, slots: Ints, homes: Ints) -> BoolArray:
    """Moves under which no topic's replica (or leader) spread ends further from its band, counting
    every earlier move of the batch with the same topic and broker."""
    t = st.ptopic[parts].astype(np.int64)
    src = st.rep[parts, slots].astype(np.int64)
    ok = np.ones(parts.size, dtype=np.bool_)
    goals = st.options.distribution_goals
    if TOPIC_REPLICA_GOAL in goals:
        ok &= within_budget(st.tcount, b.topic_lo, b.topic_hi, (t, src, -1), (t, homes, 1))
    if TOPIC_LEADER_GOAL in goals:
        led = (slots == 0) & b.leader_spread[t]
        ok &= ~led | within_budget(st.tlead, b.lead_lo, b.lead_hi, (t, src, -1), (t, homes, 1))
    return ok
