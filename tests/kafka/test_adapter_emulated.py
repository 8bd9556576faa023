"""The Kafka adapter against the emulator over TCP, through both real clients: what only the emulator can
show (emulated time to the tick, request counts). What real Kafka shows too is in test_conformance.py.

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
    KafkaUnavailableError,
    TopicPartition,
)
from kafka_balancer.kafka.throttles import remove_throttles, set_throttles
from kafka_balancer.model import ClusterBuilder, ClusterModel, snapshot_to_dict
from kafka_balancer.sandbox import EmulatedCluster

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
    # Kafka reports every topic's effective settings: Kafka's defaults where a topic sets none.
    names = sorted({p["topic"] for p in partitions})
    given = {t["name"]: t for t in doc.get("topics", [])}
    topics = [{"name": n, "minInsyncReplicas": 1, "uncleanLeaderElection": False, **given.get(n, {})} for n in names]
    return {"brokers": brokers, "partitions": partitions, "topics": topics}


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


def test_emulated_copy_under_throttle_takes_size_over_throttle_to_the_tick(emulator: Start, adapter_for: Any) -> None:
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


def test_emulated_copy_stalls_with_its_broker_and_resumes_from_bytes_copied(emulator: Start, adapter_for: Any) -> None:
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
