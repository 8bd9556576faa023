"""Topics and traffic for a local cluster, as client applications make them: CreateTopics with explicit
replicas, and producers writing keyed records (acks=all) at set rates. Used by the demo, the tests
and the benchmarks against real brokers (and, for topics, the emulator).

Every record's value is derived from its key (``payload``), so a reader can tell a lost, reordered or
changed record from the records alone.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

MB = 1_000_000
QUIET: Mapping[str, Any] = {"log_level": 3}  # librdkafka: errors only


class TrafficError(RuntimeError):
    """Topics could not be created, or records not delivered; the message says which."""


@dataclass(frozen=True)
class TopicSpec:
    name: str
    replicas: tuple[tuple[int, ...], ...]  # per partition; the first is the preferred leader
    configs: Mapping[str, str] = field(default_factory=dict)


# Partitions per CreateTopics request. The controller creates a request's partitions in one batch of
# metadata records and every broker then opens their logs; a dense cluster (thousands of partitions per
# broker) created in one request keeps the brokers busy past any request timeout (12,000 partitions on
# 6 brokers of this 2-core machine: ~1 min), in batches each request answers in seconds.
CREATE_BATCH_PARTITIONS = 2000


def create_topics(
    bootstrap: str,
    topics: Sequence[TopicSpec],
    *,
    timeout_s: float = 30.0,
    batch_partitions: int = CREATE_BATCH_PARTITIONS,
) -> None:
    """CreateTopics with the given replicas (explicit, so ``num.partitions`` plays no part), in requests
    of at most ``batch_partitions`` partitions (a larger topic goes alone), waiting after each until
    every partition created has a leader; ``timeout_s`` applies to each request."""
    admin = AdminClient({"bootstrap.servers": bootstrap, **QUIET})
    for batch in _batches(topics, batch_partitions):
        _create(admin, batch, timeout_s)


def _batches(topics: Sequence[TopicSpec], limit: int) -> list[list[TopicSpec]]:
    out: list[list[TopicSpec]] = [[]]
    size = 0
    for topic in topics:
        if out[-1] and size + len(topic.replicas) > limit:
            out.append([])
            size = 0
        out[-1].append(topic)
        size += len(topic.replicas)
    return [b for b in out if b]


def _create(admin: AdminClient, topics: Sequence[TopicSpec], timeout_s: float) -> None:
    new = [
        NewTopic(t.name, len(t.replicas), replica_assignment=[list(r) for r in t.replicas], config=dict(t.configs))
        for t in topics
    ]
    for name, future in admin.create_topics(new, request_timeout=timeout_s).items():
        try:
            future.result(timeout=timeout_s)
        except KafkaException as err:
            raise TrafficError(f"creating topic {name}: {err.args[0].str() if err.args else err}") from None
    deadline = time.monotonic() + timeout_s
    while not _all_led(admin, topics):
        if time.monotonic() > deadline:
            shown = [t.name for t in topics[:5]] + (["..."] if len(topics) > 5 else [])
            raise TrafficError(f"topics {shown} got no leaders within {timeout_s:g} s")
        time.sleep(0.1)


def _all_led(admin: AdminClient, topics: Sequence[TopicSpec]) -> bool:
    meta = admin.list_topics(timeout=10).topics
    for t in topics:
        found = meta.get(t.name)
        if found is None or found.error is not None or len(found.partitions) != len(t.replicas):
            return False
        if any(p.leader < 0 for p in found.partitions.values()):
            return False
    return True


def payload(key: bytes, size: int) -> bytes:
    """The value of the record with ``key``: ``size`` bytes derived from the key."""
    seed = hashlib.sha256(key).digest()
    return (seed * (size // len(seed) + 1))[:size]


# What a RecordWriter queues at most: enough for any rate the sandbox writes at. It bounds how long a
# record waits to be sent, not how long the brokers take to acknowledge it: six dense brokers on a loaded
# machine took longer than 5 minutes for some records even so (bench.real_scale: delivery_timeout_s).
QUEUED_BYTES = 64 << 20


class RecordWriter:
    """A producer of keyed records: acks=all, idempotent, failures collected and raised on flush.

    ``acked`` counts, per (topic, partition), the key and value bytes the brokers acknowledged: what
    reached the log, which lags what was sent while brokers fall behind."""

    def __init__(
        self,
        bootstrap: str,
        *,
        record_bytes: int,
        client_id: str = "kafka-balancer-traffic",
        batch_bytes: int = 512 * 1024,
        queued_bytes: int = QUEUED_BYTES,
        delivery_timeout_s: float = 300.0,
    ) -> None:
        """``queued_bytes``: at most this much waits in the producer's queue (``send`` waits for room):
        librdkafka's default queue takes 100,000 records at once (400 MB of 4 KiB records), which slow
        brokers do not take within the delivery timeout. ``delivery_timeout_s``: how long a record may
        wait for the brokers' acknowledgement before it counts as failed (librdkafka's 5 minutes)."""
        self.record_bytes = record_bytes
        self.producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "acks": "all",
                "enable.idempotence": True,
                "linger.ms": 20,
                # A follower's fetch ends with the part of a batch that did not fit (1 MiB per
                # partition), which the replication throttle counts: batches near 1 MiB waste it.
                "batch.size": batch_bytes,
                "compression.type": "none",
                "client.id": client_id,
                "queue.buffering.max.kbytes": max(1, queued_bytes // 1024),
                "message.timeout.ms": round(delivery_timeout_s * 1000),
                **QUIET,
            }
        )
        self.failures: list[str] = []
        self.acked: dict[tuple[str, int], int] = {}

    def send(self, topic: str, partition: int, key: bytes) -> None:
        value = payload(key, self.record_bytes)
        while True:
            try:
                self.producer.produce(topic, value=value, key=key, partition=partition, on_delivery=self._delivered)
                break
            except BufferError:
                self.producer.poll(0.05)
        self.producer.poll(0)

    def write(self, topic: str, partitions: Sequence[int], records_per_partition: int) -> None:
        """``records_per_partition`` records into each partition, keys ``<topic>-<partition>-<i>``."""
        for p in partitions:
            for i in range(records_per_partition):
                self.send(topic, p, f"{topic}-{p}-{i}".encode())

    def flush(self, timeout_s: float = 120.0) -> None:
        left = self.producer.flush(timeout_s)
        if left or self.failures:
            raise TrafficError(f"{left} records not delivered; errors: {self.failures[:3]}")

    def _delivered(self, err: Any, msg: Any) -> None:
        if err is not None:
            self.failures.append(str(err))
            return
        where = (msg.topic(), msg.partition())
        self.acked[where] = self.acked.get(where, 0) + len(msg) + len(msg.key() or b"")


class SteadyTraffic:
    """A thread writing to each partition at its rate until the context ends. ``rates`` gives a
    topic's bytes per second spread evenly over its partitions (``per_partition`` sets each one).
    Keys continue after those of the initial records."""

    def __init__(self, writer: RecordWriter, rates: Mapping[str, tuple[int, float]]) -> None:
        self.writer = writer
        # (topic, partition) -> bytes per second
        self.rates = {(t, p): rate / partitions for t, (partitions, rate) in rates.items() for p in range(partitions)}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="steady-traffic", daemon=True)

    @classmethod
    def per_partition(cls, writer: RecordWriter, rates: Mapping[tuple[str, int], float]) -> SteadyTraffic:
        """Skewed traffic: bytes per second for each (topic, partition)."""
        traffic = cls(writer, {})
        traffic.rates = dict(rates)
        return traffic

    def _run(self) -> None:
        started = time.monotonic()
        sent = dict.fromkeys(self.rates, 0)
        while not self.stop.wait(0.05):
            elapsed = time.monotonic() - started
            due = {key: int(elapsed * rate / self.writer.record_bytes) for key, rate in self.rates.items()}
            # One record per partition in turn: a thread a busy machine starves catches all partitions up
            # together. Partition by partition, the first one's backlog took the whole turn (a run sent
            # nothing into heavy-2 for 45 s), and a stop waited for the burst to end.
            behind = [key for key in self.rates if sent[key] < due[key]]
            while behind:
                for topic, p in behind:
                    if self.stop.is_set():
                        return
                    self.writer.send(topic, p, f"{topic}-{p}-live-{sent[topic, p]}".encode())
                    sent[topic, p] += 1
                behind = [key for key in behind if sent[key] < due[key]]

    def __enter__(self) -> SteadyTraffic:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=30)
        self.writer.producer.flush(10)


# Partitions a reader assigns at once: librdkafka fetches from every assigned partition's leader together.
READ_GROUP = 500


def read_digests(
    bootstrap: str, partitions: Sequence[tuple[str, int]], *, timeout_s: float = 600.0
) -> dict[tuple[str, int], tuple[int, str]]:
    """(topic, partition) -> (log-end offset, SHA-256 over every record's offset, key and value in order),
    reading each partition from offset 0 (tiered segments too: the broker serves them from remote storage).
    A partition whose log no longer starts at 0 fails: records were deleted."""
    out: dict[tuple[str, int], tuple[int, str]] = {}
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"read-back-{time.monotonic_ns()}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "fetch.max.bytes": 16 * 1024 * 1024,
            **QUIET,
        }
    )
    try:
        for start in range(0, len(partitions), READ_GROUP):
            out.update(_read_group(consumer, partitions[start : start + READ_GROUP], timeout_s))
    finally:
        consumer.close()
    return out


# librdkafka's names of the answers a partition gives while its leadership moves.
_MOVING = frozenset({"NOT_LEADER_FOR_PARTITION", "LEADER_NOT_AVAILABLE", "FENCED_LEADER_EPOCH", "_TRANSPORT"})


def _watermarks(consumer: Consumer, topic: str, partition: int, timeout_s: float) -> tuple[int, int]:
    """The partition's low and high watermarks, asked again while leadership moves: librdkafka sends the
    request to the leader of its cached metadata, refreshed after the broker answers NOT_LEADER."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=30)
            return int(low), int(high)
        except KafkaException as err:
            if time.monotonic() > deadline or not (err.args[0].retriable() or err.args[0].name() in _MOVING):
                raise TrafficError(f"watermarks of {topic}-{partition}: {err.args[0].str()}") from None
            time.sleep(0.5)


def _read_group(
    consumer: Consumer, partitions: Sequence[tuple[str, int]], timeout_s: float
) -> dict[tuple[str, int], tuple[int, str]]:
    ends: dict[tuple[str, int], int] = {}
    for topic, p in partitions:
        low, high = _watermarks(consumer, topic, p, timeout_s)
        if low != 0:
            raise TrafficError(f"{topic}-{p} starts at offset {low}: records were deleted")
        ends[(topic, p)] = high
    digests = {key: hashlib.sha256() for key in partitions}
    expected = dict.fromkeys(partitions, 0)
    pending = {key for key, end in ends.items() if end > 0}
    consumer.assign([TopicPartition(t, p, 0) for t, p in sorted(pending)])
    deadline = time.monotonic() + timeout_s
    while pending:
        if time.monotonic() > deadline:
            stalled = sorted(pending)[:3]
            raise TrafficError(f"reading {len(pending)} partitions stalled (e.g. {stalled}) after {timeout_s:g} s")
        for msg in consumer.consume(num_messages=1000, timeout=1.0):
            if msg.error() is not None:
                raise TrafficError(f"reading {msg.topic()}-{msg.partition()}: {msg.error()}")
            key = (str(msg.topic()), int(msg.partition() or 0))
            if msg.offset() != expected[key]:
                raise TrafficError(f"{key[0]}-{key[1]}: offset {msg.offset()} where {expected[key]} was due")
            digests[key].update(f"{msg.offset()}:".encode())
            digests[key].update(msg.key() or b"")
            digests[key].update(msg.value() or b"")
            expected[key] += 1
            if expected[key] >= ends[key]:
                pending.discard(key)
    consumer.unassign()
    return {key: (ends[key], digests[key].hexdigest()) for key in partitions}
