"""Cluster health checks made before each move starts: pure functions over a ClusterModel."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from kafka_balancer.executor.tasks import Task
from kafka_balancer.kafka.port import OngoingReassignment, TopicPartition
from kafka_balancer.model import NO_BROKER, ClusterModel


def offline_partitions(cluster: ClusterModel) -> list[str]:
    """Partitions without a leader, anywhere in the cluster: execution must not continue."""
    rows = np.flatnonzero(cluster.leader == NO_BROKER).tolist()
    return [f"{cluster.topic_name(p)}-{int(cluster.partition_id[p])}" for p in rows]


def partition_replicas(cluster: ClusterModel, tp: TopicPartition) -> tuple[int, ...] | None:
    """The partition's replicas, or None when the cluster no longer has it (its topic was deleted)."""
    try:
        return cluster.replica_ids(cluster.partition_index(tp.topic, tp.partition))
    except KeyError:
        return None


def below_min_isr(tasks: Sequence[Task], cluster: ClusterModel) -> list[str]:
    """Targets with fewer replicas than their topic's effective min.insync.replicas: once such a
    move completes, producers with acks=all fail. One line per partition."""
    out = []
    for task in tasks:
        try:
            p = cluster.partition_index(task.tp.topic, task.tp.partition)
        except KeyError:
            continue
        min_isr = int(cluster.topic_min_isr[int(cluster.partition_topic[p])])
        if len(task.target) < min_isr:
            out.append(
                f"{task.tp} -> {list(task.target)}: {len(task.target)} replicas, fewer than its "
                f"min.insync.replicas {min_isr}"
            )
    return out


def alive_brokers(cluster: ClusterModel) -> set[int]:
    return {int(b) for b, up in zip(cluster.broker_ids.tolist(), cluster.broker_alive.tolist(), strict=True) if up}


@dataclass(frozen=True)
class PollView:
    """What one poll read: the cluster, the reassignments in flight, and the live brokers (found once
    per poll, not once per move)."""

    cluster: ClusterModel
    ongoing: Mapping[TopicPartition, OngoingReassignment]
    alive: frozenset[int]

    @classmethod
    def of(cls, cluster: ClusterModel, ongoing: Mapping[TopicPartition, OngoingReassignment]) -> PollView:
        return cls(cluster, ongoing, frozenset(alive_brokers(cluster)))


def offline_target(task: Task, alive: frozenset[int]) -> int | None:
    """The first broker the move adds a replica to (or moves one on) that is not alive, if any. Kafka's
    metadata lists live brokers only: such a broker is down, or not registered (never started, removed)."""
    return next((b for b in (*task.adding, *(d.broker for d in task.between_dirs)) if b not in alive), None)


def move_blocker(task: Task, view: PollView) -> str | None:
    """Why this move must not start now, or None when it may.

    A partition whose ISR is at or below ``min.insync.replicas`` (when the topic sets it) is never
    touched: one more lagging replica and producers with ``acks=all`` would fail. A partition
    under-replicated for a reason outside the plan waits for its replicas to catch up, so a move
    never adds copy load to a partition that is already short of in-sync copies.
    """
    if task.tp in view.ongoing:
        return "another reassignment of this partition is in progress"
    cluster = view.cluster
    p = cluster.partition_index(task.tp.topic, task.tp.partition)
    offline = offline_target(task, view.alive)
    if offline is not None:
        return f"target broker {offline} is offline"
    replicas, isr = cluster.replica_ids(p), cluster.isr_ids(p)
    min_isr = int(cluster.topic_min_isr[int(cluster.partition_topic[p])])
    # At min ISR, one in-sync follower falling behind under the copy load fails acks=all producers.
    # A lone in-sync leader (replication factor 1, or min ISR 1 with the followers out) has no
    # follower the move could slow down: the move adds no risk there.
    # Where the cluster reports eligible leader replicas (KIP-966), the reason says whether any
    # replica outside the ISR could still take over cleanly; at min ISR there is none (Kafka keeps
    # ELR empty there), so the partition is at risk and stays where it is either way.
    if len(isr) < min_isr or (len(isr) == min_isr and len(isr) > 1):
        return f"ISR size {len(isr)} is at or below min.insync.replicas={min_isr}{_elr_text(cluster.elr_ids(p))}"
    # Out-of-sync replicas that this very move takes away are the plan's business (moving
    # replicas off a dead broker); any other one is a problem the move must not add load to.
    missing = [b for b in replicas if b not in isr and b not in task.removing]
    if missing:
        return f"under-replicated: replicas {missing} are out of sync"
    return None


def _elr_text(elr: tuple[int, ...] | None) -> str:
    if elr is None:
        return ""
    if not elr:
        return " and no eligible leader replica (KIP-966)"
    return f" (eligible leader replicas {list(elr)})"
