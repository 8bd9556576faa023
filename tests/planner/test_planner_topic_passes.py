"""The per-topic leader chains and the final undo of moves the plan no longer needs."""

from __future__ import annotations

import numpy as np
from checks import one_rack_per_broker
from kafka_balancer.model import ClusterBuilder, ClusterModel
from kafka_balancer.planner import PlannerOptions, evaluate, plan
from kafka_balancer.planner.base.resource_groups import resolve_groups
from kafka_balancer.planner.base.round_bands import compute_bands
from kafka_balancer.planner.base.state import State
from kafka_balancer.planner.catalogue import Q_REPLICAS
from kafka_balancer.planner.distribution.topic_chains import leader_chains
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


def _heavy_topic_on_a_network_out_edge() -> ClusterModel:
    """Broker 0 leads two of topic t's three partitions (each broker may lead one) and sits on the
    lower edge of its network-out band (90, the edge at 89.9); t's leaderships carry 5 each. Broker
    1 can take one (a follower of p0, no t leader), but 0 would drop to 85. No partition broker 1
    leads has a follower on 0, so no leadership can come back from 1; broker 3 (109.5) leads u/0
    of 5 with a follower on 0. Topics f* (one partition, no follower) make up each broker's traffic."""
    builder = ClusterBuilder()
    for b in range(4):
        builder.add_broker(b, rack=f"rack-{b}")
    rows = [("t", 0, [0, 1], 5.0), ("t", 1, [0, 2], 5.0), ("t", 2, [3, 1], 5.0), ("u", 0, [3, 0], 5.0)]
    rows += [(f"f{b}", 0, [b], out) for b, out in enumerate([80.0, 100.0, 100.0, 99.5])]
    for topic, p, replicas, out in rows:
        builder.add_partition(topic, p, replicas, size_bytes=1e9, bytes_in_per_sec=1e-6, bytes_out_per_sec=out)
    return builder.build()


def test_a_chain_stuck_on_a_band_edge_is_made_up_by_a_leadership_from_a_third_broker() -> None:
    model = _heavy_topic_on_a_network_out_edge()
    options = PlannerOptions(distribution_goals=("network-out-distribution", "topic-leader-distribution"))
    before = evaluate(model, options).goals
    assert before["network-out-distribution"]["holds"]
    assert not before["topic-leader-distribution"]["holds"]
    st = _state(model, options)
    with st.scoped(guarded=frozenset(options.distribution_goals)):
        assert leader_chains(st, compute_bands(st)) == 1
    # t/0's leadership went 0 -> 1 and u/0's came 3 -> 0: no broker left its band, no data moved.
    leaders = [int(st.rep[model.partition_index(t, p), 0]) for t, p in [("t", 0), ("t", 1), ("t", 2), ("u", 0)]]
    assert leaders == [1, 0, 3, 0]
    assert np.array_equal(np.sort(st.rep, axis=1), np.sort(model.replicas, axis=1))
    proposal = plan(model, options)
    assert all(g["holdsAfter"] for g in proposal.summary["goals"].values()), proposal.summary["goals"]
    assert proposal.summary["bytesToMove"] == 0


def test_a_topic_whose_partitions_offer_no_path_trades_a_leader_replica() -> None:
    # Topic t: 3 partitions over 4 brokers, so each broker may lead one. Broker 0 leads t/0 and t/1,
    # whose only follower is broker 1, which leads t/2 (follower on 0): no leadership move or chain
    # reaches a broker with room. Broker 0 holds 9 replicas, the replica-count band's lower edge
    # (9-11), so none may leave it one way. Brokers 2 and 3 lead one-partition topics of the same
    # size and traffic: t's leader replica goes to one of them and that one's leader replica comes back.
    rows = [("t", 0, [0, 1]), ("t", 1, [0, 1]), ("t", 2, [1, 0]), ("u", 0, [2, 3]), ("v", 0, [3, 2]), ("w", 0, [2, 3])]
    rows += [(f"f{b}-{i}", 0, [b]) for b, n in enumerate([6, 7, 8, 7]) for i in range(n)]  # 9, 10, 11, 10 replicas
    model = one_rack_per_broker([(t, p, r, 1e9) for t, p, r in rows], brokers=4)
    options = PlannerOptions(distribution_goals=("replica-distribution", "topic-leader-distribution"))
    before = evaluate(model, options).goals
    assert before["replica-distribution"]["holds"]
    assert not before["topic-leader-distribution"]["holds"]
    proposal = plan(model, options)
    assert all(g["holdsAfter"] for g in proposal.summary["goals"].values()), proposal.summary["goals"]
    after = {(p.topic, p.partition): list(p.replicas) for p in proposal.plan.partitions}
    assert len(after) == 2, after
    (t_moved,) = [after[("t", p)] for p in (0, 1) if ("t", p) in after]
    (other,) = [key for key in after if key[0] != "t"]
    assert t_moved[0] in (2, 3)
    assert after[other][0] == 0
    counts = np.zeros(4, dtype=np.int64)
    for topic, p, replicas in rows:
        for b in after.get((topic, p), replicas):
            counts[b] += 1
    assert counts.tolist() == [9, 10, 11, 10]
