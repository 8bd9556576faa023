"""Detours for the last per-topic slots: a move that fixes a topic's spread but breaks another band
(or needs a second move), kept only when what it broke is mended and nothing ends worse."""

from __future__ import annotations

import dataclasses

import pytest
from checks import placement_after
from kafka_balancer.model import ClusterModel
from kafka_balancer.model.build import ClusterBuilder
from kafka_balancer.planner import GroupOptions, PlannerOptions, evaluate, plan
from kafka_balancer.planner.base.resource_groups import resolve_groups
from kafka_balancer.planner.base.round_bands import compute_bands
from kafka_balancer.planner.base.state import State
from kafka_balancer.planner.catalogue import Q_DISK
from kafka_balancer.planner.finishing import detours
from kafka_balancer.planner.groups import merge, plan_group, split
from kafka_balancer.planner.tuning import TUNING

GB = 1e9


def _topic_counts(model: ClusterModel, placement: dict[tuple[str, int], tuple[int, ...]], topic: str) -> list[int]:
    counts = [0] * model.num_brokers
    for (t, _), replicas in placement.items():
        if t == topic:
            for b in replicas:
                counts[b] += 1
    return counts


# Topic t's replicas on 12 brokers in 3 racks (b % 3): 9 replicas, so at most 1 per broker (band
# 0..1). Broker 1 holds two, both of rf-3 partitions whose other replicas sit in racks 0 and 2, so
# either must stay in rack 1, where brokers 4, 7 and 10 already hold one (single-replica partitions,
# free to go to any rack). No single move fixes broker 1; two do: one of its replicas to a rack-1
# broker, whose own replica of t moves on to a broker without t.
RACK_PINNED = [[0, 1, 2], [3, 1, 5], [4], [7], [10]]


def _rack_pinned(builder: ClusterBuilder, topic: str, first_broker: int) -> None:
    for b in range(first_broker, first_broker + 12):
        builder.add_broker(b, rack=f"rack-{b % 3}")
    for p, replicas in enumerate(RACK_PINNED):
        builder.add_partition(
            topic, p, [first_broker + r for r in replicas], size_bytes=GB, bytes_in_per_sec=1e3, bytes_out_per_sec=1e3
        )


def test_a_replica_that_racks_pin_to_full_brokers_goes_there_and_one_moves_on() -> None:
    builder = ClusterBuilder()
    _rack_pinned(builder, "t", 0)
    model = builder.build()
    options = PlannerOptions(distribution_goals=("topic-replica-distribution",))
    assert not evaluate(model, options).goals["topic-replica-distribution"]["holds"]

    proposal = plan(model, options)
    summary = proposal.summary
    assert summary["goalsViolated"] == []
    assert summary["moves"] == 2
    after = placement_after(model, proposal.plan)
    assert max(_topic_counts(model, after, "t")) == 1
    for replicas in after.values():  # racks still hold: rf-3 partitions on three racks
        assert len({b % 3 for b in replicas}) == len(replicas)


def _leadership_model() -> ClusterModel:
    # Three brokers, one rack each, network-out 192 on every broker (band 172.8..211.2):
    # - "big": 3 partitions led by broker 0 (24 network-out each), so broker 0 leads 3 of them
    #   where the topic's band allows 2;
    # - "s", "r", "q": 30 partitions each, 10 led by every broker (4 each; band 9..11 per topic);
    # - "f1", "f2": single-replica ballast of 72 on brokers 1 and 2.
    builder = ClusterBuilder()
    for b in range(3):
        builder.add_broker(b, rack=f"rack-{b}")
    for p, follower in enumerate([1, 1, 2]):
        builder.add_partition("big", p, [0, follower], size_bytes=GB, bytes_in_per_sec=0.0, bytes_out_per_sec=24.0)
    for topic in ("s", "r", "q"):
        for p in range(30):
            leader = p // 10
            follower = 1 if leader == 0 else 0
            builder.add_partition(
                topic, p, [leader, follower], size_bytes=GB, bytes_in_per_sec=0.0, bytes_out_per_sec=4.0
            )
    builder.add_partition("f1", 0, [1], size_bytes=GB, bytes_in_per_sec=0.0, bytes_out_per_sec=72.0)
    builder.add_partition("f2", 0, [2], size_bytes=GB, bytes_in_per_sec=0.0, bytes_out_per_sec=72.0)
    return builder.build()


