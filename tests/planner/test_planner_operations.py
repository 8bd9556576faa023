"""Operations: add, remove, demote brokers; fix offline replicas; change replication factor; move topics."""

from __future__ import annotations

from collections import Counter

import pytest
from checks import broker_loads, placement_after, rack_spread_ok
from kafka_balancer.model import ClusterBuilder, ClusterModel
from kafka_balancer.planner import GroupOptions, OperationOptions, PlannerOptions, PlanningError, evaluate, plan


def cluster(*, dead: tuple[int, ...] = (), disk: float | None = None, brokers: int = 6) -> ClusterModel:
    """``brokers`` brokers in 3 racks; 40 partitions of 2 topics on the first four brokers only."""
    builder = ClusterBuilder()
    for b in range(brokers):
        builder.add_broker(b, rack=f"r{b % 3}", alive=b not in dead, disk_bytes=disk)
    for t, topic in enumerate(("orders", "clicks")):
        for p in range(20):
            first = (p + t) % 3
            replicas = [first, (first + 1) % 3, 3] if (first + 1) % 3 != 0 and first != 0 else [first, (first + 1) % 3]
            builder.add_partition(
                topic, p, replicas, size_bytes=1e9 * (1 + p % 4), bytes_in_per_sec=1e5, bytes_out_per_sec=2e5
            )
    builder.set_topic("orders", min_insync_replicas=2)
    return builder.build()


def test_add_brokers_fills_the_new_brokers_into_the_band() -> None:
    model = cluster(brokers=9)
    before = evaluate(model)
    assert before.groups["cluster"]["disk"]["minOverAvg"] == 0.0
    proposal = plan(model, PlannerOptions(operation=OperationOptions("add-brokers", brokers=(6, 7, 8))))
    after = proposal.summary["groups"]["cluster"]["after"]
    assert after["disk"]["minOverAvg"] >= 0.9 - 1e-9
    # 40 partitions of 1-4 GB over 9 brokers: one partition is up to 15% of a broker's average, and
    # rack r0 holds more than a third of the data, so its brokers may end within one partition of the band.
    largest = max(p.size_bytes for p in model.partitions()) / after["disk"]["avg"]
    assert after["disk"]["maxOverAvg"] <= 1.1 + largest
    assert proposal.summary["goals"]["replica-distribution"]["holdsAfter"]
    placement = placement_after(model, proposal.plan)
    for b in (6, 7, 8):
        assert any(b in replicas for replicas in placement.values())


def test_remove_brokers_moves_every_replica_off_and_keeps_racks() -> None:
    model = cluster()
    proposal = plan(model, PlannerOptions(operation=OperationOptions("remove-brokers", brokers=(3,))))
    placement = placement_after(model, proposal.plan)
    hosts = {0, 1, 2, 4, 5}
    for key, replicas in placement.items():
        assert 3 not in replicas, key
        assert len(replicas) == len(model.partition(model.partition_index(*key)).replicas)
        assert rack_spread_ok(model, replicas, hosts), (key, replicas)
    on_three = sum(p.size_bytes for p in model.partitions() if 3 in p.replicas)
    assert proposal.summary["bytesToMove"] >= on_three


def test_remove_brokers_onto_given_targets() -> None:
    model = cluster(brokers=9)
    # Broker 3's replicas share partitions with racks r1 and r2: only a broker of rack r0 keeps them spread.
    # A hardware swap, every goal on: they land on broker 6 and nothing else moves (the rebalance
    # that used to follow moved 49 more replicas, some of broker 3's off broker 6 again).
    op = OperationOptions("remove-brokers", brokers=(3,), target_brokers=(6,))
    proposal = plan(model, PlannerOptions(operation=op))
    before = {(p.topic, p.partition): p.replicas for p in model.partitions()}
    on_three = {key for key, replicas in before.items() if 3 in replicas}
    assert {(t.topic, t.partition) for t in proposal.plan.partitions} == on_three
    for t in proposal.plan.partitions:
        old = before[(t.topic, t.partition)]
        assert t.replicas == tuple(6 if b == 3 else b for b in old), (old, t.replicas)
    assert proposal.summary["moves"] == len(on_three)
    assert all(proposal.summary["hardGoals"].values())
    op = OperationOptions("remove-brokers", brokers=(3,), target_brokers=(4, 5))
    with pytest.raises(PlanningError, match=r"rack-awareness: partition .* has no broker among \[4, 5\]"):
        plan(model, PlannerOptions(operation=op, distribution_goals=()))


