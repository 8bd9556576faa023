"""Real Apache Kafka brokers for the tests: one KRaft cluster per Kafka version per test run (issues 32, 52).

    def test_something(real_kafka):                 # the run's cluster, reset for this test
        real_kafka.create_topic("orders", [[1, 2, 3], [2, 3, 4]], {"min.insync.replicas": "2"})
        written = real_kafka.produce("orders", records_per_partition=1000, record_bytes=1024)
        ...
        assert real_kafka.read_back("orders") == written  # every record still there, same checksums

Kafka versions: the main cluster runs KAFKA_VERSION (sandbox.real's default, the newest of the Makefile's
KAFKA_VERSIONS whose jars carry LocalTieredStorage). The tests that hold the product to each version take
their versions from TESTED_VERSIONS: the oldest fetched and KAFKA_VERSION by default, every fetched version
with KAFKA_BALANCER_TEST_VERSIONS=all (``make test-kafka-versions``).

The cluster is ``kafka-balancer sandbox --real``'s own code (kafka_balancer.sandbox.real): 6 brokers
(node ids 1-6) in 3 racks (rack-a, rack-b, rack-c round robin), 2 log directories each, remote storage
(KIP-405, LocalTieredStorage) for the topics that enable it, started on
first use and stopped at the end of the session. Before each test ``reset`` brings it back to empty:
every broker running, no topics, no consumer groups, no throttle configs, so a test may stop and kill
brokers. The jars come from ``make kafka``; when Java or the jars are missing the tests fail with the
reason, never skip.

One cluster serves the whole run: every test that uses it is in the xdist group ``real-kafka``
(tests/conftest.py puts it there), so pytest-xdist runs them all, one after the other, on one worker,
the only one that starts the cluster. The broker version is the ``kafka_version`` fixture (the default
below); a test parametrised over versions (``@pytest.mark.parametrize("kafka_version", [...],
indirect=True)``) gets one cluster per version, each in a group of its own (``real-kafka-<version>``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import pytest
import raw_client
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._config import AlterConfigOpType, ConfigEntry, ConfigResource
from kafka_balancer.kafka.port import (
    CORDONED_LOG_DIRS,
    FOLLOWER_THROTTLE_RATE,
    LEADER_THROTTLE_RATE,
    LOG_DIR_THROTTLE_RATE,
)
from kafka_balancer.sandbox.ports import free_port_range
from kafka_balancer.sandbox.real import (
    KAFKA_VERSION,
    RealCluster,
    RealClusterOptions,
    fetched_versions,
    has_local_tiered_storage,
    kafka_libs,
)
from kafka_balancer.sandbox.traffic import QUIET, RecordWriter, TopicSpec, create_topics, read_digests

BROKERS = 6
RACKS = 3
LOG_DIRS = 2
THROTTLE_RATES = (LEADER_THROTTLE_RATE, FOLLOWER_THROTTLE_RATE, LOG_DIR_THROTTLE_RATE)
# Dynamic broker configs a test may set, deleted before the next test.
RESET_BROKER_CONFIGS = (*THROTTLE_RATES, CORDONED_LOG_DIRS)


def _tested_versions() -> tuple[str, ...]:
    """The versions the version tests run on, KAFKA_VERSION (the main cluster's) last: every version
    ``make kafka`` fetched with KAFKA_BALANCER_TEST_VERSIONS=all, else the oldest and KAFKA_VERSION."""
    others = [v for v in fetched_versions() if v != KAFKA_VERSION]
    if os.environ.get("KAFKA_BALANCER_TEST_VERSIONS") != "all":
        others = others[:1]
    return (*others, KAFKA_VERSION)


TESTED_VERSIONS = _tested_versions()


@dataclass(frozen=True)
class PartitionView:
    replicas: tuple[int, ...]
    leader: int
    isr: tuple[int, ...]


@dataclass(frozen=True)
class Written:
    """What a partition holds: its log-end offset and the SHA-256 over every record's offset, key and value."""

    end_offset: int
    digest: str


class RealKafka:
    """The session's real cluster as a test uses it: topics, records, brokers."""

    def __init__(self, cluster: RealCluster):
        self.cluster = cluster
        self.bootstrap_servers = cluster.bootstrap_servers
        self.admin = AdminClient({"bootstrap.servers": self.bootstrap_servers, **QUIET})

    @property
    def broker_ids(self) -> list[int]:
        return sorted(self.cluster.brokers)

    def rack(self, broker_id: int) -> str:
        return self.cluster.options.rack(broker_id)

    # ----- topics -------------------------------------------------------------------------------
    def create_topic(
        self, name: str, assignment: Sequence[Sequence[int]], configs: Mapping[str, str] | None = None
    ) -> None:
        """Create a topic with the given replicas per partition (first = preferred leader) and wait
        until every partition has its leader."""
        create_topics(self.bootstrap_servers, [TopicSpec(name, tuple(map(tuple, assignment)), dict(configs or {}))])

    def topics(self) -> list[str]:
        return sorted(t for t in self.admin.list_topics(timeout=10).topics if not t.startswith("__"))

    # ----- records ------------------------------------------------------------------------------
    def produce(
        self,
        topic: str,
        *,
        partitions: Sequence[int],
        records_per_partition: int,
        record_bytes: int,
    ) -> dict[int, Written]:
        """Write keyed records (acks=all, idempotent) and return each partition's offsets and digest."""
        writer = RecordWriter(self.bootstrap_servers, record_bytes=record_bytes)
        writer.write(topic, partitions, records_per_partition)
        writer.flush()
        return self.read_back(topic, partitions)

    def read_back(self, topic: str, partitions: Sequence[int]) -> dict[int, Written]:
        """Read every record of the partitions from offset 0 to the log end (sandbox.traffic.read_digests: the
        digest covers offset, key and value of each record in order; a log not starting at 0 fails)."""
        found = read_digests(self.bootstrap_servers, [(topic, p) for p in partitions])
        return {p: Written(*found[(topic, p)]) for p in partitions}

    def set_broker_configs(self, changes: Mapping[int, Mapping[str, str]]) -> None:
        """IncrementalAlterConfigs SET on brokers, as an operator does with kafka-configs.sh."""
        for broker, configs in changes.items():
            entries = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in configs.items()]
            resource = ConfigResource(ConfigResource.Type.BROKER, str(broker), incremental_configs=entries)
            for future in self.admin.incremental_alter_configs([resource]).values():
                future.result(timeout=30)

    # ----- observing ----------------------------------------------------------------------------
    def partitions(self) -> dict[tuple[str, int], PartitionView]:
        """Every user partition's replicas, leader and ISR, from one Metadata request."""
        out: dict[tuple[str, int], PartitionView] = {}
        for name, topic in self.admin.list_topics(timeout=20).topics.items():
            if name.startswith("__"):
                continue
            for index, p in topic.partitions.items():
                out[(name, index)] = PartitionView(tuple(p.replicas), p.leader, tuple(sorted(p.isrs)))
        return out

    def led_by_first_replicas(self, partitions: int | None = None) -> dict[tuple[str, int], PartitionView]:
        """The partitions once the metadata shows each led by its first replica (and, when given, that many
        of them). The controller has committed an election (or a new topic's leaders) when it answers;
        the broker answering Metadata applies it from its metadata log a moment later."""
        views: dict[tuple[str, int], PartitionView] = {}

        def settled() -> bool:
            nonlocal views
            views = self.partitions()
            counted = partitions is None or len(views) == partitions
            return counted and all(v.leader == v.replicas[0] for v in views.values())

        try:
            self.wait_until(settled, "every partition led by its first replica")
        except AssertionError as timeout:
            # Name what the last read showed: the per-partition assertions after this wait never see it.
            misled = {key: (v.leader, v.replicas) for key, v in views.items() if v.leader != v.replicas[0]}
            raise AssertionError(f"{timeout}; {len(views)} partitions read, led elsewhere: {misled}") from None
        return views

    def throttle_leftovers(self, *, brokers: bool = True, timeout: float = 30) -> dict[str, dict[str, str]]:
        """Every throttle config set on a broker or a topic (DescribeConfigs, any non-default source): the
        replication throttles and the broker's cap on copies between its log directories. ``brokers``:
        False reads the topics' only; ``timeout``: per read (TimeoutError after it)."""
        resources = [
            ConfigResource(ConfigResource.Type.BROKER, str(b))
            for b in self.broker_ids
            if brokers and self.cluster.running(b)
        ]
        resources += [ConfigResource(ConfigResource.Type.TOPIC, t) for t in self.topics()]
        out: dict[str, dict[str, str]] = {}
        for resource in resources:
            for res, future in self.admin.describe_configs([resource]).items():
                found = {
                    k: e.value or ""
                    for k, e in future.result(timeout=timeout).items()
                    if ("throttled" in k or k == LOG_DIR_THROTTLE_RATE) and not e.is_default
                }
                if found:
                    out[f"{res.restype.name.lower()} {res.name}"] = found
        return out

    # ----- brokers ------------------------------------------------------------------------------
    def stop_broker(self, broker_id: int, *, kill: bool = False) -> None:
        self.cluster.stop_broker(broker_id, kill=kill)

    def start_broker(self, broker_id: int) -> None:
        self.cluster.start_broker(broker_id)

    def pause_broker(self, broker_id: int, *, paused: bool = True) -> None:
        self.cluster.pause_broker(broker_id, paused=paused)

    def stop_controller(self) -> None:
        self.cluster.stop_controller(kill=True)

    def start_controller(self) -> None:
        self.cluster.start_controller()

    def wait_until(self, condition: Callable[[], bool], what: str, timeout_s: float = 60.0) -> float:
        """Poll ``condition`` until it holds; the seconds it took."""
        started = time.monotonic()
        while True:
            try:
                if condition():
                    return time.monotonic() - started
            except KafkaException:
                pass
            if time.monotonic() - started > timeout_s:
                raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}")
            time.sleep(0.2)

    def close(self) -> None:
        # librdkafka has no close(): dropping the handle destroys it (before the session's cluster
        # stops, which a live handle would report as refused connections).
        del self.admin

    # ----- between tests ------------------------------------------------------------------------
    def reset(self) -> None:
        """Every broker running, every user topic and consumer group deleted, no throttle rate or cordon set,
        the cluster-wide min.insync.replicas back to 1 (with ELR it can be set but not deleted)."""
        if self.cluster.controller.process is None:
            self.cluster.start_controller()  # a test stopped it and failed before starting it again
        for b in self.broker_ids:
            if self.cluster.running(b):
                self.cluster.pause_broker(b, paused=False)  # harmless when it is not paused
            else:
                self.cluster.start_broker(b)
        # Every broker registered and unfenced: one a test hung or whose controller it restarted may not be yet.
        self.cluster.wait_registered(set(self.broker_ids))
        raw_client.set_cluster_default(self.bootstrap_servers, "min.insync.replicas", "1")
        groups = [g.group_id for g in self.admin.list_consumer_groups().result(timeout=30).valid]
        if groups:
            for future in self.admin.delete_consumer_groups(groups).values():
                future.result(timeout=30)
        names = self.topics()
        if names:
            for future in self.admin.delete_topics(names).values():
                future.result(timeout=30)
            self.wait_until(lambda: not self.topics(), "topics deleted")
        resources = [
            ConfigResource(
                ConfigResource.Type.BROKER,
                str(b),
                incremental_configs=[
                    ConfigEntry(k, "", incremental_operation=AlterConfigOpType.DELETE) for k in RESET_BROKER_CONFIGS
                ],
            )
            for b in self.broker_ids
        ]
        for resource in resources:
            for future in self.admin.incremental_alter_configs([resource]).values():
                future.result(timeout=30)


