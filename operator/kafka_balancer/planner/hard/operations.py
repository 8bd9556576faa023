"""Operations that change the cluster's shape before (or instead of) balancing.

remove-brokers and fix-offline-replicas are evacuations (see :mod:`evacuate`); demote-brokers is a
leadership-only change. This module holds the two that need their own placement logic:
replication-factor changes and moving topics onto other brokers.
"""

from __future__ import annotations

import numpy as np

from kafka_balancer.model.cluster import NO_BROKER, BoolArray
from kafka_balancer.planner.base.arrays import Ints
from kafka_balancer.planner.base.state import State
from kafka_balancer.planner.catalogue import Q_DISK
from kafka_balancer.planner.hard.evacuate import bad_slots, choose_destinations, evacuate
from kafka_balancer.planner.options import PlanningError


def topic_partitions(st: State, topics: tuple[str, ...], field_name: str) -> Ints:
    known = {name: i for i, name in enumerate(st.model.topics)}
    missing = [t for t in topics if t not in known]
    if missing:
        raise PlanningError("invalid-options", f"field '{field_name}' names topic '{missing[0]}', not in the cluster")
    wanted = np.zeros(len(st.model.topics), dtype=np.bool_)
    wanted[[known[t] for t in topics]] = True
    parts: Ints = np.flatnonzero(wanted[st.ptopic]).astype(np.int64)
    return parts


def change_replication_factor(st: State, topics: tuple[str, ...], target: int) -> None:
    """Grow or shrink the topics' partitions to ``target`` replicas, rack-aware, inside their group."""
    parts = topic_partitions(st, topics, "operation.topics")
    for t in topics:
        ti = st.model.topics.index(t)
        min_isr = int(st.model.topic_min_isr[ti])
        if min_isr and target < min_isr:
            raise PlanningError(
                "invalid-options",
                f"field 'operation.replicationFactor' {target} is below topic '{t}' min.insync.replicas {min_isr}",
            )
    rf = st.rf
    if target > st.rep.shape[1]:
        pad = np.full((st.rep.shape[0], target - st.rep.shape[1]), NO_BROKER, dtype=np.int32)
        st.rep = np.concatenate([st.rep, pad], axis=1)
    grow = parts[rf[parts] < target]
    _check_hosts_for(st, topics, grow, target)
    nracks = st.group_racks()
    # One new replica per partition per pass, so each pass sees the previous one's racks.
    for _ in range(target):
        grow = grow[(st.rep[grow] != NO_BROKER).sum(axis=1) < target]
        if grow.size == 0:
            break
        slots = (st.rep[grow] != NO_BROKER).sum(axis=1).astype(np.int64)
        for g in np.unique(st.groups.partition[grow]):
            sel = st.groups.partition[grow] == g
            dests = np.flatnonzero(st.hosts_of_group(int(g)))
            picks = choose_destinations(st, grow[sel], slots[sel], dests, nracks)
            st.rep[grow[sel], slots[sel]] = picks
        st.refresh_loads()
    shrink = parts[rf[parts] > target]
    if shrink.size:
        _shrink(st, shrink, target)
    st.refresh_loads()


def _check_hosts_for(st: State, topics: tuple[str, ...], grow: Ints, target: int) -> None:
    """Each group the growing partitions live in needs ``target`` brokers that can host a replica."""
    for g in np.unique(st.groups.partition[grow]).tolist():
        hosts = np.flatnonzero(st.hosts_of_group(g))
        if hosts.size < target:
            raise PlanningError(
                "replica-capacity",
                f"field 'operation.replicationFactor' {target} needs {target} brokers that can host replicas in "
                f"resource group '{st.groups.names[g]}' of topics {list(topics)}, which has {hosts.size} "
                f"({[int(st.model.broker_ids[b]) for b in hosts]}); add {target - hosts.size} broker(s) to the group",
            )


def _shrink(st: State, parts: Ints, target: int) -> None:
    """Drop followers, first those crowding a rack, then those on the fullest brokers (by disk)."""
    disk = st.load[:, Q_DISK] / max(float(st.load[st.active, Q_DISK].mean()) if st.active.any() else 1.0, 1e-12)
    for p in parts.tolist():
        row = st.rep[p]
        reps = [int(b) for b in row if b != NO_BROKER]
        keep = [reps[0]] if st.active[reps[0]] else []
        rest = [b for b in reps if b not in keep]
        while len(keep) < target and rest:
            used = {int(st.rack[b]) for b in keep}
            # Dead brokers last, a new rack first, then the emptiest broker.
            rest.sort(key=lambda b: (not st.active[b], int(st.rack[b]) in used, float(disk[b]), b))
            keep.append(rest.pop(0))
        st.rep[p] = NO_BROKER
        st.rep[p, : len(keep)] = keep


def _check_targets_in_group(st: State, topics: tuple[str, ...], parts: Ints, targets: BoolArray) -> None:
    """Named target brokers must belong to the topics' resource group: replicas never leave it."""
    for g in np.unique(st.groups.partition[parts]).tolist():
        outside = np.flatnonzero(targets & (st.groups.broker != g))
        if outside.size:
            ids = [int(st.model.broker_ids[b]) for b in outside]
            raise PlanningError(
                "invalid-options",
                f"field 'operation.targetBrokers' names brokers {ids} outside resource group "
                f"'{st.groups.names[g]}' of topics {list(topics)}; replicas stay in their group: name brokers "
                f"of that group, or move the topics into another group with 'operation.targetGroup'",
            )


def move_topics(st: State, topics: tuple[str, ...], targets: BoolArray, target_group: int | None) -> BoolArray:
    """Move every replica of the topics onto ``targets`` (a broker mask), rack-aware and spread;
    returns the partitions moved (a mask)."""
    parts = topic_partitions(st, topics, "operation.topics")
    hosts = np.flatnonzero(targets & st.can_host)
    # A target excluded from new replicas keeps those it holds: a partition needs hosts for the rest.
    kept = st.replicas_on(parts, targets & st.active & ~st.can_host)
    rf = int(st.rf[parts].max(initial=0))
    need = int((st.rf[parts] - kept).max(initial=0))
    if need > hosts.size:
        where = "group '" + st.groups.names[target_group] + "'" if target_group is not None else "the target brokers"
        raise PlanningError(
            "replica-capacity",
            f"topics {list(topics)} have replication factor {rf} but {where} offer only {hosts.size} brokers "
            f"that can host replicas ({[int(st.model.broker_ids[b]) for b in hosts]}); give at least {need} brokers",
        )
    if target_group is not None:
        # The topics are the target group's from now on: confinement and the per-topic goals alike.
        st.groups.partition[parts] = target_group
        st.groups.topic[np.unique(st.ptopic[parts])] = target_group
    else:
        _check_targets_in_group(st, topics, parts, targets)
    movable = np.zeros_like(st.scope.movable)
    movable[parts] = True
    with st.scoped(movable=movable):
        # Off the brokers that are not targets, and off a target where two replicas share its rack.
        off_parts, off_slots = bad_slots(st, ~targets)
        mine = movable[off_parts]
        evacuate(st, off_parts[mine], off_slots[mine], targets)
    return movable