def test_removing_a_broker_onto_a_target_goes_first_where_a_dead_brokers_replica_shares_the_partition() -> None:
    # t-0 has replicas on dead broker 3 (r0), on broker 4 (r1, removed onto broker 0 of r0) and on
    # broker 1 (r1). Broker 4's replica can only go to broker 0; the dead one goes anywhere but r0
    # and r1. The dead one used to be placed first, onto the targets too, and took broker 0.
    builder = ClusterBuilder()
    for b in range(6):
        builder.add_broker(b, rack=f"r{b % 3}", alive=b != 3)
    for p, replicas in enumerate([[3, 4, 1], [4, 2], [0, 1, 2], [5, 1, 3], [2, 0, 1]]):
        builder.add_partition("t", p, replicas, size_bytes=100, bytes_in_per_sec=10, bytes_out_per_sec=10)
    model = builder.build()
    op = OperationOptions("remove-brokers", brokers=(4,), target_brokers=(0,))
    proposal = plan(model, PlannerOptions(operation=op))
    placement = placement_after(model, proposal.plan)
    assert {0, 1} <= set(placement[("t", 0)])
    assert {2, 5} & set(placement[("t", 0)])
    assert placement[("t", 1)] == (0, 2)
    assert set(placement[("t", 3)]) == {5, 1, 0}
    assert proposal.summary["moves"] == 4  # the removed and the dead brokers' replicas, nothing else
    assert all(proposal.summary["hardGoals"].values())
    # Where no target keeps a partition spread, the error names brokers that would.
    op = OperationOptions("remove-brokers", brokers=(4,), target_brokers=(1,))
    with pytest.raises(
        PlanningError, match=r"no broker among \[1\] .*; add one of brokers \[0, 2, 5\] to operation.targetBrokers"
    ):
        plan(model, PlannerOptions(operation=op))


def test_a_broker_excluded_from_new_replicas_keeps_them_where_every_broker_holds_one() -> None:
    # Three brokers, replication factor 3: broker 2 holds a replica of every partition and may take
    # no new one. It keeps them, and the plan balances leadership; it used to be refused with
    # "replication factor 3 but only 2 brokers can host replicas".
    builder = ClusterBuilder()
    for b in range(3):
        builder.add_broker(b, rack=f"r{b}")
    for p in range(6):
        builder.add_partition("t", p, [0, 1, 2], size_bytes=100, bytes_in_per_sec=10, bytes_out_per_sec=10)
    model = builder.build()
    proposal = plan(model, PlannerOptions(excluded_brokers_for_replicas=(2,)))
    assert proposal.summary["moves"] == 0
    assert proposal.summary["leaderChanges"] >= 2
    assert all(proposal.summary["hardGoals"].values())
    proposal = plan(model, PlannerOptions(excluded_brokers_for_replicas=(1, 2)))
    assert proposal.summary["moves"] == 0
    # Moving the topic onto the brokers that already hold it, one of them excluded: nothing moves.
    op = OperationOptions("move-topics", topics=("t",), target_brokers=(0, 1, 2))
    proposal = plan(model, PlannerOptions(operation=op, excluded_brokers_for_replicas=(2,)))
    assert proposal.summary["moves"] == 0


def test_removing_brokers_onto_full_targets_makes_room_there() -> None:
    # Broker 6 (rack r0) can take broker 3's replicas only once some of its own move elsewhere.
    builder = ClusterBuilder()
    for b, rack in enumerate(["r0", "r1", "r0", "r0"]):
        builder.add_broker(b, rack=rack, disk_bytes=(1000 if rack == "r1" else 100) / 0.8)
    builder.add_broker(6, rack="r0", disk_bytes=100 / 0.8)
    for p, (replicas, size) in enumerate([([3, 1], 40), ([6, 1], 50), ([6, 1], 20), ([0, 1], 10), ([2, 1], 10)]):
        builder.add_partition("t", p, replicas, size_bytes=size, bytes_in_per_sec=1e3, bytes_out_per_sec=1e3)
    model = builder.build()
    op = OperationOptions("remove-brokers", brokers=(3,), target_brokers=(6,))
    proposal = plan(model, PlannerOptions(operation=op))
    placement = placement_after(model, proposal.plan)
    assert 6 in placement[("t", 0)]
    assert broker_loads(model, placement)["disk"][6] <= 100
    assert placement[("t", 1)] == (6, 1)  # moving the 20 bytes is enough
    assert all(proposal.summary["hardGoals"].values())


