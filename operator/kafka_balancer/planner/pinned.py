"""Operations that pin partitions still keep every hard goal.

fix-offline-replicas, move-topics and remove-brokers onto target brokers move only their own
replicas. Where the cluster breaks a hard goal those cannot mend (two replicas of another partition
in one rack, a replica outside its group, a broker above a limit, or one that only goes under it
once other replicas make room), other replicas of the balanced groups move too, rather than the
plan failing. The replicas the operation put on brokers the user named never leave them, but may
settle on another of them.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

from kafka_balancer.model.cluster import BoolArray
from kafka_balancer.planner.goals import CAPACITY_GOALS
from kafka_balancer.planner.hard import bad_slots, enforce_capacity, evacuate
from kafka_balancer.planner.operations import topic_partitions
from kafka_balancer.planner.options import PlanningError
from kafka_balancer.planner.state import Ints, State


@contextmanager
def _movable(
    st: State, mask: BoolArray, *, arrived_only: bool = False, confined: BoolArray | None = None
) -> Iterator[None]:
    """Let ``mask``'s partitions move for a while (only their arrived replicas, with ``arrived_only``;
    ``confined`` ones only among the brokers the user named)."""
    pinned, st.movable, st.arrived_only = st.movable, mask, arrived_only
    st.confined, st.onto = (confined, st.named_targets()) if confined is not None else (None, None)
    try:
        yield
    finally:
        st.movable, st.arrived_only, st.confined, st.onto = pinned, False, None, None


def _named_brokers_topics(st: State) -> BoolArray:
    """The partitions move-topics put on brokers the user named: they stay there."""
    locked = np.zeros(st.model.num_partitions, dtype=np.bool_)
    op = st.options.operation
    if op.type == "move-topics" and op.target_group is None:
        locked[topic_partitions(st, op.topics, "operation.topics")] = True
    return locked


def repair_racks_and_groups(st: State, free: BoolArray) -> None:
    """Re-place the replicas that crowd a rack or sit outside their group, in the partitions the
    user lets move (``free``: the balanced groups, the topics filter) but the operation pinned (a
    rebalance's own evacuation takes them). Before the dead or removed brokers' replicas are
    re-placed: those do not count towards a rack, and still go where the operation sends them."""
    allowed = (free | st.movable) & ~_named_brokers_topics(st)
    if not (allowed & ~st.movable).any():
        return
    with _movable(st, allowed):
        parts, slots = bad_slots(st, ~st.active)
        live = st.active[st.rep[parts, slots]]
        evacuate(st, parts[live], slots[live])


def repair_capacity(st: State, free: BoolArray, evacuated: Ints, *, fewest_bytes: bool) -> None:
    """The capacity repair with the operation's replicas first, then, if that leaves a broker above a
    limit, with every partition of ``free`` and every replica of the operation's partitions too;
    those on brokers the user named stay on them.

    fix-offline-replicas first moves only the re-placed replicas (their live peers stay), which may
    settle on another broker of their rack: putting them back in their rack's free room is often
    just a matter of which one goes where. Likewise the replicas placed on brokers the user named
    may settle on another of them (which target takes which replica is the operation's choice).
    """
    op = st.options.operation
    locked = _named_brokers_topics(st)
    onto_targets = op.type == "remove-brokers" and bool(op.target_brokers)
    if onto_targets:
        locked[evacuated] = True
    allowed = (free | st.movable) & ~locked
    replaced = op.type == "fix-offline-replicas"
    arrived_only = replaced or onto_targets
    first = st.movable | locked
    if replaced:
        first[evacuated] = True
    with _movable(st, first, arrived_only=arrived_only, confined=locked if locked.any() else None):
        try:
            enforce_capacity(st, fewest_bytes=fewest_bytes)
        except PlanningError as error:
            # Again with the other partitions, and the peers of the replicas that moved first.
            if error.reason not in CAPACITY_GOALS or not ((allowed & ~first).any() or arrived_only):
                raise
            st.movable, st.arrived_only = allowed | locked, False
            enforce_capacity(st, fewest_bytes=fewest_bytes)


def repair_capacity_by_leadership(st: State, allowed: BoolArray) -> None:
    """demote-brokers moves no data, but the leaders it picks carry network out and CPU: the loads
    leadership carries are brought under their limits by moving the leadership of ``allowed``
    partitions (a demoted broker's partitions went to the replica leading fewest, which may be full)."""
    with _movable(st, allowed):
        enforce_capacity(st, leadership_only=True)
