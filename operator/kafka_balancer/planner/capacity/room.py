"""Where the load of a broker above a capacity limit may go: the brokers that may take its replicas
(or its leaderships), their room under the limit, and the few with most room a round offers it to.
"""

from __future__ import annotations

import numpy as np

from kafka_balancer.model.cluster import NO_BROKER, BoolArray, FloatArray
from kafka_balancer.planner.base.arrays import Ints
from kafka_balancer.planner.base.candidates import led_partitions
from kafka_balancer.planner.base.measures import over_limit
from kafka_balancer.planner.base.state import State
from kafka_balancer.planner.tuning import TUNING


def room_in_group(st: State, s: int, q: int, index: tuple[Ints, Ints], *, leadership_only: bool = False) -> FloatArray:
    """Room under the limit of ``q`` on every broker that may host in the group of ``s`` (0 elsewhere).

    Leadership moves (``leadership_only``) go to brokers that already hold a replica of a partition
    ``s`` leads: any of those that may lead, excluded from new replicas or not. Only those: the
    destinations are the few with most room, and brokers without a limit of ``q`` (unbounded room)
    that share no partition with ``s`` would crowd out the ones that can take its leaderships."""
    takers = _leadership_peers(st, s, index) if leadership_only else hosts_for(st, s)
    room: FloatArray = np.where(takers, st.limit[:, q] - st.load[:, q], 0.0)
    return room


def _leadership_peers(st: State, s: int, index: tuple[Ints, Ints]) -> BoolArray:
    """Brokers that may lead and hold a replica of a partition whose leadership on ``s`` may move
    (what :func:`~kafka_balancer.planner.base.candidates.leader_candidates` offers them)."""
    peers = st.rep[led_partitions(st, index, s)]
    out = np.zeros(st.model.num_brokers, dtype=np.bool_)
    out[peers[(peers != NO_BROKER) & (peers != s)]] = True
    return out & st.can_lead


def hosts_for(st: State, s: int) -> BoolArray:
    """Brokers that may take replicas of ``s``: its group's hosts, and any host where ``s`` holds
    replicas this plan placed of unmanaged partitions (they may go anywhere, see State.unmanaged)."""
    hosts = st.hosts_of_group(int(st.groups.broker[s]))
    if st.has_unmanaged and st.unmanaged_arrivals()[s]:
        hosts = hosts | st.can_host
    return hosts


def destinations(st: State, room: FloatArray, s: int) -> Ints:
    """The brokers with most room, and the ones with most room in the rack of ``s``: where every
    partition already has a replica in each rack, a replica can only move within its rack, and the
    brokers with most room overall can all be in other racks (at 1.3M replicas with disks near full,
    the repair then stopped with 5 brokers over their limit and room to spare in their racks)."""
    return most_room(
        st,
        room,
        np.flatnonzero(room > 0),
        s,
        overall=TUNING.repair_destinations,
        same_rack=TUNING.repair_same_rack_destinations,
    )


def most_room(st: State, room: FloatArray, brokers: Ints, s: int, *, overall: int, same_rack: int) -> Ints:
    """Of ``brokers`` (ascending), the ``overall`` with most ``room`` and the ``same_rack`` with most
    in the rack of ``s``, most room first (ties by broker index)."""
    by_room = brokers[np.argsort(-room[brokers], kind="stable")]
    same = by_room[st.rack[by_room] == st.rack[s]][:same_rack]
    out: Ints = by_room[np.isin(by_room, np.union1d(same, by_room[:overall]))]
    return out


def over_limit_brokers(st: State, q: int) -> Ints:
    """Active brokers above their limit of ``q`` that this plan must repair (see goals.over_limit)."""
    over: Ints = np.flatnonzero(st.active & over_limit(st, q, scoped=True))
    return over
