"""Durability audit: which topics can lose acknowledged writes, and which partitions are at risk now.

A topic is flagged when its settings let an acknowledged write (acks=all) be lost or make it
unwritable on one failure: replication factor below 3, min.insync.replicas below 2 (one replica can
acknowledge alone), min.insync.replicas at or above the replication factor (a single broker down stops
acks=all producers), or unclean leader election enabled (an out-of-sync replica may become leader and
truncate acknowledged data). A partition is at risk now when it is offline, under-replicated, or its
ISR is at or below min.insync.replicas (one more failure stops writes or loses data), and, where the
cluster reports eligible leader replicas (KIP-966), when it is there with none of them.

Works on whole arrays of the :class:`ClusterModel`, so it scales to millions of replicas.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kafka_balancer.model.cluster import NO_BROKER, ClusterModel
from kafka_balancer.model.errors import ModelError

MIN_INSYNC_REPLICAS = "min.insync.replicas"
UNCLEAN_LEADER_ELECTION = "unclean.leader.election.enable"

# Topic flags (stable names: they are metric labels and status values).
RF_BELOW_3 = "replication-factor-below-3"
MIN_ISR_BELOW_2 = "min-insync-replicas-below-2"
MIN_ISR_NOT_BELOW_RF = "min-insync-replicas-not-below-replication-factor"
UNCLEAN_ELECTION = "unclean-leader-election-enabled"
TOPIC_FLAGS = (RF_BELOW_3, MIN_ISR_BELOW_2, MIN_ISR_NOT_BELOW_RF, UNCLEAN_ELECTION)

# Partition risks.
OFFLINE = "offline"
UNDER_REPLICATED = "under-replicated"
AT_MIN_ISR = "isr-at-or-below-min-insync-replicas"
# KIP-966 (Kafka 4.x): at or below min ISR with no eligible leader replica, where the cluster reports
# ELR. Kafka keeps replicas that leave an ISR already below min ISR as eligible leaders (they hold every
# acknowledged write); with none, the next failure of the ISR leaves no clean leader.
NO_ELIGIBLE_LEADER = "no-eligible-leader-replica"
PARTITION_RISKS = (OFFLINE, UNDER_REPLICATED, AT_MIN_ISR, NO_ELIGIBLE_LEADER)

# A listed partition's ISR state (worst first) and ELR state.
ISR_STATES = ("offline", "below-min-isr", "at-min-isr", "under-replicated")
ELR_NOT_REPORTED, ELR_EMPTY, ELR_ELIGIBLE = "not-reported", "none", "eligible"


@dataclass(frozen=True)
class AuditOptions:
    """Broker-wide defaults, used for topics that do not override them (Kafka's own defaults)."""

    default_min_insync_replicas: int = 1
    default_unclean_leader_election: bool = False
    max_partitions_listed: int = 1000  # at-risk partitions listed by name; all are counted


@dataclass(frozen=True)
class TopicAudit:
    name: str
    partitions: int
    replication_factor: int  # the lowest over the topic's partitions
    min_insync_replicas: int
    unclean_leader_election: bool
    flags: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "topic": self.name,
            "partitions": self.partitions,
            "replicationFactor": self.replication_factor,
            "minInsyncReplicas": self.min_insync_replicas,
            "uncleanLeaderElection": self.unclean_leader_election,
            "flags": list(self.flags),
        }


@dataclass(frozen=True)
class PartitionRisk:
    topic: str
    partition: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int | None
    min_insync_replicas: int
    risks: tuple[str, ...]
    isr_state: str = "under-replicated"  # one of ISR_STATES
    elr: tuple[int, ...] | None = None  # eligible leader replicas; None: the cluster did not report them

    @property
    def elr_state(self) -> str:
        if self.elr is None:
            return ELR_NOT_REPORTED
        return ELR_ELIGIBLE if self.elr else ELR_EMPTY

    def to_dict(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "replicas": list(self.replicas),
            "isr": list(self.isr),
            "leader": self.leader,
            "minInsyncReplicas": self.min_insync_replicas,
            "risks": list(self.risks),
            "isrState": self.isr_state,
            "elrState": self.elr_state,
            "elr": None if self.elr is None else list(self.elr),
        }


@dataclass(frozen=True)
class AuditReport:
    topics: tuple[TopicAudit, ...]
    at_risk: tuple[PartitionRisk, ...]
    risk_counts: dict[str, int] = field(default_factory=dict)
    at_risk_total: int = 0

    @property
    def flagged(self) -> tuple[TopicAudit, ...]:
        return tuple(t for t in self.topics if t.flags)

    def flag_counts(self) -> dict[str, int]:
        return {flag: sum(1 for t in self.topics if flag in t.flags) for flag in TOPIC_FLAGS}

    def to_dict(self) -> dict[str, Any]:
        return {
            "summary": {
                "topics": len(self.topics),
                "flaggedTopics": len(self.flagged),
                "topicFlags": self.flag_counts(),
                "partitionsAtRisk": self.at_risk_total,
                "partitionRisks": self.risk_counts,
            },
            "flaggedTopics": [t.to_dict() for t in self.flagged],
            "partitionsAtRisk": [p.to_dict() for p in self.at_risk],
            "topics": [t.to_dict() for t in self.topics],
        }


def _config_int(topic: str, raw: str) -> int:
    try:
        value = int(raw)
    except ValueError:
        raise ModelError(f"topic '{topic}': config '{MIN_INSYNC_REPLICAS}' must be an integer, got {raw!r}") from None
    if value < 1:
        raise ModelError(f"topic '{topic}': config '{MIN_INSYNC_REPLICAS}' must be >= 1, got {raw!r}")
    return value