def test_demote_moves_leadership_only() -> None:
    model = cluster()
    proposal = plan(model, PlannerOptions(operation=OperationOptions("demote-brokers", brokers=(0,))))
    assert proposal.summary["bytesToMove"] == 0
    assert proposal.summary["moves"] == 0
    placement = placement_after(model, proposal.plan)
    for key, replicas in placement.items():
        assert sorted(replicas) == sorted(model.partition(model.partition_index(*key)).replicas)
        assert replicas[0] != 0 or len(replicas) == 1, key
    assert proposal.leader_changes
    assert all(c.old_leader == 0 and c.new_leader != 0 for c in proposal.leader_changes)


def _three_replica_cluster(*, out_limits: tuple[float, float, float], disk_limit: float | None = None) -> ClusterModel:
    """Brokers 0-2 in racks r0-r2 with these network-out limits; t-0..3 led by 0, t-4..7 by 2; a
    leader sends 1,200 B/s (1,000 to consumers, 100 to each follower)."""
    builder = ClusterBuilder()
    for b, limit in enumerate(out_limits):
        disk = None if disk_limit is None else disk_limit / 0.8
        builder.add_broker(b, rack=f"r{b}", network_out_bytes_per_sec=limit / 0.8, disk_bytes=disk)
    for p in range(8):
        replicas = [0, 1, 2] if p < 4 else [2, 1, 0]
        builder.add_partition("t", p, replicas, size_bytes=10, bytes_in_per_sec=100, bytes_out_per_sec=1000)
    return builder.build()


def test_demote_leads_where_network_out_has_room() -> None:
    # The replica leading fewest (broker 1) can send for two of broker 0's four partitions: demotion
    # used to give it all four and fail with "the plan would still break hard goal network-out-capacity".
    model = _three_replica_cluster(out_limits=(1e9, 3000, 1e9))
    proposal = plan(model, PlannerOptions(operation=OperationOptions("demote-brokers", brokers=(0,))))
    assert proposal.summary["moves"] == 0
    assert all(proposal.summary["hardGoals"].values()), proposal.summary["hardGoals"]
    new_leaders = Counter(c.new_leader for c in proposal.leader_changes)
    assert sum(new_leaders.values()) == 4
    assert new_leaders[1] <= 2


def test_demote_leads_on_a_broker_excluded_from_new_replicas_where_it_has_room() -> None:
    # The same, with broker 2 excluded from new replicas: it may still lead the replicas it holds.
    # The repair offered leadership only to brokers that may take replicas, and planning failed
    # with network-out-capacity.
    model = _three_replica_cluster(out_limits=(1e9, 3000, 1e9))
    options = PlannerOptions(
        operation=OperationOptions("demote-brokers", brokers=(0,)), excluded_brokers_for_replicas=(2,)
    )
    proposal = plan(model, options)
    assert proposal.summary["moves"] == 0
    assert all(proposal.summary["hardGoals"].values()), proposal.summary["hardGoals"]
    new_leaders = Counter(c.new_leader for c in proposal.leader_changes)
    assert new_leaders[1] <= 2
    assert new_leaders[2] >= 2


def test_demote_plans_on_a_cluster_whose_disks_it_cannot_mend() -> None:
    # Every disk is over its limit (80 bytes on 50): no leadership change can mend that, and demotion
    # used to fail with "the plan would still break hard goal disk-capacity".
    model = _three_replica_cluster(out_limits=(1e9, 1e9, 1e9), disk_limit=50)
    proposal = plan(model, PlannerOptions(operation=OperationOptions("demote-brokers", brokers=(0,))))
    assert proposal.summary["moves"] == 0
    assert {c.old_leader for c in proposal.leader_changes} == {0}
    assert not proposal.summary["hardGoals"]["disk-capacity"]


