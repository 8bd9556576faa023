"""The copying of the moves in flight: bytes copied and the rate of each (DescribeLogDirs), moves with no
progress for stuckAfterSeconds (reported, optionally cancelled), and when to poll next from the rates.
"""

from __future__ import annotations

import logging

from kafka_balancer.executor.ledger import Ledger
from kafka_balancer.executor.log_dirs import View, task_standing
from kafka_balancer.executor.tasks import Task
from kafka_balancer.kafka.port import KafkaError, KafkaPort, TopicPartition

# The adaptive poll (see next_poll_in) never polls more often than this.
MIN_POLL_SECONDS = 0.5

log = logging.getLogger(__name__)


def watch_in_flight(ledger: Ledger, port: KafkaPort, view: View, now: float) -> bool:
    """Measure copied bytes; report (and optionally cancel) moves with no progress for stuckAfter.
    ``view``: where the named-directory replicas are, this poll. True when a move was cancelled."""
    options = ledger.options
    last = ledger.measured_at
    if not ledger.in_flight or (last is not None and now - last < options.measure_interval_seconds):
        return False
    ledger.measured_at = now
    sizes = _added_sizes(ledger, port)
    if sizes is None:
        return False
    to_cancel: list[Task] = []
    for i, task in ledger.in_flight.items():
        copied = sum(min(float(sizes.get((task.tp, b), 0)), task.added_copy) for b in task.adding)
        if task.between_dirs:
            copied += task_standing(task, view).copied
        if copied > ledger.copied.get(i, 0.0):
            since = now - ledger.last_progress.get(i, now)
            if since > 0:
                ledger.copy_rate[i] = (copied - ledger.copied.get(i, 0.0)) / since
            ledger.copied[i] = copied
            ledger.last_progress[i] = now
            ledger.stuck.discard(i)
        elif now - ledger.last_progress.setdefault(i, now) >= options.stuck_after_seconds:
            ledger.stuck.add(i)
            if options.cancel_stuck:
                to_cancel.append(task)
    if not to_cancel:
        return False
    _cancel_stuck(ledger, port, to_cancel)
    return True


def _added_sizes(ledger: Ledger, port: KafkaPort) -> dict[tuple[TopicPartition, int], int] | None:
    try:
        # Only the replicas being added: a dense cluster's every replica is a large DescribeLogDirs.
        found = port.replica_log_dirs([(t.tp, b) for t in ledger.in_flight.values() for b in t.adding])
        return {key: r.size for key, r in found.items()}
    except KafkaError as err:
        # Sizes only measure progress: with a broker down (DescribeLogDirs goes to every
        # broker) moves still run and finish, so go on blind rather than stall every move.
        log.warning("cannot measure copy progress this poll: %s", err)
        return None


def _cancel_stuck(ledger: Ledger, port: KafkaPort, to_cancel: list[Task]) -> None:
    # Reported stuck before they are cancelled, as without cancelStuck: progress.stuck, the gauge
    # and the MovesStuck event name every move that got stuck (docs/executor.md).
    ledger.emit()
    port.alter_reassignments({t.tp: None for t in to_cancel})
    reason = f"stuck: no progress for {ledger.options.stuck_after_seconds:g}s, reassignment cancelled"
    for task in to_cancel:
        ledger.give_up(task.index, reason)


def next_poll_in(ledger: Ledger) -> float:
    """Seconds until the next poll: the poll interval, or sooner when an in-flight move
    should finish before it at its current copy rate, so that its slot is refilled at
    once (short moves would otherwise leave a broker idle for most of an interval).
    Never more often than every half second (or the interval, if shorter): each poll reads
    the cluster's metadata, which is not free on a large cluster."""
    interval = ledger.options.poll_interval_seconds
    soonest = interval
    now = ledger.clock.now()
    for i, rate in ledger.copy_rate.items():
        task = ledger.in_flight.get(i)
        if task is not None and rate > 0:
            # Copied as of the last measurement, plus what the rate has copied since.
            copied = ledger.copied.get(i, 0.0) + rate * (now - ledger.last_progress.get(i, now))
            soonest = min(soonest, (task.bytes_to_move - copied) / rate)
    return max(min(interval, MIN_POLL_SECONDS), soonest)