def _config_bool(topic: str, raw: str) -> bool:
    if raw.strip().lower() in ("true", "false"):
        return raw.strip().lower() == "true"
    raise ModelError(f"topic '{topic}': config '{UNCLEAN_LEADER_ELECTION}' must be true or false, got {raw!r}")


def effective_settings(
    model: ClusterModel,
    configs: Mapping[str, Mapping[str, str]] | None = None,
    options: AuditOptions = AuditOptions(),
) -> tuple[np.ndarray[Any, np.dtype[np.int32]], np.ndarray[Any, np.dtype[np.bool_]]]:
    """Per topic (model order): min.insync.replicas and unclean election as Kafka applies them.

    Precedence: the topic config read from the cluster, then the setting in the model (snapshot),
    then the broker default.
    """
    configs = configs or {}
    min_isr = np.where(model.topic_min_isr > 0, model.topic_min_isr, options.default_min_insync_replicas)
    unclean = np.where(
        model.topic_unclean_election >= 0, model.topic_unclean_election == 1, options.default_unclean_leader_election
    )
    min_isr = min_isr.astype(np.int32)
    unclean = unclean.astype(np.bool_)
    for t, name in enumerate(model.topics):
        topic_config = configs.get(name, {})
        if MIN_INSYNC_REPLICAS in topic_config:
            min_isr[t] = _config_int(name, topic_config[MIN_INSYNC_REPLICAS])
        if UNCLEAN_LEADER_ELECTION in topic_config:
            unclean[t] = _config_bool(name, topic_config[UNCLEAN_LEADER_ELECTION])
    return min_isr, unclean


def audit(
    model: ClusterModel,
    configs: Mapping[str, Mapping[str, str]] | None = None,
    options: AuditOptions = AuditOptions(),
) -> AuditReport:
    """Flag risky topic settings and the partitions at risk now."""
    min_isr, unclean = effective_settings(model, configs, options)
    rf = model.replication_factor
    present = model.replicas != NO_BROKER
    alive = np.concatenate([model.broker_alive, np.array([False])])
    isr_size = (present & model.isr_mask & alive[model.replicas]).sum(axis=1)
    part_topic = model.partition_topic
    part_min_isr = min_isr[part_topic] if model.num_partitions else np.zeros(0, dtype=np.int32)

    leader_alive = (model.leader != NO_BROKER) & alive[model.leader]
    offline = ~leader_alive
    under_replicated = isr_size < rf
    at_min_isr = isr_size <= part_min_isr
    elr_size = (present & model.elr_mask).sum(axis=1) if model.elr_mask is not None else None
    no_eligible = at_min_isr & (elr_size == 0) if elr_size is not None else np.zeros_like(at_min_isr)
    # Worst first: offline, below min ISR, at min ISR, under-replicated (index into ISR_STATES).
    isr_state = np.select([offline, isr_size < part_min_isr, at_min_isr], [0, 1, 2], default=3)

    topics: list[TopicAudit] = []
    counts = np.bincount(part_topic, minlength=len(model.topics))
    # Lowest RF per topic in one pass (a per-topic mask would be topics x partitions: 10^9 at scale).
    lowest_rf = np.full(len(model.topics), np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(lowest_rf, part_topic, rf.astype(np.int64))
    for t, name in enumerate(model.topics):
        if counts[t] == 0:
            continue  # a topic known only from its settings has nothing to audit
        topic_rf = int(lowest_rf[t])
        flags = []
        if topic_rf < 3:
            flags.append(RF_BELOW_3)
        if min_isr[t] < 2:
            flags.append(MIN_ISR_BELOW_2)
        if min_isr[t] >= topic_rf:
            flags.append(MIN_ISR_NOT_BELOW_RF)
        if unclean[t]:
            flags.append(UNCLEAN_ELECTION)
        topics.append(TopicAudit(name, int(counts[t]), topic_rf, int(min_isr[t]), bool(unclean[t]), tuple(flags)))

    risky = np.flatnonzero(offline | under_replicated | at_min_isr)
    # Listed by ISR state, worst first, then ELR state (none before eligible), then by name.
    risky = risky[np.lexsort((risky, elr_size[risky] > 0 if elr_size is not None else risky * 0, isr_state[risky]))]
    masks = ((OFFLINE, offline), (UNDER_REPLICATED, under_replicated), (AT_MIN_ISR, at_min_isr),
             (NO_ELIGIBLE_LEADER, no_eligible))  # fmt: skip
    listed = []
    for p in risky[: options.max_partitions_listed].tolist():
        risks = tuple(name for name, mask in masks if mask[p])
        info = model.partition(p)
        alive_isr = tuple(b for b in info.isr if model.broker_alive[model.broker_index(b)])
        listed.append(
            PartitionRisk(info.topic, info.partition, info.replicas, alive_isr, info.leader if not offline[p] else None,
                          int(part_min_isr[p]), risks, ISR_STATES[int(isr_state[p])], model.elr_ids(p))
        )  # fmt: skip
    return AuditReport(
        topics=tuple(topics),
        at_risk=tuple(listed),
        risk_counts={
            OFFLINE: int(offline.sum()),
            UNDER_REPLICATED: int(under_replicated.sum()),
            AT_MIN_ISR: int(at_min_isr.sum()),
            NO_ELIGIBLE_LEADER: int(no_eligible.sum()),
        },
        at_risk_total=int(risky.size),
    )
