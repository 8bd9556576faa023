"""The tasks of an execution: one per plan partition, compared with what the cluster has now."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from kafka_balancer.kafka.port import OngoingReassignment, TopicPartition
from kafka_balancer.model import ClusterModel, ModelError, ReassignmentPlan
from kafka_balancer.model.plan import check_log_dirs

# A move whose new replica copies no more than this is copied by the new replica's first fetch
# (replica.fetch.max.bytes, 1 MiB by default): it loads its brokers no more than the metadata change
# itself, so it takes no per-broker slot (concurrentMovesTotal still bounds it). On a dense cluster most
# partitions are small: at 5 slots a broker, 8,000 moves of near-empty partitions would take one poll
# per five moves of each receiving broker, where Kafka completes them all in seconds.
SMALL_MOVE_BYTES = 1024 * 1024


class TaskKind(StrEnum):
    MOVE = "move"  # the replica set changes: data is copied to the added brokers
    LOG_DIR = "log_dir"  # same brokers, a replica moves to another directory of its broker (JBOD)
    REORDER = "reorder"  # same brokers, another order: only the preferred leader changes
    NOOP = "noop"  # the cluster already has exactly this assignment


@dataclass(frozen=True)
class DirMove:
    """A replica the plan puts in a named log directory of its broker: ``original`` is the directory it
    is in now (None for a replica the move adds to the broker, or one whose directory is not known)."""

    broker: int
    path: str
    original: str | None


@dataclass(frozen=True)
class Task:
    index: int  # position in the plan (and in the record's task string)
    tp: TopicPartition
    original: tuple[int, ...]  # replicas before the execution touched the partition
    target: tuple[int, ...]
    size_bytes: float  # the leader's local log: what a copy between a broker's directories copies
    # Replicas to put in a named directory (AlterReplicaLogDirs): added ones and those moving between
    # their broker's directories; a replica already in its named directory is not listed.
    dirs: tuple[DirMove, ...] = ()
    # What each added replica copies from the leader (ClusterModel.copy_bytes: less than the local log
    # where tiered segments are skipped); None: the local log.
    copy_bytes: float | None = None

    @property
    def added_copy(self) -> float:
        """The bytes each replica this move adds copies from the leader."""
        return self.size_bytes if self.copy_bytes is None else self.copy_bytes

    @property
    def kind(self) -> TaskKind:
        if set(self.original) != set(self.target):
            return TaskKind.MOVE
        if self.dirs:
            return TaskKind.LOG_DIR
        return TaskKind.NOOP if self.original == self.target else TaskKind.REORDER

    @property
    def copies(self) -> bool:
        """Moves data (between brokers or between a broker's directories): run by the move loop."""
        return self.kind in (TaskKind.MOVE, TaskKind.LOG_DIR)

    @property
    def adding(self) -> tuple[int, ...]:
        return tuple(b for b in self.target if b not in self.original)

    @property
    def removing(self) -> tuple[int, ...]:
        return tuple(b for b in self.original if b not in self.target)

    @property
    def between_dirs(self) -> tuple[DirMove, ...]:
        """Replicas moved between two directories of a broker that keeps them (intra-broker copies)."""
        return tuple(d for d in self.dirs if d.broker in self.original)

    @property
    def brokers(self) -> frozenset[int]:
        """The brokers a move loads: those receiving a replica and those giving one up (as Cruise
        Control counts them), and those copying a replica between their directories. Per-broker
        concurrency limits count the move on each of these."""
        return frozenset(self.adding) | frozenset(self.removing) | {d.broker for d in self.between_dirs}

    @property
    def small(self) -> bool:
        """A move between brokers whose new replicas copy at most SMALL_MOVE_BYTES each (no slot of its own)."""
        return self.kind is TaskKind.MOVE and not self.between_dirs and self.added_copy <= SMALL_MOVE_BYTES

    @property
    def bytes_to_move(self) -> float:
        return self.added_copy * len(self.adding) + self.size_bytes * len(self.between_dirs)


def build_tasks(
    plan: ReassignmentPlan,
    cluster: ClusterModel,
    ongoing: Mapping[TopicPartition, OngoingReassignment],
) -> list[Task]:
    """Tasks in plan order. A partition under reassignment (e.g. ours, before a crash) has its
    original replicas recovered from the reassignment (replicas minus adding). A target broker the
    metadata does not list is offline (a broker that is down and holds nothing is not listed): its
    moves wait for it (safety.move_blocker). Named log directories must be their brokers' (check_log_dirs)."""
    check_log_dirs(plan, cluster)
    # A broker's only log directory is where Kafka puts its replicas anyway: naming it would cost an
    # AlterReplicaLogDirs and a DescribeLogDirs of the move at every poll, for nothing.
    single = {int(b) for i, b in enumerate(cluster.broker_ids.tolist()) if len(cluster.log_dirs(i)) == 1}
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
        dirs = []
        for b, path in target.named_log_dirs.items():
            if b in single:
                continue
            now = cluster.replica_log_dir(p, b) if b in current else None
            if now != path:
                dirs.append(DirMove(b, path, now))
        size, copy = float(cluster.size_bytes[p]), float(cluster.copy_bytes[p])
        tasks.append(Task(i, tp, current, target.replicas, size, tuple(dirs), None if copy == size else copy))
    return tasks
