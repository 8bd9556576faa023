"""The Kafka port: everything the balancer asks of a Kafka cluster, as one typed interface.

The executor, the sampler and the controller depend on this interface only; the adapter in
``kafka_balancer.kafka.adapter`` implements it with confluent-kafka and kafka-python.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from kafka_balancer.model import ClusterModel
from kafka_balancer.model.cluster import LogDir

# Broker-level and topic-level throttle configs (KIP-73).
LEADER_THROTTLE_RATE = "leader.replication.throttled.rate"
FOLLOWER_THROTTLE_RATE = "follower.replication.throttled.rate"
# The broker-level cap on copies between one broker's log directories (AlterReplicaLogDirs, KIP-113).
LOG_DIR_THROTTLE_RATE = "replica.alter.log.dirs.io.max.bytes.per.second"
LEADER_THROTTLED_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_THROTTLED_REPLICAS = "follower.replication.throttled.replicas"
MIN_INSYNC_REPLICAS = "min.insync.replicas"
UNCLEAN_LEADER_ELECTION = "unclean.leader.election.enable"
# A broker's log directories, and those of them cordoned (KIP-1066, Kafka 4.3+: a comma-separated
# list of entries of log.dirs, or * for all of them; a dynamic per-broker config).
LOG_DIRS = "log.dirs"
LOG_DIR = "log.dir"
CORDONED_LOG_DIRS = "cordoned.log.dirs"
# Tiered storage: a topic's remote storage (KIP-405), and a broker's empty followers starting at the
# last tiered offset instead of the leader's local log start (KIP-1023, Kafka 4.3+; a dynamic broker config).
REMOTE_STORAGE_ENABLE = "remote.storage.enable"
FETCH_LAST_TIERED_OFFSET = "follower.fetch.last.tiered.offset.enable"

DEFAULT_ELECTION_BATCH = 1000

# The longest config value Kafka takes: its protocol reads a string field of at most 32,767 bytes (Java's
# Short.MAX_VALUE) in every request version, flexible ones included, and closes the connection on a longer
# one. A topic's throttled-replicas list ("partition:broker" entries) reaches it at a few thousand entries.
MAX_CONFIG_VALUE_BYTES = 32_767


def config_list(value: str | None) -> list[str]:
    """A LIST config's entries as Kafka parses them: split on commas, whitespace around each dropped."""
    return [item.strip() for item in (value or "").split(",") if item.strip()]


def log_dirs_of(configs: Mapping[str, str]) -> tuple[LogDir, ...]:
    """A broker's log directories from its effective configs (log.dirs, else log.dir), each marked
    cordoned when ``cordoned.log.dirs`` lists it or is ``*``."""
    paths = config_list(configs.get(LOG_DIRS)) or config_list(configs.get(LOG_DIR))
    cordoned = config_list(configs.get(CORDONED_LOG_DIRS))
    every = cordoned == ["*"]
    return tuple(LogDir(path, every or path in cordoned) for path in paths)


@dataclass(frozen=True, order=True)
class TopicPartition:
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclass(frozen=True)
class ReplicaLogDir:
    """Where one replica lives on its broker (DescribeLogDirs): its log directory and log size, and,
    while AlterReplicaLogDirs moves it to another directory of the broker, the future replica's
    directory, size and offset lag (its ``is_future_key`` entry)."""

    path: str
    size: int
    future_path: str | None = None
    future_size: int = 0
    future_lag: int = 0


@dataclass(frozen=True)
class BrokerEndpoint:
    id: int
    host: str
    port: int
    rack: str | None = None


@dataclass(frozen=True)
class ClusterDescription:
    cluster_id: str | None
    controller_id: int | None
    brokers: tuple[BrokerEndpoint, ...]


@dataclass(frozen=True)
class OngoingReassignment:
    """A reassignment in progress, as ListPartitionReassignments reports it (KIP-455)."""

    replicas: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]

    @property
    def target(self) -> tuple[int, ...]:
        return tuple(b for b in self.replicas if b not in self.removing)


@dataclass(frozen=True)
class ThrottledReplicas:
    """The replicas of one topic listed in its throttled.replicas configs: (partition, broker) pairs."""

    leader: tuple[tuple[int, int], ...] = ()
    follower: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True)
class ConsumerGroupMember:
    member_id: str
    client_id: str
    host: str
    subscription: tuple[str, ...]
    assignment: Mapping[str, tuple[int, ...]]


@dataclass(frozen=True)
class ConsumerGroupInfo:
    group_id: str
    state: str
    protocol_type: str
    assignor: str
    members: tuple[ConsumerGroupMember, ...]
    committed: Mapping[TopicPartition, int] = field(default_factory=dict)
    log_end: Mapping[TopicPartition, int] = field(default_factory=dict)

    def lag(self) -> dict[TopicPartition, int]:
        return {tp: max(0, self.log_end.get(tp, off) - off) for tp, off in self.committed.items()}


