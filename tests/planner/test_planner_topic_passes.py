"""The per-topic leader chains and the final undo of moves the plan no longer needs."""

from __future__ import annotations

import numpy as np
from checks import one_rack_per_broker
from kafka_balancer.model import ClusterModel
from kafka_balancer.planner import PlannerOptions, evaluate, plan
from kafka_balancer.planner.base.state import State, resolve_groups
from kafka_balancer.planner.catalogue import Q_REPLICAS
from kafka_balancer.planner.finishing.revert import revert_moves


def test_leadership_passed_along_a_chain_when_no_single_move_is_allowed() -> None:
    # Topic "t": 3 partitions over 4 brokers, so each broker may lead at most one. Broker 0 leads two,
    # and both have their only follower on broker 1, which already leads one: moving either
    # leadership to 1 just moves the excess there. Passing p2's leadership from 1 on to 2 in the same
    # step (a chain 0 -> 1 -> 2) is the only way in, and moves no data.
    model = one_rack_per_broker(
        [("t", 0, [0, 1], 1e9), ("t", 1, [0, 1], 1e9), ("t", 2, [1, 2], 1e9), ("u", 0, [3, 2], 1e9)], brokers=4
    )
    options = PlannerOptions(distribution_goals=("topic-leader-distribution",))
    assert not evaluate(model, options).goals["topic-leader-distribution"]["holds"]
    proposal = plan(model, options)
    summary = proposal.summary
    assert summary["goals"]["topic-leader-distribution"]["holdsAfter"], summary["goals"]
    assert summary["moves"] == 0
    assert summary["bytesToMove"] == 0
    leaders = {(c.topic, c.partition): c.new_leader for c in proposal.leader_changes}
    led = [leaders.get(("t", p), model.leader[p]) for p in range(3)]
    assert sorted(led) == [0, 1, 2], led
    # The replica sets stay; only their order (the preferred leader) changes.
    for target in proposal.plan.partitions:
        index = model.partition_index(target.topic, target.partition)
        assert sorted(target.replicas) == sorted(int(b) for b in model.replicas[index] if b >= 0)


def _state(model: ClusterModel, options: PlannerOptions) -> State:
    return State(model, options, resolve_groups(model, options))


def test_a_move_the_plan_does_not_need_goes_back() -> None:
    # Four brokers with one replica each of similar size: balanced. A move 0 -> 3 of p0's replica
    # (as an earlier goal might have made) leaves broker 0 empty and broker 3 double: going back is
    # allowed (every goal gets better), so the plan ends with no move at all.
    model = one_rack_per_broker([("t", p, [p], 1e9) for p in range(4)], brokers=4)
    options = PlannerOptions(hard_goals=(), distribution_goals=("replica-distribution", "disk-distribution"))
    st = _state(model, options)
    st.move(np.array([0]), np.array([0]), np.array([3], dtype=np.int32))
    assert revert_moves(st) == 1
    assert np.array_equal(st.rep, model.replicas)


def test_a_move_that_balances_stays() -> None:
    # Broker 0 holds three replicas, broker 3 none: the move 0 -> 3 is what balances them; moving it
    # back would push both brokers out of the replica-count band again, so it stays.
    model = one_rack_per_broker(
        [("t", 0, [0], 1e9), ("t", 1, [0], 1e9), ("t", 2, [1], 1e9), ("t", 3, [2], 1e9), ("u", 0, [0], 1e9)], brokers=4
    )
    options = PlannerOptions(hard_goals=(), distribution_goals=("replica-distribution",))
    st = _state(model, options)
    st.move(np.array([0]), np.array([0]), np.array([3], dtype=np.int32))
    counts_before = st.load[:, Q_REPLICAS].copy()
    assert revert_moves(st) == 0
    assert np.array_equal(st.load[:, Q_REPLICAS], counts_before)
