"""Conformance: every call the Kafka adapter makes, run against the emulator and against real Apache
Kafka 4.3.1 brokers, with the same assertions (issue 32). Where the two differed, real Kafka was
right and the emulator was changed; docs/index.md#testing lists what is emulated and why.

The calls covered: Metadata and DescribeCluster (read_cluster, describe_cluster), DescribeConfigs and
IncrementalAlterConfigs (topic and broker configs, throttles), DescribeLogDirs (sizes),
AlterPartitionReassignments (start and cancel), ListPartitionReassignments, ElectLeaders,
ListOffsets, and the consumer-group reads (ListGroups, DescribeGroups, OffsetFetch); the brokers'
log directories and their cordons (cordoned.log.dirs, KIP-1066); each replica's log directory and each
directory's volume (DescribeLogDirs v4+) and moves between a broker's directories (AlterReplicaLogDirs,
future replicas, their throttle); DescribeTopicPartitions (eligible leader replicas, KIP-966).
"""

from __future__ import annotations

import logging

import pytest
import raw_client
from confluent_kafka.admin import AdminClient, NewTopic
from kafka_balancer.kafka import lacking
from kafka_balancer.kafka.adapter import KafkaAdapter
from kafka_balancer.kafka.port import (
    CORDONED_LOG_DIRS,
    FOLLOWER_THROTTLE_RATE,
    FOLLOWER_THROTTLED_REPLICAS,
    LEADER_THROTTLE_RATE,
    LEADER_THROTTLED_REPLICAS,
    LOG_DIR_THROTTLE_RATE,
    LOG_DIRS,
    KafkaError,
    TopicPartition,
)
from kafka_balancer.kafka.throttles import ThrottleRecord, remove_throttles, set_throttles
from kafka_balancer.sandbox.traffic import QUIET
from kafka_targets import BACKENDS, GroupMember, KafkaTarget, converge, wait_until

MB = 1_000_000
RATES = (LEADER_THROTTLE_RATE, FOLLOWER_THROTTLE_RATE)
RECORD = 10_000  # bytes per record where sizes matter: batch overhead stays well under 1%

backends = pytest.mark.parametrize("kafka_target", BACKENDS, indirect=True)


def _size_ok(size: float, payload: int) -> bool:
    """A log holds the payload plus record and batch headers (real Kafka), or exactly it (emulator)."""
    return payload <= size <= payload * 1.02


@backends
def test_read_cluster_sees_placement_leaders_isr_racks_and_topic_settings(kafka_target: KafkaTarget) -> None:
    kafka_target.create_topic(
        "orders",
        [[1, 2, 3], [2, 3, 4], [3, 4, 5], [4, 5, 6]],
        {"min.insync.replicas": "2", "unclean.leader.election.enable": "false"},
    )
    kafka_target.create_topic("audit", [[5, 6], [6, 1]], {"unclean.leader.election.enable": "true"})
    kafka_target.create_topic("plain", [[1]])
    kafka_target.fill("orders", 1, records=100, record_bytes=RECORD)
    adapter = kafka_target.adapter()

    model = adapter.read_cluster()

    assert [model.broker(i).id for i in range(model.num_brokers)] == [1, 2, 3, 4, 5, 6]
    assert [model.broker(i).rack for i in range(model.num_brokers)] == [kafka_target.rack(b) for b in range(1, 7)]
    assert all(model.broker(i).alive for i in range(model.num_brokers))
    rows = {(p.topic, p.partition): (p.replicas, p.leader, tuple(sorted(p.isr))) for p in model.partitions()}
    assert rows == {
        ("audit", 0): ((5, 6), 5, (5, 6)),
        ("audit", 1): ((6, 1), 6, (1, 6)),
        ("orders", 0): ((1, 2, 3), 1, (1, 2, 3)),
        ("orders", 1): ((2, 3, 4), 2, (2, 3, 4)),
        ("orders", 2): ((3, 4, 5), 3, (3, 4, 5)),
        ("orders", 3): ((4, 5, 6), 4, (4, 5, 6)),
        ("plain", 0): ((1,), 1, (1,)),
    }
    settings = {s.name: (s.min_insync_replicas, s.unclean_leader_election) for s in model.topic_settings()}
    # Effective values: Kafka's defaults (min.insync.replicas 1, no unclean election) where a topic sets none.
    assert settings == {"audit": (1, True), "orders": (2, False), "plain": (1, False)}
    sizes = {(p.topic, p.partition): p.size_bytes for p in model.partitions()}
    assert _size_ok(sizes[("orders", 1)], 100 * RECORD)
    assert sizes[("orders", 0)] == 0

    description = adapter.describe_cluster()
    assert [(b.id, b.rack) for b in description.brokers] == [(b, kafka_target.rack(b)) for b in range(1, 7)]
    assert description.controller_id in {1, 2, 3, 4, 5, 6}
    assert description.cluster_id


