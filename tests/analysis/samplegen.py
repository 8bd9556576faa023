"""Synthetic samples with known rates, for the analysis tests (the emulator test uses real sampling)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from kafka_balancer.analysis.samples import BrokerSample, PartitionSample, Sample

T0 = datetime(2026, 11, 21, 10, 0, tzinfo=UTC)


@dataclass(frozen=True)
class TopicSpec:
    name: str
    partitions: int
    message_size: int  # bytes per message
    # messages per second of partition p during the interval that ends at sample i
    rate: Callable[[int, int], float]
    replicas: Callable[[int], Sequence[int]] = lambda p: (1 + p % 3, 1 + (p + 1) % 3)
    consumer_groups: int = 1  # each consumes everything


def generate(
    topics: Sequence[TopicSpec],
    *,
    count: int,
    interval_s: int = 60,
    brokers: Sequence[int] = (1, 2, 3),
    cluster: str = "c1",
    start: datetime = T0,
    cpu_cores: Callable[[int, int], float] | None = None,
    at_s: Sequence[float] | None = None,
) -> list[Sample]:
    """``count`` samples ``interval_s`` apart (or at ``at_s`` seconds after ``start``); offsets and
    sizes integrate the given rates exactly."""
    instants = list(at_s) if at_s is not None else [float(i * interval_s) for i in range(count)]
    assert len(instants) == count, f"{len(instants)} instants for {count} samples"
    offsets: dict[tuple[str, int], float] = {}
    cpu: dict[int, float] = dict.fromkeys(brokers, 0.0)
    samples = []
    for i in range(count):
        ts = start + timedelta(seconds=instants[i])
        seconds = instants[i] - instants[i - 1] if i > 0 else 0.0
        rows = []
        for topic in topics:
            for p in range(topic.partitions):
                key = (topic.name, p)
                if i > 0:
                    offsets[key] = offsets.get(key, 1000.0) + topic.rate(p, i) * seconds
                offset = int(offsets.setdefault(key, 1000.0))
                size = offset * topic.message_size
                replicas = tuple(topic.replicas(p))
                rows.append(
                    PartitionSample(
                        topic=topic.name,
                        partition=p,
                        leader=replicas[0],
                        replicas=replicas,
                        isr=replicas,
                        replica_sizes=tuple(size for _ in replicas),
                        log_end_offset=offset,
                        consumer_offsets_sum=offset * topic.consumer_groups,
                        min_insync_replicas=1,
                    )
                )
        if cpu_cores is not None and i > 0:
            for b in brokers:
                cpu[b] += cpu_cores(b, i) * seconds
        broker_rows = [
            BrokerSample(b, rack=f"r{b}", alive=True, cpu_seconds_total=cpu[b] if cpu_cores else None) for b in brokers
        ]
        samples.append(Sample(cluster=cluster, ts=ts, partitions=rows, brokers=broker_rows))
    return samples
