"""Operations that pin partitions still keep every hard goal.

fix-offline-replicas, move-topics and remove-brokers onto target brokers move only their own
replicas. Where the cluster breaks a hard goal those cannot mend (two replicas of another partition
in one rack, a replica outside its group, a broker above a limit, or one that only goes under it
once other replicas make room), other replicas of the balanced groups move too, rather than the
plan failing; never the replicas the operation put on brokers the user named.
"""

from __future__ import annotations

import numpy as np

from kafka_balancer.model.cluster import BoolArray
from kafka_balancer.planner.goals import CAPACITY_GOALS
from kafka_balancer.planner.hard import bad_slots, enforce_capacity, evacuate
from kafka_balancer.planner.operations import topic_partitions
from kafka_balancer.planner.options import PlanningError
from kafka_balancer.planner.state import Ints, State


def repairable(st: State, free: BoolArray, evacuated: Ints) -> BoolArray:
    """Partitions that may move to keep a hard goal: those the user lets move (``free``: the balanced
    groups, the topics filter) and the operation's own, less those it put on named brokers."""
    locked = np.zeros_like(free)
    op = st.options.operation
    if op.type == "move-topics" and op.target_group is None:
        locked[topic_partitions(st, op.topics, "operation.topics")] = True
    elif op.type == "remove-brokers" and op.target_brokers:
        locked[evacuated] = True
    out: BoolArray = (free | st.movable) & ~locked
    return out


def repair_racks_and_groups(st: State, allowed: BoolArray) -> None:
    """Re-place the replicas of ``allowed`` partitions that crowd a rack or sit outside their group,
    where the operation pinned them (a rebalance's own evacuation already took them)."""
    if not (allowed & ~st.movable).any():
        return
    pinned = st.movable
    st.movable = allowed
    try:
        parts, slots = bad_slots(st, np.zeros(st.model.num_brokers, dtype=np.bool_))
        evacuate(st, parts, slots)
    finally:
        st.movable = pinned


def repair_capacity(st: State, allowed: BoolArray, evacuated: Ints, *, fewest_bytes: bool) -> None:
    """The capacity repair with the operation's replicas first, then, if that leaves a broker above a
    limit, with every ``allowed`` partition.

    fix-offline-replicas first moves only the re-placed replicas (their live peers stay), which may
    settle on another broker of their rack: putting them back in their rack's free room is often
    just a matter of which one goes where.
    """
    pinned = st.movable
    st.movable = pinned.copy()
    if st.options.operation.type == "fix-offline-replicas":
        st.movable[evacuated] = True
        st.arrived_only = True
    try:
        enforce_capacity(st, fewest_bytes=fewest_bytes)
    except PlanningError as error:
        if error.reason not in CAPACITY_GOALS or not (allowed & ~st.movable).any():
            raise
        st.movable, st.arrived_only = allowed, False
        enforce_capacity(st, fewest_bytes=fewest_bytes)
    finally:
        st.movable, st.arrived_only = pinned, False


def repair_capacity_by_leadership(st: State, allowed: BoolArray) -> None:
    """demote-brokers moves no data, but the leaders it picks carry network out and CPU: the loads
    leadership carries are brought under their limits by moving the leadership of ``allowed``
    partitions (a demoted broker's partitions went to the replica leading fewest, which may be full)."""
    pinned = st.movable
    st.movable = allowed
    try:
        enforce_capacity(st, leadership_only=True)
    finally:
        st.movable = pinned
