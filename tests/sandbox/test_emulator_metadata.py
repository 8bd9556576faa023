"""Metadata for all topics is spliced from per-topic encodings cached until a partition of the
topic changes. It must stay byte-for-byte what the generic encoder gives for the same topics."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from emulator_fixtures import six_broker_model
from kafka.protocol.metadata.metadata import MetadataRequest
from kafka_balancer.kafka.adapter import KafkaAdapter
from kafka_balancer.kafka.connection import ConnectionSpec
from kafka_balancer.kafka.port import TopicPartition
from kafka_balancer.sandbox import EmulatedCluster
from raw_client import send

Start = Callable[..., EmulatedCluster]
TOPICS = {"orders": 12, "payments": 6, "audit": 3}


def _all_topics(cluster: EmulatedCluster, version: int) -> Any:
    return send(cluster.port_of(3), MetadataRequest(topics=None, allow_auto_topic_creation=False), version)


def _by_name(cluster: EmulatedCluster, version: int) -> Any:
    named = [MetadataRequest.MetadataRequestTopic(name=t, topic_id=None) for t in sorted(TOPICS)]
    return send(cluster.port_of(3), MetadataRequest(topics=named, allow_auto_topic_creation=False), version)


def _assert_same(cluster: EmulatedCluster) -> None:
    for version in (1, 9, 12):  # v12: spliced; v1 and v9: encoded whole
        spliced, whole = _all_topics(cluster, version), _by_name(cluster, version)
        assert spliced.to_dict() == whole.to_dict()
        assert [t.name for t in spliced.topics] == sorted(TOPICS)


def test_spliced_metadata_follows_every_change(emulator: Start) -> None:
    cluster = emulator(six_broker_model(topics=TOPICS))
    _assert_same(cluster)
    adapter = KafkaAdapter(ConnectionSpec(cluster.bootstrap_servers))
    try:
        tp = TopicPartition("orders", 0)
        original = cluster.partition_view("orders", 0)[0]
        target = [b for b in range(1, 7) if b not in original]
        assert adapter.alter_reassignments({tp: target}) == {tp: None}
        _assert_same(cluster)
        moving = next(p for t in _all_topics(cluster, 12).topics if t.name == "orders" for p in t.partitions)
        assert list(moving.replica_nodes) == target + original  # target + removing, not a stale cache

        cluster.stop_broker(2)
        _assert_same(cluster)
        offline = {b for t in _all_topics(cluster, 12).topics for p in t.partitions for b in p.offline_replicas}
        assert offline == {2}

        cluster.run_until(lambda state: not state.reassigning, timeout=60)
        cluster.start_broker(2)
        cluster.advance(5)
        _assert_same(cluster)
        after = _all_topics(cluster, 12)
        orders0 = next(p for t in after.topics if t.name == "orders" for p in t.partitions if p.partition_index == 0)
        assert (list(orders0.replica_nodes), orders0.leader_id) == (target, target[0])
    finally:
        adapter.close()
