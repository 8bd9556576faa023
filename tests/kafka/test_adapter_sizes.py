"""Replica sizes through DescribeLogDirs (kafka-python), as the adapter asks each broker for them.

The adapter names the partitions it asks each broker about (every hosted replica for
``replica_sizes``; for ``read_cluster`` only led partitions, except on brokers with several log
directories, where each replica's directory is read too); these tests check that nothing is
missed that way: adding replicas mid-copy, stopped brokers, offline partitions.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from emulator_fixtures import six_broker_model
from kafka_balancer.kafka.adapter import KafkaAdapter
from kafka_balancer.kafka.connection import ConnectionSpec
from kafka_balancer.kafka.port import TopicPartition
from kafka_balancer.model import ClusterBuilder
from kafka_balancer.sandbox import EmulatedCluster

Start = Callable[..., EmulatedCluster]
MB = 1_000_000
DESCRIBE_LOG_DIRS = 35


def test_replica_sizes_cover_every_hosted_replica_including_a_move_in_progress(emulator: Start) -> None:
    cluster = emulator(six_broker_model(topics={"orders": 6, "payments": 3}, size_bytes=100 * MB))
    adapter = KafkaAdapter(ConnectionSpec(cluster.bootstrap_servers))
    try:
        tp = TopicPartition("orders", 0)
        assert cluster.partition_view("orders", 0)[0] == [1, 2, 3]
        assert adapter.alter_reassignments({tp: [1, 2, 4]}) == {tp: None}
        cluster.advance(0.5)  # half of 100 MB at the default 100 MB/s

        sizes = adapter.replica_sizes()

        expected = set()
        for topic, count in (("orders", 6), ("payments", 3)):
            for p in range(count):
                expected |= {(TopicPartition(topic, p), b) for b in cluster.partition_view(topic, p)[0]}
        assert set(sizes) == expected  # (orders-0, 4) included: replicas = target + removing
        assert sizes[(tp, 3)] == 100 * MB
        assert sizes[(tp, 4)] == pytest.approx(50 * MB, rel=0.01)
        assert cluster.partition_view("payments", 2)[0] == [4, 5, 6]
        assert sizes[(TopicPartition("payments", 2), 5)] == 300 * MB  # size_bytes * (1 + p % 5)

        cluster.stop_broker(4)
        sizes = adapter.replica_sizes()
        assert not any(b == 4 for _, b in sizes)  # a stopped broker cannot be asked
        assert (tp, 3) in sizes
    finally:
        adapter.close()


def test_read_cluster_asks_each_broker_once_and_sizes_offline_partitions_from_a_live_replica(
    emulator: Start,
) -> None:
    """An offline partition (its only in-sync replica is down) takes the size of the largest
    replica that can still be read: here the out-of-sync one, 10 MB behind."""
    builder = ClusterBuilder(cluster_name="offline")
    for b in (1, 2, 3):
        builder.add_broker(b, rack=f"r{b}")
    builder.add_partition("t", 0, [1, 2], size_bytes=10 * MB, bytes_in_per_sec=1 * MB)
    builder.add_partition("t", 1, [3, 1], size_bytes=7 * MB)
    cluster = emulator(builder.build())
    cluster.stop_broker(2)  # falls out of the ISR of t-0 with 10 MB
    cluster.advance(10)  # t-0 grows to 20 MB on broker 1 only
    cluster.stop_broker(1)  # last ISR member of t-0: the partition goes offline
    cluster.start_broker(2)  # back, but out of sync and with no leader to copy from
    assert cluster.partition_view("t", 0) == ([1, 2], [1], -1)
    adapter = KafkaAdapter(ConnectionSpec(cluster.bootstrap_servers))
    try:
        before = {b: cluster.request_count(DESCRIBE_LOG_DIRS, b) for b in (1, 2, 3)}

        read = adapter.read_cluster()

        asked = {b: cluster.request_count(DESCRIBE_LOG_DIRS, b) - before[b] for b in (1, 2, 3)}
    finally:
        adapter.close()
    # Broker 2 leads nothing but hosts offline t-0; broker 3 leads t-1; broker 1 is down.
    assert asked == {1: 0, 2: 1, 3: 1}
    offline = read.partition(read.partition_index("t", 0))
    assert offline.leader is None
    assert offline.size_bytes == 10 * MB
    assert not read.broker(read.broker_index(1)).alive
    t1 = read.partition(read.partition_index("t", 1))
    assert (t1.leader, t1.size_bytes) == (3, 7 * MB)
