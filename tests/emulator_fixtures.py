"""Fixtures to bring up the Kafka emulator (kafka_balancer.sandbox) from a ClusterModel.

    def test_something(emulator):
        cluster = emulator(six_broker_model())            # manual clock: cluster.advance(seconds)
        cluster = emulator(model, time_scale=100)          # clock thread, 100x real time
        cluster = emulator(model, sasl_users={"u": "pw"})  # SASL listeners (PLAIN, SCRAM-SHA-256/512)
        cluster = emulator(model, tls=server_ssl_context)  # TLS listeners (see tests/kafka/test_adapter_tls.py)

Every cluster started through the fixture is stopped at teardown (ports closed, threads joined).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kafka_balancer.model import ClusterBuilder, ClusterModel
from kafka_balancer.sandbox import EmulatedCluster, EmulatorOptions

RACKS = ("rack-a", "rack-b", "rack-c")


def six_broker_model(
    *,
    topics: dict[str, int] | None = None,
    replication_factor: int = 3,
    size_bytes: float = 10e6,
    brokers: int = 6,
    network_bytes_per_sec: float | None = None,
) -> ClusterModel:
    """A rack-aware cluster: ``brokers`` brokers on 3 racks, replicas spread round robin.

    Partition p of the i-th topic gets replicas starting at broker (i + p) % brokers, sizes grow with
    the partition number so that sizes are distinguishable when read back."""
    builder = ClusterBuilder(cluster_name="six-brokers")
    for b in range(1, brokers + 1):
        builder.add_broker(
            b,
            rack=RACKS[(b - 1) % len(RACKS)],
            network_in_bytes_per_sec=network_bytes_per_sec,
            network_out_bytes_per_sec=network_bytes_per_sec,
        )
    for i, (topic, count) in enumerate(sorted((topics or {"orders": 12, "payments": 6}).items())):
        builder.set_topic(topic, min_insync_replicas=2 if replication_factor >= 3 else None)
        for p in range(count):
            replicas = [1 + (i + p + k) % brokers for k in range(replication_factor)]
            builder.add_partition(topic, p, replicas, size_bytes=size_bytes * (1 + p % 5))
    return builder.build()


@pytest.fixture
def emulator() -> Iterator[Callable[..., EmulatedCluster]]:
    started: list[EmulatedCluster] = []

    def start(model: ClusterModel, *, time_scale: float = 0.0, **options: Any) -> EmulatedCluster:
        cluster = EmulatedCluster(model, EmulatorOptions(time_scale=time_scale, **options))
        cluster.open()
        started.append(cluster)
        return cluster

    yield start
    for cluster in started:
        cluster.close()