def group_of(version: str) -> str:
    """The xdist group of the tests on the cluster of ``version`` (see the module docstring)."""
    return "real-kafka" if version == KAFKA_VERSION else f"real-kafka-{version}"


# Every topic is one a test created: a producer left running by an earlier test (one its timeout cut
# short) cannot bring a topic back after ``reset`` deleted it (seen: heavy and medium of the real-traffic
# test in the next test's cluster).
BROKER_CONFIGS = {"auto.create.topics.enable": "false"}
# Kafka's leader rebalancer (off: sandbox.real) would look every second rather than every 5 minutes, so a
# leader moved behind a test's back shows at once instead of once in a long run.
CONTROLLER_CONFIGS = {"leader.imbalance.check.interval.seconds": "1"}


class RealClusters:
    """This worker's clusters, one per Kafka version, each started once and stopped after its last test
    (tests/conftest.py) or at the end.

    tests/conftest.py starts a test's cluster before the test's own timeout starts to run (a start took
    4.5 minutes at load average 100, where a test's timeout is 5 or 10): ``start`` never raises, and
    ``of`` fails the test with the reason when the cluster did not start."""

    def __init__(self) -> None:
        self._started: dict[str, RealCluster] = {}
        self._failed: dict[str, str] = {}  # version -> why it did not start (not tried again: minutes each)

    def start(self, version: str) -> None:
        if version in self._started or version in self._failed:
            return
        try:
            options = RealClusterOptions(
                brokers=BROKERS,
                racks=RACKS,
                log_dirs=LOG_DIRS,
                port_base=free_port_range(BROKERS + 1),
                kafka_version=version,
                broker_configs=BROKER_CONFIGS,
                controller_configs=CONTROLLER_CONFIGS,
                # Remote storage for the topics that enable it (test_tiering.py) where the version's jars
                # carry LocalTieredStorage (not 4.4.0's).
                tiered_storage=has_local_tiered_storage(kafka_libs(version=version)),
            )
            cluster = RealCluster(options)  # its data in a temporary folder, deleted when it stops
            cluster.start()  # stops what it started when it fails
        except KeyboardInterrupt:
            raise
        except BaseException as err:
            self._failed[version] = f"{type(err).__name__}: {err}"
            return
        self._started[version] = cluster

    def of(self, version: str) -> RealCluster:
        self.start(version)
        if version in self._failed:
            pytest.fail(f"the real Kafka {version} cluster did not start in this run: {self._failed[version]}")
        return self._started[version]

    def stop(self, version: str | None = None) -> None:
        """Stop the cluster of ``version`` (every cluster when None)."""
        for name in [version] if version is not None else list(self._started):
            cluster = self._started.pop(name, None)
            if cluster is not None:
                cluster.stop()


CLUSTERS = RealClusters()  # this worker's


@pytest.fixture(scope="session")
def real_clusters() -> Iterator[RealClusters]:
    try:
        yield CLUSTERS
    finally:
        CLUSTERS.stop()


@pytest.fixture(scope="session")
def kafka_version(request: pytest.FixtureRequest) -> str:
    """The Kafka version of the real brokers a test runs on: the default, or its parameter (indirect)."""
    return str(getattr(request, "param", KAFKA_VERSION))


@pytest.fixture
def real_cluster(real_clusters: RealClusters, kafka_version: str) -> RealCluster:
    """The run's real KRaft cluster of ``kafka_version``, as it is (``real_kafka`` resets it first)."""
    return real_clusters.of(kafka_version)


@pytest.fixture
def real_kafka(real_cluster: RealCluster) -> Iterator[RealKafka]:
    kafka = RealKafka(real_cluster)
    kafka.reset()
    yield kafka
    kafka.close()
