"""Leader counts, finished for free: into the band, then to the average rounded, moving no data.

The leader-count goal runs before the per-topic goals and may leave brokers out of its band when
the traffic bands of new brokers are full at that point; the per-topic passes that follow change
traffic and leaders. The balance goals also stop as soon as every broker is inside its band, since
moving more would cost bytes. Leadership moves cost none, so after the last goal the leader counts
go (again) into their band and then on towards the group's average rounded down or up, under the
guard of every goal: no broker gets further from any band, no topic's leader spread gets worse.
Where a broker's leader-borne traffic sits at its band's edge, one-for-one leadership trades first
make room for the leaderships it must take or give (:func:`make_room`).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from kafka_balancer.model.cluster import FloatArray
from kafka_balancer.planner.base.arrays import Ints
from kafka_balancer.planner.base.pair_checks import Pair
from kafka_balancer.planner.base.round_bands import compute_bands
from kafka_balancer.planner.base.state import State
from kafka_balancer.planner.catalogue import Q_LEADERS
from kafka_balancer.planner.distribution.balance import balance_goal
from kafka_balancer.planner.distribution.swaps import leader_trade
from kafka_balancer.planner.finishing.count_chains import leader_count_chains, outside_leader_band
from kafka_balancer.planner.tuning import TUNING


def leader_count_goal(st: State) -> str | None:
    """The plan's goal over the leader count (the first, by the catalogue's ``leader_count_goals``)."""
    goals = st.catalogue.leader_count_goals(st.options.distribution_goals)
    return goals[0] if goals else None


def leaders_off_average(st: State) -> bool:
    """Whether some broker's leader count is outside its group's average rounded down or up."""
    if leader_count_goal(st) is None:
        return False
    with st.scoped(exact=frozenset({Q_LEADERS})):
        over, under = outside_leader_band(st, compute_bands(st))
    return bool((over | under).any())


def tighten_leaders(st: State) -> int:
    """Leadership moves, exchanges and chains that bring every broker's leader count into its band
    and then within rounding of its group's average, where no guarded goal gets worse. Returns the
    rounds run."""
    goal = leader_count_goal(st)
    if goal is None:
        return 0
    rounds = 0
    # The band first (brokers furthest out get the leaderships), then the rounded average.
    for exact in (frozenset(), frozenset({Q_LEADERS})):
        with st.scoped(exact=exact):
            rounds += balance_goal(st, goal, leadership_only=True)
            # What direct moves cannot do (no shared partition fits), chains through other brokers can.
            leader_count_chains(st, compute_bands(st))
            for _ in range(TUNING.leader_room_rounds):
                if not make_room(st):
                    break
                rounds += balance_goal(st, goal, leadership_only=True)
                leader_count_chains(st, compute_bands(st))
    return rounds


def make_room(st: State) -> int:
    """Trade leaderships one for one (counts unchanged, no data moves) so that brokers still outside
    the leader-count band have room in their leader-borne loads for the leaderships they must
    take or give.

    A broker short of leaders whose network out (or CPU, leader bytes-in) is at its band's top
    cannot take one more leadership, however light; trading a heavy leadership of its own for a
    light one of a partner with room lowers that load first. The same the other way for a broker
    over the count whose load is at the band's bottom. Returns how many trades with a partner moved
    some load.
    """
    b = compute_bands(st)
    over, under = outside_leader_band(st, b)
    if not (over | under).any():
        return 0
    index, nracks = st.broker_index_by_slot(), st.group_racks()
    leadership = st.lead - st.follow  # what a leadership carries on top of a follower replica
    # Leaderships each broker must take (short) or give (spare); trades leave the counts as they are.
    short = b.lower[:, Q_LEADERS] - st.load[:, Q_LEADERS]
    spare = st.load[:, Q_LEADERS] - b.upper[:, Q_LEADERS]
    traded = 0
    for q in st.catalogue.leader_loads:
        typical = _typical_leadership(st, leadership[:, q])
        if not typical:
            continue
        half = np.maximum(b.upper[:, q] - b.avg[:, q], 1e-12)
        position = (st.load[:, q] - b.avg[:, q]) / half  # -1 at the band's bottom, 1 at its top
        room_below = np.argsort(position, kind="stable")
        room_above = np.argsort(-position, kind="stable")
        trades = Pair(st, b, -1, -1, q, index, nracks)  # each trade's brokers are set below
        for broker in np.flatnonzero(under & (position >= TUNING.leader_room_edge)).tolist():
            group = int(st.groups.broker[broker])
            need = float(short[broker]) * typical.get(group, 0.0)
            traded += _trade(trades, broker, _partners(st, room_below, group), need=need, sheds=True)
        for broker in np.flatnonzero(over & (position <= -TUNING.leader_room_edge)).tolist():
            group = int(st.groups.broker[broker])
            need = float(spare[broker]) * typical.get(group, 0.0)
            traded += _trade(trades, broker, _partners(st, room_above, group), need=need, sheds=False)
    return traded


def _partners(st: State, order: Ints, group: int) -> Ints:
    """The first ``TUNING.leader_room_partners`` brokers of ``order`` in ``group`` (only they share its partitions)."""
    mine: Ints = order[st.groups.broker[order] == group][: TUNING.leader_room_partners]
    return mine


def _typical_leadership(st: State, carried: FloatArray) -> dict[int, float]:
    """Per resource group, the median load a leadership of its movable partitions carries (the
    group's own: planned alone or with the others, a group trades the same)."""
    out: dict[int, float] = {}
    has = st.scope.movable & (carried > 0)
    for g in np.unique(st.groups.partition[has]).tolist():
        out[int(g)] = float(np.median(carried[has & (st.groups.partition == g)]))
    return out


def _trade(trades: Pair, broker: int, partners: Ints, *, need: float, sheds: bool) -> int:
    """Trade ``need`` of ``q`` away from ``broker`` (``sheds``) or onto it, partner by partner."""
    traded = 0
    for partner in partners.tolist():
        if need <= 0:
            break
        if partner == broker:
            continue
        s, d = (broker, partner) if sheds else (partner, broker)
        moved = leader_trade(dataclasses.replace(trades, s=s, d=d), need)
        need -= moved
        traded += moved > 0
    return traded
