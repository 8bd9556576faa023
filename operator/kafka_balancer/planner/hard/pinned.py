"""Operations that pin partitions still keep every hard goal.

fix-offline-replicas, move-topics and remove-brokers onto target brokers move only their own
replicas. Where the cluster breaks a hard goal those cannot mend (two replicas of another partition
in one rack, a replica outside its group, a broker above a limit, or one that only goes under it
once other replicas make room), other replicas of the balanced groups move too, rather than the
plan failing. A partition keeps on the brokers the user named as many replicas as the operation
put there (which ones is the planner's choice: they may settle on another named broker).
"""

from __future__ import annotations

import contextlib

import numpy as np

from kafka_balancer.model.cluster import NO_BROKER, BoolArray
from kafka_balancer.model.policy.operations import FIX_OFFLINE_REPLICAS, MOVE_TOPICS
from kafka_balancer.planner.base.arrays import Ints
from kafka_balancer.planner.base.scope import Named, Scope
from kafka_balancer.planner.base.state import State
from kafka_balancer.planner.capacity.repair import attempt_repair, enforce_capacity
from kafka_balancer.planner.hard.evacuate import bad_slots, evacuate
from kafka_balancer.planner.hard.operations import topic_partitions
from kafka_balancer.planner.options import PlanningError


def _movable(
    st: State, mask: BoolArray, *, arrived_only: bool = False, onto: tuple[BoolArray, Ints] | None = None
) -> contextlib.AbstractContextManager[Scope]:
    """Let ``mask``'s partitions move for a while (only their arrived replicas, with ``arrived_only``;
    with ``onto``, what stays on the brokers the user named: see :class:`Named`)."""
    named = None if onto is None else Named(st.named_targets(), *onto)
    return st.scoped(movable=mask, arrived_only=arrived_only, named=named)


def _named_brokers_topics(st: State) -> BoolArray:
    """The partitions move-topics put on brokers the user named: they stay there."""
    locked = np.zeros(st.model.num_partitions, dtype=np.bool_)
    op = st.options.operation
    if op.kind is MOVE_TOPICS and op.target_group is None:
        locked[topic_partitions(st, op.topics, "operation.topics")] = True
    return locked


def repair_racks_and_groups(st: State, free: BoolArray) -> None:
    """Re-place the replicas that crowd a rack or sit outside their group, in the partitions the
    user lets move (``free``: the balanced groups, the topics filter) but the operation pinned (a
    rebalance's own evacuation takes them). Before the dead or removed brokers' replicas are
    re-placed: those do not count towards a rack, and still go where the operation sends them."""
    allowed = (free | st.scope.movable) & ~_named_brokers_topics(st)
    if not (allowed & ~st.scope.movable).any():
        return
    with _movable(st, allowed):
        parts, slots = bad_slots(st, ~st.active)
        live = st.active[st.rep[parts, slots]]
        evacuate(st, parts[live], slots[live])


def repair_capacity(st: State, free: BoolArray, evacuated: Ints, *, fewest_bytes: bool) -> None:
    """The capacity repair with the operation's replicas first, then, if that leaves a broker above a
    limit, with every partition of ``free`` and every replica of the operation's partitions too;
    each partition keeps as many replicas on the brokers the user named as it needs there.

    fix-offline-replicas first moves only the re-placed replicas (their live peers stay), which may
    settle on another broker of their rack: putting them back in their rack's free room is often
    just a matter of which one goes where. Likewise the replicas placed on brokers the user named
    may settle on another of them (which target takes which replica is the operation's choice).
    """
    op = st.options.operation
    # What stays on the named brokers: every replica of the topics moved there; of a removed
    # broker's partition, as many replicas placed there as it had on the removed brokers (which
    # ones is the planner's choice; its other replicas may move to make room, as in a hardware
    # swap). Nothing of a partition re-placed only for a dead broker's replica, which may go
    # anywhere in its group.
    held = _named_brokers_topics(st)
    need = np.zeros(st.model.num_partitions, dtype=np.int64)
    onto_targets = op.kind.removes_brokers and bool(op.target_brokers)
    if onto_targets:
        need[evacuated] = _held_on_removed(st, evacuated)
    locked = held | (need > 0)
    allowed = (free | st.scope.movable) & ~locked
    replaced = op.kind is FIX_OFFLINE_REPLICAS
    arrived_only = replaced or onto_targets
    first = st.scope.movable | locked
    if arrived_only:
        first[evacuated] = True
    with _movable(st, first, arrived_only=arrived_only, onto=(held, need) if locked.any() else None):
        shortfall = attempt_repair(st, fewest_bytes=fewest_bytes)
        if shortfall is not None and ((allowed & ~first).any() or arrived_only):
            shortfall = _repair_wider(st, allowed | first, fewest_bytes=fewest_bytes)
    if shortfall is not None:
        raise shortfall


def _repair_wider(st: State, allowed: BoolArray, *, fewest_bytes: bool) -> PlanningError | None:
    """The retry of :func:`repair_capacity` where the operation's own replicas left a limit broken:
    again with the other partitions of ``allowed``, and the peers of the replicas that moved first."""
    with st.scoped(movable=allowed, arrived_only=False):
        return attempt_repair(st, fewest_bytes=fewest_bytes)


def _held_on_removed(st: State, parts: Ints) -> Ints:
    """How many replicas each of ``parts`` held on the brokers the operation removes."""
    held = st.model.replicas[parts]
    out: Ints = ((held != NO_BROKER) & st.removed[np.maximum(held, 0)]).sum(axis=1)
    return out


def repair_capacity_by_leadership(st: State, allowed: BoolArray) -> None:
    """demote-brokers moves no data, but the leaders it picks carry network out and CPU: the loads
    leadership carries are brought under their limits by moving the leadership of ``allowed``
    partitions (a demoted broker's partitions went to the replica leading fewest, which may be full)."""
    with _movable(st, allowed):
        enforce_capacity(st, leadership_only=True)
