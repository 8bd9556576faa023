"""Broker-addressed config calls across a broker stop and restart (confluent-kafka over TCP).

librdkafka forgets a broker that leaves the metadata and would not reach it again after its
restart until its next periodic metadata refresh (minutes): the adapter refreshes first.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from emulator_fixtures import six_broker_model
from kafka_balancer.kafka.adapter import KafkaAdapter
from kafka_balancer.kafka.connection import ConnectionSpec
from kafka_balancer.kafka.port import LEADER_THROTTLE_RATE, KafkaUnavailableError, TopicPartition
from kafka_balancer.sandbox import EmulatedCluster

Start = Callable[..., EmulatedCluster]


def test_configs_of_a_restarted_broker_are_read_and_changed_again(emulator: Start) -> None:
    cluster = emulator(six_broker_model())
    adapter = KafkaAdapter(ConnectionSpec(cluster.bootstrap_servers, request_timeout_s=10))
    try:
        adapter.alter_broker_configs({4: {LEADER_THROTTLE_RATE: "1000"}})
        cluster.stop_broker(4)
        adapter.read_cluster(with_sizes=False)  # librdkafka's metadata now lacks broker 4

        started = time.monotonic()
        with pytest.raises(KafkaUnavailableError) as down:
            adapter.broker_configs([3, 4])
        assert time.monotonic() - started < 5  # named at once, not after the 10 s request timeout
        assert down.value.name == "BROKER_NOT_AVAILABLE"
        assert "[4]" in str(down.value)

        cluster.start_broker(4)
        started = time.monotonic()
        assert adapter.broker_configs([4])[4][LEADER_THROTTLE_RATE] == "1000"
        adapter.alter_broker_configs({4: {LEADER_THROTTLE_RATE: None}})
        assert LEADER_THROTTLE_RATE not in adapter.broker_configs([4])[4]
        assert time.monotonic() - started < 5  # librdkafka did not wait for a metadata refresh
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
