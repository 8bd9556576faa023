"""Ending an execution whose process is gone: what `kafka-balancer stop` does when no executor
is running, and what the operator does before replacing an unfinished execution."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

from kafka_balancer.executor.log_dirs import View, standing, take_back
from kafka_balancer.executor.state import ExecutionRecord, ExecutionState, InFlight, TaskState
from kafka_balancer.executor.store import ExecutionStore
from kafka_balancer.executor.throttle import ThrottleManager
from kafka_balancer.kafka.port import KafkaPort, OngoingReassignment, TopicPartition
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
    """Cancel the recorded in-flight moves that are still ours, remove the recorded throttles, mark
    the record Stopped.

    Works from the record alone (no plan needed): it names the in-flight partitions with their
    original and target replicas, and every throttle config the executor set. A partition whose
    reassignment now has another target is someone else's: it is left running (and its task given
    up); a move that finished while no executor ran counts as completed. Returns the final record,
    or None when the store is empty. A finished record is returned unchanged, except that throttles
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
    cluster = port.read_cluster(with_sizes=False)
    view = port.replica_log_dirs([(_tp(m), b) for m in record.in_flight for b, _, _ in m.dirs])
    outcome = {m: _outcome(m, ongoing, cluster, view) for m in record.in_flight}
    # Our copies between a broker's directories still under way: naming the current directory stops them.
    backs = {
        key: path
        for m, state in outcome.items()
        if state is TaskState.ABORTED
        for key, path in take_back(_tp(m), m.dirs, view).items()
    }
    if backs:
        port.alter_replica_log_dirs(backs)
    ours = [m for m, state in outcome.items() if state is TaskState.ABORTED and _tp(m) in ongoing]
    if ours:
        # Cancelling (KIP-455) puts each partition back on its original replicas, then their order.
        port.alter_reassignments({_tp(m): None for m in ours})
        _wait_gone(port, [_tp(m) for m in ours])
        cluster = port.read_cluster(with_sizes=False)
        originals = {_tp(m): m.original for m in ours if m.original is not None}
        restores = order_restores(cluster, originals)
        if restores:
            port.alter_reassignments(restores)
    left = ThrottleManager(port, None, record.throttles, save).clear()
    if left:
        reason += f"; throttles not removed: {', '.join(left)}"
    _record_outcomes(record, outcome)
    record.in_flight = []
    record.reason = reason
    record.state = ExecutionState.STOPPED
    save()
    return record


def _tp(m: InFlight) -> TopicPartition:
    return TopicPartition(m.topic, m.partition)


def _outcome(
    m: InFlight, ongoing: Mapping[TopicPartition, OngoingReassignment], cluster: ClusterModel, view: View
) -> TaskState:
    """What became of a recorded in-flight move: ABORTED (ours and still running: to cancel; or
    never applied), COMPLETED (it finished meanwhile, named directories included) or DEAD (someone
    else's reassignment runs or ran there since, or the partition is gone)."""
    running = ongoing.get(_tp(m))
    if running is not None:
        return TaskState.ABORTED if m.target is None or set(running.target) == set(m.target) else TaskState.DEAD
    try:
        current = set(cluster.replica_ids(cluster.partition_index(m.topic, m.partition)))
    except KeyError:
        return TaskState.DEAD
    if m.target is not None and current == set(m.target):
        return TaskState.COMPLETED if standing(_tp(m), m.dirs, view, 0.0).done else TaskState.ABORTED
    return TaskState.ABORTED if m.original is None or current == set(m.original) else TaskState.DEAD


def _record_outcomes(record: ExecutionRecord, outcome: Mapping[InFlight, TaskState]) -> None:
    for m, state in outcome.items():
        if m.index is None or not 0 <= m.index < len(record.tasks):
            continue
        record.tasks[m.index] = state
        if state is TaskState.COMPLETED:
            record.bytes_done += m.bytes
        elif state is TaskState.DEAD:
            record.dead_reasons[f"{m.topic}-{m.partition}"] = (
                "left alone when stopped: another reassignment of it is or was in progress, or it no longer exists"
            )
    # Version-1 records name no task positions: every task still in progress is cancelled.
    record.tasks = [TaskState.ABORTED if s is TaskState.IN_PROGRESS else s for s in record.tasks]


def _wait_gone(port: KafkaPort, tps: list[TopicPartition], timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while set(tps) & set(port.list_reassignments()) and time.monotonic() < deadline:
        time.sleep(0.2)
