"""The sampler: on an interval, read the cluster through the Kafka port (and optionally Prometheus) and
append one sample to the store.

A sample records *state* and *cumulative counters* only (offsets, sizes, committed offsets, Prometheus
totals); rates are the Spark job's business. That keeps the sampler stateless: a restart, a missed
round or a second sampler writing the same store never corrupts a rate, it only widens an interval.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from kafka_balancer.analysis.prometheus import PrometheusClient, PromSample
from kafka_balancer.analysis.samples import BrokerSample, PartitionSample, Sample
from kafka_balancer.analysis.store import SampleStore
from kafka_balancer.interrupts import interruption
from kafka_balancer.kafka.port import KafkaError, KafkaPort, TopicPartition
from kafka_balancer.model import NO_BROKER

log = logging.getLogger(__name__)


def _utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class SamplerOptions:
    cluster: str
    interval_seconds: float = 60.0
    consumer_offsets: bool = True  # committed offsets give bytes out without Prometheus
    retention: timedelta | None = timedelta(days=7)

    def __post_init__(self) -> None:
        if self.interval_seconds <= 0:
            raise ValueError(f"sampler: field 'intervalSeconds' must be > 0, got {self.interval_seconds!r}")


class Sampler:
    def __init__(
        self,
        port: KafkaPort,
        store: SampleStore,
        options: SamplerOptions,
        *,
        prometheus: PrometheusClient | None = None,
        clock: Callable[[], datetime] = _utc_now,
    ):
        self.port = port
        self.store = store
        self.options = options
        self.prometheus = prometheus
        self.clock = clock

    def take(self) -> Sample:
        """Read one sample (without storing it)."""
        model = self.port.read_cluster(with_sizes=False)
        partitions = [
            TopicPartition(model.topic_name(p), int(model.partition_id[p])) for p in range(model.num_partitions)
        ]
        ts, offsets, sizes = self._offsets_and_sizes(partitions)
        consumed: dict[TopicPartition, int] = {}
        if self.options.consumer_offsets:
            for group in self.port.consumer_groups():
                for tp, offset in group.committed.items():
                    consumed[tp] = consumed.get(tp, 0) + offset
        prom = self.prometheus.sample(ts) if self.prometheus is not None else PromSample()
        settings = {s.name: s for s in model.topic_settings()}

        rows = []
        for p, tp in enumerate(partitions):
            replicas = model.replica_ids(p)
            leader = model.leader_id(p)
            replica_sizes = tuple(
                sizes.get((tp, b), _as_int(prom.log_size.get((tp.topic, tp.partition, b)))) for b in replicas
            )
            topic = settings.get(tp.topic)
            rows.append(
                PartitionSample(
                    topic=tp.topic,
                    partition=tp.partition,
                    leader=None if leader is None or leader == NO_BROKER else leader,
                    replicas=replicas,
                    isr=model.isr_ids(p),
                    replica_sizes=replica_sizes,
                    log_end_offset=offsets.get(tp),
                    # A partition no group consumes has consumed nothing (not "unknown").
                    consumer_offsets_sum=consumed.get(tp, 0) if self.options.consumer_offsets else None,
                    topic_bytes_in_total=prom.topic_bytes_in.get(tp.topic),
                    topic_messages_in_total=prom.topic_messages_in.get(tp.topic),
                    topic_bytes_out_total=prom.topic_bytes_out.get(tp.topic),
                    min_insync_replicas=topic.min_insync_replicas if topic else None,
                    unclean_leader_election=topic.unclean_leader_election if topic else None,
                )
            )
        brokers = [
            BrokerSample(
                broker_id=b.id,
                rack=b.rack,
                alive=b.alive,
                cpu_seconds_total=prom.broker_cpu_seconds.get(b.id),
                bytes_in_total=prom.broker_bytes_in.get(b.id),
                bytes_out_total=prom.broker_bytes_out.get(b.id),
            )
            for b in model.brokers()
        ]
        return Sample(cluster=self.options.cluster, ts=ts, partitions=rows, brokers=brokers)

    def _offsets_and_sizes(
        self, partitions: list[TopicPartition]
    ) -> tuple[datetime, dict[TopicPartition, int], dict[tuple[TopicPartition, int], int]]:
        """The log-end offsets at one instant and the replica sizes read at about that instant.

        Sizes (DescribeLogDirs) and offsets (ListOffsets) cannot be read at once, and the message size is
        the size growth over the offset growth: read one after the other, a second of difference between
        the two at either end of a 35-s range made a topic's 4 KB records 3,984 B in one run and 4,232 B
        in another on a busy machine. So the offsets are read just before and just after the sizes, and
        the sample holds their mean, at the middle of the two reads (where the sizes were read)."""
        before_ts = self.clock()
        before = self.port.log_end_offsets(partitions)
        sizes = self.port.replica_sizes()
        after = self.port.log_end_offsets(partitions)
        after_ts = self.clock()
        offsets = {tp: (before[tp] + after[tp]) // 2 for tp in before.keys() & after.keys()}
        return before_ts + (after_ts - before_ts) / 2, offsets, sizes

    def sample_once(self) -> Sample:
        """Take one sample, append it to the store and apply retention."""
        sample = self.take()
        self.store.append(sample)
        if self.options.retention is not None:
            self.store.apply_retention(self.options.cluster, self.options.retention, now=sample.ts)
        return sample

    def run(
        self,
        count: int | None = None,
        *,
        stop: threading.Event | None = None,
        sleep: Callable[[float], object] | None = None,
    ) -> int:
        """Run ``count`` sampling rounds (forever when None) every ``interval_seconds``, or until ``stop``.

        Returns how many rounds succeeded. The schedule is kept on the monotonic clock, so a slow round
        shortens the next wait instead of drifting; a failed round is logged and the next one runs at
        the next tick.
        """
        stop = stop or threading.Event()
        wait_for: Callable[[float], object] = sleep or stop.wait
        rounds = succeeded = 0
        next_at = time.monotonic()
        while not stop.is_set() and (count is None or rounds < count):
            rounds += 1
            try:
                self.sample_once()
                succeeded += 1
            except KafkaError as err:  # the cluster is unreachable or refused: its reason says all
                log.error("sampling round %d failed: %s; the next round runs at the next interval", rounds, err)
            except Exception as err:
                if (interrupt := interruption(err)) is not None:  # Ctrl-C inside a C call: stop, as on Ctrl-C
                    raise interrupt from None
                log.exception("sampling round %d failed; the next round runs at the next interval", rounds)
            if count is not None and rounds >= count:
                break
            next_at += self.options.interval_seconds
            wait_for(max(0.0, next_at - time.monotonic()))
        return succeeded


def _as_int(value: float | None) -> int | None:
    return None if value is None else int(value)
