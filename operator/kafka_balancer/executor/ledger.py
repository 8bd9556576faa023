"""The bookkeeping of one execution run, shared by its phases: the record (saved whenever a task changes
state), the tasks and the moves in flight with their measured copies, the totals, and the progress
reported from them.

No Kafka call is made here; the phases (executor.start, executor.move_loop, executor.leadership,
executor.wind_down) change this state and call :meth:`Ledger.save` and :meth:`Ledger.emit`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from kafka_balancer.executor.missing import MissingTargets
from kafka_balancer.executor.options import Clock, ExecutorOptions
from kafka_balancer.executor.patience import Patience
from kafka_balancer.executor.progress import Progress, RateMeter, broker_progress, eta
from kafka_balancer.executor.state import ExecutionRecord, ExecutionState, InFlight, TaskState, plan_id
from kafka_balancer.executor.store import ExecutionStore
from kafka_balancer.executor.tasks import Task
from kafka_balancer.kafka.port import OngoingReassignment
from kafka_balancer.model import ReassignmentPlan

VANISHED = "the partition no longer exists (its topic was deleted?)"
# A move whose partition another tool reassigned to another target meanwhile: theirs now, never cancelled.
TAKEN_OVER = "taken over: another reassignment of this partition, to"

ProgressCallback = Callable[[Progress], None]
log = logging.getLogger(__name__)


class Ledger:
    """What a run knows about its tasks, and the saving and reporting of it."""

    def __init__(
        self,
        plan: ReassignmentPlan,
        store: ExecutionStore,
        options: ExecutorOptions,
        clock: Clock,
        on_progress: ProgressCallback | None,
    ) -> None:
        self.plan = plan
        self.store = store
        self.options = options
        self.clock = clock
        self.on_progress = on_progress
        self.stop = threading.Event()
        self._meter = RateMeter()
        self.tasks: list[Task] = []
        self.record = ExecutionRecord(plan_id(plan), ExecutionState.PENDING, [TaskState.PENDING] * len(plan))
        self.in_flight: dict[int, Task] = {}
        self.stuck: set[int] = set()
        self.blocked: dict[int, str] = {}
        self.copied: dict[int, float] = {}  # in-flight task -> bytes copied so far
        self.last_progress: dict[int, float] = {}
        self.copy_rate: dict[int, float] = {}  # in-flight task -> bytes/s between measurements
        self.measured_at: float | None = None
        self.bytes_total = 0.0
        self.leaders_total = 0
        self.leaders_done = 0
        self.election_failures: dict[str, str] = {}
        self.throttle_failures: list[str] = []
        self.started = 0.0
        self.submitted = 0
        self.patience = Patience(clock, options.unavailable_timeout_seconds, options.poll_interval_seconds, self.emit)
        # Submitted moves whose AlterPartitionReassignments got no answer: whether Kafka took them shows
        # at the next poll (in flight with our target, or not at all: then they are submitted again).
        self.unconfirmed: set[int] = set()
        self.missing = MissingTargets(options.stuck_after_seconds)

    def stopping(self) -> bool:
        return self.stop.is_set() or self.store.stop_requested()

    def set_state(self, state: ExecutionState) -> None:
        self.record.state = state
        self.save()

    def save(self) -> None:
        if self.options.dry_run:
            return
        self.record.updated_at = time.time()
        self.store.save(self.record.to_dict())

    def sync_in_flight(self) -> None:
        self.record.in_flight = [
            InFlight(
                t.tp.topic,
                t.tp.partition,
                t.bytes_to_move,
                t.original,
                t.target,
                t.index,
                tuple((d.broker, d.path, d.original) for d in t.dirs),
            )
            for t in sorted(self.in_flight.values(), key=lambda t: t.tp)
        ]

    def count_bytes_total(self) -> None:
        """The bytes done plus those the unfinished moves copy."""
        states = self.record.tasks
        self.bytes_total = self.record.bytes_done + sum(
            t.bytes_to_move for t in self.tasks if t.copies and not states[t.index].finished
        )

    # ----- ending tasks ------------------------------------------------------------------
    def give_up(self, i: int, reason: str) -> None:
        self.record.tasks[i] = TaskState.DEAD
        self.record.dead_reasons[str(self.tasks[i].tp)] = reason
        self.forget(i)

    def taken_over(self, i: int, running: OngoingReassignment) -> None:
        """Another tool reassigned a partition this run was moving, to another target: the partition is
        theirs now. It is never waited for nor cancelled; the task ends dead, saying so."""
        task = self.tasks[i]
        log.warning("%s was taken over by a reassignment to %s (ours: %s)", task.tp, list(running.target), task.target)
        self.give_up(i, f"{TAKEN_OVER} {list(running.target)}, not {list(task.target)}; left to it")

    def forget(self, i: int) -> None:
        self.unconfirmed.discard(i)
        self.in_flight.pop(i, None)
        self.copied.pop(i, None)
        self.last_progress.pop(i, None)
        self.copy_rate.pop(i, None)
        self.stuck.discard(i)

    # ----- reporting ---------------------------------------------------------------------
    def stuck_names(self) -> tuple[str, ...]:
        """In flight with no progress for stuckAfterSeconds, or pending as long on a missing target broker
        (a move given up or done since is no longer stuck)."""
        waiting = {i for i in self.missing.stuck(self.clock.now()) if self.record.tasks[i] is TaskState.PENDING}
        return tuple(sorted(str(self.tasks[i].tp) for i in self.stuck | waiting))

    def taken_over_partitions(self) -> list[str]:
        return sorted(tp for tp, why in self.record.dead_reasons.items() if why.startswith(TAKEN_OVER))

    def progress(self) -> Progress:
        states = self.record.tasks
        partial = sum(self.copied.values())
        moved = self.record.bytes_done + partial
        now = self.clock.now()
        self._meter.add(now, moved)
        rate = self._meter.rate()
        dead_bytes = sum(t.bytes_to_move for t in self.tasks if states[t.index] in (TaskState.DEAD, TaskState.ABORTED))
        return Progress(
            state=self.record.state,
            partitions_total=len(self.tasks),
            partitions_done=sum(1 for s in states if s is TaskState.COMPLETED),
            partitions_in_progress=len(self.in_flight),
            partitions_dead=sum(1 for s in states if s is TaskState.DEAD),
            partitions_aborted=sum(1 for s in states if s is TaskState.ABORTED),
            bytes_total=self.bytes_total,
            bytes_moved=moved,
            leaders_total=self.leaders_total,
            leaders_done=self.leaders_done,
            rate_bytes_per_sec=rate,
            eta_seconds=eta(self.bytes_total - moved - dead_bytes, rate),
            elapsed_seconds=now - self.started,
            brokers=broker_progress(self.tasks, states, self.in_flight, self.copied),
            stuck=self.stuck_names(),
            blocked={str(self.tasks[i].tp): self.missing.reason(i, now) or w for i, w in sorted(self.blocked.items())},
            waiting=self.patience.describe(),
            taken_over=tuple(self.taken_over_partitions()),
        )

    def emit(self) -> None:
        if self.on_progress is not None:
            self.on_progress(self.progress())
