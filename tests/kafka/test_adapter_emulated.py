"""The Kafka adapter against the emulator over TCP, through both real clients (issue 2, "Must show").

confluent-kafka serves metadata, configs, offsets, groups and elections; kafka-python serves
DescribeLogDirs and the reassignment APIs. Every test here goes through ``KafkaAdapter``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from emulator_fixtures import six_broker_model
from kafka_balancer.kafka.adapter import KafkaAdapter
from kafka_balancer.kafka.connection import ConnectionSpec
from kafka_balancer.kafka.port import (
    FOLLOWER_THROTTLE_RATE,
    FOLLOWER_THROTTLED_REPLICAS,
    LEADER_THROTTLE_RATE,
    LEADER_THROTTLED_REPLICAS,
    KafkaError,
    KafkaUnavailableError,
    TopicPartition,
)
from kafka_balancer.kafka.throttles import ThrottleRecord, remove_throttles, set_throttles
from kafka_balancer.model import ClusterBuilder, ClusterModel, snapshot_to_dict
from kafka_balancer.sandbox import EmulatedCluster, GroupSeed, MemberSeed

ALTER_REASSIGNMENTS, ELECT_LEADERS = 45, 43
MB = 1_000_000


def kafka_visible(model: ClusterModel) -> dict[str, Any]:
    """The snapshot fields Kafka exposes: brokers (id, rack, alive), partitions (replicas, leader,
    ISR, size) and topic settings. Rates and capacities are not readable from Kafka."""
    doc = snapshot_to_dict(model)
    brokers = [{k: b[k] for k in ("id", "rack", "alive") if k in b} for b in doc["brokers"]]
    keep = ("topic", "partition", "replicas", "leader", "isr", "sizeBytes")
    partitions = [{k: p[k] for k in keep if k in p} for p in doc["partitions"]]
    for b in brokers:
        b.setdefault("alive", True)
    for p in partitions:
        p.setdefault("leader", p["replicas"][0])
        p.setdefault("isr", p["replicas"])
        p["sizeBytes"] = int(p.get("sizeBytes", 0))
    return {"brokers": brokers, "partitions": partitions, "topics": doc.get("topics", [])}


@pytest.fixture
def adapter_for() -> Any:
    opened: list[KafkaAdapter] = []

    def make(cluster: EmulatedCluster, **spec: Any) -> KafkaAdapter:
        adapter = KafkaAdapter(ConnectionSpec(cluster.bootstrap_servers, **spec))
        opened.append(adapter)
        return adapter

    yield make
    for adapter in opened:
        adapter.close()


Start = Callable[..., EmulatedCluster]


def test_read_cluster_equals_the_snapshot_it_was_loaded_from(emulator: Start, adapter_for: Any) -> None:
    """6 brokers on 3 racks; compared on what Kafka exposes (rates and capacities are zeroed by
    ``kafka_visible``): racks, liveness, replicas, leaders, ISR, sizes, min ISR / unclean settings."""
    builder = ClusterBuilder(cluster_name="read-back")
    for b in range(1, 7):
        builder.add_broker(b, rack=f"rack-{'abc'[(b - 1) % 3]}", disk_bytes=1e12, network_in_bytes_per_sec=1e8)
    builder.set_topic("orders", min_insync_replicas=2, unclean_leader_election=False)
    builder.set_topic("audit", unclean_leader_election=True)
    for p in range(12):
        replicas = [1 + (p + k) % 6 for k in range(3)]
        # Some partitions led by a non-preferred replica, one with a shrunken ISR.
        leader = replicas[1] if p % 4 == 1 else replicas[0]
        isr = replicas[:2] if p == 5 else replicas
        builder.add_partition(
            "orders", p, replicas, leader=leader, isr=isr, size_bytes=1_000_003 * (p + 1), bytes_in_per_sec=7.0
        )
    for p in range(3):
        builder.add_partition("audit", p, [1 + (2 * p + k) % 6 for k in range(2)], size_bytes=123 + p)
    model = builder.build()
    cluster = emulator(model)
    adapter = adapter_for(cluster)

    read = adapter.read_cluster()

    assert kafka_visible(read) == kafka_visible(model)
    description = adapter.describe_cluster()
    assert description.controller_id == 1
    assert [(b.id, b.rack) for b in description.brokers] == [(b, f"rack-{'abc'[(b - 1) % 3]}") for b in range(1, 7)]


def test_read_cluster_sees_a_stopped_broker_and_its_shrunken_isrs(emulator: Start, adapter_for: Any) -> None:
    cluster = emulator(six_broker_model())
    cluster.stop_broker(2)
    read = adapter_for(cluster).read_cluster()
    assert not read.broker(read.broker_index(2)).alive
    for part in read.partitions():
        assert 2 not in part.isr
        assert part.leader != 2
        assert part.leader is not None


def test_reassignment_under_throttle_takes_size_over_throttle(emulator: Start, adapter_for: Any) -> None:
    """Moving a 100 MB replica under a 10 MB/s throttle takes 10 s of emulated time (within 10%)."""
    model = six_broker_model(topics={"orders": 6}, size_bytes=100 * MB)
    cluster = emulator(model)
    adapter = adapter_for(cluster)
    tp = TopicPartition("orders", 0)
    current = model.partition(model.partition_index("orders", 0)).replicas
    assert model.partition(model.partition_index("orders", 0)).size_bytes == 100 * MB
    target = [current[0], current[1], 6 if 6 not in current else 5]
    record = set_throttles(adapter, 10 * MB, {tp: (current, target)})
    assert adapter.alter_reassignments({tp: target}) == {tp: None}
    ongoing = adapter.list_reassignments()
    assert ongoing[tp].adding == (target[2],)
    assert ongoing[tp].removing == (current[2],)

    # At every tick: replicas = target + removing, and the ISR never loses an original replica.
    def check(state: Any) -> None:
        part = state.partition("orders", 0)
        if part.reassignment is not None:
            assert part.replicas == [*target, current[2]]
            assert set(current) <= set(part.isr)

    cluster.on_tick(check)
    elapsed = cluster.run_until(lambda state: not state.reassigning, timeout=60)

    assert elapsed == pytest.approx(10.0, rel=0.10)
    assert adapter.list_reassignments() == {}
    read = adapter.read_cluster()
    moved = read.partition(read.partition_index("orders", 0))
    assert moved.replicas == tuple(target)
    assert set(moved.isr) == set(target)
    assert adapter.replica_sizes()[(tp, target[2])] == 100 * MB
    remove_throttles(adapter, record)


def test_cancel_restores_the_original_replicas(emulator: Start, adapter_for: Any) -> None:
    model = six_broker_model(topics={"orders": 6}, size_bytes=100 * MB)
    cluster = emulator(model)
    adapter = adapter_for(cluster)
    tp = TopicPartition("orders", 1)
    original = model.partition(model.partition_index("orders", 1)).replicas
    target = [b for b in range(1, 7) if b not in original]
    assert adapter.alter_reassignments({tp: target}) == {tp: None}
    cluster.advance(0.5)  # part of the copy is done
    assert adapter.list_reassignments()[tp].adding == tuple(target)

    assert adapter.alter_reassignments({tp: None}) == {tp: None}

    assert adapter.list_reassignments() == {}
    read = adapter.read_cluster()
    part = read.partition(read.partition_index("orders", 1))
    assert part.replicas == original
    assert set(part.isr) == set(original)
    assert part.leader == original[0]
    assert all((tp, b) not in adapter.replica_sizes() for b in target)
    # Cancelling again: Kafka says there is nothing to cancel.
    error = adapter.alter_reassignments({tp: None})[tp]
    assert isinstance(error, KafkaError)
    assert error.name == "NO_REASSIGNMENT_IN_PROGRESS"


def test_invalid_reassignments_get_named_errors(emulator: Start, adapter_for: Any) -> None:
    cluster = emulator(six_broker_model())
    adapter = adapter_for(cluster)
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
    assert result[TopicPartition("orders", 1)].partition == TopicPartition("orders", 1)  # type: ignore[union-attr]
    assert adapter.list_reassignments() == {}


def _led_by_second_replica(partitions: int) -> ClusterModel:
    builder = ClusterBuilder(cluster_name="elections")
    for b in range(1, 7):
        builder.add_broker(b, rack=f"r{b % 3}")
    for p in range(partitions):
        replicas = [1 + (p + k) % 6 for k in range(3)]
        builder.add_partition("events", p, replicas, leader=replicas[1])
    return builder.build()


def test_batched_preferred_election_of_1000_partitions_is_one_request(emulator: Start, adapter_for: Any) -> None:
    cluster = emulator(_led_by_second_replica(1000))
    adapter = adapter_for(cluster)
    tps = [TopicPartition("events", p) for p in range(1000)]
    before = cluster.request_count(ELECT_LEADERS)

    result = adapter.elect_preferred_leaders(tps)

    assert cluster.request_count(ELECT_LEADERS) - before == 1
    assert result == dict.fromkeys(tps)
    read = adapter.read_cluster(with_sizes=False)
    assert all(p.leader == p.replicas[0] for p in read.partitions())
    # Already preferred: ELECTION_NOT_NEEDED counts as success; batch size 400 -> 3 requests.
    before = cluster.request_count(ELECT_LEADERS)
    assert adapter.elect_preferred_leaders(tps, batch_size=400) == dict.fromkeys(tps)
    assert cluster.request_count(ELECT_LEADERS) - before == 3


def test_election_reports_preferred_leader_not_available(emulator: Start, adapter_for: Any) -> None:
    cluster = emulator(_led_by_second_replica(6))
    adapter = adapter_for(cluster)
    cluster.stop_broker(1)  # preferred leader of events-0
    result = adapter.elect_preferred_leaders([TopicPartition("events", 0), TopicPartition("events", 1)])
    error = result[TopicPartition("events", 0)]
    assert isinstance(error, KafkaError)
    assert error.name == "PREFERRED_LEADER_NOT_AVAILABLE"
    assert error.partition == TopicPartition("events", 0)
    assert result[TopicPartition("events", 1)] is None


def test_throttles_are_set_and_removed_leaving_foreign_throttles_alone(emulator: Start, adapter_for: Any) -> None:
    cluster = emulator(six_broker_model(topics={"orders": 6, "payments": 3}))
    adapter = adapter_for(cluster)
    # An operator's own throttles, set before we start: they must survive our cleanup.
    adapter.alter_broker_configs({1: {LEADER_THROTTLE_RATE: "5000"}, 6: {FOLLOWER_THROTTLE_RATE: "7000"}})
    adapter.alter_topic_configs(
        {"orders": {LEADER_THROTTLED_REPLICAS: "5:6"}, "payments": {FOLLOWER_THROTTLED_REPLICAS: "0:4"}}
    )
    tp = TopicPartition("orders", 0)
    current = (1, 2, 3)
    target = (1, 2, 4)

    record = set_throttles(adapter, 1_000_000, {tp: (current, target)})

    brokers = adapter.broker_configs([1, 2, 3, 4, 6])
    for b in (1, 2, 3, 4):
        assert brokers[b][LEADER_THROTTLE_RATE] == "1000000"
        assert brokers[b][FOLLOWER_THROTTLE_RATE] == "1000000"
    assert brokers[6][FOLLOWER_THROTTLE_RATE] == "7000"
    orders = adapter.topic_configs(["orders"])["orders"]
    assert orders[LEADER_THROTTLED_REPLICAS].split(",") == ["5:6", "0:1", "0:2", "0:3"]
    assert orders[FOLLOWER_THROTTLED_REPLICAS] == "0:4"
    # The record survives a round trip through JSON-able dicts (an executor persists it).
    record = ThrottleRecord.from_dict(record.to_dict())

    remove_throttles(adapter, record)

    brokers = adapter.broker_configs([1, 2, 3, 4, 6])
    assert brokers[1][LEADER_THROTTLE_RATE] == "5000"  # restored, not deleted
    assert FOLLOWER_THROTTLE_RATE not in brokers[1]
    for b in (2, 3, 4):
        assert LEADER_THROTTLE_RATE not in brokers[b]
        assert FOLLOWER_THROTTLE_RATE not in brokers[b]
    assert brokers[6][FOLLOWER_THROTTLE_RATE] == "7000"
    configs = adapter.topic_configs(["orders", "payments"])
    assert configs["orders"][LEADER_THROTTLED_REPLICAS] == "5:6"
    assert configs["orders"][FOLLOWER_THROTTLED_REPLICAS] == ""
    assert configs["payments"][FOLLOWER_THROTTLED_REPLICAS] == "0:4"


def test_broker_stop_mid_reassignment_stalls_without_losing_a_replica(emulator: Start, adapter_for: Any) -> None:
    model = six_broker_model(topics={"orders": 6}, size_bytes=100 * MB)
    cluster = emulator(model)
    adapter = adapter_for(cluster)
    tp = TopicPartition("orders", 0)
    original = model.partition(model.partition_index("orders", 0)).replicas  # (1, 2, 3)
    target = [original[0], original[1], 4]
    assert adapter.alter_reassignments({tp: target}) == {tp: None}
    cluster.advance(0.5)  # 50 MB copied at the default 100 MB/s
    copied = cluster.replica_bytes("orders", 0, 4)
    assert 0 < copied < 100 * MB

    cluster.stop_broker(4)
    cluster.advance(60)

    ongoing = adapter.list_reassignments()
    assert ongoing[tp].adding == (4,)
    assert cluster.replica_bytes("orders", 0, 4) == copied  # stalled, nothing lost
    read = adapter.read_cluster(with_sizes=False)
    part = read.partition(read.partition_index("orders", 0))
    assert set(part.replicas) == set(original) | {4}
    assert set(part.isr) == set(original)  # every original replica still in sync

    cluster.start_broker(4)
    elapsed = cluster.run_until(lambda state: not state.reassigning, timeout=60)
    assert elapsed == pytest.approx(0.5, abs=0.15)  # only the remaining 50 MB
    read = adapter.read_cluster(with_sizes=False)
    assert read.partition(read.partition_index("orders", 0)).replicas == tuple(target)


def test_consumer_groups_are_read_with_members_assignments_and_lag(emulator: Start, adapter_for: Any) -> None:
    builder = ClusterBuilder()
    for b in (1, 2, 3):
        builder.add_broker(b)
    for p in range(4):
        builder.add_partition(
            "clicks", p, [1 + p % 3], size_bytes=1000.0, bytes_in_per_sec=100.0, messages_in_per_sec=1
        )
    cluster = emulator(builder.build())
    members = (
        MemberSeed("m-1", "client-a", "/10.0.0.1", ("clicks",), {"clicks": [0, 1]}),
        MemberSeed("m-2", "client-b", "/10.0.0.2", ("clicks",), {"clicks": [2, 3]}),
    )
    cluster.seed_group(GroupSeed("readers", members, assignor="roundrobin", offsets={("clicks", 0): 4}))
    groups = adapter_for(cluster).consumer_groups()
    assert len(groups) == 1
    group = groups[0]
    assert (group.group_id, group.state, group.assignor) == ("readers", "Stable", "roundrobin")
    assert [(m.client_id, m.host, m.subscription, dict(m.assignment)) for m in group.members] == [
        ("client-a", "/10.0.0.1", ("clicks",), {"clicks": (0, 1)}),
        ("client-b", "/10.0.0.2", ("clicks",), {"clicks": (2, 3)}),
    ]
    # 1000 bytes at 100 bytes/message = 10 messages in the log; committed 4 -> lag 6.
    assert group.lag() == {TopicPartition("clicks", 0): 6}


def test_unreachable_cluster_raises_unavailable(adapter_for: Any) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    adapter = KafkaAdapter(ConnectionSpec(f"127.0.0.1:{port}", request_timeout_s=2))
    try:
        with pytest.raises(KafkaUnavailableError):
            adapter.describe_cluster()
    finally:
        adapter.close()


def test_copy_time_under_the_running_clock_matches_size_over_throttle(emulator: Start, adapter_for: Any) -> None:
    """The same move with the clock thread running at 20x: the emulated copy time (submit to
    completion, as the emulator records it) is still size / throttle within 10%."""
    model = six_broker_model(topics={"orders": 6}, size_bytes=100 * MB)
    cluster = emulator(model, time_scale=20)
    adapter = adapter_for(cluster)
    tp = TopicPartition("orders", 0)
    current = model.partition(model.partition_index("orders", 0)).replicas
    target = [current[0], current[1], 4]
    record = set_throttles(adapter, 10 * MB, {tp: (current, target)})
    assert adapter.alter_reassignments({tp: target}) == {tp: None}
    with cluster.state.lock:
        started = cluster.state.partition("orders", 0).reassignment.started_at  # type: ignore[union-attr]
    deadline = time.monotonic() + 30
    while adapter.list_reassignments() and time.monotonic() < deadline:
        time.sleep(0.05)
    with cluster.state.lock:
        finished = [clock for topic, p, clock in cluster.state.completed if (topic, p) == ("orders", 0)]
    assert finished, "the move did not complete"
    assert finished[0] - started == pytest.approx(10.0, rel=0.10)
    remove_throttles(adapter, record)
