"""The free finishing steps: leader counts evened out to the rounded average (directly, along a
chain of brokers, or after leadership trades that make room), moved replicas replaced by smaller
stand-ins of the same topic, and by replicas that arrived on their broker during planning (one move
fewer), on the broker they left or on a third one."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from checks import one_rack_per_broker
from kafka_balancer.model import ClusterBuilder, ClusterModel
from kafka_balancer.planner import PlannerOptions, evaluate, plan
from kafka_balancer.planner.base.pair_checks import Pair
from kafka_balancer.planner.base.resource_groups import resolve_groups
from kafka_balancer.planner.base.round_bands import compute_bands
from kafka_balancer.planner.base.state import State
from kafka_balancer.planner.catalogue import CATALOGUE, Q_DISK, Q_REPLICAS
from kafka_balancer.planner.distribution.swaps import leader_trade
from kafka_balancer.planner.finishing import substitute, tighten
from kafka_balancer.planner.finishing.substitute import substitute_moves
from kafka_balancer.planner.tuning import TUNING

Q_NET_OUT = CATALOGUE.index("network-out")


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


@pytest.mark.parametrize("offers", [1, TUNING.stand_in_wide_offers])
def test_stand_ins_of_another_topic_are_offered_to_the_largest_moved_replicas(
    offers: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Planned: t's 10 GB and 5 GB replicas from broker 0 to 1. Broker 0 holds no other replica of t,
    # but two 1 GB replicas of u, each of which could go in either one's place. With one offer per
    # round (a round alone), only the 10 GB one gets a stand-in.
    model = one_rack_per_broker(
        [("t", 0, [0], 10e9), ("t", 1, [0], 5e9), ("u", 0, [0], 1e9), ("u", 1, [0], 1e9)], brokers=2
    )
    options = PlannerOptions(hard_goals=(), distribution_goals=("replica-distribution",))
    st = _state(model, options)
    st.move(np.array([0, 1]), np.array([0, 0]), np.array([1, 1], dtype=np.int32))
    monkeypatch.setattr(
        substitute, "TUNING", dataclasses.replace(TUNING, stand_in_wide_offers=offers, stand_in_rounds=1)
    )
    made = substitute_moves(st)
    if offers == 1:
        assert made == 1
        assert st.rep[:2, 0].tolist() == [0, 1]  # the 10 GB replica home, the 5 GB one still moved
    else:
        assert made == 2
        assert st.rep[:, 0].tolist() == [0, 0, 1, 1]
    assert st.load[:, Q_REPLICAS].tolist() == [2, 2]


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


def _topic_counts(st: State) -> list[int]:
    return [int(c) for c in st.tcount[0]]


def test_a_smaller_replica_from_a_third_broker_stands_in() -> None:
    # Topic t: 9 partitions over 4 brokers (average 2.25, band 2..3). Planned: the 10 GB p0 from
    # broker 0 to 2. Broker 0 holds no other replica to stand in, but broker 3 has two to spare
    # (broker 1 none): p0 goes home and a 1 GB replica goes from 3 to 2 instead, a tenth of the bytes.
    layout = [[0], [1], [1], [2], [2], [3], [3], [3], [3]]
    parts = [("t", p, replicas, 10e9 if p == 0 else 1e9) for p, replicas in enumerate(layout)]
    model = one_rack_per_broker(parts, brokers=4)
    options = PlannerOptions(hard_goals=(), distribution_goals=("replica-distribution", "topic-replica-distribution"))
    st = _state(model, options)
    st.move(np.array([0]), np.array([0]), np.array([2], dtype=np.int32))
    assert _topic_counts(st) == [0, 2, 3, 4]
    assert substitute_moves(st) == 0  # nothing left on broker 0 to stand in there
    assert substitute_moves(st, far=True) == 1
    assert st.rep[0, 0] == 0  # home again
    assert _topic_counts(st) == [1, 2, 3, 3]
    assert _moves(st, model) == 1
    (moved,) = [p for p in range(model.num_partitions) if st.rep[p, 0] != model.replicas[p, 0]]
    assert (int(model.replicas[moved, 0]), int(st.rep[moved, 0])) == (3, 2)  # a 1 GB one went 3 -> 2
    assert model.size_bytes[moved] == 1e9


def test_no_stand_in_from_a_broker_at_its_topic_band_bottom() -> None:
    # Planned: the 10 GB p0 from broker 0 to 2 (counts 2/2/3/2, band 2..3). Brokers 1 and 3 are at
    # the band's bottom: neither can give a replica of t up, so the move stays.
    layout = [[0], [0], [0], [1], [1], [2], [2], [3], [3]]
    parts = [("t", p, replicas, 10e9 if p == 0 else 1e9) for p, replicas in enumerate(layout)]
    model = one_rack_per_broker(parts, brokers=4)
    options = PlannerOptions(hard_goals=(), distribution_goals=("topic-replica-distribution",))
    st = _state(model, options)
    st.move(np.array([0]), np.array([0]), np.array([2], dtype=np.int32))
    assert _topic_counts(st) == [2, 2, 3, 2]
    assert substitute_moves(st, far=True) == 0
    assert st.rep[0, 0] == 2


def test_a_replica_that_arrived_elsewhere_goes_on_instead() -> None:
    # Planned: p0 0 -> 2 and p6 3 -> 1 (counts 3/2/1/4 -> 2/3/2/3, band 2..3). p6 can go from 3
    # straight to 2 while p0 stays home: 3/2/2/3, one move instead of two.
    layout = [[0], [0], [0], [1], [1], [2], [3], [3], [3], [3]]
    model = one_rack_per_broker([("t", p, replicas, 1e9) for p, replicas in enumerate(layout)], brokers=4)
    options = PlannerOptions(hard_goals=(), distribution_goals=("replica-distribution", "topic-replica-distribution"))
    st = _state(model, options)
    st.move(np.array([0, 6]), np.array([0, 0]), np.array([2, 1], dtype=np.int32))
    assert _moves(st, model) == 2
    assert substitute_moves(st, arrived=True) == 0  # broker 2 took nothing that left it
    assert substitute_moves(st, far=True) == 1
    assert st.rep[[0, 6], 0].tolist() == [0, 2]
    assert _topic_counts(st) == [3, 2, 2, 3]
    assert _moves(st, model) == 1


def _network_out_crowded(medium: float) -> ClusterModel:
    """Three brokers, every partition on all three. Broker 0 leads 11 partitions and broker 1 10,
    each sending 1 MB/s out; broker 2 leads 9 that send ``medium`` MB/s each."""
    builder = ClusterBuilder()
    for b in range(3):
        builder.add_broker(b, rack=f"rack-{b}")
    leaders = [0] * 11 + [1] * 10 + [2] * 9
    for p, lead in enumerate(leaders):
        replicas = [lead, (lead + 1) % 3, (lead + 2) % 3]
        out = medium * 1e6 if lead == 2 else 1e6
        builder.add_partition("t", p, replicas, size_bytes=1e9, bytes_in_per_sec=0.0, bytes_out_per_sec=out)
    return builder.build()


def test_a_leadership_trade_makes_room_for_the_last_leader_count_step() -> None:
    # Broker 2 leads 9 partitions against an average of 10, and its network out (9 x 1.34 = 12.06
    # against a band top of 12.12) has no room for one more leadership, however light; nor has a
    # 2-for-1 exchange or a chain (each ends with broker 2 leading one more). Trading three of its
    # 1.34 MB/s leaderships for 1 MB/s ones of broker 1 (counts unchanged) frees the room: then one
    # leadership can come over from broker 0, and every count is 10. No data moves.
    model = _network_out_crowded(1.34)
    options = PlannerOptions(distribution_goals=("network-out-distribution", "leader-count-distribution"))
    assert all(g["holds"] for g in evaluate(model, options).goals.values())
    proposal = plan(model, options)
    assert proposal.summary["moves"] == 0
    leaders = {(c.topic, c.partition): c.new_leader for c in proposal.leader_changes}
    assert _leaders_after(model, leaders) == [10, 10, 10]
    assert proposal.summary["goals"]["network-out-distribution"]["holdsAfter"]
    assert len(proposal.leader_changes) > 1  # the trades, then the move


def test_without_the_trades_the_crowded_broker_stays_one_short(monkeypatch: pytest.MonkeyPatch) -> None:
    # The same cluster with the room-making trades switched off: the counts stay 11/10/9.
    monkeypatch.setattr(tighten, "make_room", lambda _st: 0)
    model = _network_out_crowded(1.34)
    options = PlannerOptions(distribution_goals=("network-out-distribution", "leader-count-distribution"))
    proposal = plan(model, options)
    leaders = {(c.topic, c.partition): c.new_leader for c in proposal.leader_changes}
    assert _leaders_after(model, leaders) == [11, 10, 9]


def test_a_leadership_trade_keeps_each_topic_leader_spread() -> None:
    # Topic a's three partitions are led 2/1/0 by brokers 0/1/2 (its band is 0..2), topic b's 1/0/2.
    # Broker 0 taking the heavy leadership of a2 from broker 1 for a light one of its own would make
    # it lead three of topic a. With the topic-leader goal guarded no such trade is made; with no
    # goal guarded the same call trades (every trade on offer gives broker 0 a third of topic a).
    builder = ClusterBuilder()
    for b in range(3):
        builder.add_broker(b, rack=f"rack-{b}")
    heavy, light = 5e6, 1e6
    layout = [("a", 0, 0, heavy), ("a", 1, 0, heavy), ("a", 2, 1, heavy)]
    layout += [("b", 0, 0, light), ("b", 1, 2, light), ("b", 2, 2, light)]
    for topic, p, lead, out in layout:
        replicas = [lead, (lead + 1) % 3, (lead + 2) % 3]
        builder.add_partition(topic, p, replicas, size_bytes=1e9, bytes_in_per_sec=1e3, bytes_out_per_sec=out)
    model = builder.build()
    options = PlannerOptions(distribution_goals=("network-out-distribution", "topic-leader-distribution"))
    for guarded, trades in ((frozenset({"topic-leader-distribution"}), False), (frozenset(), True)):
        st = _state(model, options)
        with st.scoped(guarded=guarded):
            pair = Pair(st, compute_bands(st), 1, 0, Q_NET_OUT, st.broker_index_by_slot(), st.group_racks())
            moved = leader_trade(pair, 1e9)
        assert (moved > 0) == trades, (guarded, moved)
        assert int(st.tlead[0, 0]) == (3 if trades else 2)  # topic a's leaders on broker 0
