"""Broker-addressed config calls across a broker stop and restart (confluent-kafka over TCP).

librdkafka forgets a broker that leaves the metadata and would not reach it again after its
restart until its next periodic metadata refresh (minutes): the adapter refreshes first.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from bounds import NEVER_S, fails_at_once
from emulator_fixtures import six_broker_model
from kafka_balancer.kafka.adapter import KafkaAdapter
from kafka_balancer.kafka.connection import ConnectionSpec
from kafka_balancer.kafka.port import LEADER_THROTTLE_RATE, KafkaUnavailableError, TopicPartition
from kafka_balancer.sandbox import EmulatedCluster, GroupSeed, MemberSeed

Start = Callable[..., EmulatedCluster]


@fails_at_once  # librdkafka's periodic metadata refresh comes every 5 minutes
def test_configs_of_a_restarted_broker_are_read_and_changed_again(emulator: Start) -> None:
    cluster = emulator(six_broker_model())
    adapter = KafkaAdapter(ConnectionSpec(cluster.bootstrap_servers, request_timeout_s=NEVER_S))
    try:
        adapter.alter_broker_configs({4: {LEADER_THROTTLE_RATE: "1000"}})
        cluster.stop_broker(4)
        adapter.read_cluster(with_sizes=False)  # librdkafka's metadata now lacks broker 4

        with pytest.raises(KafkaUnavailableError) as down:
            adapter.broker_configs([3, 4])  # named at once, not after the request timeout
        assert down.value.name == "BROKER_NOT_AVAILABLE"
        assert "[4]" in str(down.value)

        cluster.start_broker(4)
        # Reached again at once: librdkafka did not wait for its next metadata refresh.
        assert adapter.broker_configs([4])[4][LEADER_THROTTLE_RATE] == "1000"
        adapter.alter_broker_configs({4: {LEADER_THROTTLE_RATE: None}})
        assert LEADER_THROTTLE_RATE not in adapter.broker_configs([4])[4]
    finally:
        adapter.close()


def test_kafka_python_calls_follow_restarts_and_a_new_controller(emulator: Start) -> None:
    """DescribeLogDirs reaches a restarted broker again; the reassignment APIs follow the
    controller when the old one stops (kafka-python's side of the adapter)."""
    cluster = emulator(six_broker_model(topics={"orders": 6}))
    adapter = KafkaAdapter(ConnectionSpec(cluster.bootstrap_servers, request_timeout_s=5))
    try:
        hosted_by_4 = {tp for tp, b in adapter.replica_sizes() if b == 4}
        assert hosted_by_4
        cluster.stop_broker(4)
        assert not any(b == 4 for _, b in adapter.replica_sizes())
        cluster.start_broker(4)
        assert {tp for tp, b in adapter.replica_sizes() if b == 4} == hosted_by_4

        cluster.stop_broker(1)  # the controller: broker 2 takes over
        assert adapter.describe_cluster().controller_id == 2
        tp = TopicPartition("orders", 3)  # replicas [4, 5, 6]
        assert adapter.alter_reassignments({tp: [2, 5, 6]}) == {tp: None}
        assert adapter.list_reassignments()[tp].adding == (2,)
    finally:
        adapter.close()


# librdkafka describes the cluster with Metadata.
METADATA, DESCRIBE_CONFIGS, LIST_OFFSETS, LIST_GROUPS, DESCRIBE_GROUPS = 3, 32, 2, 16, 15
INCREMENTAL_ALTER_CONFIGS = 44


def test_reads_are_sent_again_when_a_connection_drops_mid_request(emulator: Start) -> None:
    """A broker that dies while answering a read costs one more request, not a failed call."""
    cluster = emulator(six_broker_model(topics={"orders": 6}))
    member = MemberSeed("m1", "c", "/127.0.0.1", ("orders",), {"orders": [0, 1]})
    cluster.seed_group(GroupSeed("billing", members=(member,), offsets={("orders", 0): 0}))
    adapter = KafkaAdapter(ConnectionSpec(cluster.bootstrap_servers, request_timeout_s=5))
    try:
        reads: list[tuple[int, Callable[[], object]]] = [
            (METADATA, lambda: adapter.describe_cluster().controller_id),
            (DESCRIBE_CONFIGS, lambda: adapter.topic_configs(["orders"])["orders"]["min.insync.replicas"]),
            (LIST_OFFSETS, lambda: adapter.log_end_offsets([TopicPartition("orders", 0)])),
            (LIST_GROUPS, adapter.consumer_groups),
            (DESCRIBE_GROUPS, adapter.consumer_groups),
        ]
        coordinator = cluster.group_coordinator("billing")
        for api_key, read in reads:
            expected = read()
            before = cluster.request_count(api_key)
            # ListGroups goes to every broker: drop the one from the broker that has the group.
            cluster.drop_requests(api_key, broker_id=coordinator if api_key == LIST_GROUPS else None)
            assert read() == expected
            assert not +cluster.state.dropped  # the fault fired: the read survived a dropped request
            # The dropped one and the one answered (librdkafka adds Metadata requests of its own).
            assert cluster.request_count(api_key) - before >= 2
    finally:
        adapter.close()


def test_a_write_whose_connection_drops_is_not_sent_again(emulator: Start) -> None:
    """A write may have taken effect before the connection closed: the caller decides, by name."""
    cluster = emulator(six_broker_model(topics={"orders": 6}))
    adapter = KafkaAdapter(ConnectionSpec(cluster.bootstrap_servers, request_timeout_s=5))
    try:
        before = cluster.request_count(INCREMENTAL_ALTER_CONFIGS)
        cluster.drop_requests(INCREMENTAL_ALTER_CONFIGS)
        with pytest.raises(KafkaUnavailableError) as lost:
            adapter.alter_topic_configs({"orders": {"retention.ms": "1000"}})
        assert lost.value.name == "_TRANSPORT"
        assert cluster.request_count(INCREMENTAL_ALTER_CONFIGS) - before == 1
        assert adapter.topic_configs(["orders"])["orders"]["retention.ms"] != "1000"
    finally:
        adapter.close()