@backends
def test_replica_sizes_and_log_end_offsets(kafka_target: KafkaTarget) -> None:
    kafka_target.create_topic("events", [[1, 2], [3, 4]])
    kafka_target.fill("events", 0, records=250, record_bytes=RECORD)
    kafka_target.fill("events", 1, records=40, record_bytes=RECORD)
    adapter = kafka_target.adapter()
    tp0, tp1 = TopicPartition("events", 0), TopicPartition("events", 1)

    # Followers catch up within moments: wait until both replicas of each partition report one size.
    def replicated() -> bool:
        sizes = adapter.replica_sizes()
        return sizes[(tp0, 1)] == sizes[(tp0, 2)] and sizes[(tp1, 3)] == sizes[(tp1, 4)]

    wait_until(replicated, "followers to catch up", timeout_s=30)
    sizes = adapter.replica_sizes()
    assert _size_ok(sizes[(tp0, 1)], 250 * RECORD)
    assert _size_ok(sizes[(tp1, 4)], 40 * RECORD)
    assert {key for key in sizes if key[0].topic == "events"} == {(tp0, 1), (tp0, 2), (tp1, 3), (tp1, 4)}
    assert adapter.log_end_offsets([tp0, tp1]) == {tp0: 250, tp1: 40}


@backends
def test_describe_configs_gives_effective_topic_values(kafka_target: KafkaTarget) -> None:
    kafka_target.create_topic("orders", [[1, 2, 3]], {"min.insync.replicas": "2"})
    kafka_target.create_topic("plain", [[1, 2]])
    adapter = kafka_target.adapter()

    configs = adapter.topic_configs(["orders", "plain"])

    assert configs["orders"]["min.insync.replicas"] == "2"
    assert configs["plain"]["min.insync.replicas"] == "1"  # the broker default, reported as the value
    assert configs["plain"]["unclean.leader.election.enable"] == "false"
    for name in ("orders", "plain"):
        assert configs[name][LEADER_THROTTLED_REPLICAS] == ""
        assert configs[name][FOLLOWER_THROTTLED_REPLICAS] == ""
    brokers = adapter.broker_configs([1, 2])
    for b in (1, 2):
        assert LEADER_THROTTLE_RATE not in brokers[b]  # unset: not reported
        assert FOLLOWER_THROTTLE_RATE not in brokers[b]
        assert brokers[b]["broker.rack"] == kafka_target.rack(b)


def _rates(adapter: KafkaAdapter, brokers: list[int]) -> dict[int, dict[str, str]]:
    configs = adapter.broker_configs(brokers)
    return {b: {k: v for k, v in configs[b].items() if k in RATES} for b in brokers}


def _lists(adapter: KafkaAdapter, topics: list[str]) -> dict[str, tuple[str, str]]:
    configs = adapter.topic_configs(topics)
    return {t: (configs[t][LEADER_THROTTLED_REPLICAS], configs[t][FOLLOWER_THROTTLED_REPLICAS]) for t in topics}


@backends
def test_a_cluster_wide_min_isr_is_every_topics_effective_value_and_cannot_be_deleted(
    kafka_target: KafkaTarget,
) -> None:
    """kafka-configs.sh --entity-type brokers --entity-default --add-config min.insync.replicas=2: a topic
    that sets none inherits it. With eligible leader replicas (KIP-966, on by default since Kafka 4.1)
    the cluster-level value can be changed but not deleted."""
    kafka_target.create_topic("plain", [[1, 2, 3]])
    kafka_target.create_topic("own", [[1, 2, 3]], {"min.insync.replicas": "3"})
    adapter = kafka_target.adapter()
    kafka_target.set_cluster_default("min.insync.replicas", "2", effective="2")
    try:
        converge(
            lambda: {t: c["min.insync.replicas"] for t, c in adapter.topic_configs(["plain", "own"]).items()},
            {"plain": "2", "own": "3"},
            "the effective min.insync.replicas",
        )
        model = adapter.read_cluster(with_sizes=False)
        assert {s.name: s.min_insync_replicas for s in model.topic_settings()} == {"plain": 2, "own": 3}
        if kafka_target.features.eligible_leader_replicas:
            with pytest.raises(AssertionError, match=r"40 Cluster-level min\.insync\.replicas cannot be removed"):
                raw_client.set_cluster_default(kafka_target.bootstrap_servers, "min.insync.replicas", None)
        else:  # Kafka < 4.1 keeps no ELR: the cluster-level value is deleted like any other
            kafka_target.set_cluster_default("min.insync.replicas", None, effective="1")
    finally:
        kafka_target.set_cluster_default("min.insync.replicas", "1", effective="1")


