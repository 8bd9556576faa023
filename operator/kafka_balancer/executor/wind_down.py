"""Winding a run down (Stopping, then Stopped or Failed): our in-flight moves cancelled, replicas taken
back to their directories and to their original order, throttles removed; each step waits for a cluster
that cannot answer (bounded, executor.patience). A wind-down that still cannot finish leaves the record
Stopping, and running again finishes it.
"""

from __future__ import annotations

from functools import partial

from kafka_balancer.executor.cluster_calls import ClusterCalls
from kafka_balancer.executor.ledger import VANISHED, Ledger
from kafka_balancer.executor.log_dirs import take_back, task_standing
from kafka_balancer.executor.result import ExecutionResult, result
from kafka_balancer.executor.safety import partition_replicas
from kafka_balancer.executor.state import ExecutionState, TaskState
from kafka_balancer.kafka.port import KafkaUnavailableError, PortClosedError


def wind_down(ledger: Ledger, calls: ClusterCalls, *, failed: bool) -> ExecutionResult:
    """Stop (or fail): cancel our in-flight moves (never one another tool took over), remove our
    throttles, report."""
    record = ledger.record
    reason = record.reason
    ledger.set_state(ExecutionState.STOPPING)
    ongoing = calls.list_reassignments()
    for i, task in list(ledger.in_flight.items()):
        running = ongoing.get(task.tp)
        if running is not None and set(running.target) != set(task.target) and task.target != task.original:
            ledger.taken_over(i, running)
    cancelling = dict(ledger.in_flight)
    reassigning = [t for t in cancelling.values() if t.target != t.original and t.tp in ongoing]
    if reassigning:
        calls.patience.call(
            "cancelling the moves in flight",
            lambda: calls.port.alter_reassignments({t.tp: None for t in reassigning}),
        )
        calls.wait_reassignments_gone([t.tp for t in reassigning])
    view = calls.read_dirs(list(cancelling.values()))
    backs = {
        key: path
        for t in cancelling.values()
        for key, path in take_back(t.tp, [(d.broker, d.path, d.original) for d in t.dirs], view).items()
    }
    if backs:
        calls.patience.call("taking replicas to their directories", partial(calls.port.alter_replica_log_dirs, backs))
    cluster = calls.read_cluster()
    for i, task in cancelling.items():
        current = partition_replicas(cluster, task.tp)
        if current is None:
            ledger.give_up(i, VANISHED)
            continue
        # A move may have finished just before the cancel reached the controller (a copy between
        # directories that finished stays where it went: the task counts as aborted unless all did).
        done = set(current) == set(task.target) and (not task.dirs or task_standing(task, view).done)
        record.tasks[i] = TaskState.COMPLETED if done else TaskState.ABORTED
        if done:
            record.bytes_done += task.bytes_to_move
        ledger.forget(i)
    calls.restore_order(cluster, [t for i, t in cancelling.items() if record.tasks[i] is TaskState.ABORTED])
    ledger.sync_in_flight()
    left = clear_throttles(calls)
    record.reason = reason if failed else "stopped on request"
    if left:
        record.reason += f"; throttles not removed: {', '.join(left)}"
    ledger.set_state(ExecutionState.FAILED if failed else ExecutionState.STOPPED)
    ledger.emit()
    return result(ledger)


def clear_throttles(calls: ClusterCalls) -> list[str]:
    """Remove every throttle this run set, trying again while a broker or the controller cannot answer
    (a broker that hung may be back in seconds; bounded). What is still left then (a broker that stays
    down) is reported and stays in the record: the next run adopts it, `kafka-balancer stop` removes it."""
    throttles, patience = calls.throttles, calls.patience
    while True:
        left = throttles.clear()
        if not throttles.unanswered:
            patience.answered()
            return left
        try:
            unanswered = KafkaUnavailableError("THROTTLES_NOT_REMOVED", ", ".join(throttles.unanswered))
            patience.failed("removing throttles", unanswered)
        except PortClosedError:
            raise
        except KafkaUnavailableError:
            patience.answered()
            return left
        calls.clock.sleep(calls.options.poll_interval_seconds)
