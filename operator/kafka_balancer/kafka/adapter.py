"""KafkaAdapter: the KafkaPort over confluent-kafka (primary) and kafka-python 3.x.

The adapter holds one cluster's :class:`~kafka_balancer.kafka.clients.Clients` (how a request is sent
and waited for, every error named as Kafka names it) and hands each call of the port to the part that
does that job: reading the whole cluster (``cluster_read``), configs (``configs``), log directories
(``log_dirs``), reassignments and elections (``moves``), consumer groups and offsets (``groups``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from kafka_balancer.kafka.clients import Clients
from kafka_balancer.kafka.cluster_read import ClusterReader
from kafka_balancer.kafka.configs import Configs
from kafka_balancer.kafka.connection import ConnectionSpec
from kafka_balancer.kafka.groups import Groups
from kafka_balancer.kafka.log_dirs import LogDirs
from kafka_balancer.kafka.moves import Moves
from kafka_balancer.kafka.port import (
    DEFAULT_ELECTION_BATCH,
    ClusterDescription,
    ConfigValue,
    ConsumerGroupInfo,
    KafkaError,
    OngoingReassignment,
    ReplicaLogDir,
    TopicPartition,
)
from kafka_balancer.model import ClusterModel


class KafkaAdapter:
    """Implements :class:`kafka_balancer.kafka.port.KafkaPort`."""

    def __init__(self, spec: ConnectionSpec, *, opened: Callable[[ConnectionSpec], Clients] = Clients):
        """``opened`` opens the clients of ``spec`` (a test's stand-in may replace them)."""
        self.spec = spec
        self._clients = opened(spec)
        self._configs = Configs(self._clients)
        self._log_dirs = LogDirs(self._clients)
        self._reader = ClusterReader(self._clients, self._configs, self._log_dirs)
        self._moves = Moves(self._clients)
        self._groups = Groups(self._clients)

    def __repr__(self) -> str:
        return f"KafkaAdapter({self.spec})"

    # ----- read ------------------------------------------------------------------------------
    def describe_cluster(self) -> ClusterDescription:
        return self._clients.describe_cluster()

    def read_cluster(self, *, with_sizes: bool = True) -> ClusterModel:
        return self._reader.read_cluster(with_sizes=with_sizes)

    def replica_sizes(self) -> dict[tuple[TopicPartition, int], int]:
        return self._log_dirs.replica_sizes()

    def replica_log_dirs(
        self, replicas: Iterable[tuple[TopicPartition, int]]
    ) -> dict[tuple[TopicPartition, int], ReplicaLogDir]:
        return self._log_dirs.replica_log_dirs(replicas)

    def log_end_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        return self._groups.log_end_offsets(partitions)

    def topic_configs(self, topics: Iterable[str]) -> dict[str, dict[str, str]]:
        return self._configs.topic_configs(topics)

    def broker_configs(self, broker_ids: Iterable[int]) -> dict[int, dict[str, str]]:
        return self._configs.broker_configs(broker_ids)

    def list_reassignments(self) -> dict[TopicPartition, OngoingReassignment]:
        return self._moves.list_reassignments()

    def consumer_groups(self) -> list[ConsumerGroupInfo]:
        return self._groups.consumer_groups()

    # ----- act -------------------------------------------------------------------------------
    def alter_reassignments(
        self, targets: Mapping[TopicPartition, Sequence[int] | None]
    ) -> dict[TopicPartition, KafkaError | None]:
        return self._moves.alter_reassignments(targets)

    def alter_replica_log_dirs(
        self, moves: Mapping[tuple[TopicPartition, int], str]
    ) -> dict[tuple[TopicPartition, int], KafkaError | None]:
        return self._log_dirs.alter_replica_log_dirs(moves)

    def elect_preferred_leaders(
        self, partitions: Sequence[TopicPartition], *, batch_size: int = DEFAULT_ELECTION_BATCH
    ) -> dict[TopicPartition, KafkaError | None]:
        return self._moves.elect_preferred_leaders(partitions, batch_size=batch_size)

    def alter_broker_configs(self, changes: Mapping[int, Mapping[str, str | None]]) -> None:
        self._configs.alter_broker_configs(changes)

    def alter_topic_configs(self, changes: Mapping[str, Mapping[str, ConfigValue]]) -> None:
        self._configs.alter_topic_configs(changes)

    def close(self) -> None:
        self._clients.close()