@backends
def test_throttles_are_set_and_removed_leaving_foreign_throttles_alone(kafka_target: KafkaTarget) -> None:
    kafka_target.create_topic("orders", [[1, 2, 3], [2, 3, 4], [3, 4, 5], [4, 5, 6], [5, 6, 1], [6, 1, 2]])
    kafka_target.create_topic("payments", [[1, 2, 3], [2, 3, 4], [3, 4, 5]])
    adapter = kafka_target.adapter()
    brokers, topics = [1, 2, 3, 4, 6], ["orders", "payments"]
    # An operator's own throttles, set before we start: they must survive our cleanup.
    adapter.alter_broker_configs({1: {LEADER_THROTTLE_RATE: "5000"}, 6: {FOLLOWER_THROTTLE_RATE: "7000"}})
    adapter.alter_topic_configs(
        {"orders": {LEADER_THROTTLED_REPLICAS: "5:6"}, "payments": {FOLLOWER_THROTTLED_REPLICAS: "0:4"}}
    )
    foreign_rates = {1: {LEADER_THROTTLE_RATE: "5000"}, 2: {}, 3: {}, 4: {}, 6: {FOLLOWER_THROTTLE_RATE: "7000"}}
    foreign_lists = {"orders": ("5:6", ""), "payments": ("", "0:4")}
    converge(lambda: _rates(adapter, brokers), foreign_rates, "the operator's rates")
    converge(lambda: _lists(adapter, topics), foreign_lists, "the operator's lists")
    tp = TopicPartition("orders", 0)

    record = set_throttles(adapter, 1_000_000, {tp: ((1, 2, 3), (1, 2, 4))})

    ours = dict.fromkeys(RATES, "1000000")
    converge(
        lambda: _rates(adapter, brokers),
        {1: ours, 2: ours, 3: ours, 4: ours, 6: {FOLLOWER_THROTTLE_RATE: "7000"}},
        "our rates",
    )
    converge(
        lambda: _lists(adapter, topics),
        {"orders": ("5:6,0:1,0:2,0:3", "0:4"), "payments": ("", "0:4")},
        "our lists",
    )
    record = ThrottleRecord.from_dict(record.to_dict())

    remove_throttles(adapter, record)

    converge(lambda: _rates(adapter, brokers), foreign_rates, "the operator's rates restored")
    converge(lambda: _lists(adapter, topics), foreign_lists, "the operator's lists restored")


@backends
def test_invalid_throttle_values_are_refused_by_name(kafka_target: KafkaTarget) -> None:
    kafka_target.create_topic("orders", [[1, 2, 3]])
    adapter = kafka_target.adapter()
    for value, reason in (("fast", "Not a number of type LONG"), ("-5", "Value must be at least 0")):
        with pytest.raises(KafkaError) as rate:
            adapter.alter_broker_configs({1: {LEADER_THROTTLE_RATE: value}})
        assert rate.value.name == "INVALID_REQUEST"
        assert f"Invalid value {value} for configuration {LEADER_THROTTLE_RATE}: {reason}" in str(rate.value)
    with pytest.raises(KafkaError) as replicas:
        adapter.alter_topic_configs({"orders": {LEADER_THROTTLED_REPLICAS: "zero:one"}})
    assert replicas.value.name == "INVALID_CONFIG"
    # Whitespace around entries is dropped, as Kafka parses a list config.
    adapter.alter_topic_configs({"orders": {LEADER_THROTTLED_REPLICAS: " 0:1 , 0:2"}})
    converge(lambda: _lists(adapter, ["orders"]), {"orders": ("0:1,0:2", "")}, "the trimmed list")
    assert LEADER_THROTTLE_RATE not in adapter.broker_configs([1])[1]


