"""One interface over the two Kafka clusters the tests run on, so that the same test function runs
against the emulator and against real Apache Kafka brokers (the conformance tests, issue 32).

    @pytest.mark.parametrize("kafka_target", BACKENDS, indirect=True)
    def test_x(kafka_target: KafkaTarget) -> None:
        kafka_target.create_topic("orders", [[1, 2, 3]], {"min.insync.replicas": "2"})
        kafka_target.fill("orders", 0, records=100, record_bytes=1000)
        adapter = kafka_target.adapter()  # the product's KafkaAdapter, closed at teardown
        ...

Both clusters have brokers 1-6 in racks rack-a, rack-b, rack-c (round robin), two log directories
each, and are empty at the start of a test. The emulator runs its clock in real time (time scale 1),
so that waiting for a copy to finish is the same loop on both. Only how records get into a partition differs: real
brokers take them from a real producer; the emulator, which serves no Produce API, has its log
grown by the same number of records and bytes (``fill``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import pytest
import raw_client
from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as CkTopicPartition
from kafka_balancer.kafka.adapter import KafkaAdapter
from kafka_balancer.kafka.connection import ConnectionSpec
from kafka_balancer.kafka.port import LOG_DIR_THROTTLE_RATE
from kafka_balancer.model import ClusterBuilder
from kafka_balancer.model.cluster import LogDir
from kafka_balancer.sandbox import EmulatedCluster, EmulatorOptions, GroupSeed, MemberSeed
from kafka_balancer.sandbox.real import KAFKA_VERSION, RealClusterOptions
from kafka_balancer.sandbox.traffic import QUIET, TopicSpec, create_topics
from kafka_balancer.sandbox.versions import KafkaFeatures
from real_kafka import BROKERS, LOG_DIRS, RACKS, TESTED_VERSIONS, RealClusters, RealKafka

# "real" is the run's main cluster (KAFKA_VERSION) and "emulator" the emulator as that version;
# "real-<version>" and "emulator-<version>" the same for each other version of TESTED_VERSIONS (the oldest
# by default, every fetched one with KAFKA_BALANCER_TEST_VERSIONS=all).
OLDER_VERSIONS = TESTED_VERSIONS[:-1]
BACKENDS = ("emulator", "real", *(f"{kind}-{v}" for v in OLDER_VERSIONS for kind in ("emulator", "real")))
# The emulator's log directories are each on a volume of this size (real brokers report their disk's).
VOLUME_BYTES = 100_000_000_000
T = TypeVar("T")


@dataclass(frozen=True)
class GroupMember:
    client_id: str
    topics: tuple[str, ...]


class KafkaTarget(Protocol):
    kind: str
    bootstrap_servers: str
    features: KafkaFeatures  # of the Kafka version the cluster is (or answers as)

    def rack(self, broker_id: int) -> str: ...

    def adapter(self, **spec: Any) -> KafkaAdapter: ...

    def create_topic(
        self, name: str, assignment: Sequence[Sequence[int]], configs: Mapping[str, str] | None = None
    ) -> None: ...

    def fill(self, topic: str, partition: int, *, records: int, record_bytes: int) -> None: ...

    def stop_broker(self, broker_id: int) -> None: ...

    def start_broker(self, broker_id: int) -> None: ...

    def join_group(
        self, group_id: str, members: Sequence[GroupMember], *, assignor: str, commits: Mapping[tuple[str, int], int]
    ) -> None: ...

    def set_cluster_default(self, key: str, value: str | None, effective: str) -> None: ...

    def throttle_leftovers(self) -> dict[str, dict[str, str]]: ...


def wait_until(condition: Callable[[], bool], what: str, timeout_s: float = 60.0) -> float:
    """Poll ``condition`` every 0.1 s until it holds; the seconds it took."""
    started = time.monotonic()
    while not condition():
        if time.monotonic() - started > timeout_s:
            raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}")
        time.sleep(0.1)
    return time.monotonic() - started


def converge(read: Callable[[], T], expected: T, what: str, timeout_s: float = 20.0) -> None:
    """Wait until three reads in a row give ``expected``.

    Real brokers answer DescribeConfigs from their own copy of the cluster metadata, which follows
    a write by some milliseconds: right after IncrementalAlterConfigs one broker may still give the
    old value while another gives the new one (seen in 7 of 20 reads). Tests wait for agreement."""
    started = time.monotonic()
    agreeing = 0
    got = read()
    while agreeing < 3:
        agreeing = agreeing + 1 if got == expected else 0
        if agreeing < 3:
            if time.monotonic() - started > timeout_s:
                raise AssertionError(f"{what}: expected {expected!r}, still read {got!r} after {timeout_s:g} s")
            time.sleep(0.05)
            got = read()


def no_throttle_left(throttle_leftovers: Callable[[], dict[str, dict[str, str]]]) -> None:
    """Wait until reads of every throttle config agree that none is left (``converge``): a run's last
    removals reach the brokers' copies of the metadata a moment after it ends (CI once read a run's
    throttles as they stood just before its end, though its record showed every one removed). A
    throttle really left behind stays, and fails the wait with what was read."""
    converge(throttle_leftovers, {}, "no throttle left")


def rack_of(broker_id: int) -> str:
    return RealClusterOptions(brokers=BROKERS, racks=RACKS).rack(broker_id)


@dataclass
class _Base:
    kind: str
    bootstrap_servers: str
    features: KafkaFeatures
    opened: list[KafkaAdapter] = field(default_factory=list)

    def rack(self, broker_id: int) -> str:
        return rack_of(broker_id)

    def adapter(self, **spec: Any) -> KafkaAdapter:
        adapter = KafkaAdapter(ConnectionSpec(self.bootstrap_servers, **spec))
        self.opened.append(adapter)
        return adapter

    def create_topic(
        self, name: str, assignment: Sequence[Sequence[int]], configs: Mapping[str, str] | None = None
    ) -> None:
        """CreateTopics with explicit replicas (the first is the preferred leader), through
        confluent-kafka on both clusters; waits until every partition has a leader."""
        create_topics(self.bootstrap_servers, [TopicSpec(name, tuple(map(tuple, assignment)), dict(configs or {}))])

    def set_cluster_default(self, key: str, value: str | None, effective: str) -> None:
        """A cluster-wide broker default (None deletes it); waits until brokers report ``effective``."""
        raw_client.set_cluster_default(self.bootstrap_servers, key, value)
        adapter = self.adapter()
        converge(lambda: adapter.broker_configs([1])[1].get(key), effective, f"the cluster default {key}")

    def close(self) -> None:
        for adapter in self.opened:
            adapter.close()


class EmulatedTarget(_Base):
    def __init__(self, version: str | None = None) -> None:
        builder = ClusterBuilder(cluster_name="conformance")
        for b in range(1, BROKERS + 1):
            # Two log directories each, as the real cluster's brokers have.
            dirs = tuple(LogDir(f"/var/lib/kafka/broker-{b}/data-{k}") for k in range(LOG_DIRS))
            builder.add_broker(b, rack=rack_of(b), log_dirs=dirs, disk_bytes=VOLUME_BYTES * LOG_DIRS)
        self.cluster = EmulatedCluster(builder.build(), EmulatorOptions(time_scale=1.0, kafka_version=version))
        self.cluster.open()
        super().__init__("emulator", self.cluster.bootstrap_servers, KafkaFeatures(version))

    def fill(self, topic: str, partition: int, *, records: int, record_bytes: int) -> None:
        with self.cluster.state.lock:
            part = self.cluster.state.partition(topic, partition)
            assert part is not None, f"no partition {topic}-{partition}"
            self.cluster.state.size[part.row] += records * record_bytes
            self.cluster.state.log_end[part.row] += records

    def stop_broker(self, broker_id: int) -> None:
        self.cluster.stop_broker(broker_id)

    def start_broker(self, broker_id: int) -> None:
        self.cluster.start_broker(broker_id)

    def join_group(
        self, group_id: str, members: Sequence[GroupMember], *, assignor: str, commits: Mapping[tuple[str, int], int]
    ) -> None:
        """The group as the real assignor leaves it: partitions of each topic dealt round robin."""
        owned: dict[int, dict[str, list[int]]] = {i: {} for i in range(len(members))}
        with self.cluster.state.lock:
            for topic in sorted({t for m in members for t in m.topics}):
                takers = [i for i, m in enumerate(members) if topic in m.topics]
                for p in range(len(self.cluster.state.topics[topic].partitions)):
                    owned[takers[p % len(takers)]].setdefault(topic, []).append(p)
        seeds = tuple(
            MemberSeed(f"{m.client_id}-member", m.client_id, "/127.0.0.1", m.topics, owned[i])
            for i, m in enumerate(members)
        )
        self.cluster.seed_group(GroupSeed(group_id, seeds, assignor=assignor, offsets=dict(commits)))

    def throttle_leftovers(self) -> dict[str, dict[str, str]]:
        """Every throttle config set on a broker or a topic, as DescribeConfigs would list it."""
        out: dict[str, dict[str, str]] = {}
        with self.cluster.state.lock:
            for b, broker in self.cluster.state.brokers.items():
                found = {k: v for k, v in broker.configs.items() if "throttled" in k or k == LOG_DIR_THROTTLE_RATE}
                if found:
                    out[f"broker {b}"] = found
            for name, topic in self.cluster.state.topics.items():
                found = {k: v for k, v in topic.configs.items() if "throttled" in k}
                if found:
                    out[f"topic {name}"] = found
        return out

    def close(self) -> None:
        super().close()
        self.cluster.close()


class RealTarget(_Base):
    def __init__(self, kafka: RealKafka) -> None:
        super().__init__("real", kafka.bootstrap_servers, KafkaFeatures(kafka.cluster.version))
        self.kafka = kafka
        self.consumers: list[Consumer] = []

    def fill(self, topic: str, partition: int, *, records: int, record_bytes: int) -> None:
        self.kafka.produce(topic, partitions=[partition], records_per_partition=records, record_bytes=record_bytes)

    def stop_broker(self, broker_id: int) -> None:
        self.kafka.stop_broker(broker_id)

    def start_broker(self, broker_id: int) -> None:
        self.kafka.start_broker(broker_id)

    def join_group(
        self, group_id: str, members: Sequence[GroupMember], *, assignor: str, commits: Mapping[tuple[str, int], int]
    ) -> None:
        """Real consumers join (and stay in) the group; the first commits ``commits``."""
        for m in members:
            consumer = Consumer(
                {
                    "bootstrap.servers": self.bootstrap_servers,
                    "group.id": group_id,
                    "client.id": m.client_id,
                    "partition.assignment.strategy": assignor,
                    "enable.auto.commit": False,
                    "auto.offset.reset": "earliest",
                    **QUIET,
                }
            )
            consumer.subscribe(list(m.topics))
            self.consumers.append(consumer)
        wanted = {t for m in members for t in m.topics}
        partitions = sum(len(self.kafka.admin.list_topics(t).topics[t].partitions) for t in wanted)

        def settled() -> bool:
            for c in self.consumers:
                c.poll(0.1)
            owned = [c.assignment() for c in self.consumers]
            return all(owned) and sum(len(o) for o in owned) == partitions

        wait_until(settled, f"group {group_id} to assign {partitions} partitions", timeout_s=60)
        if commits:
            offsets = [CkTopicPartition(t, p, o) for (t, p), o in sorted(commits.items())]
            self.consumers[0].commit(offsets=offsets, asynchronous=False)

    def throttle_leftovers(self) -> dict[str, dict[str, str]]:
        return self.kafka.throttle_leftovers()

    def close(self) -> None:
        for consumer in self.consumers:
            consumer.close()
        super().close()


@pytest.fixture
def kafka_target(request: pytest.FixtureRequest) -> Iterator[KafkaTarget]:
    """Parametrise with ``indirect=True`` over BACKENDS: an empty cluster of that kind."""
    target: EmulatedTarget | RealTarget
    older: RealKafka | None = None  # another version's cluster, reset here as real_kafka does for the main one
    if request.param.startswith("emulator"):
        target = EmulatedTarget(request.param.removeprefix("emulator").removeprefix("-") or KAFKA_VERSION)
    elif request.param == "real":
        target = RealTarget(request.getfixturevalue("real_kafka"))
    else:
        clusters: RealClusters = request.getfixturevalue("real_clusters")
        older = RealKafka(clusters.of(request.param.removeprefix("real-")))
        older.reset()
        target = RealTarget(older)
    try:
        yield target
    finally:
        target.close()
        if older is not None:
            older.close()
