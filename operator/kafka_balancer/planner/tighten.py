"""Leader counts, finished for free: into the band, then to the average rounded, moving no data.

The leader-count goal runs before the per-topic goals and may leave brokers out of its band when
the traffic bands of new brokers are full at that point; the per-topic passes that follow change
traffic and leaders. The balance goals also stop as soon as every broker is inside its band, since
moving more would cost bytes. Leadership moves cost none, so after the last goal the leader counts
go (again) into their band and then on towards the group's average rounded down or up, under the
guard of every goal: no broker gets further from any band, no topic's leader spread gets worse.
"""

from __future__ import annotations

from kafka_balancer.planner.balance import balance_goal
from kafka_balancer.planner.count_chains import leader_count_chains
from kafka_balancer.planner.select import compute_bands
from kafka_balancer.planner.state import Q_LEADERS, State

LEADER_GOAL = "leader-count-distribution"


def tighten_leaders(st: State) -> int:
    """Leadership moves, exchanges and chains that bring every broker's leader count into its band
    and then within rounding of its group's average, where no guarded goal gets worse. Returns the
    rounds run."""
    if LEADER_GOAL not in st.options.distribution_goals:
        return 0
    rounds = 0
    try:
        # The band first (brokers furthest out get the leaderships), then the rounded average.
        for exact in (frozenset(), frozenset({Q_LEADERS})):
            st.exact = exact
            rounds += balance_goal(st, LEADER_GOAL, leadership_only=True)
            # What direct moves cannot do (no shared partition fits), chains through other brokers can.
            leader_count_chains(st, compute_bands(st))
    finally:
        st.exact = frozenset()
    return rounds
