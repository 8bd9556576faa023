"""Which replicas and leaderships a step may move, and where to, under every hard goal.

A step's candidates are the replicas of a giving broker that the stage's scope lets move
(:class:`~kafka_balancer.planner.base.scope.Scope`), and of those the ones a taking broker may
host: its group, exclusions, what stays on brokers the user named, and the rack spread.
"""

from __future__ import annotations

import numpy as np

from kafka_balancer.model.cluster import NO_BROKER, BoolArray
from kafka_balancer.planner.base.arrays import Ints, row_sums
from kafka_balancer.planner.base.measures import rack_allowance
from kafka_balancer.planner.base.state import State, arrived_replicas


def rack_ok(st: State, parts: Ints, slots: Ints, *, d: int | Ints, nracks: Ints) -> BoolArray:
    """Moving slot ``slots`` of ``parts`` to ``d`` (one broker, or one per item) keeps each rack
    within ceil(rf / racks)."""
    if not st.options.hard("rack-awareness"):
        return np.ones(parts.size, dtype=np.bool_)
    rows = st.rep[parts]
    valid = rows != NO_BROKER
    racks = np.where(valid, st.rack[np.maximum(rows, 0)], -1)
    racks[np.arange(parts.size), slots] = -1  # the replica that leaves
    same = row_sums(racks == np.reshape(st.rack[d], (-1, 1)))
    rf = row_sums(valid)
    allowed = rack_allowance(rf, nracks[st.groups.partition[parts]])
    out: BoolArray = same + 1 <= allowed
    return out


def replica_candidates(
    st: State, index: tuple[Ints, Ints], s: int, *, d: int, nracks: Ints, leaders_only: bool
) -> tuple[Ints, Ints]:
    """Replicas on ``s`` that may move to ``d`` under every hard goal: (partitions, slots)."""
    parts, slots = movable_replicas(st, index, s, leaders_only=leaders_only)
    return may_go_to(st, parts, slots, d=d, nracks=nracks)


def movable_replicas(st: State, index: tuple[Ints, Ints], s: int, *, leaders_only: bool) -> tuple[Ints, Ints]:
    """Replicas on ``s`` this step may move at all, wherever to: (partitions, slots)."""
    parts, slots = st.slots_held(index, s)
    if leaders_only:
        parts, slots = parts[slots == 0], slots[slots == 0]
    scope = st.scope
    ok = scope.movable[parts]
    if st.has_unmanaged or scope.arrived_only:
        placed = ~(st.model.replicas[parts] == s).any(axis=1)  # this plan put the replica on s
        # Of a partition in no group only what this plan placed moves, in the capacity repair (State.unmanaged).
        ok = np.where(st.unmanaged[parts], scope.repairing & placed, ok)
        if scope.arrived_only:
            ok &= placed
    return parts[ok], slots[ok]


def may_go_to(st: State, parts: Ints, slots: Ints, *, d: int, nracks: Ints) -> tuple[Ints, Ints]:
    """Those of the replicas ``(parts, slots)`` that may move to ``d`` under every hard goal."""
    keep = may_host(st, parts, slots, d=d)
    parts, slots = parts[keep], slots[keep]
    keep = ~(st.rep[parts] == d).any(axis=1)
    parts, slots = parts[keep], slots[keep]
    keep = rack_ok(st, parts, slots, d=d, nracks=nracks)
    return parts[keep], slots[keep]


def may_host(
    st: State, parts: Ints, slots: Ints, *, d: int, returning: bool = False, counting_named: bool = False
) -> BoolArray:
    """Which of the replicas ``(parts, slots)`` broker ``d`` may take, whatever the partitions' other
    replicas (their brokers and racks are :func:`may_go_to`'s to check): its group, exclusions.
    With ``returning``, a live broker excluded from new replicas may take back one it held before;
    with ``counting_named``, the caller keeps as many replicas it placed on the named brokers as each
    partition needs there (``Named.need``) itself (it places several of a partition's at once)."""
    keep: BoolArray
    if st.can_host[d]:
        keep = np.ones(parts.size, dtype=np.bool_)
    elif returning and st.active[d]:
        keep = (st.model.replicas[parts] == d).any(axis=1)
    else:
        # The exchanges' way back goes to a giver, which may be excluded from taking replicas.
        return np.zeros(parts.size, dtype=np.bool_)
    keep &= (st.groups.partition[parts] == st.groups.broker[d]) | st.unmanaged[parts]
    named = st.scope.named
    if named is not None and not named.brokers[d]:
        on_named = named.brokers[st.rep[parts, slots]]
        held = on_named & named.held[parts]
        if not counting_named:
            # One this plan placed there leaves only while its partition keeps as many placed
            # there as it needs; one that was there before may move like any other peer.
            placed = arrived_replicas(st.rep[parts, slots][:, None], st.model.replicas[parts])[:, 0]
            held |= on_named & placed & (st.placed_on_named(parts) <= named.need[parts])
        keep &= ~held
    if not st.can_lead[d]:
        keep &= slots != 0
    return keep


def led_partitions(st: State, index: tuple[Ints, Ints], s: int) -> Ints:
    """Partitions led by ``s`` whose leadership this step may hand to another replica."""
    parts, slots = st.slots_held(index, s)
    parts = parts[slots == 0]
    ok = st.scope.movable[parts]
    if st.has_unmanaged:
        ok = np.where(st.unmanaged[parts], st.scope.repairing, ok)  # their leadership: in the capacity repair
    out: Ints = parts[ok]
    return out


def leader_candidates(st: State, index: tuple[Ints, Ints], s: int, d: int) -> tuple[Ints, Ints]:
    """Partitions led by ``s`` with a follower on ``d``: (partitions, slot of ``d``); none where ``d`` may not lead."""
    if not st.can_lead[d]:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    parts = led_partitions(st, index, s)
    hit = (st.rep[parts] == d) & st.lead_slots(parts)  # in the partition's preferred leader rack
    has = hit.any(axis=1)
    parts = parts[has]
    return parts, np.argmax(hit[has], axis=1).astype(np.int64)
