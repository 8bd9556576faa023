"""Log directories through kafka-python (librdkafka has neither call): DescribeLogDirs, for each
replica's directory and size and each directory's volume, and AlterReplicaLogDirs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import kafka.errors as kp_errors
from kafka import TopicPartitionReplica as KpTopicPartitionReplica

from kafka_balancer.kafka.clients import Clients
from kafka_balancer.kafka.errors import error_name
from kafka_balancer.kafka.port import KafkaError, ReplicaLogDir, TopicPartition
from kafka_balancer.model.cluster import LogDir

# Which partitions to ask each broker about: broker -> topic -> partitions.
SizeRequests = Mapping[int, Mapping[str, list[int]]]


@dataclass
class DescribedLogDirs:
    """What DescribeLogDirs told: each replica's directory, each directory's (total, usable) bytes (-1: not known)."""

    replicas: dict[tuple[TopicPartition, int], ReplicaLogDir] = field(default_factory=dict)
    volumes: dict[int, dict[str, tuple[int, int]]] = field(default_factory=dict)

    def sizes(self) -> dict[tuple[TopicPartition, int], int]:
        """Each replica's size in bytes."""
        return {key: r.size for key, r in self.replicas.items()}

    def dir_of(self, tp: TopicPartition, broker: int, dirs: Sequence[LogDir]) -> str | None:
        """A replica's directory: its broker's only one, or where DescribeLogDirs listed it (if in log.dirs)."""
        if len(dirs) == 1:
            return dirs[0].path
        found = self.replicas.get((tp, broker))
        return found.path if found is not None and any(d.path == found.path for d in dirs) else None

    def add(self, entry: Mapping[str, Any]) -> None:
        """One broker's entry of kafka-python's describe_log_dirs answer."""
        b = int(entry["broker"])
        current: dict[tuple[TopicPartition, int], tuple[str, int]] = {}
        future: dict[tuple[TopicPartition, int], tuple[str, int, int]] = {}
        for log_dir in entry["log_dirs"]:
            if log_dir.get("error_code", 0):
                continue  # an offline directory (KAFKA_STORAGE_ERROR): nothing in it is readable
            path = log_dir["log_dir"]
            self.volumes.setdefault(b, {})[path] = (log_dir.get("total_bytes", -1), log_dir.get("usable_bytes", -1))
            for topic in log_dir["topics"]:
                for p in topic["partitions"]:
                    key = (TopicPartition(topic["name"], p["partition_index"]), b)
                    if p.get("is_future_key"):
                        future[key] = (path, int(p["partition_size"]), int(p["offset_lag"]))
                    else:
                        current[key] = (path, int(p["partition_size"]))
        for key, (path, size) in current.items():
            moving = future.get(key)
            self.replicas[key] = (
                ReplicaLogDir(path, size)
                if moving is None
                else ReplicaLogDir(path, size, moving[0], moving[1], moving[2])
            )


def size_requests(
    metadata: Any, topics: Iterable[str], every_replica: Iterable[int] | None = None
) -> dict[int, dict[str, list[int]]]:
    """Which partitions to ask each live broker about: every replica it hosts (on the brokers of
    ``every_replica``, all when None), else only the partitions it leads, and every replica of a
    leaderless partition."""
    live = set(metadata.brokers)
    everything = None if every_replica is None else set(every_replica)
    wanted: dict[int, dict[str, list[int]]] = {}
    for name in topics:
        for index, p in metadata.topics[name].partitions.items():
            hosts = p.replicas
            if everything is not None and p.leader >= 0:
                hosts = [b for b in p.replicas if b == p.leader or b in everything]
            for broker in hosts:
                if broker in live:
                    wanted.setdefault(broker, {}).setdefault(name, []).append(index)
    return wanted


def with_volumes(dirs: Iterable[LogDir], volumes: Mapping[str, tuple[int, int]]) -> tuple[LogDir, ...]:
    """A broker's configured log directories with the volume sizes DescribeLogDirs gave (and any
    directory it reports that the configs did not name, in path order)."""
    out = []
    for d in dirs:
        total, usable = volumes.get(d.path, (-1, -1))
        out.append(
            LogDir(d.path, d.cordoned, float(total) if total >= 0 else None, float(usable) if usable >= 0 else None)
        )
    named = {d.path for d in out}
    for path, (total, usable) in sorted(volumes.items()):
        if path not in named:
            out.append(
                LogDir(path, False, float(total) if total >= 0 else None, float(usable) if usable >= 0 else None)
            )
    return tuple(out)


class LogDirs:
    """Reads where replicas live and how large they are, and moves them between a broker's directories."""

    def __init__(self, clients: Clients):
        self._clients = clients

    def describe(self, wanted: SizeRequests) -> DescribedLogDirs:
        """DescribeLogDirs to each broker for just the partitions asked of it: each replica's directory
        and size (and future replica, see ReplicaLogDir), and each directory's volume size and free space.

        Naming the partitions matters at scale: without them kafka-python first fetches (and
        decodes, in Python) the whole metadata and then sends every partition of the cluster to
        every broker.
        """
        out = DescribedLogDirs()
        for broker, topics in sorted(wanted.items()):
            if not topics:
                continue
            per_broker = self._clients.kp_call(lambda kp: kp.describe_log_dirs(dict(topics), brokers=[broker]))  # noqa: B023
            for entry in per_broker:
                out.add(entry)
        return out

    def replica_sizes(self) -> dict[tuple[TopicPartition, int], int]:
        metadata = self._clients.metadata()
        return self.describe(size_requests(metadata, list(metadata.topics))).sizes()

    def replica_log_dirs(
        self, replicas: Iterable[tuple[TopicPartition, int]]
    ) -> dict[tuple[TopicPartition, int], ReplicaLogDir]:
        asked = set(replicas)
        if not asked:
            return {}
        live = self._clients.live_brokers()
        wanted: dict[int, dict[str, list[int]]] = {}
        for tp, b in sorted(asked):
            if b in live:
                wanted.setdefault(b, {}).setdefault(tp.topic, []).append(tp.partition)
        found = self.describe(wanted).replicas
        return {key: found[key] for key in asked if key in found}

    def alter_replica_log_dirs(
        self, moves: Mapping[tuple[TopicPartition, int], str]
    ) -> dict[tuple[TopicPartition, int], KafkaError | None]:
        """Through kafka-python (librdkafka has no AlterReplicaLogDirs), one request per broker. A replica
        on a broker that is down gets BROKER_NOT_AVAILABLE (kafka-python would fail the whole call), so a
        caller asks again once the broker is back."""
        if not moves:
            return {}
        live = self._clients.live_brokers()
        out: dict[tuple[TopicPartition, int], KafkaError | None] = {
            (tp, b): KafkaError("BROKER_NOT_AVAILABLE", f"broker {b} is not among the live brokers {sorted(live)}", tp)
            for (tp, b) in moves
            if b not in live
        }
        request = {
            KpTopicPartitionReplica(tp.topic, tp.partition, b): path for (tp, b), path in moves.items() if b in live
        }
        raw = self._clients.kp_call(lambda kp: kp.alter_replica_log_dirs(request)) if request else {}
        for tpr, err in raw.items():
            tp = TopicPartition(tpr.topic, tpr.partition)
            out[(tp, tpr.broker_id)] = (
                None if err is kp_errors.NoError else KafkaError(error_name(err.errno), err.description, tp)
            )
        for key in moves:
            out.setdefault(key, KafkaError("UNKNOWN_SERVER_ERROR", "no result for this replica", key[0]))
        return out
