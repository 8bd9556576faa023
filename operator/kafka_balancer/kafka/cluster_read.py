"""The cluster as a :class:`ClusterModel`: brokers, topics and partitions from the metadata, the topics'
effective configs, eligible leader replicas (KIP-966), and with sizes the log directories, each
replica's directory and size, and the bytes of tiered topics in remote storage (KIP-405).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kafka import TopicPartition as KpTopicPartition
from kafka.admin import OffsetSpec as KpOffsetSpec

from kafka_balancer.kafka.clients import Clients
from kafka_balancer.kafka.configs import Configs
from kafka_balancer.kafka.lacking import Feature, say_lacking
from kafka_balancer.kafka.log_dirs import DescribedLogDirs, LogDirs, size_requests, with_volumes
from kafka_balancer.kafka.port import (
    CORDONED_LOG_DIRS,
    FETCH_LAST_TIERED_OFFSET,
    MIN_INSYNC_REPLICAS,
    REMOTE_STORAGE_ENABLE,
    UNCLEAN_LEADER_ELECTION,
    ClusterDescription,
    KafkaError,
    TopicPartition,
    log_dirs_of,
)
from kafka_balancer.kafka.tiering import TieredBytes, TieredOffsets, tiered_bytes
from kafka_balancer.model import ClusterBuilder, ClusterModel
from kafka_balancer.model.cluster import LogDir

# A topic's ConfigEntries by name (librdkafka's DescribeConfigs answer).
TopicConfigs = Mapping[str, Mapping[str, Any]]


@dataclass
class _Answers:
    """What the cluster answered, before it is built into the model (sizes empty when not asked)."""

    description: ClusterDescription
    metadata: Any  # librdkafka's, checked
    topics: list[str]
    configs: dict[str, dict[str, Any]]
    elr: dict[TopicPartition, list[int]] | None
    with_sizes: bool
    brokers: dict[int, dict[str, str]] = field(default_factory=dict)  # broker configs
    log_dirs: dict[int, tuple[LogDir, ...]] = field(default_factory=dict)
    described: DescribedLogDirs = field(default_factory=DescribedLogDirs)
    tiered: dict[TopicPartition, TieredBytes] = field(default_factory=dict)

    @functools.cached_property
    def sizes(self) -> dict[tuple[TopicPartition, int], int]:
        """Each replica's size (once ``described`` is in)."""
        return self.described.sizes()


def _add_brokers(builder: ClusterBuilder, answers: _Answers) -> None:
    live = {b.id: b for b in answers.description.brokers}
    referenced: set[int] = set()
    for name in answers.topics:
        for p in answers.metadata.topics[name].partitions.values():
            referenced.update(p.replicas)
    for broker_id in sorted(set(live) | referenced):
        # A broker that hosts replicas but is not in the metadata is down (Kafka lists live brokers only).
        endpoint = live.get(broker_id)
        builder.add_broker(
            broker_id,
            rack=endpoint.rack if endpoint else None,
            alive=endpoint is not None,
            log_dirs=answers.log_dirs.get(broker_id, ()),
            fetch_last_tiered=answers.brokers.get(broker_id, {}).get(FETCH_LAST_TIERED_OFFSET) == "true",
        )


def _add_topic(builder: ClusterBuilder, answers: _Answers, name: str) -> None:
    entries = answers.configs.get(name, {})
    min_isr = entries.get(MIN_INSYNC_REPLICAS)
    unclean = entries.get(UNCLEAN_LEADER_ELECTION)
    # Effective values, wherever they are set (the topic, a cluster-wide broker default, the
    # brokers' server.properties, Kafka's default): a broker default of min.insync.replicas=2
    # protects a topic exactly as the topic's own setting does.
    builder.set_topic(
        name,
        min_insync_replicas=int(min_isr.value) if min_isr is not None and min_isr.value else None,
        unclean_leader_election=unclean.value == "true" if unclean is not None and unclean.value else None,
    )
    for index, p in sorted(answers.metadata.topics[name].partitions.items()):
        _add_partition(builder, answers, TopicPartition(name, index), p)


def _add_partition(builder: ClusterBuilder, answers: _Answers, tp: TopicPartition, p: Any) -> None:
    """One partition of librdkafka's metadata (``p``) with what the other answers say of it."""
    sizes = answers.sizes
    leader = p.leader if p.leader >= 0 else None
    # The partition's size is its leader's log; offline partitions take their largest replica.
    if leader is not None and (tp, leader) in sizes:
        size = sizes[(tp, leader)]
    else:
        size = max((sizes.get((tp, b), 0) for b in p.replicas), default=0)
    split = answers.tiered.get(tp)
    elr = answers.elr
    builder.add_partition(
        tp.topic,
        tp.partition,
        list(p.replicas),
        remote_bytes=None if split is None else split.remote,
        untiered_bytes=None if split is None else min(split.untiered, float(size)),
        leader=leader,
        leader_given=True,
        isr=list(p.isrs),
        # Kafka keeps ELR empty where the ISR is at or above min ISR: only those below were read.
        elr=None if elr is None else [b for b in elr.get(tp, ()) if b in p.replicas],
        size_bytes=float(size),
        log_dirs=[answers.described.dir_of(tp, b, answers.log_dirs.get(b, ())) for b in p.replicas]
        if answers.with_sizes
        else None,
    )


