"""Emulator semantics: controller routing, KIP-455/460 behaviour, faults, growth, copy rates, clock.

Requests that must reach a particular broker use ``raw_client`` (kafka-python's protocol classes
over a socket); everything else goes through the real clients.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from emulator_fixtures import six_broker_model
from kafka.protocol.admin.topics import (
    AlterPartitionReassignmentsRequest,
    CreateTopicsRequest,
    ElectLeadersRequest,
    ListPartitionReassignmentsRequest,
)
from kafka.protocol.metadata.metadata import MetadataRequest
from kafka_balancer.kafka.adapter import KafkaAdapter
from kafka_balancer.kafka.connection import ConnectionSpec
from kafka_balancer.kafka.port import (
    FOLLOWER_THROTTLE_RATE,
    FOLLOWER_THROTTLED_REPLICAS,
    TopicPartition,
)
from kafka_balancer.model import ClusterBuilder
from kafka_balancer.sandbox import EmulatedCluster
from raw_client import send, send_raw

Start = Callable[..., EmulatedCluster]
MB = 1_000_000
NOT_CONTROLLER, ELECTION_NOT_NEEDED, UNKNOWN_TOPIC = 41, 84, 3


def _reassign_request(topic: str, partition: int, replicas: list[int] | None) -> Any:
    topic_cls = AlterPartitionReassignmentsRequest.ReassignableTopic
    return AlterPartitionReassignmentsRequest(
        timeout_ms=1000,
        topics=[
            topic_cls(
                name=topic, partitions=[topic_cls.ReassignablePartition(partition_index=partition, replicas=replicas)]
            )
        ],
    )


def test_controller_requests_answer_not_controller_elsewhere(emulator: Start) -> None:
    cluster = emulator(six_broker_model())
    other = cluster.port_of(2)  # broker 1 is the controller
    reply = send(other, _reassign_request("orders", 0, [4, 5, 6]), 0)
    assert reply.error_code == NOT_CONTROLLER
    reply = send(other, ListPartitionReassignmentsRequest(timeout_ms=1000, topics=None), 0)
    assert reply.error_code == NOT_CONTROLLER
    tps = ElectLeadersRequest.TopicPartitions
    reply = send(
        other,
        ElectLeadersRequest(election_type=0, topic_partitions=[tps(topic="orders", partitions=[0])], timeout_ms=1000),
        2,
    )
    assert reply.error_code == NOT_CONTROLLER
    topic = CreateTopicsRequest.CreatableTopic(
        name="new", num_partitions=1, replication_factor=1, assignments=[], configs=[]
    )
    reply = send(other, CreateTopicsRequest(topics=[topic], timeout_ms=1000, validate_only=False), 5)
    assert reply.topics[0].error_code == NOT_CONTROLLER
    assert cluster.partition_view("orders", 0)[0] == [1, 2, 3]  # nothing changed
    # The same reassignment sent to the controller is accepted.
    reply = send(cluster.port_of(1), _reassign_request("orders", 0, [4, 5, 6]), 0)
    assert reply.error_code == 0
    assert reply.responses[0].partitions[0].error_code == 0
    metadata = send(cluster.port_of(3), MetadataRequest(topics=None, allow_auto_topic_creation=False), 12)
    assert metadata.controller_id == 1


def test_elect_leaders_error_codes(emulator: Start) -> None:
    cluster = emulator(six_broker_model())
    tps = ElectLeadersRequest.TopicPartitions
    request = ElectLeadersRequest(
        election_type=0,
        topic_partitions=[tps(topic="orders", partitions=[0]), tps(topic="nope", partitions=[0])],
        timeout_ms=1000,
    )
    reply = send(cluster.port_of(1), request, 2)
    codes = {r.topic: r.partition_result[0].error_code for r in reply.replica_election_results}
    assert codes == {"orders": ELECTION_NOT_NEEDED, "nope": UNKNOWN_TOPIC}


def test_stopped_broker_loses_leaderships_and_isr_and_catches_up_after_restart(emulator: Start) -> None:
    builder = ClusterBuilder()
    for b in (1, 2, 3):
        builder.add_broker(b)
    builder.add_partition("t", 0, [1, 2, 3], size_bytes=10 * MB, bytes_in_per_sec=1 * MB)
    builder.add_partition("solo", 0, [1], size_bytes=MB, bytes_in_per_sec=1 * MB)
    cluster = emulator(builder.build())
    cluster.stop_broker(1)
    replicas, isr, leader = cluster.partition_view("t", 0)
    assert (replicas, sorted(isr), leader) == ([1, 2, 3], [2, 3], 2)
    assert cluster.partition_view("solo", 0) == ([1], [1], -1)  # offline: last ISR member kept
    cluster.advance(10)  # 10 MB more on the live replicas; the offline partition does not grow
    assert cluster.replica_bytes("t", 0, 1) == 10 * MB
    assert cluster.replica_bytes("t", 0, 2) == pytest.approx(20 * MB)
    assert cluster.replica_bytes("solo", 0, 1) == MB

    cluster.start_broker(1)
    assert cluster.partition_view("solo", 0) == ([1], [1], 1)  # back online
    # Broker 1 copies the missing 10 MB at 100 MB/s (plus what arrives meanwhile), then rejoins.
    took = cluster.run_until(lambda state: 1 in state.partition("t", 0).isr, timeout=5)
    assert took == pytest.approx(10 / 99, abs=0.11)
    adapter = KafkaAdapter(ConnectionSpec(cluster.bootstrap_servers))
    try:
        assert adapter.elect_preferred_leaders([TopicPartition("t", 0)]) == {TopicPartition("t", 0): None}
    finally:
        adapter.close()
    assert cluster.partition_view("t", 0)[2] == 1


def test_logs_grow_with_bytes_in_and_offsets_with_messages(emulator: Start) -> None:
    builder = ClusterBuilder()
    builder.add_broker(1)
    builder.add_broker(2)
    builder.add_partition("t", 0, [1, 2], size_bytes=1000.0, bytes_in_per_sec=500.0, messages_in_per_sec=5.0)
    builder.add_partition("t", 1, [2, 1], size_bytes=0.0)
    cluster = emulator(builder.build())
    cluster.set_rates([("t", 1, 100.0, 2.0)])
    cluster.advance(60)
    adapter = KafkaAdapter(ConnectionSpec(cluster.bootstrap_servers))
    try:
        sizes = adapter.replica_sizes()
        offsets = adapter.log_end_offsets([TopicPartition("t", 0), TopicPartition("t", 1)])
    finally:
        adapter.close()
    assert sizes[(TopicPartition("t", 0), 1)] == 1000 + 500 * 60
    assert sizes[(TopicPartition("t", 0), 2)] == 1000 + 500 * 60
    assert sizes[(TopicPartition("t", 1), 2)] == 100 * 60
    # 1000 bytes at 100 bytes/message = 10 messages at start, then 5 per second.
    assert offsets == {TopicPartition("t", 0): 10 + 5 * 60, TopicPartition("t", 1): 2 * 60}


def test_slow_broker_and_stuck_reassignment(emulator: Start) -> None:
    cluster = emulator(six_broker_model(topics={"orders": 6}, size_bytes=20 * MB))
    adapter = KafkaAdapter(ConnectionSpec(cluster.bootstrap_servers))
    try:
        cluster.slow_broker(4, 2 * MB)
        assert adapter.alter_reassignments({TopicPartition("orders", 0): [1, 2, 4]}) == {
            TopicPartition("orders", 0): None
        }
        took = cluster.run_until(lambda state: not state.reassigning, timeout=60)
        assert took == pytest.approx(10.0, rel=0.02)  # 20 MB at 2 MB/s

        tp = TopicPartition("orders", 1)
        assert adapter.alter_reassignments({tp: [2, 3, 5]}) == {tp: None}
        cluster.stick_reassignment("orders", 1)
        cluster.advance(600)
        assert tp in adapter.list_reassignments()
        assert cluster.replica_bytes("orders", 1, 5) == 0
        cluster.stick_reassignment("orders", 1, stuck=False)
        cluster.run_until(lambda state: not state.reassigning, timeout=60)
        assert adapter.list_reassignments() == {}
    finally:
        adapter.close()


def test_moves_into_one_broker_share_its_follower_throttle(emulator: Start) -> None:
    """Two 10 MB moves into broker 4 under a 1 MB/s follower throttle: each gets 0.5 MB/s, so
    both take 20 s instead of 10 s; at every tick the emulator sees two moves touching broker 4."""
    cluster = emulator(six_broker_model(topics={"orders": 6}, size_bytes=10 * MB))
    assert cluster.partition_view("orders", 0)[0] == [1, 2, 3]
    assert cluster.partition_view("orders", 5)[0] == [6, 1, 2]
    adapter = KafkaAdapter(ConnectionSpec(cluster.bootstrap_servers))
    per_broker: list[int] = []
    try:
        adapter.alter_broker_configs({4: {FOLLOWER_THROTTLE_RATE: str(MB)}})
        adapter.alter_topic_configs({"orders": {FOLLOWER_THROTTLED_REPLICAS: "0:4,5:4"}})
        result = adapter.alter_reassignments(
            {TopicPartition("orders", 0): [1, 2, 4], TopicPartition("orders", 5): [6, 1, 4]}
        )
        assert set(result.values()) == {None}
        cluster.on_tick(lambda state: per_broker.append(state.reassignments_per_broker()[4]))
        took = cluster.run_until(lambda state: not state.reassigning, timeout=60)
    finally:
        adapter.close()
    assert took == pytest.approx(20.0, rel=0.02)
    assert per_broker[:-1] == [2] * (len(per_broker) - 1)  # both finish on the same tick


def test_time_scale_runs_the_clock_faster_than_real_time(emulator: Start) -> None:
    before = time.monotonic()
    cluster = emulator(six_broker_model(), time_scale=200)
    # 20 emulated seconds take 0.1 s at x200 and 20 s at x1: the deadline lies between the two, and a
    # clock thread a busy machine delays catches up on its next tick (it advances by the real time passed).
    deadline = time.monotonic() + 15
    while (clock := cluster.state.clock) < 20:
        assert time.monotonic() < deadline, f"the clock stands at {clock:.1f} emulated seconds after 15 s"
        time.sleep(0.02)
    # ... and it never runs ahead of x200 of the real time since it started.
    assert clock <= 200 * (time.monotonic() - before)


def test_create_and_delete_topics_through_confluent(emulator: Start) -> None:
    cluster = emulator(six_broker_model())
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    futures = admin.create_topics([NewTopic("fresh", num_partitions=4, replication_factor=3)])
    futures["fresh"].result(10)
    metadata = admin.list_topics(timeout=10)
    parts = metadata.topics["fresh"].partitions
    assert sorted(parts) == [0, 1, 2, 3]
    assert all(len(p.replicas) == 3 and p.leader == p.replicas[0] for p in parts.values())
    admin.delete_topics(["fresh"])["fresh"].result(10)
    assert "fresh" not in admin.list_topics(timeout=10).topics
    del admin


def test_unknown_api_closes_the_connection(emulator: Start, caplog: pytest.LogCaptureFixture) -> None:
    import struct

    cluster = emulator(six_broker_model())
    body = struct.pack(">hhih", 999, 0, 1, 0)  # api key 999, version 0, correlation 1, empty client id
    assert send_raw(cluster.port_of(1), struct.pack(">i", len(body)) + body) == b""
    assert "unsupported API key 999" in caplog.text
