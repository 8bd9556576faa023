"""The execution state machine: Pending -> MovingReplicas -> ElectingLeaders -> Completed,
with Stopping -> Stopped and Failed on the side.

One loop polls the cluster (ListPartitionReassignments + metadata), retires finished moves,
starts new ones as soon as a slot frees (never in waves), and saves the record whenever a task
changes state. The record is saved *before* anything it describes is done (a move submitted,
a throttle set), so after a crash the next run knows everything that may have happened and
reconciles it with what the cluster reports.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from enum import Enum
from functools import partial

from kafka_balancer.executor.log_dirs import DirStanding, View, standing, take_back
from kafka_balancer.executor.missing import MissingTargets
from kafka_balancer.executor.options import Clock, ExecutorOptions, SystemClock
from kafka_balancer.executor.patience import Patience
from kafka_balancer.executor.progress import Progress, RateMeter, broker_progress, eta
from kafka_balancer.executor.recovery import order_restores
from kafka_balancer.executor.safety import (
    PollView,
    alive_brokers,
    below_min_isr,
    move_blocker,
    offline_partitions,
    offline_target,
    partition_replicas,
)
from kafka_balancer.executor.scheduler import foreign_counts, pick_moves, strategy_named
from kafka_balancer.executor.state import ExecutionRecord, ExecutionState, InFlight, TaskState, plan_id
from kafka_balancer.executor.store import ExecutionStore
from kafka_balancer.executor.tasks import Task, TaskKind, build_tasks
from kafka_balancer.executor.throttle import ListBudget, ThrottleManager
from kafka_balancer.kafka.port import (
    KafkaError,
    KafkaPort,
    KafkaUnavailableError,
    OngoingReassignment,
    PortClosedError,
    TopicPartition,
)
from kafka_balancer.model import ClusterModel, ModelError, ReassignmentPlan

# Errors after which a submission is simply tried again on a later poll.
RETRIABLE = frozenset(
    {"NOT_CONTROLLER", "REQUEST_TIMED_OUT", "BROKER_NOT_AVAILABLE", "LEADER_NOT_AVAILABLE", "UNKNOWN_SERVER_ERROR"}
)

# AlterReplicaLogDirs errors after which the replica is simply asked again on a later poll: the broker
# does not host it yet (the reassignment adding it is under way), or it is busy.
RETRIABLE_DIR = RETRIABLE | {"REPLICA_NOT_AVAILABLE", "NOT_LEADER_OR_FOLLOWER", "UNKNOWN_TOPIC_OR_PARTITION"}

# The adaptive poll (see Executor._next_poll_in) never polls more often than this.
MIN_POLL_SECONDS = 0.5

VANISHED = "the partition no longer exists (its topic was deleted?)"
# A move whose partition another tool reassigned to another target meanwhile: theirs now, never cancelled.
TAKEN_OVER = "taken over: another reassignment of this partition, to"

ProgressCallback = Callable[[Progress], None]
log = logging.getLogger(__name__)


class ExecutionConflictError(ModelError):
    """The store holds an unfinished execution of another plan."""


class _Outcome(Enum):
    DONE = "done"
    BUDGET = "budget"  # maxBytesPerRun reached: what is left waits for the next run
    STOP = "stop"
    FAIL = "fail"


@dataclass
class ExecutionResult:
    state: ExecutionState
    reason: str
    completed: list[str]
    aborted: list[str]
    pending: list[str]
    dead: dict[str, str]
    stuck: list[str]
    election_failures: dict[str, str]
    progress: Progress
    submitted: int = 0  # reassignments this process submitted (moves and reorders)
    tasks: list[tuple[Task, TaskState]] = field(default_factory=list)
    taken_over: list[str] = field(default_factory=list)  # re-targeted by another tool mid-move (also in dead)


class Executor:
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
        turns: Callable[[], AbstractContextManager[object]] | None = None,
    ) -> None:
        self.port = port
        self.plan = plan
        # Partitions whose replica order is already the target one but whose leader is not the
        # preferred replica (a rolling restart leaves many): the plan cannot list them, the
        # proposal's leader changes do, and they are elected with the plan's partitions.
        self.elections = tuple(elections)
        self.store = store
        self.options = options or ExecutorOptions()
        self.clock = clock or SystemClock()
        self.on_progress = on_progress
        self.context = dict(context or {})
        self._stop = threading.Event()
        self._meter = RateMeter()
        self.tasks: list[Task] = []
        self.record = ExecutionRecord(plan_id(plan), ExecutionState.PENDING, [TaskState.PENDING] * len(plan))
        self.throttles = ThrottleManager(port, self.options.throttle_bytes_per_sec, self.record.throttles, self._save)
        self.in_flight: dict[int, Task] = {}
        self.stuck: set[int] = set()
        self.blocked: dict[int, str] = {}
        self._blocked_since: dict[int, float] = {}
        self._copied: dict[int, float] = {}  # in-flight task -> bytes copied so far
        self._last_progress: dict[int, float] = {}
        self._copy_rate: dict[int, float] = {}  # in-flight task -> bytes/s between measurements
        self._measured_at: float | None = None
        self._bytes_total = 0.0
        self._leaders_total = 0
        self._leaders_done = 0
        self._election_failures: dict[str, str] = {}
        self._throttle_failures: list[str] = []
        self._started = 0.0
        self._involved: set[int] = set()  # brokers the plan's moves add replicas to or take them from
        self._dir_brokers: set[int] = set()  # brokers copying replicas between their own directories
        self._dir_view: View = {}  # where in-flight moves' replicas are (DescribeLogDirs), this poll
        self.submitted = 0
        # Held from reading what is in flight on the cluster to submitting more: executors of one host
        # take turns, so that two of them never both fill the last slot of a broker (cli.execute).
        self._turns = turns or contextlib.nullcontext
        self.patience = Patience(
            self.clock, self.options.unavailable_timeout_seconds, self.options.poll_interval_seconds, self._emit
        )
        # Submitted moves whose AlterPartitionReassignments got no answer: whether Kafka took them shows
        # at the next poll (in flight with our target, or not at all: then they are submitted again).
        self._unconfirmed: set[int] = set()
        self._missing = MissingTargets(self.options.stuck_after_seconds)

    # ----- public ------------------------------------------------------------------------
    def request_stop(self) -> None:
        """Ask the running execution to stop (thread-safe): it cancels in-flight moves and
        removes its throttles, then :meth:`run` returns with state Stopped."""
        self._stop.set()

    def run(self) -> ExecutionResult:
        """Execute the plan. Bad input (a plan that does not fit the cluster, another unfinished
        execution in the store) raises ModelError before anything is sent or saved. Once started,
        every way out winds down: moves in flight are cancelled and throttles removed, also after an
        unexpected error (the run then ends Failed, with the error as its reason). A cluster that
        cannot answer is waited for (executor.patience); only when it has not answered for
        ``unavailable_timeout_seconds`` does the run end with that error, resumable as it was
        (there is nothing to wind down with)."""
        initial = self._start()
        if self.options.dry_run:
            return self._result()
        try:
            return self._run(initial)
        except KafkaUnavailableError:
            raise
        except Exception as err:
            log.exception("execution failed unexpectedly; winding down")
            self.record.reason = f"unexpected error: {type(err).__name__}: {err}"
            return self._wind_down(failed=True)

    def _run(self, initial: ClusterModel) -> ExecutionResult:
        state = self.record.state
        if state is ExecutionState.STOPPING:
            # A wind-down that could not finish (the cluster stopped answering): finish it first. Then
            # the run goes on, unless a stop is asked for now: running the command again resumes.
            ended = self._wind_down(failed=False)
            if self._stopping():
                return ended
            initial = self._resume_after_wind_down()
            state = self.record.state
        if state in (ExecutionState.PENDING, ExecutionState.MOVING_REPLICAS):
            self._set_state(ExecutionState.MOVING_REPLICAS)
            outcome = self._move_loop(initial)
            if outcome not in (_Outcome.DONE, _Outcome.BUDGET):
                return self._wind_down(failed=outcome is _Outcome.FAIL)
        self._throttle_failures = self._clear_throttles()
        self._set_state(ExecutionState.ELECTING_LEADERS)
        if not self._leadership():
            return self._wind_down(failed=False)
        return self._finish()

    # ----- start and reconcile -----------------------------------------------------------
    def _read_start(self, resuming: bool) -> tuple[dict[TopicPartition, OngoingReassignment], ClusterModel]:
        """What is in flight, then the cluster with sizes. Reassignments before metadata: a move that ends
        between the two reads then shows as done in the metadata, never as a partition with extra
        replicas and no reassignment. A resumed run waits for a cluster that cannot answer yet; a new
        one fails at once (nothing is started: the command is simply run again)."""

        def read() -> tuple[dict[TopicPartition, OngoingReassignment], ClusterModel]:
            return self.port.list_reassignments(), self.port.read_cluster(with_sizes=True)

        return self.patience.call("reading the cluster", read) if resuming else read()

    def _start(self) -> ClusterModel:
        self._started = self.clock.now()
        saved = self.store.load()
        earlier = ExecutionRecord.from_dict(saved) if saved is not None else None
        ongoing, cluster = self._read_start(resuming=earlier is not None and not earlier.state.finished)
        self.tasks = build_tasks(self.plan, cluster, ongoing)
        unsafe = below_min_isr(self.tasks, cluster)
        if unsafe:
            shown = "; ".join(unsafe[:10]) + (f"; and {len(unsafe) - 10} more" if len(unsafe) > 10 else "")
            raise ModelError(f"plan refused, nothing was executed: {shown}")
        resumed = False
        if earlier is not None and not earlier.state.finished:
            if earlier.plan_id != self.record.plan_id:
                raise ExecutionConflictError(
                    f"execution store holds an unfinished execution of plan {earlier.plan_id} "
                    f"(state {earlier.state.value}), not of this plan {self.record.plan_id}: "
                    "stop it first (kafka-balancer stop)"
                )
            self.record = ExecutionRecord.from_dict(saved, self.plan)
            self.throttles.record = self.record.throttles
            resumed = True
        elif earlier is not None and not earlier.throttles.empty:
            # A run that ended with throttles it could not remove (a broker down or hung at its end):
            # they are this run's to remove now, with its own (nothing else knows them).
            self.record.throttles = earlier.throttles
            self.throttles.record = self.record.throttles
            log.info("adopting the throttles the last run left: %s", earlier.throttles.to_dict())
        if not resumed:
            self.record.started_at = time.time()
        self.record.context.update(self.context)
        states = self.record.tasks
        # What the previous run had in flight, with the bytes each copies (the cluster no longer
        # shows them for a move that finished while no executor was running).
        recorded = {(m.topic, m.partition): m for m in self.record.in_flight} if resumed else {}
        for task in self.tasks:
            i = task.index
            if resumed and states[i] in (TaskState.COMPLETED, TaskState.DEAD, TaskState.ABORTED):
                continue  # never redone: a completed move is not submitted again
            running = ongoing.get(task.tp)
            mine = recorded.get((task.tp.topic, task.tp.partition))
            if running is not None and mine is not None and set(running.target) == set(mine.target or task.target):
                states[i] = TaskState.IN_PROGRESS  # ours, submitted before a restart: adopt it
                self.in_flight[i] = task
            elif running is not None and mine is not None:
                self._taken_over(i, running)  # re-targeted by someone else while no executor ran
            elif running is None and task.kind is TaskKind.NOOP:
                if states[i] is TaskState.IN_PROGRESS:
                    self.record.bytes_done += mine.bytes if mine is not None else 0.0
                states[i] = TaskState.COMPLETED
            else:
                states[i] = TaskState.PENDING
        self._bytes_total = self.record.bytes_done + sum(
            t.bytes_to_move for t in self.tasks if t.copies and not states[t.index].finished
        )
        self._sync_in_flight()
        if not self.options.dry_run:
            self._save()
        self._emit()
        return cluster

    def _resume_after_wind_down(self) -> ClusterModel:
        """After finishing a wind-down an earlier run could not: the moves it cancelled are pending again."""
        states = self.record.tasks
        for task in self.tasks:
            if states[task.index] is TaskState.ABORTED:
                states[task.index] = TaskState.PENDING
        self.record.reason = ""
        self._bytes_total = self.record.bytes_done + sum(
            t.bytes_to_move for t in self.tasks if t.copies and not states[t.index].finished
        )
        self._set_state(ExecutionState.MOVING_REPLICAS)
        log.info("the wind-down an earlier run left unfinished is done; resuming the plan")
        return self._read_start(resuming=True)[1]

    # ----- moving replicas ---------------------------------------------------------------
    def _move_loop(self, initial: ClusterModel) -> _Outcome:
        """``initial``: the cluster as read at the start, with sizes (the order strategy weighs
        moves by the load they take off and put on brokers)."""
        opts = self.options
        states = self.record.tasks
        movable = [t for t in self.tasks if t.copies and states[t.index] is TaskState.PENDING]
        queue = strategy_named(opts.strategy).order(movable, initial)
        self._involved = {b for t in self.tasks if t.kind is TaskKind.MOVE for b in (*t.original, *t.target)}
        self._dir_brokers = {d.broker for t in self.tasks if t.copies for d in t.between_dirs}
        # A broker that is down neither sends nor receives, and a config request to it only times
        # out (plans that move replicas off a dead broker are normal); the other side of each of
        # its moves is throttled, and the broker itself when it is back (see _poll).
        self.throttles.set_rates(self._involved & alive_brokers(initial))
        self.throttles.set_dir_rates(self._dir_brokers & alive_brokers(initial))
        self.throttles.update_replicas(list(self.in_flight.values()))
        now = self.clock.now()
        for i in self.in_flight:
            self._last_progress[i] = now
        while True:
            if self._stopping():
                return _Outcome.STOP
            try:
                queue, outcome = self._poll(queue)
                self.patience.answered()
            except KafkaUnavailableError as err:
                # The controller down or moving, a broker hung or restarting: keep state, try again next
                # poll (bounded: executor.patience raises once nothing answered for its limit).
                self.patience.failed("polling the moves in flight", err)
                outcome = None
            if outcome is not None:
                return outcome
            self.clock.sleep(self._next_poll_in())

    def _poll(self, queue: list[Task]) -> tuple[list[Task], _Outcome | None]:
        """One step: read the cluster, retire finished moves, start new ones (taking turns with the
        other executors of this host, see ``turns``)."""
        with self._turns():
            return self._poll_turn(queue)

    def _poll_turn(self, queue: list[Task]) -> tuple[list[Task], _Outcome | None]:
        states = self.record.tasks
        now = self.clock.now()
        ongoing = self.port.list_reassignments()  # first: see _start
        cluster = self.port.read_cluster(with_sizes=False)
        offline = offline_partitions(cluster)
        if offline:
            shown = ", ".join(offline[:20]) + (f" and {len(offline) - 20} more" if len(offline) > 20 else "")
            self.record.reason = f"{len(offline)} offline partitions: {shown}"
            return queue, _Outcome.FAIL
        view = PollView.of(cluster, ongoing)
        self.throttles.set_rates(self._involved & view.alive)
        self.throttles.set_dir_rates(self._dir_brokers & view.alive)
        self._dir_view = self._read_dirs(list(self.in_flight.values()))
        changed = self._retire_finished(cluster, ongoing)
        changed |= self._watch_in_flight(now)
        changed |= self._settle_pending(queue, cluster, ongoing)
        queue = [t for t in queue if states[t.index] is TaskState.PENDING]
        self.blocked.clear()
        limit = self.options.max_bytes_per_run
        committed = self.record.bytes_done + sum(t.bytes_to_move for t in self.in_flight.values())
        over_budget = False
        lists = ListBudget(list(self.in_flight.values())) if self.throttles.enabled else None

        def eligible(task: Task) -> bool:
            nonlocal committed, over_budget
            if limit is not None and committed > 0 and committed + task.bytes_to_move > limit:
                over_budget = True
                return False
            if lists is not None and not lists.fits(task):
                return False  # its topic's throttle lists are full: it waits for a move of the topic to end
            why = move_blocker(task, view)
            offline = None if why is None else offline_target(task, view.alive)
            self._missing.note(task.index, offline, now, name=str(task.tp))
            if why is None:
                self._blocked_since.pop(task.index, None)
                committed += task.bytes_to_move
                if lists is not None:
                    lists.add(task)
                return True
            self.blocked[task.index] = why
            self._blocked_since.setdefault(task.index, now)
            return False

        # Every reassignment in flight on the cluster counts against the brokers' limits, ours or not:
        # another executor, operator or tool moving replicas loads the same brokers.
        busy = foreign_counts(ongoing, {t.tp for t in self.in_flight.values()})
        picked = pick_moves(queue, list(self.in_flight.values()), self.options.limits, eligible, busy=busy)
        changed |= self._give_up_blocked(now)
        if picked:
            self._submit(picked, now)
        elif changed:
            self._sync_in_flight()
            self.throttles.update_replicas(list(self.in_flight.values()))
            self._save()
        self._emit()
        if not self.in_flight and not any(states[t.index] is TaskState.PENDING for t in queue):
            return queue, _Outcome.DONE
        if not self.in_flight and over_budget and not self.blocked:
            return queue, _Outcome.BUDGET  # nothing left that fits this run
        return queue, None

    def _settle_pending(
        self, queue: list[Task], cluster: ClusterModel, ongoing: Mapping[TopicPartition, OngoingReassignment]
    ) -> bool:
        """Pending moves that need no submission: gone with their topic (dead), or already in place
        (someone else, e.g. another executor of the same plan, made the same move: done, nothing copied
        by this run)."""
        states = self.record.tasks
        changed = False
        for task in queue:
            if states[task.index] is not TaskState.PENDING:
                continue
            current = partition_replicas(cluster, task.tp)
            if current is None:
                self._give_up(task.index, VANISHED)
                changed = True
            elif current == task.target and not task.dirs and task.tp not in ongoing:
                states[task.index] = TaskState.COMPLETED
                self._bytes_total -= task.bytes_to_move
                changed = True
        return changed

    def _read_dirs(self, tasks: list[Task]) -> View:
        """Where the named-directory replicas of ``tasks`` are (DescribeLogDirs); {} when none is named or
        the read fails (the directories are then looked at again next poll)."""
        wanted = [(t.tp, d.broker) for t in tasks for d in t.dirs]
        if not wanted:
            return {}
        try:
            return self.port.replica_log_dirs(wanted)
        except KafkaError as err:
            log.warning("cannot read the log directories of moves in flight this poll: %s", err)
            return {}

    def _dirs_standing(self, task: Task) -> DirStanding:
        return standing(task.tp, [(d.broker, d.path, d.original) for d in task.dirs], self._dir_view, task.size_bytes)

    def _send_dirs(self, moves: Mapping[tuple[TopicPartition, int], str]) -> dict[TopicPartition, KafkaError]:
        """AlterReplicaLogDirs; the refusals that will not pass by asking again, by partition.
        REPLICA_NOT_AVAILABLE (the replica has not arrived) and transient errors are asked again next poll."""
        if not moves:
            return {}
        refused: dict[TopicPartition, KafkaError] = {}
        for (tp, _), error in self.port.alter_replica_log_dirs(moves).items():
            if error is not None and error.name not in RETRIABLE_DIR:
                refused.setdefault(tp, error)
        return refused

    def _retire_finished(self, cluster: ClusterModel, ongoing: Mapping[TopicPartition, OngoingReassignment]) -> bool:
        changed = False
        standings = {i: self._dirs_standing(t) for i, t in self.in_flight.items() if t.dirs}
        # Replicas not in their directory yet are asked again (see log_dirs.standing); a refusal that
        # asking again will not change (the directory was cordoned meanwhile) ends the task once its
        # replicas are on their brokers.
        refused = self._send_dirs({key: path for d in standings.values() for key, path in d.resend.items()})
        for i, task in list(self.in_flight.items()):
            dirs = standings.get(i, DirStanding())
            running = ongoing.get(task.tp)
            if running is not None and set(running.target) != set(task.target) and task.target != task.original:
                self._taken_over(i, running)
                changed = True
                continue
            if running is not None:
                self._unconfirmed.discard(i)  # Kafka has it: ours, under way
                continue
            current = partition_replicas(cluster, task.tp)
            if current is not None and i in self._unconfirmed and set(current) == set(task.original):
                # Submitted without an answer, and Kafka never took it: pending again, submitted anew.
                self._unconfirmed.discard(i)
                self._forget(i)
                self.record.tasks[i] = TaskState.PENDING
                changed = True
                continue
            if current is None:
                self._give_up(i, VANISHED)
            elif set(current) == set(task.target) and task.tp in refused:
                self._give_up(i, f"log directory move refused: {refused[task.tp]}")
                changed = True
                continue
            elif set(current) == set(task.target) and not dirs.done:
                continue  # on its brokers; a replica still goes to (or is copied into) its directory
            elif set(current) == set(task.target):
                self.record.tasks[i] = TaskState.COMPLETED
                self.record.bytes_done += task.bytes_to_move
            elif set(task.target) < set(current):
                continue  # metadata not yet updated to the end of the move: look again next poll
            else:
                self.record.tasks[i] = TaskState.DEAD
                self.record.dead_reasons[str(task.tp)] = (
                    f"reassignment ended without reaching {list(task.target)} (cancelled outside the executor?); "
                    f"replicas are {list(current)}"
                )
            self._forget(i)
            changed = True
        return changed

    def _watch_in_flight(self, now: float) -> bool:
        """Measure copied bytes; report (and optionally cancel) moves with no progress for stuckAfter."""
        if not self.in_flight:
            return False
        if self._measured_at is not None and now - self._measured_at < self.options.measure_interval_seconds:
            return False
        self._measured_at = now
        try:
            # Only the replicas being added: a dense cluster's every replica is a large DescribeLogDirs.
            found = self.port.replica_log_dirs([(t.tp, b) for t in self.in_flight.values() for b in t.adding])
            sizes = {key: r.size for key, r in found.items()}
        except KafkaError as err:
            # Sizes only measure progress: with a broker down (DescribeLogDirs goes to every
            # broker) moves still run and finish, so go on blind rather than stall every move.
            log.warning("cannot measure copy progress this poll: %s", err)
            return False
        to_cancel: list[Task] = []
        for i, task in self.in_flight.items():
            copied = sum(min(float(sizes.get((task.tp, b), 0)), task.added_copy) for b in task.adding)
            if task.between_dirs:
                copied += self._dirs_standing(task).copied
            if copied > self._copied.get(i, 0.0):
                since = now - self._last_progress.get(i, now)
                if since > 0:
                    self._copy_rate[i] = (copied - self._copied.get(i, 0.0)) / since
                self._copied[i] = copied
                self._last_progress[i] = now
                self.stuck.discard(i)
            elif now - self._last_progress.setdefault(i, now) >= self.options.stuck_after_seconds:
                self.stuck.add(i)
                if self.options.cancel_stuck:
                    to_cancel.append(task)
        if not to_cancel:
            return False
        # Reported stuck before they are cancelled, as without cancelStuck: progress.stuck, the gauge
        # and the MovesStuck event name every move that got stuck (docs/executor.md).
        self._emit()
        self.port.alter_reassignments({t.tp: None for t in to_cancel})
        for task in to_cancel:
            self.record.tasks[task.index] = TaskState.DEAD
            self.record.dead_reasons[str(task.tp)] = (
                f"stuck: no progress for {self.options.stuck_after_seconds:g}s, reassignment cancelled"
            )
            self._forget(task.index)
        return True

    def _next_poll_in(self) -> float:
        """Seconds until the next poll: the poll interval, or sooner when an in-flight move
        should finish before it at its current copy rate, so that its slot is refilled at
        once (short moves would otherwise leave a broker idle for most of an interval).
        Never more often than every half second (or the interval, if shorter): each poll reads
        the cluster's metadata, which is not free on a large cluster."""
        interval = self.options.poll_interval_seconds
        soonest = interval
        now = self.clock.now()
        for i, rate in self._copy_rate.items():
            task = self.in_flight.get(i)
            if task is not None and rate > 0:
                # Copied as of the last measurement, plus what the rate has copied since.
                copied = self._copied.get(i, 0.0) + rate * (now - self._last_progress.get(i, now))
                soonest = min(soonest, (task.bytes_to_move - copied) / rate)
        return max(min(interval, MIN_POLL_SECONDS), soonest)

    def _give_up_blocked(self, now: float) -> bool:
        limit = self.options.blocked_after_seconds
        if limit is None:
            return False
        changed = False
        for i, since in list(self._blocked_since.items()):
            if now - since >= limit and self.record.tasks[i] is TaskState.PENDING:
                self.record.tasks[i] = TaskState.DEAD
                self.record.dead_reasons[str(self.tasks[i].tp)] = f"not started: {self.blocked.get(i, 'blocked')}"
                del self._blocked_since[i]
                changed = True
        return changed

    def _submit(self, picked: list[Task], now: float) -> None:
        for task in picked:
            self.record.tasks[task.index] = TaskState.IN_PROGRESS
            self.in_flight[task.index] = task
            self._last_progress[task.index] = now
        self._sync_in_flight()
        # Throttle and record first: a copy must never start unthrottled, nor a crash hide a move.
        self.throttles.update_replicas(list(self.in_flight.values()))
        self._save()
        # Directories first, as kafka-reassign-partitions does: a broker told before the reassignment
        # creates the replica it receives in the directory named (REPLICA_NOT_AVAILABLE until then).
        try:
            refused = self._send_dirs({(t.tp, d.broker): d.path for t in picked for d in t.dirs})
            reassigned = [t for t in picked if t.tp not in refused and t.target != t.original]
            errors: dict[TopicPartition, KafkaError | None] = dict(refused)
            if reassigned:
                errors.update(self.port.alter_reassignments({t.tp: t.target for t in reassigned}))
        except KafkaUnavailableError:
            # No answer: Kafka may or may not have taken them. They stay in flight (and recorded, and
            # throttled) until the next poll tells (see _retire_finished).
            self._unconfirmed.update(t.index for t in picked)
            raise
        self.submitted += len(picked)
        failed = False
        for task in picked:
            error = errors.get(task.tp)
            if error is None:
                continue
            if task.tp in refused:
                failed = True
                self._forget(task.index)
                self.record.tasks[task.index] = TaskState.DEAD
                self.record.dead_reasons[str(task.tp)] = f"log directory move refused: {error}"
                continue
            failed = True
            self._forget(task.index)
            if error.name in RETRIABLE:
                self.record.tasks[task.index] = TaskState.PENDING
            elif error.name == "UNKNOWN_TOPIC_OR_PARTITION":
                self._give_up(task.index, VANISHED)  # deleted since this poll read the cluster
            else:
                self.record.tasks[task.index] = TaskState.DEAD
                self.record.dead_reasons[str(task.tp)] = f"reassignment refused: {error}"
        if failed:
            self._sync_in_flight()
            self.throttles.update_replicas(list(self.in_flight.values()))
            self._save()

    def _give_up(self, i: int, reason: str) -> None:
        self.record.tasks[i] = TaskState.DEAD
        self.record.dead_reasons[str(self.tasks[i].tp)] = reason
        self._forget(i)

    def _taken_over(self, i: int, running: OngoingReassignment) -> None:
        """Another tool reassigned a partition this run was moving, to another target: the partition is
        theirs now. It is never waited for nor cancelled; the task ends dead, saying so."""
        task = self.tasks[i]
        log.warning("%s was taken over by a reassignment to %s (ours: %s)", task.tp, list(running.target), task.target)
        self._give_up(i, f"{TAKEN_OVER} {list(running.target)}, not {list(task.target)}; left to it")

    def _forget(self, i: int) -> None:
        self._unconfirmed.discard(i)
        self.in_flight.pop(i, None)
        self._copied.pop(i, None)
        self._last_progress.pop(i, None)
        self._copy_rate.pop(i, None)
        self.stuck.discard(i)

    # ----- leadership --------------------------------------------------------------------
    def _leadership(self) -> bool:
        """Reorder replicas of leader-only tasks, then elect preferred leaders in batches.
        Returns False when a stop was requested."""
        cluster = self._reorder()
        if cluster is None:
            return False
        need = self._elections_needed(cluster)
        self._leaders_total = len(need)
        failures: dict[TopicPartition, KafkaError] = {}
        for attempt in range(self.options.election_attempts):
            if self._stopping():
                return False
            if attempt:
                self.clock.sleep(self._next_poll_in())
            elect = partial(self.port.elect_preferred_leaders, need, batch_size=self.options.election_batch_size)
            errors = self.patience.call("electing preferred leaders", elect)
            failures = {tp: e for tp in need if (e := errors.get(tp)) is not None}
            self._leaders_done = self._leaders_total - len(failures)
            self._emit()
            if not failures:
                break
            need = sorted(failures)
        self._election_failures.update({str(tp): e.name for tp, e in failures.items()})
        return True

    def _reorder(self) -> ClusterModel | None:
        """The leader-only tasks (same replicas, another order), in batches; the cluster after them, or
        None when a stop was requested."""
        states = self.record.tasks
        reorders = [t for t in self.tasks if t.kind is TaskKind.REORDER and states[t.index] is TaskState.PENDING]
        batch = self.options.election_batch_size
        for start in range(0, len(reorders), batch):
            if self._stopping():
                return None
            chunk = reorders[start : start + batch]
            # Same replica set in another order: Kafka completes such a reassignment at once (and sending it
            # again, when the first got no answer, changes nothing).
            targets: dict[TopicPartition, Sequence[int] | None] = {t.tp: t.target for t in chunk}
            errors = self.patience.call("reordering replicas", partial(self.port.alter_reassignments, targets))
            self.submitted += len(chunk)
            for task in chunk:
                error = errors.get(task.tp)
                if error is not None:
                    states[task.index] = TaskState.DEAD
                    self.record.dead_reasons[str(task.tp)] = f"reorder refused: {error}"
        self._wait_reassignments_gone([t.tp for t in reorders])
        cluster = self._reordered_cluster(reorders)
        for task in reorders:
            if states[task.index] is TaskState.PENDING:
                current = partition_replicas(cluster, task.tp)
                if current is None:
                    self._give_up(task.index, VANISHED)
                elif current == task.target:
                    states[task.index] = TaskState.COMPLETED
                else:
                    states[task.index] = TaskState.DEAD
                    self.record.dead_reasons[str(task.tp)] = f"reorder did not apply; replicas are {list(current)}"
        self._save()
        return cluster

    def _reordered_cluster(self, reorders: list[Task]) -> ClusterModel:
        """The cluster once its metadata shows the pending reorders. A broker answers from its own copy
        of the metadata, which may lag the controller after the reassignment is gone (seen on real Kafka
        at load average 16: the old order read back): a partition with the target's replicas in another
        order is read again, until stuck_after_seconds."""
        deadline = self.clock.now() + self.options.stuck_after_seconds
        while True:
            cluster = self._read_cluster()
            lagging = [
                t
                for t in reorders
                if self.record.tasks[t.index] is TaskState.PENDING
                and (current := partition_replicas(cluster, t.tp)) is not None
                and current != t.target
                and set(current) == set(t.target)
            ]
            if not lagging or self.clock.now() >= deadline:
                return cluster
            self.clock.sleep(self.options.poll_interval_seconds)

    def _elections_needed(self, cluster: ClusterModel) -> list[TopicPartition]:
        """The plan's moved partitions not led by their preferred replica, and the proposal's other leader changes."""
        states = self.record.tasks
        need = [
            t.tp
            for t in self.tasks
            if states[t.index] is TaskState.COMPLETED
            and partition_replicas(cluster, t.tp) is not None
            and cluster.leader_id(cluster.partition_index(t.tp.topic, t.tp.partition)) != t.target[0]
        ]
        planned = {t.tp for t in self.tasks}
        for tp in dict.fromkeys(self.elections):
            if tp in planned:
                continue
            try:
                p = cluster.partition_index(tp.topic, tp.partition)
            except KeyError:
                self._election_failures[str(tp)] = "UNKNOWN_TOPIC_OR_PARTITION"
                continue
            replicas = cluster.replica_ids(p)
            if replicas and cluster.leader_id(p) != replicas[0]:
                need.append(tp)
        return need

    def _wait_reassignments_gone(self, tps: list[TopicPartition]) -> None:
        waiting = set(tps)
        deadline = self.clock.now() + self.options.stuck_after_seconds
        while waiting and self.clock.now() < deadline:
            waiting &= set(self._list_reassignments())
            if waiting:
                self.clock.sleep(self.options.poll_interval_seconds)

    def _list_reassignments(self) -> dict[TopicPartition, OngoingReassignment]:
        return self.patience.call("listing reassignments", self.port.list_reassignments)

    def _read_cluster(self) -> ClusterModel:
        return self.patience.call("reading the cluster", lambda: self.port.read_cluster(with_sizes=False))

    def _clear_throttles(self) -> list[str]:
        """Remove every throttle this run set, trying again while a broker or the controller cannot answer
        (a broker that hung may be back in seconds; bounded). What is still left then (a broker that stays
        down) is reported and stays in the record: the next run adopts it, `kafka-balancer stop` removes it."""
        while True:
            left = self.throttles.clear()
            if not self.throttles.unanswered:
                self.patience.answered()
                return left
            try:
                unanswered = KafkaUnavailableError("THROTTLES_NOT_REMOVED", ", ".join(self.throttles.unanswered))
                self.patience.failed("removing throttles", unanswered)
            except PortClosedError:
                raise
            except KafkaUnavailableError:
                self.patience.answered()
                return left
            self.clock.sleep(self.options.poll_interval_seconds)

    def _restore_order(self, cluster: ClusterModel, cancelled: list[Task]) -> None:
        reorder = order_restores(cluster, {t.tp: t.original for t in cancelled})
        if reorder:
            answers = self.patience.call("restoring replica order", lambda: self.port.alter_reassignments(reorder))
            self._wait_reassignments_gone([tp for tp, err in answers.items() if err is None])

    # ----- ending ------------------------------------------------------------------------
    def _wind_down(self, *, failed: bool) -> ExecutionResult:
        """Stop (or fail): cancel our in-flight moves (never one another tool took over), remove our
        throttles, report. Each step waits for a cluster that cannot answer (bounded, executor.patience):
        a wind-down that still cannot finish leaves the record Stopping, and running again finishes it."""
        reason = self.record.reason
        self._set_state(ExecutionState.STOPPING)
        ongoing = self._list_reassignments()
        for i, task in list(self.in_flight.items()):
            running = ongoing.get(task.tp)
            if running is not None and set(running.target) != set(task.target) and task.target != task.original:
                self._taken_over(i, running)
        cancelling = dict(self.in_flight)
        reassigning = [t for t in cancelling.values() if t.target != t.original and t.tp in ongoing]
        if reassigning:
            self.patience.call(
                "cancelling the moves in flight",
                lambda: self.port.alter_reassignments({t.tp: None for t in reassigning}),
            )
            self._wait_reassignments_gone([t.tp for t in reassigning])
        self._dir_view = self._read_dirs(list(cancelling.values()))
        backs = {
            key: path
            for t in cancelling.values()
            for key, path in take_back(t.tp, [(d.broker, d.path, d.original) for d in t.dirs], self._dir_view).items()
        }
        if backs:
            self.patience.call("taking replicas to their directories", partial(self.port.alter_replica_log_dirs, backs))
        cluster = self._read_cluster()
        for i, task in cancelling.items():
            current = partition_replicas(cluster, task.tp)
            if current is None:
                self._give_up(i, VANISHED)
                continue
            # A move may have finished just before the cancel reached the controller (a copy between
            # directories that finished stays where it went: the task counts as aborted unless all did).
            done = set(current) == set(task.target) and (not task.dirs or self._dirs_standing(task).done)
            self.record.tasks[i] = TaskState.COMPLETED if done else TaskState.ABORTED
            if done:
                self.record.bytes_done += task.bytes_to_move
            self._forget(i)
        self._restore_order(cluster, [t for i, t in cancelling.items() if self.record.tasks[i] is TaskState.ABORTED])
        self._sync_in_flight()
        left = self._clear_throttles()
        self.record.reason = reason if failed else "stopped on request"
        if left:
            self.record.reason += f"; throttles not removed: {', '.join(left)}"
        self._set_state(ExecutionState.FAILED if failed else ExecutionState.STOPPED)
        self._emit()
        return self._result()

    def _finish(self) -> ExecutionResult:
        states = self.record.tasks
        dead = [t for t in self.tasks if states[t.index] is TaskState.DEAD]
        problems = []
        if dead:
            listed = "; ".join(f"{t.tp} ({self.record.dead_reasons.get(str(t.tp), 'dead')})" for t in dead[:20])
            problems.append(f"{len(dead)} partitions not moved: {listed}")
        if self._election_failures:
            failed = sorted(self._election_failures.items())
            listed = ", ".join(f"{tp} ({name})" for tp, name in failed[:20])
            problems.append(f"{len(failed)} leader elections failed: {listed}")
        if self._throttle_failures:
            problems.append(f"throttles not removed: {', '.join(self._throttle_failures)}")
        left = [t for t in self.tasks if states[t.index] is TaskState.PENDING]
        if left:
            problems.append(
                f"maxBytesPerRun {self.options.max_bytes_per_run} reached: {len(left)} partitions "
                f"({sum(t.bytes_to_move for t in left):.0f} bytes) left for the next run"
            )
        self.record.reason = "; ".join(problems)
        if len(problems) == 1 and left:
            end = ExecutionState.STOPPED  # a planned pause, not a failure: the rest runs next time
        else:
            end = ExecutionState.FAILED if problems else ExecutionState.COMPLETED
        self._set_state(end)
        self._emit()
        return self._result()

    def _result(self) -> ExecutionResult:
        states = self.record.tasks

        def named(state: TaskState) -> list[str]:
            return [str(t.tp) for t in self.tasks if states[t.index] is state]

        return ExecutionResult(
            state=self.record.state,
            reason=self.record.reason,
            completed=named(TaskState.COMPLETED),
            aborted=named(TaskState.ABORTED),
            pending=named(TaskState.PENDING),
            dead={
                str(t.tp): self.record.dead_reasons.get(str(t.tp), "")
                for t in self.tasks
                if states[t.index] is TaskState.DEAD
            },
            stuck=list(self._stuck_names()),
            election_failures=dict(self._election_failures),
            progress=self.progress(),
            submitted=self.submitted,
            tasks=[(t, states[t.index]) for t in self.tasks],
            taken_over=self._taken_over_partitions(),
        )

    def _stuck_names(self) -> tuple[str, ...]:
        """In flight with no progress for stuckAfterSeconds, or pending as long on a missing target broker
        (a move given up or done since is no longer stuck)."""
        waiting = {i for i in self._missing.stuck(self.clock.now()) if self.record.tasks[i] is TaskState.PENDING}
        return tuple(sorted(str(self.tasks[i].tp) for i in self.stuck | waiting))

    def _taken_over_partitions(self) -> list[str]:
        return sorted(tp for tp, why in self.record.dead_reasons.items() if why.startswith(TAKEN_OVER))

    # ----- bookkeeping -------------------------------------------------------------------
    def _stopping(self) -> bool:
        return self._stop.is_set() or self.store.stop_requested()

    def _set_state(self, state: ExecutionState) -> None:
        self.record.state = state
        self._save()

    def _sync_in_flight(self) -> None:
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

    def _save(self) -> None:
        if self.options.dry_run:
            return
        self.record.updated_at = time.time()
        self.store.save(self.record.to_dict())

    def progress(self) -> Progress:
        states = self.record.tasks
        partial = sum(self._copied.values())
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
            bytes_total=self._bytes_total,
            bytes_moved=moved,
            leaders_total=self._leaders_total,
            leaders_done=self._leaders_done,
            rate_bytes_per_sec=rate,
            eta_seconds=eta(self._bytes_total - moved - dead_bytes, rate),
            elapsed_seconds=now - self._started,
            brokers=broker_progress(self.tasks, states, self.in_flight, self._copied),
            stuck=self._stuck_names(),
            blocked={str(self.tasks[i].tp): self._missing.reason(i, now) or w for i, w in sorted(self.blocked.items())},
            waiting=self.patience.describe(),
            taken_over=tuple(self._taken_over_partitions()),
        )

    def _emit(self) -> None:
        if self.on_progress is not None:
            self.on_progress(self.progress())
