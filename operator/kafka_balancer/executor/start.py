"""The start of a run, reconciled with the cluster: the tasks built from the plan and what is in flight,
an unfinished execution of the same plan resumed (a different plan's refused), the throttles a finished
run left adopted, and each task's state set from what the cluster reports (the record an earlier run
saved says what may have happened before it stopped or crashed: executor.engine).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

from kafka_balancer.executor.cluster_calls import ClusterCalls
from kafka_balancer.executor.ledger import Ledger
from kafka_balancer.executor.safety import below_min_isr
from kafka_balancer.executor.state import ExecutionRecord, ExecutionState, TaskState
from kafka_balancer.executor.tasks import TaskKind, build_tasks
from kafka_balancer.kafka.port import OngoingReassignment, TopicPartition
from kafka_balancer.model import ClusterModel, ModelError

log = logging.getLogger(__name__)


class ExecutionConflictError(ModelError):
    """The store holds an unfinished execution of another plan."""


def start(ledger: Ledger, calls: ClusterCalls, context: dict[str, str]) -> ClusterModel:
    """Build the tasks and set their states; the cluster as read, with sizes. Bad input (a plan that
    does not fit the cluster, another unfinished execution in the store) raises ModelError before
    anything is sent or saved."""
    ledger.started = ledger.clock.now()
    saved = ledger.store.load()
    earlier = ExecutionRecord.from_dict(saved) if saved is not None else None
    ongoing, cluster = calls.read_start(resuming=earlier is not None and not earlier.state.finished)
    ledger.tasks = build_tasks(ledger.plan, cluster, ongoing)
    unsafe = below_min_isr(ledger.tasks, cluster)
    if unsafe:
        shown = "; ".join(unsafe[:10]) + (f"; and {len(unsafe) - 10} more" if len(unsafe) > 10 else "")
        raise ModelError(f"plan refused, nothing was executed: {shown}")
    resumed = _take_over_record(ledger, calls, saved, earlier)
    if not resumed:
        ledger.record.started_at = time.time()
    ledger.record.context.update(context)
    _reconcile_tasks(ledger, ongoing, resumed)
    ledger.count_bytes_total()
    ledger.sync_in_flight()
    if not ledger.options.dry_run:
        ledger.save()
    ledger.emit()
    return cluster


def _take_over_record(
    ledger: Ledger, calls: ClusterCalls, saved: dict[str, Any] | None, earlier: ExecutionRecord | None
) -> bool:
    """Resume the earlier execution when it is this plan's and unfinished (True); else adopt the
    throttles a finished one left."""
    if earlier is not None and not earlier.state.finished:
        if earlier.plan_id != ledger.record.plan_id:
            raise ExecutionConflictError(
                f"execution store holds an unfinished execution of plan {earlier.plan_id} "
                f"(state {earlier.state.value}), not of this plan {ledger.record.plan_id}: "
                "stop it first (kafka-balancer stop)"
            )
        ledger.record = ExecutionRecord.from_dict(saved, ledger.plan)
        calls.throttles.record = ledger.record.throttles
        return True
    if earlier is not None and not earlier.throttles.empty:
        # A run that ended with throttles it could not remove (a broker down or hung at its end):
        # they are this run's to remove now, with its own (nothing else knows them).
        ledger.record.throttles = earlier.throttles
        calls.throttles.record = ledger.record.throttles
        log.info("adopting the throttles the last run left: %s", earlier.throttles.to_dict())
    return False


def _reconcile_tasks(ledger: Ledger, ongoing: Mapping[TopicPartition, OngoingReassignment], resumed: bool) -> None:
    """Each task's state from what is in flight on the cluster and, when resumed, in the record."""
    states = ledger.record.tasks
    # What the previous run had in flight, with the bytes each copies (the cluster no longer
    # shows them for a move that finished while no executor was running).
    recorded = {(m.topic, m.partition): m for m in ledger.record.in_flight} if resumed else {}
    for task in ledger.tasks:
        i = task.index
        if resumed and states[i] in (TaskState.COMPLETED, TaskState.DEAD, TaskState.ABORTED):
            continue  # never redone: a completed move is not submitted again
        running = ongoing.get(task.tp)
        mine = recorded.get((task.tp.topic, task.tp.partition))
        if running is not None and mine is not None and set(running.target) == set(mine.target or task.target):
            states[i] = TaskState.IN_PROGRESS  # ours, submitted before a restart: adopt it
            ledger.in_flight[i] = task
        elif running is not None and mine is not None:
            ledger.taken_over(i, running)  # re-targeted by someone else while no executor ran
        elif running is None and task.kind is TaskKind.NOOP:
            if states[i] is TaskState.IN_PROGRESS:
                ledger.record.bytes_done += mine.bytes if mine is not None else 0.0
            states[i] = TaskState.COMPLETED
        else:
            states[i] = TaskState.PENDING


def resume_after_wind_down(ledger: Ledger, calls: ClusterCalls) -> ClusterModel:
    """After finishing a wind-down an earlier run could not: the moves it cancelled are pending again."""
    states = ledger.record.tasks
    for task in ledger.tasks:
        if states[task.index] is TaskState.ABORTED:
            states[task.index] = TaskState.PENDING
    ledger.record.reason = ""
    ledger.count_bytes_total()
    ledger.set_state(ExecutionState.MOVING_REPLICAS)
    log.info("the wind-down an earlier run left unfinished is done; resuming the plan")
    return calls.read_start(resuming=True)[1]
