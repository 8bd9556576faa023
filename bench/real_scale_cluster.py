"""The dense cluster of bench.real_scale: its layout, how it is built, and what it holds.

Six brokers in three racks (1 and 4 in rack-a, 2 and 5 in rack-b, 3 and 6 in rack-c). Every partition
starts on brokers 1-4, as when brokers 5 and 6 have just been added: a few hundred topics of very
different sizes (log-normal partition counts, at most ``MAX_TOPIC_PARTITIONS`` each). A few dozen are
durable (replication factor 3, min.insync.replicas 2: {1,2,3} or {2,3,4}, the only rack-aware triples
of the four), the others have two replicas; the durable ones and a hundred and more of the others hold
records. Preferred leaders go to the higher broker ids, and a rolling restart of brokers 1-4 (each back
in every ISR before the next stops, as an upgrade does it) leaves leadership where the restarts pushed
it, on the lower ids: as after an upgrade without a preferred-leader election, most partitions are led
by another replica than their first.

The same seed builds the same cluster, so the two clusters of a sitting (ours and Kafka's tools) start
identical: the same topics, replicas, records and, after the same restarts, the same leaders.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from confluent_kafka.admin import AdminClient
from kafka_balancer.sandbox.real import RealCluster
from kafka_balancer.sandbox.traffic import QUIET, RecordWriter, TopicSpec, create_topics

BROKERS = 6
RACKS = 3
SKEWED = (1, 2, 3, 4)
MAX_TOPIC_PARTITIONS = 1000
# Rack-aware replica lists on brokers 1-4 (racks a, b, c, a), preferred leader (the higher id) first.
PAIRS = ((2, 1), (3, 1), (3, 2), (4, 2), (4, 3))
TRIPLES = ((3, 2, 1), (4, 3, 2))
DURABLE = {"min.insync.replicas": "2"}


@dataclass(frozen=True)
class Layout:
    topics: tuple[TopicSpec, ...]
    records: Mapping[str, int]  # records per partition of each topic that has records
    record_bytes: int

    @property
    def partitions(self) -> int:
        return sum(len(t.replicas) for t in self.topics)

    @property
    def replicas(self) -> int:
        return sum(len(r) for t in self.topics for r in t.replicas)

    @property
    def data_bytes(self) -> int:
        by_name = {t.name: len(t.replicas) for t in self.topics}
        return sum(n * by_name[t] * self.record_bytes for t, n in self.records.items())

    def with_records(self) -> list[tuple[str, int]]:
        by_name = {t.name: len(t.replicas) for t in self.topics}
        return [(t, p) for t in sorted(self.records) for p in range(by_name[t])]

    def min_isr(self) -> dict[str, int]:
        return {t.name: int(t.configs.get("min.insync.replicas", "1")) for t in self.topics}


@dataclass(frozen=True)
class LayoutOptions:
    # About 4,000 per broker once balanced over the six, inside the default maxReplicasPerBroker (4,000):
    # at 24,000 the plan must land every broker on exactly 4,000, and the rounding went past it (24,023).
    replicas: int = 23_400
    topics: int = 300
    durable_topics: int = 30  # replication factor 3, min.insync.replicas 2, with records
    record_topics: int = 150  # of the others (replication factor 2), with records
    data_bytes: int = 1_000_000_000  # written once, before replication
    record_bytes: int = 4096
    seed: int = 54


def layout(o: LayoutOptions) -> Layout:
    """Topics with log-normal partition counts: ``durable_topics`` (chosen at random) with three replicas and
    min ISR 2, the rest with two, ``record_topics`` of those and every durable one holding records
    (log-normal shares of ``data_bytes``); the replicas add up to at most ``replicas``, and nearly that."""
    rng = np.random.default_rng(o.seed)
    weight = rng.lognormal(0.0, 1.5, o.topics)
    order = rng.permutation(o.topics).tolist()
    durable = set(order[: o.durable_topics])
    with_records = durable | set(order[o.durable_topics : o.durable_topics + o.record_topics])
    rf = np.array([3 if i in durable else 2 for i in range(o.topics)])
    counts = np.clip(np.round(weight / (weight * rf).sum() * o.replicas), 1, MAX_TOPIC_PARTITIONS).astype(int)
    while int((counts * rf).sum()) > o.replicas:  # what the rounding added, off the biggest topic
        counts[int(np.argmax(counts))] -= 1
    shares = rng.lognormal(0.0, 1.5, o.topics)
    shares[[i for i in range(o.topics) if i not in with_records]] = 0.0
    topics, records = [], {}
    k = 0
    for i in range(o.topics):
        name = f"t{i:03d}-{'d' if i in durable else 'r' if i in with_records else 'm'}"
        lists = TRIPLES if i in durable else PAIRS
        replicas = tuple(lists[(k + p) % len(lists)] for p in range(int(counts[i])))
        k += int(counts[i])
        topics.append(TopicSpec(name, replicas, DURABLE if i in durable else {}))
        if i in with_records:
            per_partition = shares[i] / shares.sum() * o.data_bytes / counts[i]
            records[name] = max(1, int(per_partition // o.record_bytes))
    return Layout(tuple(topics), records, o.record_bytes)


def build(cluster: RealCluster, plan: Layout) -> dict[str, float]:
    """Create the topics (in batches), write the records, roll brokers 1-4; the seconds of each step."""
    seconds = {}
    started = time.monotonic()
    create_topics(cluster.bootstrap_servers, plan.topics, timeout_s=300)
    seconds["create"] = time.monotonic() - started
    started = time.monotonic()
    # Dense brokers writing into 11,000 partitions at acks=all acknowledge some partitions late: a record
    # waits as long as the whole write may take (with 5 minutes a run failed, MSG_TIMED_OUT).
    writer = RecordWriter(
        cluster.bootstrap_servers, record_bytes=plan.record_bytes, batch_bytes=65536, delivery_timeout_s=1800
    )
    partitions = {t.name: len(t.replicas) for t in plan.topics}
    for topic, n in sorted(plan.records.items()):
        writer.write(topic, range(partitions[topic]), n)
    writer.flush(1800)
    seconds["write"] = time.monotonic() - started
    started = time.monotonic()
    for broker in SKEWED:
        cluster.stop_broker(broker)
        cluster.start_broker(broker)
        wait_in_sync(cluster.bootstrap_servers, plan.partitions)
    seconds["roll"] = time.monotonic() - started
    return seconds


def wait_in_sync(bootstrap: str, partitions: int, timeout_s: float = 1800.0) -> None:
    """Wait until every partition has a leader and all its replicas in the ISR."""
    admin = AdminClient({"bootstrap.servers": bootstrap, **QUIET})
    deadline = time.monotonic() + timeout_s
    while True:
        views = user_partitions(admin)
        lagging = sum(1 for replicas, leader, isr in views.values() if leader < 0 or len(isr) < len(replicas))
        if len(views) == partitions and not lagging:
            return
        if time.monotonic() > deadline:
            raise SystemExit(f"{lagging} of {len(views)} partitions still out of sync after {timeout_s:g} s")
        time.sleep(2.0)


def user_partitions(admin: AdminClient) -> dict[tuple[str, int], tuple[tuple[int, ...], int, tuple[int, ...]]]:
    """(topic, partition) -> (replicas, leader, ISR) of every user partition, from one Metadata request."""
    out = {}
    for name, topic in admin.list_topics(timeout=60).topics.items():
        if name.startswith("__"):
            continue
        for index, p in topic.partitions.items():
            out[(name, index)] = (tuple(p.replicas), p.leader, tuple(p.isrs))
    return out
