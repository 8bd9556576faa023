"""The execution state machine: Pending -> MovingReplicas -> ElectingLeaders -> Completed,
with Stopping -> Stopped and Failed on the side.

One loop polls the cluster (ListPartitionReassignments + metadata), retires finished moves,
starts new ones as soon as a slot frees (never in waves), and saves the record whenever a task
changes state. The record is saved *before* anything it describes is done (a move submitted,
a throttle set), so after a crash the next run knows everything that may have happened and
reconciles it with what the cluster reports.

:class:`Executor` runs the phases in order, each in its own module, sharing the run's bookkeeping
(executor.ledger) and its calls to the cluster (executor.cluster_calls):

- executor.start: the start, reconciled with the cluster and with the record of an earlier run;
- executor.move_loop: the MovingReplicas phase, one poll at a time (executor.copy_watch measures it);
- executor.leadership: the ElectingLeaders phase;
- executor.wind_down: Stopping, after a stop, a failure or an unexpected error;
- executor.result: the end state of a run that went through, and the result every run returns.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Sequence
from typing import Generic, TypeVar, cast, overload

from kafka_balancer.executor.cluster_calls import ClusterCalls
from kafka_balancer.executor.leadership import Leadership
from kafka_balancer.executor.ledger import Ledger, ProgressCallback
from kafka_balancer.executor.move_loop import MoveLoop, Outcome, Turns
from kafka_balancer.executor.options import Clock, ExecutorOptions, SystemClock
from kafka_balancer.executor.progress import Progress
from kafka_balancer.executor.result import ExecutionResult, finish, result
from kafka_balancer.executor.start import resume_after_wind_down, start
from kafka_balancer.executor.state import ExecutionRecord, ExecutionState
from kafka_balancer.executor.store import ExecutionStore
from kafka_balancer.executor.tasks import Task
from kafka_balancer.executor.wind_down import clear_throttles, wind_down
from kafka_balancer.kafka.port import KafkaPort, KafkaUnavailableError, TopicPartition
from kafka_balancer.model import ClusterModel, ReassignmentPlan

T = TypeVar("T")
log = logging.getLogger(__name__)


class _InLedger(Generic[T]):
    """An attribute of the Executor kept in its ledger, where the phases share it: read and set as one."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, executor: None, owner: type) -> _InLedger[T]: ...
    @overload
    def __get__(self, executor: Executor, owner: type) -> T: ...
    def __get__(self, executor: Executor | None, owner: type) -> T | _InLedger[T]:
        return self if executor is None else cast(T, getattr(executor.ledger, self.name))

    def __set__(self, executor: Executor, value: T) -> None:
        setattr(executor.ledger, self.name, value)


class Executor:
    record = _InLedger[ExecutionRecord]()
    tasks = _InLedger[list[Task]]()
    in_flight = _InLedger[dict[int, Task]]()
    stuck = _InLedger[set[int]]()
    blocked = _InLedger[dict[int, str]]()
    submitted = _InLedger[int]()

    def __init__(
        self,
        port: KafkaPort,
        plan: ReassignmentPlan,
        store: ExecutionStore,
        options: ExecutorOptions | None = None,
        *,
        clock: Clock | None = None,
        on_progress: ProgressCallback | None = None,
        context: dict[str, str] | None = None,
        elections: Sequence[TopicPartition] = (),
        turns: Turns | None = None,
    ) -> None:
        """``elections``: partitions to elect the preferred leader of besides the plan's (executor.leadership);
        ``turns``: held from reading what is in flight to submitting more (executor.move_loop)."""
        self.port = port
        self.plan = plan
        self.elections = tuple(elections)
        self.store = store
        self.options = options or ExecutorOptions()
        self.clock = clock or SystemClock()
        self.on_progress = on_progress
        self.context = dict(context or {})
        self.ledger = Ledger(plan, store, self.options, self.clock, on_progress)
        self.patience = self.ledger.patience
        self.calls = ClusterCalls(port, self.ledger)
        self.throttles = self.calls.throttles
        self._moves = MoveLoop(self.ledger, self.calls, turns or contextlib.nullcontext)
        self._leadership = Leadership(self.ledger, self.calls, self.elections)

    # ----- public ------------------------------------------------------------------------
    def request_stop(self) -> None:
        """Ask the running execution to stop (thread-safe): it cancels in-flight moves and
        removes its throttles, then :meth:`run` returns with state Stopped."""
        self.ledger.stop.set()

    def run(self) -> ExecutionResult:
        """Execute the plan. Bad input (a plan that does not fit the cluster, another unfinished
        execution in the store) raises ModelError before anything is sent or saved. Once started,
        every way out winds down: moves in flight are cancelled and throttles removed, also after an
        unexpected error (the run then ends Failed, with the error as its reason). A cluster that
        cannot answer is waited for (executor.patience); only when it has not answered for
        ``unavailable_timeout_seconds`` does the run end with that error, resumable as it was
        (there is nothing to wind down with)."""
        initial = start(self.ledger, self.calls, self.context)
        if self.options.dry_run:
            return result(self.ledger)
        try:
            return self._run(initial)
        except KafkaUnavailableError:
            raise
        except Exception as err:
            log.exception("execution failed unexpectedly; winding down")
            self.record.reason = f"unexpected error: {type(err).__name__}: {err}"
            return wind_down(self.ledger, self.calls, failed=True)

    def progress(self) -> Progress:
        return self.ledger.progress()

    def _run(self, initial: ClusterModel) -> ExecutionResult:
        ledger = self.ledger
        state = ledger.record.state
        if state is ExecutionState.STOPPING:
            # A wind-down that could not finish (the cluster stopped answering): finish it first. Then
            # the run goes on, unless a stop is asked for now: running the command again resumes.
            ended = wind_down(ledger, self.calls, failed=False)
            if ledger.stopping():
                return ended
            initial = resume_after_wind_down(ledger, self.calls)
            state = ledger.record.state
        if state in (ExecutionState.PENDING, ExecutionState.MOVING_REPLICAS):
            ledger.set_state(ExecutionState.MOVING_REPLICAS)
            outcome = self._moves.run(initial)
            if outcome not in (Outcome.DONE, Outcome.BUDGET):
                return wind_down(ledger, self.calls, failed=outcome is Outcome.FAIL)
        ledger.throttle_failures = clear_throttles(self.calls)
        ledger.set_state(ExecutionState.ELECTING_LEADERS)
        if not self._leadership.run():
            return wind_down(ledger, self.calls, failed=False)
        return finish(ledger)
