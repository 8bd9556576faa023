"""Fixtures for executor tests: real clients connected to the emulator (the emulator's own count of
reassignment submissions is tests/submissions.py's). Helpers live in harness.py."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from kafka_balancer.kafka.adapter import KafkaAdapter
from kafka_balancer.kafka.connection import ConnectionSpec
from kafka_balancer.sandbox import EmulatedCluster


@pytest.fixture
def connect() -> Iterator[Callable[[EmulatedCluster], KafkaAdapter]]:
    opened: list[KafkaAdapter] = []

    def open_port(cluster: EmulatedCluster) -> KafkaAdapter:
        port = KafkaAdapter(ConnectionSpec(bootstrap_servers=cluster.bootstrap_servers, request_timeout_s=3))
        opened.append(port)
        return port

    yield open_port
    for port in opened:
        port.close()
