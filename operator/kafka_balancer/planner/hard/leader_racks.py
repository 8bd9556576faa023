"""Hard goal ``preferred-leader-racks``: leadership onto each partition's preferred leader rack.

Only leaderships move (no data): a partition with a replica in a listed rack (of its group's list) is
led from the most preferred such rack (:mod:`kafka_balancer.planner.base.leader_racks`), so a leadership change always
suffices. A partition already led from there keeps its leader; one that is not goes to the replica
there whose broker leads least so far (a partition with two replicas in that rack has a choice).
The distribution goals then balance the leaderships inside each rack, with replica moves only
where the operation moves data.
"""

from __future__ import annotations

import numpy as np

from kafka_balancer.model.cluster import NO_BROKER, BoolArray
from kafka_balancer.planner.base.leader_racks import misled, preferred_tier
from kafka_balancer.planner.base.state import State
from kafka_balancer.planner.catalogue import Q_LEADERS


def applies(st: State) -> bool:
    return st.tiers is not None  # racks listed and the goal in goals.hard


def lead_from_preferred_racks(st: State, allowed: BoolArray) -> int:
    """Hand the leadership of every partition led from outside its preferred rack to its replica there
    on the broker leading fewest (counted as the step goes), of ``allowed`` and of those this plan made
    so. Returns how many moved.

    The goal holds the plan to what it answers for (planner.base.measures.misled_partitions): the
    partitions it may move, and any other it leaves led from outside its preferred rack that was not
    before; such a partition can only be one whose replicas the plan moved all the same (a topic in no
    group while every broker is in one, re-placed off a dead broker into a more preferred rack)."""
    tiers = st.tiers
    if tiers is None:
        return 0
    may_lead = st.active & st.can_lead
    group = st.groups.partition
    made = ~misled(tiers, st.model.replicas, group, may_lead)
    parts = np.flatnonzero(misled(tiers, st.rep, group, may_lead) & (allowed | made))
    if parts.size == 0:
        return 0
    rows = st.rep[parts]
    group = group[parts]
    safe = np.maximum(rows, 0)
    want = preferred_tier(tiers, rows, group, may_lead)
    candidate = (rows != NO_BROKER) & may_lead[safe] & (tiers.of_replicas(rows, group) == want[:, None])
    # A partition with one candidate has no choice (one replica per rack: the usual case), vectorised;
    # the others fill the least-led brokers in turn, a loop over those few partitions.
    choices = candidate.sum(axis=1)
    slots = np.argmax(candidate, axis=1).astype(np.int64)
    single = choices == 1
    counts = st.load[:, Q_LEADERS].astype(np.int64)
    counts += np.bincount(rows[single, slots[single]], minlength=counts.size)
    tally = counts.tolist()
    several = np.flatnonzero(~single)
    for i, row, options in zip(several.tolist(), rows[several].tolist(), candidate[several].tolist(), strict=True):
        best = min((k for k, ok in enumerate(options) if ok), key=lambda k: (tally[row[k]], k))
        slots[i] = best
        tally[row[best]] += 1
    st.swap_leader(parts.astype(np.int64), slots)
    return int(parts.size)
