"""Which moves to start, and in which order: pure functions over tasks and counts, no I/O.

The executor calls :func:`pick_moves` after every poll, so a slot freed by a finished move is
refilled at once (no batch waves). Candidates are scanned past a task whose brokers are full, so
a busy broker never idles the others.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from kafka_balancer.executor.tasks import Task
from kafka_balancer.kafka.port import OngoingReassignment, TopicPartition
from kafka_balancer.model import NO_BROKER, ClusterModel, ModelError

DEFAULT_MOVES_PER_BROKER = 5
DEFAULT_MOVES_TOTAL = 1000


@dataclass(frozen=True)
class Limits:
    per_broker: int = DEFAULT_MOVES_PER_BROKER
    total: int = DEFAULT_MOVES_TOTAL

    def __post_init__(self) -> None:
        if self.per_broker < 1:
            raise ModelError(f"execution: field 'concurrentMovesPerBroker' must be >= 1, got {self.per_broker}")
        if self.total < 1:
            raise ModelError(f"execution: field 'concurrentMovesTotal' must be >= 1, got {self.total}")


def broker_counts(tasks: Iterable[Task]) -> dict[int, int]:
    """Per broker, the moves that take one of its slots (small moves take none: tasks.SMALL_MOVE_BYTES)."""
    counts: dict[int, int] = {}
    for task in tasks:
        if task.small:
            continue
        for b in task.brokers:
            counts[b] = counts.get(b, 0) + 1
    return counts


def foreign_counts(
    ongoing: Mapping[TopicPartition, OngoingReassignment], ours: Iterable[TopicPartition]
) -> dict[int, int]:
    """Per broker, the reassignments in flight on the cluster that are not ours (another executor,
    operator or tool): each loads the brokers it adds replicas to and takes them from, as ours do."""
    mine = set(ours)
    counts: dict[int, int] = {}
    for tp, running in ongoing.items():
        if tp in mine:
            continue
        for b in {*running.adding, *running.removing}:
            counts[b] = counts.get(b, 0) + 1
    return counts


def pick_moves(
    candidates: Sequence[Task],
    in_flight: Sequence[Task],
    limits: Limits,
    eligible: Callable[[Task], bool] = lambda _t: True,
    *,
    busy: Mapping[int, int] | None = None,
) -> list[Task]:
    """The candidates (already in strategy order) to start now without exceeding the limits. ``busy``:
    per broker, moves in flight that are not ours; they count against the per-broker limit too."""
    counts = broker_counts(in_flight)
    for b, n in (busy or {}).items():
        counts[b] = counts.get(b, 0) + n
    total = len(in_flight)
    picked: list[Task] = []
    for task in candidates:
        if total >= limits.total:
            break
        slots = () if task.small else task.brokers
        if any(counts.get(b, 0) >= limits.per_broker for b in slots):
            continue
        if not eligible(task):
            continue
        picked.append(task)
        total += 1
        for b in slots:
            counts[b] = counts.get(b, 0) + 1
    return picked


class OrderStrategy(Protocol):
    """Orders the moves of a plan: the executor starts them in this order as slots free up."""

    name: str

    def order(self, tasks: Sequence[Task], cluster: ClusterModel) -> list[Task]: ...


class SmallFirst:
    """Smallest partitions first: the most partitions done per byte, the fastest visible progress."""

    name = "small-first"

    def order(self, tasks: Sequence[Task], cluster: ClusterModel) -> list[Task]:  # noqa: ARG002 (protocol)
        return sorted(tasks, key=lambda t: (t.bytes_to_move, t.index))


class HelpfulFirst:
    """Moves that relieve the most loaded brokers (by bytes on disk) first, then small before large.

    A move helps by the bytes it takes off brokers above the mean and puts on brokers below it
    (each capped at the partition size), judged on the load before execution starts.
    """

    name = "helpful-first"

    def order(self, tasks: Sequence[Task], cluster: ClusterModel) -> list[Task]:
        load = disk_load_by_broker(cluster)
        alive = [b for b, live in zip(cluster.broker_ids.tolist(), cluster.broker_alive.tolist(), strict=True) if live]
        mean = float(np.mean([load.get(b, 0.0) for b in alive])) if alive else 0.0

        def benefit(task: Task) -> float:
            size = task.size_bytes
            off = sum(min(size, max(0.0, load.get(b, 0.0) - mean)) for b in task.removing)
            on = sum(min(size, max(0.0, mean - load.get(b, 0.0))) for b in task.adding)
            return off + on

        return sorted(tasks, key=lambda t: (-benefit(t), t.bytes_to_move, t.index))


STRATEGIES: Mapping[str, type[HelpfulFirst] | type[SmallFirst]] = {
    HelpfulFirst.name: HelpfulFirst,
    SmallFirst.name: SmallFirst,
}


def strategy_named(name: str) -> OrderStrategy:
    try:
        return STRATEGIES[name]()
    except KeyError:
        raise ModelError(f"execution: field 'strategy' must be one of {sorted(STRATEGIES)}, got {name!r}") from None


def disk_load_by_broker(cluster: ClusterModel) -> dict[int, float]:
    """Bytes on disk per broker id: every replica holds a full copy of its partition."""
    rows = cluster.replicas
    mask = rows != NO_BROKER
    sizes = np.broadcast_to(cluster.size_bytes[:, None], rows.shape)[mask]
    per_index = np.bincount(rows[mask], weights=sizes, minlength=cluster.num_brokers)
    return {int(b): float(v) for b, v in zip(cluster.broker_ids.tolist(), per_index.tolist(), strict=True)}
