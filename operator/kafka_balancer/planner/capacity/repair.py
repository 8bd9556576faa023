"""The capacity goals' entry point: every broker under its limits of replicas, disk, network in and out
and CPU.

The precheck (:mod:`kafka_balancer.planner.capacity.precheck`) has refused what cannot fit at all.
Rounds of one-way moves from each broker above a limit to the brokers with most room
(:mod:`kafka_balancer.planner.capacity.one_way`); what they cannot repair goes to the ladder of
:mod:`kafka_balancer.planner.capacity.ladder`. A limit still broken after that is returned as the
error naming the broker, its load, its limit and the capacity missing (:func:`attempt_repair`),
which :func:`enforce_capacity` raises.
"""

from __future__ import annotations

import numpy as np

from kafka_balancer.planner.base.messages import ids_text
from kafka_balancer.planner.base.state import State
from kafka_balancer.planner.capacity.ladder import descent_repair
from kafka_balancer.planner.capacity.one_way import one_way_repair
from kafka_balancer.planner.capacity.room import over_limit_brokers
from kafka_balancer.planner.options import PlanningError


def enforce_capacity(st: State, *, fewest_bytes: bool = False, leadership_only: bool = False) -> None:
    """Move load off brokers above a capacity limit onto brokers of the same group with room.

    Where a distribution goal follows, the takers first fill only up to the upper edge of the band
    of the quantity's distribution goal, and disk and traffic are first moved in no more replicas
    than the replica-count goal would move between the two brokers (at least one per pair and
    round), so the repair, which runs before any distribution goal, does not leave brokers too full
    to take the replicas that goal must bring them; only what that cannot repair is moved up to the
    limits and without the cap (:mod:`~kafka_balancer.planner.capacity.one_way`). With ``fewest_bytes`` (no
    distribution goal follows, so nothing is gained by choosing for it) each pair moves the fewest
    bytes that cover the excess instead. With ``leadership_only`` (demote-brokers: no data moves)
    only the loads leadership carries are repaired, and by leadership moves alone.
    """
    shortfall = attempt_repair(st, fewest_bytes=fewest_bytes, leadership_only=leadership_only)
    if shortfall is not None:
        raise shortfall


def attempt_repair(st: State, *, fewest_bytes: bool = False, leadership_only: bool = False) -> PlanningError | None:
    """The repair of :func:`enforce_capacity`, returning what it left broken instead of raising it:
    ``None`` when every broker is under its limits, else the error naming the first limit left broken
    (the capacity goals after it are not tried). A caller that can widen what may move retries on
    that value (:func:`kafka_balancer.planner.hard.pinned.repair_capacity`) and raises it otherwise.
    """
    with st.scoped(repairing=True):
        return _repair(st, fewest_bytes=fewest_bytes, leadership_only=leadership_only)


def _repair(st: State, *, fewest_bytes: bool, leadership_only: bool) -> PlanningError | None:
    nracks = st.group_racks()
    # A group without brokers (unmanaged partitions, see State.unmanaged) spreads over every rack.
    nracks[nracks == 0] = np.unique(st.rack[st.can_host]).size
    for goal, q in st.catalogue.capacity_goals:
        if not st.options.hard(goal) or not np.isfinite(st.limit[:, q]).any():
            continue
        if leadership_only and not st.catalogue.leadership_carries(q):
            continue
        one_way_repair(st, q, nracks, fewest_bytes=fewest_bytes, leadership_only=leadership_only)
        descent_repair(st, q, nracks, leadership_only=leadership_only)
        shortfall = _shortfall(st, goal, q)
        if shortfall is not None:
            return shortfall
    return None


def _shortfall(st: State, goal: str, q: int) -> PlanningError | None:
    """The error naming the first broker still above its limit of ``q``, if any."""
    over = over_limit_brokers(st, q)
    if over.size == 0:
        return None
    b = int(over[0])
    g = int(st.groups.broker[b])
    hosts = np.flatnonzero(st.hosts_of_group(g))
    load, limit = float(st.load[b, q]), float(st.limit[b, q])
    what = st.catalogue.quantity_names[q]
    return PlanningError(
        goal,
        f"broker {int(st.model.broker_ids[b])} would carry {load:.6g} {what} above its limit "
        f"{limit:.6g} and no broker of group '{st.groups.names[g]}' ({ids_text(st, hosts)}) can take the excess "
        f"without breaking another hard goal; add a broker with at least {load - limit:.6g} free "
        f"{what} capacity{_budget_note(st)}",
    )


def _budget_note(st: State) -> str:
    """What a capacity failure says when the time budget stopped the repair's search."""
    if st.budget.cut_short is None:
        return ""
    return (
        f" (the search stopped at goals.maxPlanningSeconds, {st.budget.seconds:g} s: a larger budget may find "
        "a placement)"
    )
