"""Hard goals by re-placing replicas: what may not stay where it is (a dead, removed or excluded
broker, outside its group, crowding a rack) goes to the least-filled allowed brokers of its group,
rack-aware and under every limit; leadership moves off brokers that may not lead.
"""

from __future__ import annotations

import numpy as np

from kafka_balancer.model.cluster import NO_BROKER, BoolArray
from kafka_balancer.planner.base.arrays import Ints
from kafka_balancer.planner.base.measures import rack_allowance
from kafka_balancer.planner.base.messages import ids_text
from kafka_balancer.planner.base.state import State
from kafka_balancer.planner.catalogue import Q_DISK, Q_LEADERS, Q_REPLICAS
from kafka_balancer.planner.options import PlanningError
from kafka_balancer.planner.tuning import TUNING


def bad_slots(st: State, evacuate: BoolArray) -> tuple[Ints, Ints]:
    """Replica slots that must move: on an ``evacuate`` broker, outside their group, or crowding a rack."""
    rep = st.rep
    valid = rep != NO_BROKER
    safe = np.maximum(rep, 0)
    bad = valid & evacuate[safe]
    if st.options.hard("resource-group-confinement"):
        home = st.groups.partition
        outside = st.groups.broker[safe] != home[:, None]
        bad |= valid & outside & (st.groups.has_brokers[home] & st.scope.movable)[:, None]
    if st.options.hard("rack-awareness"):
        racks = np.where(valid & ~bad, st.rack[safe], -1)
        rf = valid.sum(axis=1)
        allowed = rack_allowance(rf, st.group_racks()[st.groups.partition])
        seen = np.zeros(rep.shape[0], dtype=np.int32)
        for k in range(rep.shape[1]):
            earlier = ((racks[:, :k] == racks[:, k : k + 1]) & (racks[:, :k] >= 0)).sum(axis=1) if k else seen
            crowd = (racks[:, k] >= 0) & (earlier >= allowed) & st.scope.movable
            bad[:, k] |= crowd
    parts, slots = np.nonzero(bad)
    return parts.astype(np.int64), slots.astype(np.int64)


def evacuate(st: State, parts: Ints, slots: Ints, targets: BoolArray | None = None) -> None:
    """Re-place the given replicas on the least-filled allowed brokers of their group, rack-aware."""
    nracks = st.group_racks()
    while parts.size:
        # One replica per partition per pass, so a chunk never puts two replicas of one partition together.
        _, first = np.unique(parts, return_index=True)
        now = np.zeros(parts.size, dtype=np.bool_)
        now[first] = True
        _place(st, parts[now], slots[now], targets, nracks)
        parts, slots = parts[~now], slots[~now]


def _place(st: State, parts: Ints, slots: Ints, targets: BoolArray | None, nracks: Ints) -> None:
    order = np.argsort(-st.model.size_bytes[parts], kind="stable")
    parts, slots = parts[order], slots[order]
    for g in np.unique(st.groups.partition[parts]):
        in_group = st.groups.partition[parts] == g
        gp, gs = parts[in_group], slots[in_group]
        allowed = st.hosts_of_group(int(g))
        if targets is not None:
            allowed &= targets
        dests = np.flatnonzero(allowed)
        if dests.size == 0:
            members = np.flatnonzero(st.groups.broker == g)
            among = "the target brokers" if targets is not None else f"its brokers {ids_text(st, members)}"
            raise PlanningError(
                "excluded-brokers",
                f"group '{st.groups.names[g]}' has {gp.size} replicas to re-place but none of {among} can host "
                f"them (dead, being removed, in excludedBrokersForReplicas or every log directory cordoned); "
                "add a broker to the group",
            )
        chunk = TUNING.evacuate_chunk_per_broker * dests.size
        for start in range(0, gp.size, chunk):
            # Onto named targets, a partition's other replica still on a dead or removed broker (placed
            # in a later pass, which sees where this one went) does not hold its rack: the targets
            # may offer no other. Elsewhere it does, as it may be placed onto fewer brokers later.
            cp, cs = gp[start : start + chunk], gs[start : start + chunk]
            st.move(cp, cs, choose_destinations(st, cp, cs, dests, nracks, inactive_racks=targets is None))


