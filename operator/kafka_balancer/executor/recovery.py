"""Ending an execution whose process is gone: what `kafka-balancer stop` does when no executor
is running, and what the operator does before replacing an unfinished execution."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

from kafka_balancer.executor.state import ExecutionRecord, ExecutionState, TaskState
from kafka_balancer.executor.store import ExecutionStore
from kafka_balancer.executor.throttle import ThrottleManager
from kafka_balancer.kafka.port import KafkaPort, TopicPartition
from kafka_balancer.model import ClusterModel


def order_restores(
    cluster: ClusterModel, originals: Mapping[TopicPartition, Sequence[int]]
) -> dict[TopicPartition, Sequence[int] | None]:
    """The order-only reassignments that put cancelled partitions back in their original order.

    Cancelling (KIP-455) drops the replicas being added from the in-flight list (target +
    removing): the original replicas come back, but possibly in another order and so with another
    preferred leader. Reassigning to the original order copies no data."""
    out: dict[TopicPartition, Sequence[int] | None] = {}
    for tp, original in originals.items():
        current = cluster.replica_ids(cluster.partition_index(tp.topic, tp.partition))
        if set(current) == set(original) and tuple(current) != tuple(original):
            out[tp] = list(original)
    return out


def abandon(
    port: KafkaPort, store: ExecutionStore, *, reason: str = "stopped with no executor running"
) -> ExecutionRecord | None:
    """Cancel the recorded in-flight moves, remove the recorded throttles, mark the record Stopped.

    Works from the record alone (no plan needed): it names the in-flight partitions and every
    throttle config the executor set, with the values to restore. Returns the final record, or
    None when the store is empty. A finished record is returned unchanged, except that throttles
    it still lists (a broker was down when it ended) are removed.
    """
    raw = store.load()
    if raw is None:
        return None
    record = ExecutionRecord.from_dict(raw)
    if record.state.finished and record.throttles.empty:
        return record

    def save() -> None:
        record.updated_at = time.time()
        store.save(record.to_dict())

    if record.state.finished:
        # Only throttles left behind (a broker was down when the run ended): remove them now.
        ThrottleManager(port, None, record.throttles, save).clear()
        return record
    record.state = ExecutionState.STOPPING
    save()
    ongoing = port.list_reassignments()
    ours = [TopicPartition(t, p) for t, p, _ in record.in_flight if TopicPartition(t, p) in ongoing]
    if ours:
        # Cancelling (KIP-455) puts each partition back on its original replicas.
        port.alter_reassignments(dict.fromkeys(ours))
    left = ThrottleManager(port, None, record.throttles, save).clear()
    if left:
        reason += f"; throttles not removed: {', '.join(left)}"
    record.tasks = [TaskState.ABORTED if s is TaskState.IN_PROGRESS else s for s in record.tasks]
    record.in_flight = []
    record.reason = reason
    record.state = ExecutionState.STOPPED
    save()
    return record