@backends
def test_reassignment_under_throttle_keeps_every_original_replica_until_it_ends(kafka_target: KafkaTarget) -> None:
    """20 MB onto a new broker under a 4 MB/s throttle: the ISR never loses an original replica, the old
    replica leaves only at the end, and the new one holds the same bytes. How long the copy takes against
    size / throttle is a benchmark's figure, on real brokers (`.venv/bin/python -m bench.real_copy_rate
    --all-at-once --receivers 1 --partitions 1 --throttle 4MB/s --seconds 5`); on the emulator it is
    exact in emulated time (tests/sandbox/test_emulator_semantics.py, tests/kafka/test_adapter_emulated.py)."""
    kafka_target.create_topic("orders", [[1, 2, 3]])
    kafka_target.fill("orders", 0, records=2000, record_bytes=RECORD)
    adapter = kafka_target.adapter()
    tp = TopicPartition("orders", 0)
    size = adapter.replica_sizes()[(tp, 1)]
    record = set_throttles(adapter, 4 * MB, {tp: ((1, 2, 3), (1, 2, 4))})

    assert adapter.alter_reassignments({tp: [1, 2, 4]}) == {tp: None}
    ongoing = adapter.list_reassignments()
    assert ongoing[tp].adding == (4,)
    assert ongoing[tp].removing == (3,)
    assert ongoing[tp].target == (1, 2, 4)

    def done() -> bool:
        model = adapter.read_cluster(with_sizes=False)
        part = model.partition(model.partition_index("orders", 0))
        if tp in adapter.list_reassignments():
            # The controller lists the move before every broker's metadata shows broker 4 (seen on 3.9.2:
            # replicas still {1, 2, 3} right after the submission); an original replica never leaves early.
            assert {1, 2, 3} <= set(part.replicas) <= {1, 2, 3, 4}
            assert {1, 2, 3} <= set(part.isr)
            return False
        return True

    wait_until(done, "the move", timeout_s=120)  # about 5 s; a busy machine only slows it
    remove_throttles(adapter, record)

    model = adapter.read_cluster(with_sizes=False)
    moved = model.partition(model.partition_index("orders", 0))
    assert moved.replicas == (1, 2, 4)
    assert set(moved.isr) == {1, 2, 4}
    wait_until(lambda: adapter.replica_sizes().get((tp, 4)) == size, "the new replica's size", timeout_s=10)
    assert (tp, 3) not in adapter.replica_sizes()


@backends
def test_cancel_restores_the_original_replicas_in_the_order_of_the_in_flight_list(kafka_target: KafkaTarget) -> None:
    """KIP-455 cancel: the replicas being added are dropped from the in-flight list (target +
    removing). orders-0 [1,2,3] -> [4,5,6] comes back as [1,2,3]; orders-1 [1,2,3] -> [4,2,1] was
    [4,2,1,3] in flight and comes back as [2,1,3]: the original set, not the original order."""
    kafka_target.create_topic("orders", [[1, 2, 3], [1, 2, 3]])
    kafka_target.fill("orders", 0, records=2000, record_bytes=RECORD)
    kafka_target.fill("orders", 1, records=2000, record_bytes=RECORD)
    adapter = kafka_target.adapter()
    tp0, tp1 = TopicPartition("orders", 0), TopicPartition("orders", 1)
    record = set_throttles(adapter, 2 * MB, {tp0: ((1, 2, 3), (4, 5, 6)), tp1: ((1, 2, 3), (4, 2, 1))})
    assert adapter.alter_reassignments({tp0: [4, 5, 6], tp1: [4, 2, 1]}) == {tp0: None, tp1: None}
    ongoing = adapter.list_reassignments()
    assert (ongoing[tp0].replicas, ongoing[tp0].adding) == ((4, 5, 6, 1, 2, 3), (4, 5, 6))
    assert (ongoing[tp1].replicas, ongoing[tp1].adding) == ((4, 2, 1, 3), (4,))

    assert adapter.alter_reassignments({tp0: None, tp1: None}) == {tp0: None, tp1: None}

    assert adapter.list_reassignments() == {}
    remove_throttles(adapter, record)

    def rows() -> list[tuple[tuple[int, ...], int | None, set[int]]]:
        model = adapter.read_cluster(with_sizes=False)
        parts = (model.partition(model.partition_index("orders", p)) for p in (0, 1))
        return [(p.replicas, p.leader, set(p.isr)) for p in parts]

    # Metadata follows the controller by a moment (see test_preferred_leader_election).
    converge(rows, [((1, 2, 3), 1, {1, 2, 3}), ((2, 1, 3), 1, {1, 2, 3})], "the restored replicas")
    wait_until(
        lambda: not any((tp0, b) in adapter.replica_sizes() for b in (4, 5, 6)), "the new replicas to go", timeout_s=30
    )
    error = adapter.alter_reassignments({tp0: None})[tp0]
    assert isinstance(error, KafkaError)
    assert error.name == "NO_REASSIGNMENT_IN_PROGRESS"