def test_demote_repairs_a_leader_whose_only_peer_has_the_least_room() -> None:
    # Found by bench.feasibility (seed 7807). Broker 0 leads three partitions (1,100 B/s of network
    # out each) against a limit of 3,000, and only broker 9, which holds their other replicas, may
    # take a leadership. Brokers 1-8 have no network-out limit, so they ranked first by room, and
    # the repair offered broker 0's leaderships to the 8 brokers with most room and the 3 in its
    # rack with most: never to broker 9. Demoting broker 10 then failed with network-out-capacity.
    builder = ClusterBuilder()
    for b in range(11):
        limit = {0: 3000.0, 9: 2000.0}.get(b)
        builder.add_broker(
            b, rack="r0" if b < 4 else "r1", network_out_bytes_per_sec=None if limit is None else limit / 0.8
        )
    for p in range(3):
        builder.add_partition("t", p, [0, 9], size_bytes=10, bytes_in_per_sec=100, bytes_out_per_sec=1000)
    for b in range(1, 9):
        builder.add_partition("u", b, [b], size_bytes=10, bytes_in_per_sec=100, bytes_out_per_sec=1000)
    builder.add_partition("v", 0, [10, 1], size_bytes=10, bytes_in_per_sec=100, bytes_out_per_sec=1000)
    model = builder.build()
    proposal = plan(model, PlannerOptions(operation=OperationOptions("demote-brokers", brokers=(10,))))
    assert proposal.summary["moves"] == 0
    assert all(proposal.summary["hardGoals"].values()), proposal.summary["hardGoals"]
    leaders = Counter(replicas[0] for replicas in placement_after(model, proposal.plan).values())
    assert leaders[10] == 0
    # Recomputed here: a leader sends its consumers' 1,000 B/s and 100 B/s to each follower.
    assert leaders[0] * 1100 <= 3000, leaders
    assert leaders[9] * 1100 <= 2000, leaders


def test_the_capacity_repair_never_hands_leadership_to_an_excluded_broker() -> None:
    # Broker 0 sends 4,800 B/s against 3,000: leadership must move, and only broker 2 may lead
    # (broker 1 is excluded), which used to end in "the plan would still break hard goal excluded-brokers".
    model = _three_replica_cluster(out_limits=(3000, 1e9, 1e9))
    options = PlannerOptions(excluded_brokers_for_leadership=(1,), distribution_goals=())
    proposal = plan(model, options)
    assert all(proposal.summary["hardGoals"].values()), proposal.summary["hardGoals"]
    assert {c.new_leader for c in proposal.leader_changes} == {2}


def test_fix_offline_replicas_replaces_only_dead_replicas() -> None:
    model = cluster(dead=(2,))
    proposal = plan(model, PlannerOptions(operation=OperationOptions("fix-offline-replicas")))
    placement = placement_after(model, proposal.plan)
    for key, replicas in placement.items():
        old = model.partition(model.partition_index(*key)).replicas
        assert 2 not in replicas
        assert set(old) - {2} <= set(replicas), "live replicas must stay"
    assert {t.topic for t in proposal.plan.partitions}
    assert all(
        2 in model.partition(model.partition_index(t.topic, t.partition)).replicas for t in proposal.plan.partitions
    )


def _crowded_cluster() -> ClusterModel:
    """Brokers 0-5 in racks r0-r2, broker 5 dead; t-0 has both replicas in rack r0 (0 and 3), t-1 one offline."""
    builder = ClusterBuilder()
    for b in range(6):
        builder.add_broker(b, rack=f"r{b % 3}", alive=b != 5)
    for p, replicas in enumerate([[0, 3], [1, 5], [2, 4]]):
        builder.add_partition("t", p, replicas, size_bytes=10, bytes_in_per_sec=1e3, bytes_out_per_sec=1e3)
    builder.add_partition("u", 0, [0, 1], size_bytes=10, bytes_in_per_sec=1e3, bytes_out_per_sec=1e3)
    return builder.build()


@pytest.mark.parametrize(
    "operation",
    [
        OperationOptions("fix-offline-replicas"),
        OperationOptions("move-topics", topics=("u",), target_brokers=(0, 1, 2, 3)),
        OperationOptions("move-topics", topics=("t",), target_brokers=(0, 1, 2, 3)),
    ],
    ids=["fix-offline", "move-another-topic", "move-the-crowded-topic"],
)
def test_pinning_operations_mend_a_crowded_rack_they_find(operation: OperationOptions) -> None:
    # Operations that move only their own replicas used to leave t-0's two replicas in rack r0 and
    # then fail with "the plan would still break hard goal rack-awareness".
    model = _crowded_cluster()
    proposal = plan(model, PlannerOptions(operation=operation))
    assert all(proposal.summary["hardGoals"].values()), proposal.summary["hardGoals"]
    placement = placement_after(model, proposal.plan)
    hosts = {0, 1, 2, 3, 4}
    assert all(rack_spread_ok(model, replicas, hosts) for replicas in placement.values()), placement
    assert not any(5 in replicas for replicas in placement.values())
    if operation.type == "move-topics":
        assert all(set(placement[key]) <= {0, 1, 2, 3} for key in placement if key[0] in operation.topics)
    assert placement[("u", 0)] == (0, 1) or operation.topics == ("u",)


