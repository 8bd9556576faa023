"""The capacity precheck: whether a placement can exist at all, from aggregates, before any search.

Per resource group and capacity goal, three necessary conditions, each answered in one vectorised
pass (seconds at millions of replicas):

* **Totals**: the group's partitions' load (each leader's row plus its followers' rows) fits under
  its brokers' limits summed.
* **The largest items**: each replica fits on the group's broker with the highest limit, and each
  partition's leader on the highest-limit broker that may lead.
* **Per rack** (with rack-awareness): a partition of replication factor ``rf`` on ``R`` racks holds
  at most ``ceil(rf / R)`` replicas in a rack, so at least ``rf - (R - 1) * ceil(rf / R)`` in each;
  every rack's brokers must have room for those replicas' follower rows.

A condition that fails refuses the plan at once, naming what is missing and what would fix it. When
all hold, the capacity stage searches for a placement (docs/goals.md, "The capacity precheck").
Checks that would need to know where excluded brokers' replicas stay are left to the search: a group
with live brokers that take no new replicas gets only the totals.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from kafka_balancer.model.cluster import BoolArray
from kafka_balancer.planner.base.arrays import Ints
from kafka_balancer.planner.base.measures import EPS
from kafka_balancer.planner.base.messages import ids_text
from kafka_balancer.planner.base.state import State
from kafka_balancer.planner.catalogue import GROUP_CONFINEMENT, Q_REPLICAS
from kafka_balancer.planner.options import PlanningError


@dataclass(frozen=True)
class _Group:
    """One resource group as the precheck sees it."""

    name: str
    hosts: Ints  # brokers that may take its replicas
    parts: Ints  # its partitions
    kept: BoolArray  # its live brokers that take no new replicas but keep theirs
    members: BoolArray  # its brokers


@dataclass(frozen=True)
class _Goal:
    name: str
    q: int


def precheck(st: State) -> None:
    """Refuse early when a group's placement cannot exist (see the module's docstring)."""
    groups = st.groups
    for g, name in enumerate(groups.names):
        parts = np.flatnonzero(groups.partition == g)
        if parts.size == 0 or not (groups.broker == g).any():
            continue
        members = groups.broker == g
        group = _Group(name, np.flatnonzero(st.can_host & members), parts, st.active & ~st.can_host & members, members)
        _enough_hosts(st, group)
        for goal, q in st.catalogue.capacity_goals:
            if not st.options.hard(goal) or not np.all(np.isfinite(st.limit[group.hosts, q])):
                continue
            _total_fits(st, group, _Goal(goal, q))
            if group.kept.any():
                continue
            _largest_fit(st, group, _Goal(goal, q))
            _racks_fit(st, group, _Goal(goal, q))


def _enough_hosts(st: State, group: _Group) -> None:
    """Every partition has a broker for each of its replicas that cannot stay where it is: those on
    the group's live brokers that take no new replicas stay, and without resource-group-confinement
    so do those on live brokers outside the group (nothing moves them off)."""
    rf, hosts = st.rf, group.hosts
    stays = group.kept
    if not st.options.hard(GROUP_CONFINEMENT):
        stays = stays | (st.active & ~group.members)
    on_kept = st.replicas_on(group.parts, stays)
    worst = int(np.argmax(rf[group.parts] - on_kept))
    max_rf, short = int(rf[group.parts[worst]]), int(rf[group.parts[worst]] - on_kept[worst]) - hosts.size
    if short <= 0:
        return
    closed = np.flatnonzero(group.kept)
    why = (
        f"; {ids_text(st, closed)} take no new ones (excludedBrokersForReplicas, every log directory cordoned)"
        if closed.size
        else ""
    )
    raise PlanningError(
        "replica-capacity",
        f"group '{group.name}' has partitions with replication factor {max_rf} but only {hosts.size} brokers "
        f"can host replicas ({ids_text(st, hosts)}{why}); add {short} broker(s) to the group",
    )


def _total_fits(st: State, group: _Group, goal: _Goal) -> None:
    q, parts = goal.q, group.parts
    total = float(st.lead[parts, q].sum() + (st.follow[parts, q] * np.maximum(st.rf[parts] - 1, 0)).sum())
    # Live brokers excluded from new replicas keep up to their limit of what they hold.
    kept = group.kept
    room = float(st.limit[group.hosts, q].sum() + np.minimum(st.limit[kept, q], st.load[kept, q]).sum())
    if total <= room * (1 + EPS):
        return
    what = st.catalogue.quantity_names[q]
    hosts = group.hosts
    if q == Q_REPLICAS:
        per = float(st.options.max_replicas_per_broker)
        raise PlanningError(
            goal.name,
            f"group '{group.name}' holds {total:.0f} replicas but its {hosts.size} brokers {ids_text(st, hosts)} "
            f"allow {room:.0f} (maxReplicasPerBroker {per:.0f}); add {math.ceil((total - room) / per)} broker(s) "
            f"or raise maxReplicasPerBroker to {math.ceil(total / max(hosts.size, 1))}",
        )
    threshold = st.options.capacity_threshold
    raise PlanningError(
        goal.name,
        f"group '{group.name}' needs {total:.6g} {what} but {threshold:.0%} of its brokers' capacity "
        f"{ids_text(st, hosts)} is {room:.6g}; {_more_room(st, hosts, goal.q, (total, room))}",
    )


def _more_room(st: State, hosts: Ints, q: int, need: tuple[float, float]) -> str:
    """What would fix a group whose total load ``need[0]`` exceeds its room ``need[1]``: brokers like its
    typical one (the median of those with room), or a higher capacityThreshold, where its brokers have
    room at all (a broker may have none: a capacity of 0, or a full log directory under log-dir-capacity)."""
    total, room = need
    threshold, what = st.options.capacity_threshold, st.catalogue.quantity_names[q]
    limits = st.limit[hosts, q]
    limits = limits[limits > 0]
    if limits.size == 0:
        return f"add brokers with at least {(total - room) / threshold:.6g} {what} capacity in all"
    per = float(np.median(limits))
    fix = f"add {math.ceil((total - room) / per)} broker(s) of {per / threshold:.6g} {what} capacity"
    return fix + (f" or raise capacityThreshold to {min(1.0, total / (room / threshold)):.2f}" if room > 0 else "")


def _largest_fit(st: State, group: _Group, goal: _Goal) -> None:
    """Each follower fits on the roomiest host, each leader on the roomiest host that may lead."""
    q, parts, hosts = goal.q, group.parts, group.hosts
    leaders = hosts[st.can_lead[hosts]]
    checks = [(st.follow[parts, q] * (st.rf[parts] > 1), hosts, "each replica", "host it")]
    if leaders.size:
        checks.append((st.lead[parts, q], leaders, "its leader", "lead it"))
    for need, brokers, where, may in checks:
        best = float(st.limit[brokers, q].max())
        i = int(np.argmax(need))
        if need[i] <= best * (1 + EPS):
            continue
        p, what, threshold = int(parts[i]), st.catalogue.quantity_names[q], st.options.capacity_threshold
        raise_to = f" or raise capacityThreshold to {min(1.0, need[i] / (best / threshold)):.2f}" if best > 0 else ""
        raise PlanningError(
            goal.name,
            f"partition {st.model.topic_name(p)}-{int(st.model.partition_id[p])} needs {need[i]:.6g} {what} on "
            f"{where} but no broker of group '{group.name}' that may {may} allows more than {best:.6g} "
            f"({threshold:.0%} of its capacity); add a broker with at least {need[i] / threshold:.6g} {what} "
            f"capacity{raise_to}",
        )


def _racks_fit(st: State, group: _Group, goal: _Goal) -> None:
    """Each rack has room for the replicas rack-awareness puts in every rack."""
    if not st.options.hard("rack-awareness"):
        return
    racks = np.unique(st.rack[group.hosts])
    if racks.size < 2:
        return
    q, parts = goal.q, group.parts
    rf = st.rf[parts]
    least = np.maximum(rf - (racks.size - 1) * np.ceil(rf / racks.size), 0)
    need = float((least * st.follow[parts, q]).sum())
    if need <= 0:
        return
    for r in racks.tolist():
        members = group.hosts[st.rack[group.hosts] == r]
        room = float(st.limit[members, q].sum())
        if need <= room * (1 + EPS):
            continue
        rack = st.model.broker_racks[int(members[0])]
        what = st.catalogue.quantity_names[q]
        limit = (
            f"maxReplicasPerBroker {st.options.max_replicas_per_broker}"
            if q == Q_REPLICAS
            else f"{st.options.capacity_threshold:.0%} of their capacity"
        )
        raise PlanningError(
            goal.name,
            f"rack '{rack}' of group '{group.name}' must hold at least {need:.6g} {what} (rack-awareness keeps "
            f"{int(least.max())} replica(s) of a partition in each of its {racks.size} racks) but its brokers "
            f"{ids_text(st, members)} allow {room:.6g} ({limit}); add a broker in rack '{rack}' or spread the "
            "group's brokers more evenly over its racks",
        )