@backends
def test_invalid_reassignments_get_named_errors(kafka_target: KafkaTarget) -> None:
    kafka_target.create_topic("orders", [[1, 2, 3], [2, 3, 4], [3, 4, 5]])
    adapter = kafka_target.adapter()
    result = adapter.alter_reassignments(
        {
            TopicPartition("orders", 0): [1, 1, 2],
            TopicPartition("orders", 1): [1, 2, 99],
            TopicPartition("orders", 2): [],
            TopicPartition("missing", 0): [1, 2, 3],
        }
    )
    names = {tp: err.name if err else None for tp, err in result.items()}
    assert names == {
        TopicPartition("orders", 0): "INVALID_REPLICA_ASSIGNMENT",
        TopicPartition("orders", 1): "INVALID_REPLICA_ASSIGNMENT",
        TopicPartition("orders", 2): "INVALID_REPLICA_ASSIGNMENT",
        TopicPartition("missing", 0): "UNKNOWN_TOPIC_OR_PARTITION",
    }
    assert adapter.list_reassignments() == {}


@backends
def test_preferred_leader_election(kafka_target: KafkaTarget) -> None:
    """Led by the second replica (an order-only reassignment makes it preferred): the election moves
    leadership in batches; already-preferred is a success; a stopped preferred leader is named."""
    kafka_target.create_topic("events", [[1 + (p + k) % 6 for k in range(3)] for p in range(12)])
    adapter = kafka_target.adapter()
    tps = [TopicPartition("events", p) for p in range(12)]
    reordered = {tp: [1 + (tp.partition + k) % 6 for k in (1, 0, 2)] for tp in tps}
    assert adapter.alter_reassignments(reordered) == dict.fromkeys(tps)
    wait_until(lambda: not adapter.list_reassignments(), "the order-only reassignments")

    def led_by(position: int) -> bool:
        return all(p.leader == p.replicas[position] for p in adapter.read_cluster(with_sizes=False).partitions())

    # The controller answers once it has committed a change; the broker answering Metadata applies it
    # from its metadata log some milliseconds later (CI once read one old leader), so reads converge.
    converge(lambda: led_by(1), True, "the second replica leading after the reorder")

    kafka_target.stop_broker(reordered[tps[0]][0])  # the new preferred leader of events-0 (and others)
    down = reordered[tps[0]][0]
    result = adapter.elect_preferred_leaders(tps, batch_size=5)
    for tp in tps:
        error = result[tp]
        if reordered[tp][0] == down:
            assert isinstance(error, KafkaError)
            assert error.name == "PREFERRED_LEADER_NOT_AVAILABLE"
            assert error.partition == tp
        else:
            assert error is None, f"{tp}: {error}"
    kafka_target.start_broker(down)

    def in_sync() -> bool:
        parts = adapter.read_cluster(with_sizes=False).partitions()
        return all(len(p.isr) == 3 for p in parts)

    wait_until(in_sync, "the restarted broker to rejoin every ISR")
    assert adapter.elect_preferred_leaders(tps) == dict.fromkeys(tps)
    converge(lambda: led_by(0), True, "every partition led by its preferred replica")
    assert adapter.elect_preferred_leaders(tps) == dict.fromkeys(tps)  # ELECTION_NOT_NEEDED is a success


@backends
def test_read_cluster_sees_a_stopped_broker_and_its_shrunken_isrs(kafka_target: KafkaTarget) -> None:
    kafka_target.create_topic("orders", [[1 + (p + k) % 6 for k in range(3)] for p in range(6)])
    adapter = kafka_target.adapter()
    kafka_target.stop_broker(2)

    model = adapter.read_cluster()

    assert not model.broker(model.broker_index(2)).alive
    assert [b.id for b in adapter.describe_cluster().brokers] == [1, 3, 4, 5, 6]
    for part in model.partitions():
        assert 2 not in part.isr
        assert part.leader not in (None, 2)
        assert len(part.replicas) == 3


@backends
def test_broker_stop_mid_reassignment_stalls_without_losing_a_replica(kafka_target: KafkaTarget) -> None:
    kafka_target.create_topic("orders", [[1, 2, 3]])
    kafka_target.fill("orders", 0, records=2000, record_bytes=RECORD)
    adapter = kafka_target.adapter()
    tp = TopicPartition("orders", 0)
    record = set_throttles(adapter, 4 * MB, {tp: ((1, 2, 3), (1, 2, 4))})
    assert adapter.alter_reassignments({tp: [1, 2, 4]}) == {tp: None}
    wait_until(lambda: adapter.replica_sizes().get((tp, 4), 0) > 0, "the copy to start", timeout_s=20)

    kafka_target.stop_broker(4)

    assert adapter.list_reassignments()[tp].adding == (4,)
    model = adapter.read_cluster(with_sizes=False)
    part = model.partition(model.partition_index("orders", 0))
    assert set(part.replicas) == {1, 2, 3, 4}
    assert set(part.isr) == {1, 2, 3}  # every original replica still in sync

    kafka_target.start_broker(4)
    wait_until(lambda: not adapter.list_reassignments(), "the move to finish after the restart", timeout_s=60)
    remove_throttles(adapter, record)
    model = adapter.read_cluster(with_sizes=False)
    part = model.partition(model.partition_index("orders", 0))
    assert part.replicas == (1, 2, 4)
    assert set(part.isr) == {1, 2, 4}