@dataclass(frozen=True)
class ListChange:
    """Entries to add to (APPEND) and to take out of (SUBTRACT) a list config such as a topic's
    ``*.replication.throttled.replicas``, leaving every other entry as it is (IncrementalAlterConfigs,
    KIP-339). Two writers of one list (an operator and the executor) must use it rather than setting
    the whole list from a copy they read, which would drop what the other added meanwhile."""

    append: tuple[str, ...] = ()
    subtract: tuple[str, ...] = ()


# A config change: a value to set, None to delete the config, or entries to add to / take out of a list.
ConfigValue = str | ListChange | None


class KafkaError(Exception):
    """An error Kafka returned, with its error name (e.g. ``NOT_CONTROLLER``) and the partition."""

    def __init__(self, name: str, message: str = "", partition: TopicPartition | None = None):
        self.name = name
        self.message = message
        self.partition = partition
        where = f" for {partition}" if partition is not None else ""
        super().__init__(f"{name}{where}{': ' + message if message else ''}")

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled as made (the adapter's worker process sends errors back): Exception's own pickling
        # would rebuild it from the formatted text alone.
        return (type(self), (self.name, self.message, self.partition))


class KafkaUnavailableError(KafkaError):
    """The cluster cannot be reached (bootstrap down, timeout, authentication failed)."""


class PortClosedError(KafkaUnavailableError):
    """The port was closed (or cut off: an operator shutting down, or no longer the one acting) by its
    owner: no call through it will succeed again, so waiting is pointless; stop at once and leave the
    record as it is for whoever resumes."""


class InvalidMetadataError(KafkaError):
    """The cluster described itself in a way Kafka never does (kafka.metadata_check): nothing of that
    answer is used, and no request is built from it."""

    def __init__(self, message: str, name: str = "INVALID_METADATA", partition: TopicPartition | None = None):
        super().__init__(name, message, partition)

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.message, self.name, self.partition))


@runtime_checkable
class KafkaPort(Protocol):
    """What the balancer needs from a Kafka cluster. All calls block; run them off event loops."""

    # ----- read ---------------------------------------------------------------------------
    def describe_cluster(self) -> ClusterDescription: ...

    def read_cluster(self, *, with_sizes: bool = True) -> ClusterModel:
        """Brokers (racks, liveness), partitions (replicas, leader, ISR), topic durability settings,
        and, with ``with_sizes``, each partition's size (its leader's log size from DescribeLogDirs)
        and each live broker's log directories with their cordons (DescribeConfigs).
        Rates are zero: they come from the analysis, not from one read."""
        ...

    def replica_sizes(self) -> dict[tuple[TopicPartition, int], int]:
        """(partition, broker id) -> size in bytes of that replica's log (DescribeLogDirs)."""
        ...

    def replica_log_dirs(
        self, replicas: Iterable[tuple[TopicPartition, int]]
    ) -> dict[tuple[TopicPartition, int], ReplicaLogDir]:
        """(partition, broker id) -> that replica's log directory, size and any move between the
        broker's directories in progress (DescribeLogDirs, to each live broker about its replicas
        asked for); a replica its broker does not list (not created yet, the broker down) is absent."""
        ...

    def log_end_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]: ...

    def topic_configs(self, topics: Iterable[str]) -> dict[str, dict[str, str]]: ...

    def broker_configs(self, broker_ids: Iterable[int]) -> dict[int, dict[str, str]]: ...

    def list_reassignments(self) -> dict[TopicPartition, OngoingReassignment]: ...

    def consumer_groups(self) -> list[ConsumerGroupInfo]:
        """Every consumer group with members, subscriptions, assignments, offsets and log-end offsets."""
        ...

    # ----- act ----------------------------------------------------------------------------
    def alter_reassignments(
        self, targets: Mapping[TopicPartition, Sequence[int] | None]
    ) -> dict[TopicPartition, KafkaError | None]:
        """Start (target replicas) or cancel (None) reassignments; per-partition errors, no raise."""
        ...

    def alter_replica_log_dirs(
        self, moves: Mapping[tuple[TopicPartition, int], str]
    ) -> dict[tuple[TopicPartition, int], KafkaError | None]:
        """AlterReplicaLogDirs: put (partition, broker)'s replica in that broker's log directory (an
        absolute path of its log.dirs). A replica the broker does not host yet answers
        REPLICA_NOT_AVAILABLE, and the broker creates it there when it arrives; one it hosts starts
        moving there (its future replica), or stops moving when the path is its current directory.
        Per-replica errors, no raise."""
        ...

    def elect_preferred_leaders(
        self, partitions: Sequence[TopicPartition], *, batch_size: int = DEFAULT_ELECTION_BATCH
    ) -> dict[TopicPartition, KafkaError | None]:
        """Preferred-leader election, one request per ``batch_size`` partitions.
        ELECTION_NOT_NEEDED counts as success (None)."""
        ...

    def alter_broker_configs(self, changes: Mapping[int, Mapping[str, str | None]]) -> None:
        """IncrementalAlterConfigs on brokers: a value sets, None deletes."""
        ...

    def alter_topic_configs(self, changes: Mapping[str, Mapping[str, ConfigValue]]) -> None:
        """IncrementalAlterConfigs on topics: a value sets, None deletes, a ListChange appends and
        subtracts list entries."""
        ...

    def close(self) -> None: ...
