"""The real cluster the tests run on: brokers, racks, log directories, records read back."""

from __future__ import annotations

import time

from kafka_balancer.kafka.adapter import KafkaAdapter
from kafka_balancer.kafka.connection import ConnectionSpec
from kafka_balancer.kafka.port import TopicPartition
from real_kafka import RealKafka


def test_the_real_cluster_has_its_brokers_racks_and_records(real_kafka: RealKafka) -> None:
    real_kafka.create_topic("smoke", [[1, 2, 3], [4, 5, 6]], {"min.insync.replicas": "2"})
    written = real_kafka.produce("smoke", partitions=[0, 1], records_per_partition=200, record_bytes=1000)
    assert {p: w.end_offset for p, w in written.items()} == {0: 200, 1: 200}
    adapter = KafkaAdapter(ConnectionSpec(real_kafka.bootstrap_servers))
    try:
        description = adapter.describe_cluster()
        assert [(b.id, b.rack) for b in description.brokers] == [(b, real_kafka.rack(b)) for b in range(1, 7)]
        model = adapter.read_cluster()
        part = model.partition(model.partition_index("smoke", 1))
        assert part.replicas == (4, 5, 6)
        assert part.leader == 4
        assert 200 * 1000 <= part.size_bytes < 200 * 1000 * 1.1
        sizes = adapter.replica_sizes()
        assert sizes[(TopicPartition("smoke", 0), 3)] == model.partition(model.partition_index("smoke", 0)).size_bytes
    finally:
        adapter.close()
    assert real_kafka.read_back("smoke", [0, 1]) == written


def test_kafka_leaves_a_non_preferred_leader_where_it_is(real_kafka: RealKafka) -> None:
    """Leadership is the balancer's to decide: Kafka's controller does not elect preferred leaders of its
    own (auto.leader.rebalance.enable=false on the controller, which runs the check in KRaft)."""
    real_kafka.create_topic("led", [[1, 2]])
    assert real_kafka.led_by_first_replicas(1)[("led", 0)].leader == 1
    adapter = KafkaAdapter(ConnectionSpec(real_kafka.bootstrap_servers))
    try:  # the same replicas reordered: 2 becomes the preferred leader and 1 keeps leading
        assert adapter.alter_reassignments({TopicPartition("led", 0): [2, 1]}) == {TopicPartition("led", 0): None}
        real_kafka.wait_until(lambda: real_kafka.partitions()[("led", 0)].replicas == (2, 1), "the new order")
        # The fixture's controller checks the imbalance every second (CONTROLLER_CONFIGS): five checks.
        time.sleep(5)
        assert real_kafka.partitions()[("led", 0)].leader == 1
    finally:
        adapter.close()