@backends
def test_consumer_groups_are_read_with_members_assignments_and_lag(kafka_target: KafkaTarget) -> None:
    kafka_target.create_topic("clicks", [[1], [2], [3], [4]])
    kafka_target.fill("clicks", 0, records=10, record_bytes=100)
    members = (GroupMember("client-a", ("clicks",)), GroupMember("client-b", ("clicks",)))
    kafka_target.join_group("readers", members, assignor="roundrobin", commits={("clicks", 0): 4})

    groups = kafka_target.adapter().consumer_groups()

    assert [g.group_id for g in groups] == ["readers"]
    group = groups[0]
    assert (group.state, group.protocol_type, group.assignor) == ("Stable", "consumer", "roundrobin")
    seen = sorted((m.client_id, m.host, m.subscription) for m in group.members)
    assert seen == [("client-a", "/127.0.0.1", ("clicks",)), ("client-b", "/127.0.0.1", ("clicks",))]
    owned = sorted(tuple(m.assignment["clicks"]) for m in group.members)
    assert owned == [(0, 2), (1, 3)]
    assert group.committed == {TopicPartition("clicks", 0): 4}
    assert group.lag() == {TopicPartition("clicks", 0): 6}


@backends
def test_log_end_offsets_right_after_leadership_moves(kafka_target: KafkaTarget) -> None:
    """A new leader answers ListOffsets with OFFSET_NOT_AVAILABLE until its high watermark has caught up
    (real brokers for some milliseconds, the emulator for the first request): the adapter reads again."""
    kafka_target.create_topic("events", [[1, 2, 3], [2, 3, 1]])
    kafka_target.fill("events", 0, records=30, record_bytes=100)
    kafka_target.fill("events", 1, records=20, record_bytes=100)
    adapter = kafka_target.adapter()
    tps = [TopicPartition("events", 0), TopicPartition("events", 1)]
    assert adapter.log_end_offsets(tps) == dict(zip(tps, (30, 20), strict=True))
    assert adapter.alter_reassignments({tps[0]: [2, 1, 3], tps[1]: [3, 2, 1]}) == dict.fromkeys(tps)
    wait_until(lambda: not adapter.list_reassignments(), "the order-only reassignments")

    assert adapter.elect_preferred_leaders(tps) == dict.fromkeys(tps)

    assert adapter.log_end_offsets(tps) == dict(zip(tps, (30, 20), strict=True))

    def leaders() -> list[int | None]:
        model = adapter.read_cluster(with_sizes=False)
        return [model.partition(model.partition_index("events", p)).leader for p in (0, 1)]

    converge(leaders, [2, 3], "the elected leaders")  # metadata follows the controller by a moment


@backends
def test_cordoned_log_dirs_are_read_refused_when_unknown_and_kept_off_by_topic_creation(
    kafka_target: KafkaTarget, caplog: pytest.LogCaptureFixture
) -> None:
    """KIP-1066 (Kafka 4.3): ``cordoned.log.dirs`` lists entries of a broker's log.dirs or is ``*``;
    the snapshot marks each directory, a broker with every directory cordoned is cordoned, and new
    topics are placed elsewhere. Both clusters answer a directory not in log.dirs alike. An older
    Kafka has no cordons: the product says so once and reads none."""
    adapter = kafka_target.adapter()

    def dirs_of(broker_id: int) -> list[bool]:
        model = adapter.read_cluster()
        return [d.cordoned for d in model.broker(model.broker_index(broker_id)).log_dirs]

    assert dirs_of(2) == [False, False]  # both clusters: 2 log directories per broker
    if not kafka_target.features.cordons:
        _older_kafka_reads_no_cordons_and_says_so_once(kafka_target, adapter, caplog)
        return
    first = adapter.broker_configs([2])[2][LOG_DIRS].split(",")[0]
    adapter.alter_broker_configs({2: {CORDONED_LOG_DIRS: first}, 3: {CORDONED_LOG_DIRS: "*"}})

    def cordoned() -> list[bool]:
        return list(adapter.read_cluster().broker_cordoned.tolist())

    converge(cordoned, [False, False, True] + [False] * 3, "cordons")
    assert dirs_of(2) == [True, False]
    assert dirs_of(3) == [True, True]
    with pytest.raises(KafkaError) as unknown:
        adapter.alter_broker_configs({1: {CORDONED_LOG_DIRS: "/not/a/log/dir"}})
    assert unknown.value.name == "INVALID_REQUEST"
    assert (
        "All entries in cordoned.log.dirs must be present in log.dirs or log.dir. Missing entries : /not/a/log/dir"
        in (str(unknown.value))
    )
    # CreateTopics without an assignment: Kafka's placement leaves the cordoned broker out.
    admin = AdminClient({"bootstrap.servers": kafka_target.bootstrap_servers, **QUIET})
    for future in admin.create_topics([NewTopic("spread", 12, 2)]).values():
        future.result(timeout=30)
    wait_until(lambda: adapter.read_cluster(with_sizes=False).num_partitions == 12, "topic spread created")
    placed = adapter.read_cluster()
    hosts = {b for p in range(placed.num_partitions) for b in placed.replica_ids(p)}
    assert hosts == {1, 2, 4, 5, 6}, hosts
    # And on broker 2 every new replica is in its one uncordoned directory (once each has been created).

    def dirs_on_2() -> set[str | None]:
        model = adapter.read_cluster()
        return {model.replica_log_dir(p, 2) for p in range(model.num_partitions) if 2 in model.replica_ids(p)}

    wait_until(lambda: None not in dirs_on_2(), "the replicas on broker 2 to be created")
    assert dirs_on_2() == {adapter.broker_configs([2])[2][LOG_DIRS].split(",")[1]}