def test_removing_a_broker_onto_a_target_also_spreads_the_partitions_it_leaves_crowded() -> None:
    # t-0 has two replicas in rack r1 (brokers 1 and 4) and one on broker 3, which goes onto target
    # 0 (r0): the crowding was left alone and planning failed with "would still break rack-awareness".
    builder = ClusterBuilder()
    for b in range(6):
        builder.add_broker(b, rack=f"r{b % 3}")
    builder.add_partition("t", 0, [3, 1, 4], size_bytes=10, bytes_in_per_sec=1e3, bytes_out_per_sec=1e3)
    builder.add_partition("t", 1, [2, 1, 0], size_bytes=10, bytes_in_per_sec=1e3, bytes_out_per_sec=1e3)
    model = builder.build()
    op = OperationOptions("remove-brokers", brokers=(3,), target_brokers=(0,))
    proposal = plan(model, PlannerOptions(operation=op))
    placement = placement_after(model, proposal.plan)
    assert 0 in placement[("t", 0)]
    assert rack_spread_ok(model, placement[("t", 0)], {0, 1, 2, 4, 5})
    assert placement[("t", 1)] == (2, 1, 0)


def test_a_dead_leaders_slot_goes_to_a_broker_excluded_from_leadership_when_only_it_fits() -> None:
    # One rack; broker 0 (dead) led t-0, broker 2 holds its other replica, and broker 1, the only
    # place left, may not lead. It takes the replica and broker 2 the leadership; the slot used to
    # have nowhere to go ("rack-awareness: ... has no broker among [1, 2]").
    builder = ClusterBuilder()
    for b in range(3):
        builder.add_broker(b, rack="r0", alive=b != 0)
    builder.add_partition("t", 0, [0, 2], size_bytes=10, bytes_in_per_sec=1e3, bytes_out_per_sec=1e3)
    model = builder.build()
    options = PlannerOptions(operation=OperationOptions("fix-offline-replicas"), excluded_brokers_for_leadership=(1,))
    proposal = plan(model, options)
    assert placement_after(model, proposal.plan)[("t", 0)] == (2, 1)
    assert all(proposal.summary["hardGoals"].values())


def test_a_topic_in_no_group_when_every_broker_is_in_one_is_replaced_anywhere_rack_aware() -> None:
    # Groups a (0-2) and b (3-5) hold every broker; topic u is in neither, and dead broker 3 held a
    # replica of it: "no broker that can host them" before.
    builder = ClusterBuilder()
    for b in range(6):
        builder.add_broker(b, rack=f"r{b % 3}", alive=b != 3)
    builder.add_partition("t", 0, [0, 1], size_bytes=10, bytes_in_per_sec=1e3, bytes_out_per_sec=1e3)
    builder.add_partition("u", 0, [3, 1], size_bytes=10, bytes_in_per_sec=1e3, bytes_out_per_sec=1e3)
    model = builder.build()
    groups = (GroupOptions("a", (0, 1, 2), ("t",)), GroupOptions("b", (3, 4, 5)))
    proposal = plan(model, PlannerOptions(resource_groups=groups, operation=OperationOptions("fix-offline-replicas")))
    replicas = placement_after(model, proposal.plan)[("u", 0)]
    assert 3 not in replicas
    assert 1 in replicas
    assert rack_spread_ok(model, replicas, {0, 1, 2, 4, 5})


