"""Where a move's replicas stand against the log directories the plan names (JBOD), from DescribeLogDirs.

One home for the reading of DescribeLogDirs that the executor, `stop` and a resume share: which named
directories are reached, which replicas must be asked (again) to go there, and how a move between a
broker's directories is taken back. A replica is in its directory when DescribeLogDirs lists it there
with no future replica; a future replica in the named directory is a copy under way.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kafka_balancer.executor.tasks import Task
from kafka_balancer.kafka.port import ReplicaLogDir, TopicPartition

# (broker, named directory, the directory the replica was in before, None for one a move adds)
DirEntry = tuple[int, str, str | None]
View = Mapping[tuple[TopicPartition, int], ReplicaLogDir]


@dataclass
class DirStanding:
    """For one partition: are all its named directories reached, which replicas to ask again, and the
    bytes copied so far by its moves between directories (future replicas)."""

    done: bool = True
    resend: dict[tuple[TopicPartition, int], str] = field(default_factory=dict)
    copied: float = 0.0


def standing(tp: TopicPartition, dirs: Iterable[DirEntry], view: View, size: float) -> DirStanding:
    """A replica not listed yet (a move still adding it) or in another directory with no copy to ours
    under way is asked again: kafka-reassign-partitions repeats AlterReplicaLogDirs until the broker
    hosts the replica (REPLICA_NOT_AVAILABLE before), and a replica created in another directory moves."""
    out = DirStanding()
    for broker, path, original in dirs:
        found = view.get((tp, broker))
        if found is not None and found.path == path and found.future_path is None:
            out.copied += size if original is not None else 0.0
            continue
        out.done = False
        if found is not None and found.future_path == path:
            out.copied += min(float(found.future_size), size)
        else:
            out.resend[(tp, broker)] = path
    return out


def take_back(tp: TopicPartition, dirs: Iterable[DirEntry], view: View) -> dict[tuple[TopicPartition, int], str]:
    """The AlterReplicaLogDirs that stop our copies between directories still under way: naming the
    directory a replica is in cancels its future replica. A copy that finished stays where it went."""
    return {
        (tp, broker): found.path
        for broker, path, _ in dirs
        if (found := view.get((tp, broker))) is not None and found.future_path == path
    }


def task_standing(task: Task, view: View) -> DirStanding:
    """:func:`standing` of a move's named directories."""
    return standing(task.tp, [(d.broker, d.path, d.original) for d in task.dirs], view, task.size_bytes)