def test_a_leadership_that_breaks_network_out_is_mended_by_smaller_ones_coming_back() -> None:
    # Moving one "big" leadership off broker 0 takes its network-out to 168, under the band; one
    # small leadership coming back (4) is not enough, and each small topic lets broker 0 lead only
    # one more of it. The detour moves the big leadership, then two or three small ones of different
    # topics back: no data moves, every band holds.
    model = _leadership_model()
    options = PlannerOptions(distribution_goals=("network-out-distribution", "topic-leader-distribution"))
    before = evaluate(model, options)
    assert before.goals["network-out-distribution"]["holds"]
    assert not before.goals["topic-leader-distribution"]["holds"]

    proposal = plan(model, options)
    summary = proposal.summary
    assert summary["goalsViolated"] == []
    assert summary["moves"] == 0
    big = [c for c in proposal.leader_changes if c.topic == "big"]
    assert len(big) == 1
    assert big[0].old_leader == 0
    # Two or three small leaderships of different topics came back to broker 0.
    back = [c for c in proposal.leader_changes if c.topic in {"s", "r", "q"}]
    assert len(back) >= 2
    assert {c.new_leader for c in back} == {0}
    assert len({c.topic for c in back}) == len(back)


def test_a_group_planned_alone_gets_the_same_detours_as_in_the_whole_cluster() -> None:
    # Two resource groups, each with the rack-pinned layout above: the detours (their limits, their
    # mending, the undo pass after them) work one group at a time, so planning the groups apart
    # and merging gives the same proposal as planning the whole cluster.
    builder = ClusterBuilder()
    _rack_pinned(builder, "a-t", 0)
    _rack_pinned(builder, "b-t", 12)
    model = builder.build()
    groups = (
        GroupOptions("a", tuple(range(12)), topic_patterns=("a-.*",)),
        GroupOptions("b", tuple(range(12, 24)), topic_patterns=("b-.*",)),
    )
    options = PlannerOptions(resource_groups=groups)
    whole = plan(model, options)
    assert whole.summary["goals"]["topic-replica-distribution"]["holdsAfter"]
    targets = [t for job in split(model, options) for t in plan_group(job).targets]
    merged = merge(model, options, targets)
    assert merged.plan == whole.plan
    assert merged.id == whole.id


def test_with_one_attempt_a_detour_that_pushes_disk_out_mends_it_with_replica_moves(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Topic t (three single-replica partitions on four brokers, so at most one per broker): broker 0
    # holds two, 9 GB each, and sits 2 GB above its disk band's lower edge (92 GB, avg 100.25, band
    # 90.2-110.3). Moving one to broker 2 takes it below; a 10 GB replica from broker 3 (110) back
    # to 0 mends that, and only replica moves can. Every other topic has one partition. On a large
    # group a detour gets one attempt (detour_replicas_per_attempt / replicas), which must not go to mending by
    # leadership alone.
    builder = ClusterBuilder()
    for b in range(4):
        builder.add_broker(b, rack=f"rack-{b}")
    rows = [("t", 0, 9.0), ("t", 0, 9.0), ("t", 1, 9.0), ("big", 2, 100.0), ("odd", 0, 14.0)]
    rows += [(f"f{b}-{i}", b, 10.0) for b, n in enumerate([6, 9, 0, 11]) for i in range(n)]
    for p, (topic, broker, size) in enumerate(rows):
        builder.add_partition(topic, p, [broker], size_bytes=size * GB, bytes_in_per_sec=1e3, bytes_out_per_sec=1e3)
    model = builder.build()
    options = PlannerOptions(distribution_goals=("disk-distribution", "topic-replica-distribution"))
    st = State(model, options, resolve_groups(model, options))
    monkeypatch.setattr(detours, "TUNING", dataclasses.replace(TUNING, detour_replicas_per_attempt=1))
    with st.scoped(guarded=frozenset(options.distribution_goals)):
        bands = compute_bands(st)
        t = model.topics.index("t")
        assert st.tcount[t].tolist() == [2, 1, 0, 0]
        assert (bands.lower[:, Q_DISK] <= st.load[:, Q_DISK]).all()
        assert (st.load[:, Q_DISK] <= bands.upper[:, Q_DISK]).all()
        assert detours.repair_topic_slots(st) == 1
        assert st.tcount[t].max() == 1
        assert (bands.lower[:, Q_DISK] <= st.load[:, Q_DISK]).all()
        assert (st.load[:, Q_DISK] <= bands.upper[:, Q_DISK]).all()