def test_growing_a_topic_whose_group_has_no_live_broker_names_the_group() -> None:
    # Every broker of group a is dead: this crashed with "attempt to get argmax of an empty sequence".
    builder = ClusterBuilder()
    for b in range(3):
        builder.add_broker(b, rack=f"r{b}", alive=b != 0)
    builder.add_partition("t", 0, [0], size_bytes=10, bytes_in_per_sec=1e3, bytes_out_per_sec=1e3)
    groups = (GroupOptions("a", (0,), ("t",)), GroupOptions("b", (1, 2)))
    op = OperationOptions("change-replication-factor", topics=("t",), replication_factor=2)
    expected = r"replica-capacity: field 'operation.replicationFactor' 2 needs 2 brokers .* group 'a' .* which has 0"
    with pytest.raises(PlanningError, match=expected):
        plan(builder.build(), PlannerOptions(resource_groups=groups, operation=op))


def _two_groups_one_crowded(*, disk_over_on_0: bool) -> ClusterModel:
    """Brokers 0-5 in racks r0-r2; u-0 has both replicas in rack r0; with ``disk_over_on_0``,
    broker 0 (which holds u-0) is 20 bytes above its disk limit."""
    builder = ClusterBuilder()
    for b in range(6):
        builder.add_broker(b, rack=f"r{b % 3}", disk_bytes=(80 if disk_over_on_0 and b == 0 else 1e6) / 0.8)
    builder.add_partition("u", 0, [0, 3], size_bytes=100, bytes_in_per_sec=1e3, bytes_out_per_sec=1e3)
    for p in range(6):
        builder.add_partition("t", p, [1, 2], size_bytes=10, bytes_in_per_sec=1e3, bytes_out_per_sec=1e3)
    return builder.build()


def test_a_rebalance_of_some_topics_leaves_a_hard_goal_it_may_not_mend_to_the_summary() -> None:
    # u-0 crowds rack r0, but only topic t may move: the plan balances t and reports the rack; it
    # used to fail with "the plan would still break hard goal rack-awareness".
    model = _two_groups_one_crowded(disk_over_on_0=False)
    proposal = plan(model, PlannerOptions(topics=("t",)))
    assert {t.topic for t in proposal.plan.partitions} == {"t"}
    assert proposal.summary["hardGoals"]["rack-awareness"] is False
    assert (
        proposal.summary["goals"]["replica-distribution"]["violationAfter"]
        < (proposal.summary["goals"]["replica-distribution"]["violationBefore"])
    )


def test_balancing_one_group_ignores_a_broker_of_another_above_its_limit() -> None:
    # Broker 0 (group a) is above its disk limit; balancing group b only must not fail on it
    # ("disk-capacity: broker 0 would carry ..." before) nor touch it.
    model = _two_groups_one_crowded(disk_over_on_0=True)
    groups = (GroupOptions("a", (0, 3), ("u",)), GroupOptions("b", (1, 2, 4, 5), ("t",)))
    proposal = plan(model, PlannerOptions(resource_groups=groups, groups_to_balance=("b",)))
    assert proposal.plan.partitions
    assert {t.topic for t in proposal.plan.partitions} == {"t"}
    assert proposal.summary["hardGoals"]["disk-capacity"] is False
    with pytest.raises(PlanningError, match=r"disk-capacity: broker 0 would carry 100"):
        plan(model, PlannerOptions(resource_groups=groups, groups_to_balance=("a",)))


def test_an_exchange_never_sends_a_replica_to_a_broker_excluded_from_replicas() -> None:
    # Broker 0 is 10 over its limit and excluded from new replicas; broker 1 has 15 of room, less
    # than either of 0's replicas. The only fix, exchanging 50 for 40, would put a replica on broker
    # 0: planning fails, naming broker 0 ("the plan would still break hard goal excluded-brokers" before).
    builder = ClusterBuilder()
    for b in range(2):
        builder.add_broker(b, rack="r0", disk_bytes=100 / 0.8)
    for p, (broker, size) in enumerate([(0, 60), (0, 50), (1, 45), (1, 40)]):
        builder.add_partition("t", p, [broker], size_bytes=size, bytes_in_per_sec=1e3, bytes_out_per_sec=1e3)
    with pytest.raises(PlanningError, match=r"disk-capacity: broker 0 would carry 110"):
        plan(builder.build(), PlannerOptions(excluded_brokers_for_replicas=(0,)))


def test_move_topics_onto_brokers_of_another_group_is_refused_with_the_way_to_do_it() -> None:
    model = cluster(brokers=9)
    groups = (GroupOptions("old", (0, 1, 2, 3), ("orders", "clicks")), GroupOptions("new", (6, 7, 8)))
    op = OperationOptions("move-topics", topics=("orders",), target_brokers=(2, 6, 7))
    expected = r"targetBrokers' names brokers \[6, 7\] outside resource group 'old'.*targetGroup"
    with pytest.raises(PlanningError, match=expected):
        plan(model, PlannerOptions(resource_groups=groups, operation=op))


