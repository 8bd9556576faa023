"""A 30,000-partition emulated cluster read back through the adapter (issue 2, "Must show"), exactly.

How long it takes is a benchmark's figure: `.venv/bin/python -m bench.read_cluster [--partitions 30000
--brokers 24]` (docs/performance.md: 200,000 partitions in 13.4 s)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from kafka_balancer.kafka.adapter import KafkaAdapter
from kafka_balancer.kafka.connection import ConnectionSpec
from kafka_balancer.model import ClusterBuilder, ClusterModel
from kafka_balancer.sandbox import EmulatedCluster


def _large(partitions: int, brokers: int) -> ClusterModel:
    builder = ClusterBuilder(cluster_name="large")
    for b in range(1, brokers + 1):
        builder.add_broker(b, rack=f"rack-{b % 3}")
    for p in range(partitions):
        topic, index = divmod(p, 30)
        builder.add_partition(f"t{topic:04d}", index, [1 + (p + 5 * k) % brokers for k in range(3)], size_bytes=p * 3.0)
    return builder.build()


def test_30000_partitions_read_back_through_the_adapter(emulator: Callable[..., EmulatedCluster]) -> None:
    model = _large(30_000, 24)
    cluster = emulator(model)
    adapter = KafkaAdapter(ConnectionSpec(cluster.bootstrap_servers, request_timeout_s=60))
    try:
        read = adapter.read_cluster()
    finally:
        adapter.close()
    assert read.num_partitions == 30_000
    assert read.topics == model.topics
    assert np.array_equal(read.broker_ids, model.broker_ids)
    assert np.array_equal(read.replicas, model.replicas)
    assert np.array_equal(read.leader, model.leader)
    assert np.array_equal(read.isr_mask, model.isr_mask)
    assert np.array_equal(read.size_bytes, model.size_bytes)
