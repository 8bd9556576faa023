"""Fixtures for executor tests: real clients connected to the emulator, and the emulator's own
count of reassignment submissions per partition. Helpers live in harness.py."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator

import pytest
from controller.tenants import served  # noqa: F401 (what reached the controller, with the per-broker maxima)
from kafka_balancer.kafka.adapter import KafkaAdapter
from kafka_balancer.kafka.connection import ConnectionSpec
from kafka_balancer.sandbox import EmulatedCluster, operations
from kafka_balancer.sandbox.state import ClusterState, PartitionState


class Submissions(Counter[tuple[str, int]]):
    """AlterPartitionReassignments entries the emulator's controller served, per (topic, partition);
    cancellations are counted in ``cancels``, and the ISR each partition had when a move was
    submitted in ``isr_at_submit``."""

    def __init__(self) -> None:
        super().__init__()
        self.cancels: Counter[tuple[str, int]] = Counter()
        self.isr_at_submit: dict[tuple[str, int], list[list[int]]] = {}


@pytest.fixture
def submissions(monkeypatch: pytest.MonkeyPatch) -> Submissions:
    counts = Submissions()
    original = operations.reassign

    def counting(state: ClusterState, part: PartitionState, target: list[int] | None) -> str | None:
        key = (part.topic, part.index)
        if target is None:
            counts.cancels[key] += 1
        else:
            counts[key] += 1
            counts.isr_at_submit.setdefault(key, []).append(list(part.isr))
        return original(state, part, target)

    monkeypatch.setattr(operations, "reassign", counting)
    return counts


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