def choose_destinations(
    st: State, parts: Ints, slots: Ints, dests: Ints, nracks: Ints, *, inactive_racks: bool = True
) -> Ints:
    """A broker among ``dests`` for each (distinct) partition's slot: rack-aware, under every limit,
    not already holding the partition; items go round-robin over the least-filled brokers first.
    Without ``inactive_racks``, replicas on dead or removed brokers do not count towards a rack."""
    active_avg = np.maximum(st.load[st.active].mean(axis=0), 1e-12) if st.active.any() else np.ones(st.catalogue.size)
    fill = st.load[dests, Q_REPLICAS] / active_avg[Q_REPLICAS] + st.load[dests, Q_DISK] / active_avg[Q_DISK]
    dests = dests[np.argsort(fill, kind="stable")]
    n = dests.size
    rows = st.rep[parts]
    valid = rows != NO_BROKER
    counted = valid if inactive_racks else valid & st.active[np.maximum(rows, 0)]
    racks = np.where(counted, st.rack[np.maximum(rows, 0)], -1)
    racks[np.arange(parts.size), slots] = -1
    # The slot being filled counts towards the replication factor even when it is new (growing rf).
    rf = valid.sum(axis=1) + (rows[np.arange(parts.size), slots] == NO_BROKER)
    # A group without brokers (its partitions may go anywhere) spreads over the racks of ``dests``.
    racks_there = nracks[st.groups.partition[parts]]
    if not racks_there.all():
        racks_there = np.where(racks_there > 0, racks_there, np.unique(st.rack[dests]).size)
    allowed_per_rack = rack_allowance(rf, racks_there)
    v = st.slot_loads(parts, slots)
    feas = ~(rows[:, :, None] == dests[None, None, :]).any(axis=1)  # (C, n)
    if st.options.hard("rack-awareness"):
        same = (racks[:, :, None] == st.rack[dests][None, None, :]).sum(axis=1)
        feas &= same + 1 <= allowed_per_rack[:, None]
    room = st.limit[dests] - st.load[dests]  # (n, Q)
    fits = feas & np.all(v[:, None, :] <= room[None, :, :] + 1e-9, axis=2)
    # The leader's slot goes to a broker that may lead where one fits; else to any, and
    # fix_leadership hands the leadership to another replica (all-r0 brokers, one excluded from
    # leadership: a dead leader's slot had nowhere to go and planning failed with rack-awareness).
    may_lead = fits & ((slots != 0)[:, None] | st.can_lead[dests][None, :])
    fits = np.where(may_lead.any(axis=1)[:, None], may_lead, fits)
    shift = (np.arange(parts.size)[:, None] + np.arange(n)[None, :]) % n
    rotated = np.take_along_axis(fits, shift, axis=1)
    found = rotated.any(axis=1)
    pick: Ints = dests[shift[np.arange(parts.size), np.argmax(rotated, axis=1)]].astype(np.int32)
    # Where no broker of the right rack has room, the fullest brokers are over their limit and the
    # capacity repair that follows makes room by moving other replicas: place on the broker left least over.
    over = ~found & feas.any(axis=1)
    if over.any():
        excess = np.maximum(v[over][:, None, :] - room[None, :, :], 0.0) / active_avg
        cost = np.where(feas[over], excess.sum(axis=2), np.inf)
        pick[over] = dests[np.argmin(cost, axis=1)]
        found |= over
    if not found.all():
        i = int(np.flatnonzero(~found)[0])
        _no_spread_error(st, int(parts[i]), dests, racks[i], allowed_per_rack[i])
    return pick


def _no_spread_error(st: State, p: int, dests: Ints, racks: Ints, allowed: float) -> None:
    """Partition ``p`` (its other replicas in ``racks``) fits on none of ``dests``: name the brokers
    outside them that would keep it spread (``dests`` were the brokers the user named), if any."""
    # The cluster's placement, not this stage's: the user sees that one (the stage may already have
    # re-placed another replica of the partition).
    replicas = [int(b) for b in st.model.partition(p).replicas]
    hosts = np.flatnonzero(st.hosts_of_group(int(st.groups.partition[p])))
    crowded = (racks[None, :] == st.rack[hosts][:, None]).sum(axis=1) + 1 > allowed
    spread = hosts[~crowded & ~np.isin(hosts, st.rep[p]) & ~np.isin(hosts, dests)]
    remedy = (
        f"add one of brokers {ids_text(st, spread)} to operation.targetBrokers"
        if spread.size
        else "add a broker in another rack"
    )
    raise PlanningError(
        "rack-awareness" if st.options.hard("rack-awareness") else "replica-capacity",
        f"partition {st.model.topic_name(p)}-{int(st.model.partition_id[p])} (replicas {replicas}) has no "
        f"broker among {ids_text(st, dests)} that keeps its racks spread; {remedy}",
    )


def fix_leadership(st: State) -> None:
    """Move leadership off brokers that may not lead (excluded, demoted, dead) onto an allowed replica."""
    rep = st.rep
    valid = rep != NO_BROKER
    safe = np.maximum(rep, 0)
    leader = rep[:, 0]
    eligible = valid & st.can_lead[safe]
    wrong = (leader != NO_BROKER) & ~st.can_lead[np.maximum(leader, 0)] & eligible.any(axis=1)
    parts = np.flatnonzero(wrong)
    if parts.size == 0:
        return
    # Among allowed replicas, the one whose broker leads least (as counted before this step).
    score = np.where(eligible[parts], st.load[safe[parts], Q_LEADERS], np.inf)
    slots = np.argmin(score, axis=1)
    st.swap_leader(parts.astype(np.int64), slots.astype(np.int64))