def _older_kafka_reads_no_cordons_and_says_so_once(
    kafka_target: KafkaTarget, adapter: KafkaAdapter, caplog: pytest.LogCaptureFixture
) -> None:
    """Kafka < 4.3 lists no ``cordoned.log.dirs`` among a broker's configs: every directory is read
    uncordoned, and the first read of the cluster logs one line saying what it lacks, later reads none."""
    assert CORDONED_LOG_DIRS not in adapter.broker_configs([2])[2]
    lacking.forget(adapter.spec.bootstrap_servers)
    caplog.clear()  # the test's first read said it already
    with caplog.at_level(logging.WARNING, logger=lacking.__name__):
        for _ in range(3):
            assert not adapter.read_cluster().broker_cordoned.any()
    said = [r.getMessage() for r in caplog.records if r.name == lacking.__name__]
    assert said == [
        f"Kafka at {adapter.spec.bootstrap_servers} lacks {lacking.Feature.CORDONS.value}; going on without it"
    ]


@backends
def test_eligible_leader_replicas_follow_the_isr_below_min_isr(kafka_target: KafkaTarget) -> None:
    """KIP-966, on by default in Kafka 4.x KRaft: a replica that leaves an ISR already below
    min.insync.replicas becomes an eligible leader replica; at min ISR the ELR stays empty, and once
    the ISR is back at min ISR it is cleared. read_cluster reads it (DescribeTopicPartitions)."""
    kafka_target.create_topic("e", [[1, 2, 3]], {"min.insync.replicas": "2"})
    kafka_target.create_topic("f", [[1, 2, 3]], {"min.insync.replicas": "3"})
    adapter = kafka_target.adapter()

    def elr() -> dict[str, tuple[tuple[int, ...], tuple[int, ...] | None]]:
        model = adapter.read_cluster(with_sizes=False)
        out = {}
        for p in range(model.num_partitions):
            found = model.elr_ids(p)
            out[model.topic_name(p)] = (
                tuple(sorted(model.isr_ids(p))),
                None if found is None else tuple(sorted(found)),
            )
        return out

    # Kafka < 4.1 keeps no ELR: DescribeTopicPartitions (3.8+) answers, every ELR empty.
    kept = kafka_target.features.eligible_leader_replicas

    def elr_if_kept(*replicas: int) -> tuple[int, ...]:
        return replicas if kept else ()

    assert elr() == {"e": ((1, 2, 3), ()), "f": ((1, 2, 3), ())}  # f is at its min ISR 3: ELR read, empty
    kafka_target.stop_broker(3)
    converge(elr, {"e": ((1, 2), ()), "f": ((1, 2), elr_if_kept(3))}, "broker 3 out of the ISRs", timeout_s=60)
    kafka_target.stop_broker(2)
    expected = {"e": ((1,), elr_if_kept(2)), "f": ((1,), elr_if_kept(2, 3))}
    converge(elr, expected, "broker 2 out of the ISRs", timeout_s=60)
    kafka_target.start_broker(3)
    converge(elr, {"e": ((1, 3), ()), "f": ((1, 3), elr_if_kept(2))}, "broker 3 back in the ISRs", timeout_s=60)


