"""The free finishing steps: leader counts evened out to the rounded average (directly or along a
chain of brokers), moved replicas replaced by smaller stand-ins of the same topic, and by replicas
that arrived on their broker during planning (one move fewer)."""

from __future__ import annotations

import numpy as np
from checks import one_rack_per_broker
from kafka_balancer.model import ClusterModel
from kafka_balancer.planner import PlannerOptions, evaluate, plan
from kafka_balancer.planner.state import Q_DISK, Q_REPLICAS, State, resolve_groups
from kafka_balancer.planner.substitute import substitute_moves


def _leaders_after(model: ClusterModel, proposal_leaders: dict[tuple[str, int], int]) -> list[int]:
    counts = [0] * model.num_brokers
    for p in range(model.num_partitions):
        key = (model.topic_name(p), int(model.partition_id[p]))
        counts[model.broker_index(proposal_leaders.get(key, int(model.broker_ids[model.leader[p]])))] += 1
    return counts


def test_leader_counts_go_to_the_rounded_average_without_moving_data() -> None:
    # 30 identical partitions on all 3 brokers, led 11/10/9: inside the 1.10 band (9..11), so the
    # leader-count goal holds from the start. Leadership is free, so the plan still evens it out.
    parts = [
        (f"t{p % 10}", p // 10, [b % 3, (b + 1) % 3, (b + 2) % 3], 1e9)
        for p, b in enumerate([0] * 11 + [1] * 10 + [2] * 9)
    ]
    model = one_rack_per_broker(parts, brokers=3)
    assert evaluate(model).goals["leader-count-distribution"]["holds"]
    proposal = plan(model)
    summary = proposal.summary
    assert summary["moves"] == 0
    assert summary["bytesToMove"] == 0
    leaders = {(c.topic, c.partition): c.new_leader for c in proposal.leader_changes}
    assert _leaders_after(model, leaders) == [10, 10, 10]
    assert not summary["goalsViolated"], summary["goalsViolated"]


def test_leadership_passes_along_a_chain_of_brokers_to_even_out_counts() -> None:
    # Broker 0 leads 3 partitions, broker 3 leads 1 (average 2). Every partition broker 0 leads has
    # its follower on broker 1, and broker 3 is follower only of partitions broker 2 leads: no single
    # leadership move takes one from 0 to 3. Passing one along 0 -> 1 -> 2 -> 3 in one step keeps
    # brokers 1 and 2 at two each.
    layout = [[0, 1]] * 3 + [[1, 2]] * 2 + [[2, 3]] * 2 + [[3, 0]]
    model = one_rack_per_broker([(f"t{i}", 0, replicas, 1e9) for i, replicas in enumerate(layout)], brokers=4)
    options = PlannerOptions(distribution_goals=("leader-count-distribution",))
    assert evaluate(model, options).goals["leader-count-distribution"]["holds"]  # 1..3 at threshold 1.10
    proposal = plan(model, options)
    assert proposal.summary["moves"] == 0
    leaders = {(c.topic, c.partition): c.new_leader for c in proposal.leader_changes}
    assert _leaders_after(model, leaders) == [2, 2, 2, 2]
    assert len(proposal.leader_changes) == 3


def _state(model: ClusterModel, options: PlannerOptions) -> State:
    return State(model, options, resolve_groups(model, options))


def test_a_moved_replica_is_replaced_by_a_smaller_one_of_its_topic() -> None:
    # Broker 0 holds three replicas of topic t (10 GB, 1 GB, 1 GB), broker 1 one. Moving the 10 GB
    # replica to broker 1 balances the counts; so does moving a 1 GB one, for a tenth of the bytes.
    model = one_rack_per_broker(
        [("t", 0, [0], 10e9), ("t", 1, [0], 1e9), ("t", 2, [0], 1e9), ("t", 3, [1], 1e9)], brokers=2
    )
    options = PlannerOptions(hard_goals=(), distribution_goals=("replica-distribution", "topic-replica-distribution"))
    st = _state(model, options)
    st.move(np.array([0]), np.array([0]), np.array([1], dtype=np.int32))
    counts = st.load[:, Q_REPLICAS].copy()
    assert substitute_moves(st) == 1
    assert st.rep[:, 0].tolist() == [0, 1, 0, 1]
    assert np.array_equal(st.load[:, Q_REPLICAS], counts)
    assert np.array_equal(st.tcount, [[2, 2]])


def test_no_stand_in_when_the_disk_difference_would_leave_the_band() -> None:
    # Same layout, but the disk goal is guarded: sending 10 GB back to broker 0 and 1 GB over would
    # leave broker 0 far above its disk band (it is below it now), so the move stays as it is.
    model = one_rack_per_broker(
        [("t", 0, [0], 10e9), ("t", 1, [0], 1e9), ("t", 2, [0], 1e9), ("t", 3, [1], 1e9)], brokers=2
    )
    options = PlannerOptions(hard_goals=(), distribution_goals=("replica-distribution", "disk-distribution"))
    st = _state(model, options)
    st.move(np.array([0]), np.array([0]), np.array([1], dtype=np.int32))
    disk = st.load[:, Q_DISK].copy()
    assert substitute_moves(st) == 0
    assert np.array_equal(st.load[:, Q_DISK], disk)


def _moves(st: State, model: ClusterModel) -> int:
    return sum(len(set(st.rep[p].tolist()) - set(model.replicas[p].tolist())) for p in range(model.num_partitions))


def test_a_replica_that_arrived_takes_the_place_of_one_that_left() -> None:
    # Planned: p0 0 -> 1 and p1 1 -> 2 (counts 2/1/0 -> 1/1/1). Broker 1 gets one replica and gives
    # one: p1 can stay home and p0 go straight to broker 2, the same counts with one move.
    model = one_rack_per_broker([("t", 0, [0], 1e9), ("t", 1, [1], 1e9), ("t", 2, [0], 1e9)], brokers=3)
    options = PlannerOptions(hard_goals=(), distribution_goals=("replica-distribution", "disk-distribution"))
    st = _state(model, options)
    st.move(np.array([0, 1]), np.array([0, 0]), np.array([1, 2], dtype=np.int32))
    assert _moves(st, model) == 2
    assert substitute_moves(st, arrived=True) == 1
    assert st.rep[:, 0].tolist() == [2, 1, 0]
    assert st.load[:, Q_REPLICAS].tolist() == [1, 1, 1]
    assert _moves(st, model) == 1


def test_no_arrived_stand_in_whose_partition_is_already_on_the_destination() -> None:
    # p0 (on 0 and 2) moved 0 -> 1, p1 moved 1 -> 2: sending p0's replica on to broker 2 would put
    # both of its replicas there, so both moves stay.
    model = one_rack_per_broker([("t", 0, [0, 2], 1e9), ("t", 1, [1], 1e9), ("t", 2, [0], 1e9)], brokers=3)
    options = PlannerOptions(hard_goals=(), distribution_goals=("replica-distribution",))
    st = _state(model, options)
    st.move(np.array([0, 1]), np.array([0, 0]), np.array([1, 2], dtype=np.int32))
    assert substitute_moves(st, arrived=True) == 0
    assert _moves(st, model) == 2