@pytest.mark.parametrize("target", [1, 2, 3, 4])
def test_change_replication_factor(target: int) -> None:
    model = cluster()
    # clicks has no min.insync.replicas, so shrinking it to 1 replica is allowed.
    op = OperationOptions("change-replication-factor", topics=("clicks",), replication_factor=target)
    proposal = plan(model, PlannerOptions(operation=op))
    placement = placement_after(model, proposal.plan)
    hosts = set(range(6))
    for (topic, p), replicas in placement.items():
        old = model.partition(model.partition_index(topic, p)).replicas
        if topic == "clicks":
            assert len(replicas) == target
            assert len(set(replicas)) == target
            assert rack_spread_ok(model, replicas, hosts), replicas
            assert replicas[0] == old[0], "the leader stays"
        else:
            assert replicas == old


def test_replication_factor_below_min_isr_is_refused() -> None:
    op = OperationOptions("change-replication-factor", topics=("orders",), replication_factor=1)
    with pytest.raises(PlanningError, match=r"replicationFactor.* 1 .*orders.*min.insync.replicas 2"):
        plan(cluster(), PlannerOptions(operation=op))


def test_move_topics_to_brokers_and_to_a_group() -> None:
    model = cluster()
    op = OperationOptions("move-topics", topics=("clicks",), target_brokers=(3, 4, 5))
    placement = placement_after(model, plan(model, PlannerOptions(operation=op)).plan)
    for (topic, p), replicas in placement.items():
        if topic == "clicks":
            assert set(replicas) <= {3, 4, 5}
        else:
            assert replicas == model.partition(model.partition_index(topic, p)).replicas
    model = cluster(brokers=9)
    groups = (GroupOptions("old", (0, 1, 2, 3), ("orders", "clicks")), GroupOptions("new", (6, 7, 8)))
    op = OperationOptions("move-topics", topics=("orders",), target_group="new")
    placement = placement_after(model, plan(model, PlannerOptions(resource_groups=groups, operation=op)).plan)
    for (topic, p), replicas in placement.items():
        if topic == "orders":
            assert set(replicas) <= {6, 7, 8}
            assert rack_spread_ok(model, replicas, {6, 7, 8}), replicas
        else:
            assert replicas == model.partition(model.partition_index(topic, p)).replicas
    # Replication factor 3 cannot fit on two brokers: refused with the numbers, before any move.
    small = (GroupOptions("old", (0, 1, 2, 3), ("orders", "clicks")), GroupOptions("new", (4, 5)))
    with pytest.raises(PlanningError, match=r"replication factor 3 .* 2 brokers"):
        plan(model, PlannerOptions(resource_groups=small, operation=op))


def test_capacity_that_cannot_fit_names_brokers_numbers_and_fix() -> None:
    model = cluster(disk=10e9)  # 6 x 10 GB; the partitions hold far more
    with pytest.raises(PlanningError) as err:
        plan(model, PlannerOptions())
    assert err.value.reason == "disk-capacity"
    text = str(err.value)
    assert "[0-5]" in text
    assert "add" in text
    assert "broker(s) of 1e+10 disk capacity" in text


def test_excluded_brokers_get_no_new_replicas_and_no_leadership() -> None:
    model = cluster()
    options = PlannerOptions(excluded_brokers_for_replicas=(4,), excluded_brokers_for_leadership=(1,))
    proposal = plan(model, options)
    placement = placement_after(model, proposal.plan)
    assert not any(4 in r for r in placement.values())
    assert not any(r[0] == 1 for r in placement.values())


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (lambda: OperationOptions("add-brokers"), "operation.brokers"),
        (lambda: PlannerOptions(balance_threshold=0.5), "goals.balanceThreshold"),
        (lambda: PlannerOptions(distribution_goals=("disk-spread",)), "goals.distribution"),
        (lambda: plan(cluster(), PlannerOptions(operation=OperationOptions("remove-brokers", (42,)))), "broker 42"),
    ],
)
def test_bad_options_name_field_and_value(options: object, message: str) -> None:
    with pytest.raises(PlanningError, match=message):
        options()  # type: ignore[operator]