@backends
def test_replica_log_dirs_are_read_and_moved_between_and_into_a_brokers_directories(kafka_target: KafkaTarget) -> None:
    """JBOD (KIP-113): read_cluster gives each replica's directory and each directory's volume; a
    replica moves to another directory of its broker (a future replica, then the switch) without
    losing its log; a replica a broker does not host yet answers REPLICA_NOT_AVAILABLE and arrives in
    the directory asked for; an unknown directory is LOG_DIR_NOT_FOUND, a cordoned one INVALID_REPLICA_ASSIGNMENT.
    The copy throttle is a broker config."""
    kafka_target.create_topic("jbod", [[1, 2]])
    kafka_target.fill("jbod", 0, records=300, record_bytes=RECORD)
    adapter = kafka_target.adapter()
    tp = TopicPartition("jbod", 0)
    dirs = {b: adapter.broker_configs([b])[b][LOG_DIRS].split(",") for b in (1, 3)}
    model = adapter.read_cluster()
    p = model.partition_index("jbod", 0)
    current = model.replica_log_dir(p, 1)
    assert current in dirs[1]
    volumes = model.broker(model.broker_index(1)).log_dirs
    assert [d.path for d in volumes] == dirs[1]
    assert all(d.total_bytes is not None and d.total_bytes > 0 for d in volumes), volumes
    assert all(d.usable_bytes is not None and 0 <= d.usable_bytes <= d.total_bytes for d in volumes), volumes
    size = adapter.replica_log_dirs([(tp, 1)])[(tp, 1)].size
    assert _size_ok(size, 300 * RECORD)

    other = next(d for d in dirs[1] if d != current)
    adapter.alter_broker_configs({1: {LOG_DIR_THROTTLE_RATE: "100000000"}})
    converge(lambda: adapter.broker_configs([1])[1].get(LOG_DIR_THROTTLE_RATE), "100000000", "the copy throttle")
    errors = adapter.alter_replica_log_dirs({(tp, 1): other, (tp, 3): dirs[3][1], (tp, 2): "/not/a/log/dir"})
    assert {key: None if e is None else e.name for key, e in errors.items()} == {
        (tp, 1): None,
        (tp, 3): "REPLICA_NOT_AVAILABLE",
        (tp, 2): "LOG_DIR_NOT_FOUND",
    }
    wait_until(lambda: adapter.replica_log_dirs([(tp, 1)])[(tp, 1)].path == other, "the move between directories")
    moved = adapter.replica_log_dirs([(tp, 1)])[(tp, 1)]
    assert (moved.future_path, moved.size) == (None, size)
    adapter.alter_broker_configs({1: {LOG_DIR_THROTTLE_RATE: None}})
    converge(lambda: adapter.broker_configs([1])[1].get(LOG_DIR_THROTTLE_RATE), None, "the copy throttle gone")

    assert adapter.alter_reassignments({tp: [1, 3]}) == {tp: None}
    wait_until(lambda: not adapter.list_reassignments(), "the reassignment to finish")
    assert adapter.replica_log_dirs([(tp, 3)])[(tp, 3)].path == dirs[3][1]
    assert adapter.alter_replica_log_dirs({(tp, 3): dirs[3][1]}) == {(tp, 3): None}  # already there: nothing to do
    four = adapter.broker_configs([4])[4][LOG_DIRS].split(",")[0]
    if kafka_target.features.cordons:
        # A cordoned directory (KIP-1066) takes no replica, hosted or still to come.
        adapter.alter_broker_configs({3: {CORDONED_LOG_DIRS: dirs[3][0]}, 4: {CORDONED_LOG_DIRS: "*"}})
        converge(lambda: adapter.broker_configs([4])[4].get(CORDONED_LOG_DIRS), "*", "the cordons")
        refused = adapter.alter_replica_log_dirs({(tp, 3): dirs[3][0], (tp, 4): four})
        assert {key: None if e is None else e.name for key, e in refused.items()} == {
            (tp, 3): "INVALID_REPLICA_ASSIGNMENT",
            (tp, 4): "INVALID_REPLICA_ASSIGNMENT",
        }
        assert adapter.replica_log_dirs([(tp, 3)])[(tp, 3)].path == dirs[3][1]
    # A broker that is down: its replica is answered BROKER_NOT_AVAILABLE (to ask again), the others go on.
    kafka_target.stop_broker(4)
    wait_until(lambda: 4 not in {b.id for b in adapter.describe_cluster().brokers}, "broker 4 out of the cluster")
    down = adapter.alter_replica_log_dirs({(tp, 3): dirs[3][1], (tp, 4): four})
    assert {key: None if e is None else e.name for key, e in down.items()} == {
        (tp, 3): None,
        (tp, 4): "BROKER_NOT_AVAILABLE",
    }
