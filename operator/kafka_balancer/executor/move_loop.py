"""The MovingReplicas phase: the loop that polls the cluster, retires finished moves and starts new ones
as slots free (executor.engine), one poll a turn; a cluster that cannot answer is polled again
(executor.patience).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from enum import Enum

from kafka_balancer.executor.cluster_calls import RETRIABLE, ClusterCalls
from kafka_balancer.executor.copy_watch import next_poll_in, watch_in_flight
from kafka_balancer.executor.ledger import VANISHED, Ledger
from kafka_balancer.executor.log_dirs import DirStanding, View, task_standing
from kafka_balancer.executor.safety import (
    PollView,
    alive_brokers,
    move_blocker,
    offline_partitions,
    offline_target,
    partition_replicas,
)
from kafka_balancer.executor.scheduler import foreign_counts, pick_moves, strategy_named
from kafka_balancer.executor.state import TaskState
from kafka_balancer.executor.tasks import Task, TaskKind
from kafka_balancer.executor.throttle import ListBudget
from kafka_balancer.kafka.port import KafkaError, KafkaUnavailableError, OngoingReassignment, TopicPartition
from kafka_balancer.model import ClusterModel

Turns = Callable[[], AbstractContextManager[object]]


class Outcome(Enum):
    DONE = "done"
    BUDGET = "budget"  # maxBytesPerRun reached: what is left waits for the next run
    STOP = "stop"
    FAIL = "fail"


class MoveLoop:
    def __init__(self, ledger: Ledger, calls: ClusterCalls, turns: Turns) -> None:
        self.ledger = ledger
        self.calls = calls
        self.port = calls.port
        self.options = ledger.options
        # Held from reading what is in flight on the cluster to submitting more: executors of one host
        # take turns, so that two of them never both fill the last slot of a broker (cli.execute).
        self._turns = turns
        self._blocked_since: dict[int, float] = {}
        self._involved: set[int] = set()  # brokers the plan's moves add replicas to or take them from
        self._dir_brokers: set[int] = set()  # brokers copying replicas between their own directories
        self._dir_view: View = {}  # where in-flight moves' replicas are (DescribeLogDirs), this poll

    def run(self, initial: ClusterModel) -> Outcome:
        """``initial``: the cluster as read at the start, with sizes (the order strategy weighs
        moves by the load they take off and put on brokers)."""
        ledger, throttles = self.ledger, self.calls.throttles
        states = ledger.record.tasks
        movable = [t for t in ledger.tasks if t.copies and states[t.index] is TaskState.PENDING]
        queue = strategy_named(self.options.strategy).order(movable, initial)
        self._involved = {b for t in ledger.tasks if t.kind is TaskKind.MOVE for b in (*t.original, *t.target)}
        self._dir_brokers = {d.broker for t in ledger.tasks if t.copies for d in t.between_dirs}
        # A broker that is down neither sends nor receives, and a config request to it only times
        # out (plans that move replicas off a dead broker are normal); the other side of each of
        # its moves is throttled, and the broker itself when it is back (see _poll).
        alive = alive_brokers(initial)
        throttles.set_rates(self._involved & alive)
        throttles.set_dir_rates(self._dir_brokers & alive)
        throttles.update_replicas(list(ledger.in_flight.values()))
        now = ledger.clock.now()
        for i in ledger.in_flight:
            ledger.last_progress[i] = now
        while True:
            if ledger.stopping():
                return Outcome.STOP
            try:
                queue, outcome = self._poll(queue)
                ledger.patience.answered()
            except KafkaUnavailableError as err:
                # The controller down or moving, a broker hung or restarting: keep state, try again next
                # poll (bounded: executor.patience raises once nothing answered for its limit).
                ledger.patience.failed("polling the moves in flight", err)
                outcome = None
            if outcome is not None:
                return outcome
            ledger.clock.sleep(next_poll_in(ledger))

    def _poll(self, queue: list[Task]) -> tuple[list[Task], Outcome | None]:
        """One step: read the cluster, retire finished moves, start new ones (taking turns with the
        other executors of this host, see ``turns``)."""
        with self._turns():
            return self._poll_turn(queue)

    def _poll_turn(self, queue: list[Task]) -> tuple[list[Task], Outcome | None]:
        ledger, throttles = self.ledger, self.calls.throttles
        states = ledger.record.tasks
        now = ledger.clock.now()
        ongoing = self.port.list_reassignments()  # first: see ClusterCalls.read_start
        cluster = self.port.read_cluster(with_sizes=False)
        offline = offline_partitions(cluster)
        if offline:
            shown = ", ".join(offline[:20]) + (f" and {len(offline) - 20} more" if len(offline) > 20 else "")
            ledger.record.reason = f"{len(offline)} offline partitions: {shown}"
            return queue, Outcome.FAIL
        view = PollView.of(cluster, ongoing)
        throttles.set_rates(self._involved & view.alive)
        throttles.set_dir_rates(self._dir_brokers & view.alive)
        self._dir_view = self.calls.read_dirs(list(ledger.in_flight.values()))
        changed = self._retire_finished(cluster, ongoing)
        changed |= watch_in_flight(ledger, self.port, self._dir_view, now)
        changed |= self._settle_pending(queue, cluster, ongoing)
        queue = [t for t in queue if states[t.index] is TaskState.PENDING]
        ledger.blocked.clear()
        limit = self.options.max_bytes_per_run
        committed = ledger.record.bytes_done + sum(t.bytes_to_move for t in ledger.in_flight.values())
        over_budget = False
        lists = ListBudget(list(ledger.in_flight.values())) if throttles.enabled else None

        def eligible(task: Task) -> bool:
            nonlocal committed, over_budget
            if limit is not None and committed > 0 and committed + task.bytes_to_move > limit:
                over_budget = True
                return False
            if lists is not None and not lists.fits(task):
                return False  # its topic's throttle lists are full: it waits for a move of the topic to end
            why = move_blocker(task, view)
            offline = None if why is None else offline_target(task, view.alive)
            ledger.missing.note(task.index, offline, now, name=str(task.tp))
            if why is None:
                self._blocked_since.pop(task.index, None)
                committed += task.bytes_to_move
                if lists is not None:
                    lists.add(task)
                return True
            ledger.blocked[task.index] = why
            self._blocked_since.setdefault(task.index, now)
            return False

        # Every reassignment in flight on the cluster counts against the brokers' limits, ours or not:
        # another executor, operator or tool moving replicas loads the same brokers.
        busy = foreign_counts(ongoing, {t.tp for t in ledger.in_flight.values()})
        picked = pick_moves(queue, list(ledger.in_flight.values()), self.options.limits, eligible, busy=busy)
        changed |= self._give_up_blocked(now)
        if picked:
            self._submit(picked, now)
        elif changed:
            ledger.sync_in_flight()
            throttles.update_replicas(list(ledger.in_flight.values()))
            ledger.save()
        ledger.emit()
        if not ledger.in_flight and not any(states[t.index] is TaskState.PENDING for t in queue):
            return queue, Outcome.DONE
        if not ledger.in_flight and over_budget and not ledger.blocked:
            return queue, Outcome.BUDGET  # nothing left that fits this run
        return queue, None

    def _settle_pending(
        self, queue: list[Task], cluster: ClusterModel, ongoing: Mapping[TopicPartition, OngoingReassignment]
    ) -> bool:
        """Pending moves that need no submission: gone with their topic (dead), or already in place
        (someone else, e.g. another executor of the same plan, made the same move: done, nothing copied
        by this run)."""
        states = self.ledger.record.tasks
        changed = False
        for task in queue:
            if states[task.index] is not TaskState.PENDING:
                continue
            current = partition_replicas(cluster, task.tp)
            if current is None:
                self.ledger.give_up(task.index, VANISHED)
                changed = True
            elif current == task.target and not task.dirs and task.tp not in ongoing:
                states[task.index] = TaskState.COMPLETED
                self.ledger.bytes_total -= task.bytes_to_move
                changed = True
        return changed

    def _retire_finished(self, cluster: ClusterModel, ongoing: Mapping[TopicPartition, OngoingReassignment]) -> bool:
        ledger = self.ledger
        record = ledger.record
        changed = False
        standings = {i: task_standing(t, self._dir_view) for i, t in ledger.in_flight.items() if t.dirs}
        # Replicas not in their directory yet are asked again (see log_dirs.standing); a refusal that
        # asking again will not change (the directory was cordoned meanwhile) ends the task once its
        # replicas are on their brokers.
        refused = self.calls.send_dirs({key: path for d in standings.values() for key, path in d.resend.items()})
        for i, task in list(ledger.in_flight.items()):
            dirs = standings.get(i, DirStanding())
            running = ongoing.get(task.tp)
            if running is not None and set(running.target) != set(task.target) and task.target != task.original:
                ledger.taken_over(i, running)
                changed = True
                continue
            if running is not None:
                ledger.unconfirmed.discard(i)  # Kafka has it: ours, under way
                continue
            current = partition_replicas(cluster, task.tp)
            if current is not None and i in ledger.unconfirmed and set(current) == set(task.original):
                # Submitted without an answer, and Kafka never took it: pending again, submitted anew.
                ledger.unconfirmed.discard(i)
                ledger.forget(i)
                record.tasks[i] = TaskState.PENDING
                changed = True
                continue
            if current is None:
                ledger.give_up(i, VANISHED)
            elif set(current) == set(task.target) and task.tp in refused:
                ledger.give_up(i, f"log directory move refused: {refused[task.tp]}")
                changed = True
                continue
            elif set(current) == set(task.target) and not dirs.done:
                continue  # on its brokers; a replica still goes to (or is copied into) its directory
            elif set(current) == set(task.target):
                record.tasks[i] = TaskState.COMPLETED
                record.bytes_done += task.bytes_to_move
            elif set(task.target) < set(current):
                continue  # metadata not yet updated to the end of the move: look again next poll
            else:
                record.tasks[i] = TaskState.DEAD
                record.dead_reasons[str(task.tp)] = (
                    f"reassignment ended without reaching {list(task.target)} (cancelled outside the executor?); "
                    f"replicas are {list(current)}"
                )
            ledger.forget(i)
            changed = True
        return changed

    def _give_up_blocked(self, now: float) -> bool:
        limit = self.options.blocked_after_seconds
        if limit is None:
            return False
        record = self.ledger.record
        changed = False
        for i, since in list(self._blocked_since.items()):
            if now - since >= limit and record.tasks[i] is TaskState.PENDING:
                record.tasks[i] = TaskState.DEAD
                why = self.ledger.blocked.get(i, "blocked")
                record.dead_reasons[str(self.ledger.tasks[i].tp)] = f"not started: {why}"
                del self._blocked_since[i]
                changed = True
        return changed

    def _submit(self, picked: list[Task], now: float) -> None:
        ledger, throttles = self.ledger, self.calls.throttles
        record = ledger.record
        for task in picked:
            record.tasks[task.index] = TaskState.IN_PROGRESS
            ledger.in_flight[task.index] = task
            ledger.last_progress[task.index] = now
        ledger.sync_in_flight()
        # Throttle and record first: a copy must never start unthrottled, nor a crash hide a move.
        throttles.update_replicas(list(ledger.in_flight.values()))
        ledger.save()
        # Directories first, as kafka-reassign-partitions does: a broker told before the reassignment
        # creates the replica it receives in the directory named (REPLICA_NOT_AVAILABLE until then).
        try:
            refused = self.calls.send_dirs({(t.tp, d.broker): d.path for t in picked for d in t.dirs})
            reassigned = [t for t in picked if t.tp not in refused and t.target != t.original]
            errors: dict[TopicPartition, KafkaError | None] = dict(refused)
            if reassigned:
                errors.update(self.port.alter_reassignments({t.tp: t.target for t in reassigned}))
        except KafkaUnavailableError:
            # No answer: Kafka may or may not have taken them. They stay in flight (and recorded, and
            # throttled) until the next poll tells (see _retire_finished).
            ledger.unconfirmed.update(t.index for t in picked)
            raise
        ledger.submitted += len(picked)
        failed = False
        for task in picked:
            error = errors.get(task.tp)
            if error is None:
                continue
            if task.tp in refused:
                failed = True
                ledger.forget(task.index)
                record.tasks[task.index] = TaskState.DEAD
                record.dead_reasons[str(task.tp)] = f"log directory move refused: {error}"
                continue
            failed = True
            ledger.forget(task.index)
            if error.name in RETRIABLE:
                record.tasks[task.index] = TaskState.PENDING
            elif error.name == "UNKNOWN_TOPIC_OR_PARTITION":
                ledger.give_up(task.index, VANISHED)  # deleted since this poll read the cluster
            else:
                record.tasks[task.index] = TaskState.DEAD
                record.dead_reasons[str(task.tp)] = f"reassignment refused: {error}"
        if failed:
            ledger.sync_in_flight()
            throttles.update_replicas(list(ledger.in_flight.values()))
            ledger.save()
