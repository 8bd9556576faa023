"""Hard goal ``preferred-leader-racks``: leadership onto each partition's preferred leader rack.

Only leaderships move (no data): a partition with a replica in a listed rack is led from the most
preferred such rack (:mod:`kafka_balancer.planner.base.leader_racks`), so a leadership change always
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
    """Hand the leadership of every partition of ``allowed`` led from outside its preferred rack to
    its replica there on the broker leading fewest (counted as the step goes). Returns how many moved."""
    tiers = st.tiers
    if tiers is None:
        return 0
    may_lead = st.active & st.can_lead
    parts = np.flatnonzero(misled(tiers, st.rep, may_lead) & allowed)
    if parts.size == 0:
        return 0
    rows = st.rep[parts]
    safe = np.maximum(rows, 0)
    want = preferred_tier(tiers, rows, may_lead)
    candidate = (rows != NO_BROKER) & may_lead[safe] & (tiers.tier[safe] == want[:, None])
    counts = st.load[:, Q_LEADERS].astype(np.int64).tolist()
    # Partitions with one candidate first (no choice), then the others fill the least-led brokers;
    # a loop over the partitions that change, each a few list operations.
    choices = candidate.sum(axis=1)
    order = np.lexsort((parts, choices))
    slots = np.zeros(parts.size, dtype=np.int64)
    brokers = rows.tolist()
    for i in order.tolist():
        best = -1
        for k in np.flatnonzero(candidate[i]).tolist():
            if best < 0 or counts[brokers[i][k]] < counts[brokers[i][best]]:
                best = k
        slots[i] = best
        counts[brokers[i][best]] += 1
    st.swap_leader(parts.astype(np.int64), slots)
    return int(parts.size)
