"""The tasks of an execution: one per plan partition, compared with what the cluster has now."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from kafka_balancer.kafka.port import OngoingReassignment, TopicPartition
from kafka_balancer.model import ClusterModel, ModelError, ReassignmentPlan


class TaskKind(StrEnum):
    MOVE = "move"  # the replica set changes: data is copied to the added brokers
    REORDER = "reorder"  # same brokers, another order: only the preferred leader changes
    NOOP = "noop"  # the cluster already has exactly this assignment


@dataclass(frozen=True)
class Task:
    index: int  # position in the plan (and in the record's task string)
    tp: TopicPartition
    original: tuple[int, ...]  # replicas before the execution touched the partition
    target: tuple[int, ...]
    size_bytes: float  # the leader's log size: what each added replica must copy

    @property
    def kind(self) -> TaskKind:
        if set(self.original) != set(self.target):
            return TaskKind.MOVE
        return TaskKind.NOOP if self.original == self.target else TaskKind.REORDER

    @property
    def adding(self) -> tuple[int, ...]:
        return tuple(b for b in self.target if b not in self.original)

    @property
    def removing(self) -> tuple[int, ...]:
        return tuple(b for b in self.original if b not in self.target)

    @property
    def brokers(self) -> frozenset[int]:
        """The brokers a move loads: those receiving a replica and those giving one up (as Cruise
        Control counts them). Per-broker concurrency limits count the move on each of these."""
        return frozenset(self.adding) | frozenset(self.removing)

    @property
    def bytes_to_move(self) -> float:
        return self.size_bytes * len(self.adding)


def build_tasks(
    plan: ReassignmentPlan,
    cluster: ClusterModel,
    ongoing: Mapping[TopicPartition, OngoingReassignment],
) -> list[Task]:
    """Tasks in plan order. A partition under reassignment (e.g. ours, before a crash) has its
    original replicas recovered from the reassignment (replicas minus adding). A target broker the
    metadata does not list is offline (a broker that is down and holds nothing is not listed): its
    moves wait for it (safety.move_blocker)."""
    tasks = []
    for i, target in enumerate(plan.partitions):
        tp = TopicPartition(target.topic, target.partition)
        try:
            p = cluster.partition_index(target.topic, target.partition)
        except KeyError:
            raise ModelError(f"plan: partitions[{i}] ({tp}): the cluster has no such partition") from None
        current = cluster.replica_ids(p)
        running = ongoing.get(tp)
        if running is not None:
            current = tuple(b for b in running.replicas if b not in running.adding)
        tasks.append(Task(i, tp, current, target.replicas, float(cluster.size_bytes[p])))
    return tasks