class ClusterReader:
    """Reads the whole cluster into a model."""

    def __init__(self, clients: Clients, configs: Configs, log_dirs: LogDirs):
        self._clients = clients
        self._configs = configs
        self._log_dirs = log_dirs

    def read_cluster(self, *, with_sizes: bool = True) -> ClusterModel:
        answers = self._ask(with_sizes)
        builder = ClusterBuilder(cluster_name=answers.description.cluster_id)
        _add_brokers(builder, answers)
        for name in answers.topics:
            _add_topic(builder, answers, name)
        return builder.build()

    def _ask(self, with_sizes: bool) -> _Answers:
        description = self._clients.describe_cluster()
        metadata = self._clients.metadata()
        topics = sorted(t for t in metadata.topics if not t.startswith("__"))
        configs = self._configs.topic_entries(topics)
        answers = _Answers(
            description, metadata, topics, configs, self._eligible_leaders(metadata, configs), with_sizes
        )
        if with_sizes:
            self._ask_sizes(answers)
        return answers

    def _ask_sizes(self, answers: _Answers) -> None:
        """Where the data lives goes with its size: the log directories, their cordons (KIP-1066) and volumes."""
        answers.brokers = self._configs.broker_configs(sorted(b.id for b in answers.description.brokers))
        brokers = answers.brokers
        configured = {b: log_dirs_of(c) for b, c in brokers.items()}
        if brokers and not any(CORDONED_LOG_DIRS in c for c in brokers.values()):
            say_lacking(self._clients.spec.bootstrap_servers, Feature.CORDONS)  # Kafka < 4.3: no directory is cordoned
        # A partition's size is its leader's log; where each replica lives matters only on brokers with
        # several directories (JBOD): those are asked about every replica they host, the others only
        # about the partitions they lead (a third of the DescribeLogDirs work at replication factor 3).
        jbod = {b for b, dirs in configured.items() if len(dirs) > 1}
        answers.described = self._log_dirs.describe(size_requests(answers.metadata, answers.topics, jbod))
        answers.log_dirs = {
            b: with_volumes(dirs, answers.described.volumes.get(b, {})) for b, dirs in configured.items()
        }
        answers.tiered = self._tiered_topics(answers.metadata, answers.configs, answers.sizes)

    def _tiered_topics(
        self, metadata: Any, configs: TopicConfigs, sizes: Mapping[tuple[TopicPartition, int], int]
    ) -> dict[TopicPartition, TieredBytes]:
        """Remote and untiered bytes of every partition of a topic with remote storage (ListOffsets
        earliest, earliest-local, latest-tiered and latest, see kafka.tiering), priced by its leader's log."""
        leaders = {
            TopicPartition(name, index): p.leader
            for name in sorted(configs)
            if (entry := configs[name].get(REMOTE_STORAGE_ENABLE)) is not None and entry.value == "true"
            for index, p in metadata.topics[name].partitions.items()
            if p.leader >= 0
        }
        if not leaders:
            return {}
        specs = (KpOffsetSpec.EARLIEST, KpOffsetSpec.EARLIEST_LOCAL, KpOffsetSpec.LATEST_TIERED, KpOffsetSpec.LATEST)
        wanted = [KpTopicPartition(tp.topic, tp.partition) for tp in sorted(leaders)]
        found = [
            self._clients.kp_call(lambda kp: kp.list_partition_offsets(dict.fromkeys(wanted, spec)))  # noqa: B023
            for spec in specs
        ]
        out = {}
        for kp_tp in wanted:
            tp = TopicPartition(kp_tp.topic, kp_tp.partition)
            offsets = TieredOffsets(*(int(f[kp_tp].offset) for f in found))
            out[tp] = tiered_bytes(float(sizes.get((tp, leaders[tp]), 0)), offsets)
        return out

    def _eligible_leaders(self, metadata: Any, configs: TopicConfigs) -> dict[TopicPartition, list[int]] | None:
        """Eligible leader replicas (KIP-966) of the topics with a partition at or below its min ISR
        or offline, by DescribeTopicPartitions (API 75, which librdkafka does not expose); None when
        no partition is there, or the cluster predates the API (Kafka < 3.8, said once: kafka.lacking)."""
        wanted = []
        for name, entries in sorted(configs.items()):
            min_isr = entries.get(MIN_INSYNC_REPLICAS)
            floor = int(min_isr.value) if min_isr is not None and min_isr.value else 1
            if any(len(p.isrs) <= floor or p.leader < 0 for p in metadata.topics[name].partitions.values()):
                wanted.append(name)
        if not wanted:
            return None
        out: dict[TopicPartition, list[int]] = {}
        cursor = None
        while True:
            try:
                page = self._clients.kp_call(lambda kp: kp.describe_topic_partitions(wanted, cursor=cursor))  # noqa: B023
            except KafkaError as err:
                if err.name in ("UNSUPPORTED_VERSION", "IncompatibleBrokerVersion"):
                    say_lacking(self._clients.spec.bootstrap_servers, Feature.DESCRIBE_TOPIC_PARTITIONS)
                    return None
                raise
            for topic in page["topics"]:
                for p in topic["partitions"]:
                    out[TopicPartition(topic["name"], p["partition_index"])] = list(p["eligible_leader_replicas"] or [])
            cursor = page["next_cursor"]
            if cursor is None:
                return out
