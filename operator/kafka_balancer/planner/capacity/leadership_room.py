"""Leadership handed to where it leaves room, when the capacity repair of a small group stalls.

The search (:mod:`search`) keeps each replica's role: a leader replica may only go to a
broker that may lead and has room for what leading carries (network out, CPU). So a leadership can
pin a packing: in one cluster a broker 9 bytes over its disk limit could have exchanged a 600-byte
replica for a 500-byte one, but the 500-byte replica led its partition (3,450 bytes/s of network
out) and the broker, already leading 4,980 of its 5,237 bytes/s, had no room to lead it; that
partition's replica on a broker without a network-out limit could simply have taken over the
leadership, and the exchange then goes through.

Here the leaderships of the group's partitions that the repair may move are handed out again,
biggest first, each to the replica (one that may lead) whose broker then ends least far above a
limit and, among those, with the smallest share of its room for the loads leadership carries; a
broker's room for a load is its limit or the top of the balance band (``balanceThreshold`` x the
average over the brokers that may take these leaderships), whichever is lower, so the leaderships
also stay spread where nothing limits them. No data moves. The repair then goes on;
the caller puts everything back if that does not finish it.
"""

from __future__ import annotations

from typing import Final

import numpy as np

from kafka_balancer.model.cluster import NO_BROKER
from kafka_balancer.planner.base.arrays import Ints
from kafka_balancer.planner.base.candidates import movable_replicas
from kafka_balancer.planner.base.state import State
from kafka_balancer.planner.capacity.repair_round import with_excluded
from kafka_balancer.planner.catalogue import Q_REPLICAS
from kafka_balancer.planner.tuning import TUNING

TINY: Final = 1e-12


def hand_leadership_to_room(st: State, hosts: Ints) -> int:
    """Hand the leadership of the movable partitions led from ``hosts`` to the replicas that leave
    most room (see the module's text); returns how many changed hands."""
    hosts = with_excluded(st, hosts)  # as the search places them, so that it may hand theirs too
    if st.load[hosts, Q_REPLICAS].sum() > TUNING.ladder_max_hosted:
        return 0  # a Python step per partition: only the small groups the search serves
    index = st.broker_index_by_slot()
    parts = np.concatenate([movable_replicas(st, index, b, leaders_only=True)[0] for b in hosts.tolist()])
    rep = st.rep[parts]
    candidate = (rep != NO_BROKER) & st.can_lead[np.maximum(rep, 0)]
    candidate[:, 0] = True  # the leader may stay
    choice = candidate[:, 1:].any(axis=1)
    parts, rep, candidate = parts[choice], rep[choice], candidate[choice]
    if parts.size == 0:
        return 0
    leading = st.catalogue.leading  # the loads a leader carries beyond its followers'
    extra = (st.lead[parts] - st.follow[parts])[:, leading]
    load = st.load[:, leading].copy()
    np.subtract.at(load, rep[:, 0], extra)  # every one of them unled, then led again one by one
    limit = st.limit[:, leading]
    takers = np.unique(rep[candidate])  # the brokers that may lead these partitions
    top = np.maximum(st.options.balance_threshold * st.load[takers][:, leading].mean(axis=0), TINY)
    room = np.maximum(np.minimum(limit, top), TINY)
    finite = np.isfinite(limit)
    chosen = np.zeros(parts.size, dtype=np.int64)
    for i in np.argsort(-(extra / top).max(axis=1), kind="stable").tolist():
        slots = np.flatnonzero(candidate[i])
        brokers = rep[i, slots]
        after = load[brokers] + extra[i]
        above = np.where(finite[brokers], np.maximum(after - limit[brokers], 0.0) / room[brokers], 0.0).sum(axis=1)
        share = (after / room[brokers]).max(axis=1)
        pick = int(np.lexsort((share, above))[0])
        chosen[i] = slots[pick]
        load[brokers[pick]] += extra[i]
    handed = chosen != 0
    st.swap_leader(parts[handed], chosen[handed])
    return int(handed.sum())
