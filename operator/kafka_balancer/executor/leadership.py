"""The ElectingLeaders phase: the leader-only tasks (same replicas, another order) are reordered in
batches, then the preferred leaders of the moved partitions and of the proposal's other leader changes
are elected in batches, with a bounded number of attempts.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

from kafka_balancer.executor.cluster_calls import ClusterCalls
from kafka_balancer.executor.copy_watch import next_poll_in
from kafka_balancer.executor.ledger import VANISHED, Ledger
from kafka_balancer.executor.safety import partition_replicas
from kafka_balancer.executor.state import TaskState
from kafka_balancer.executor.tasks import Task, TaskKind
from kafka_balancer.kafka.port import KafkaError, TopicPartition
from kafka_balancer.model import ClusterModel


class Leadership:
    def __init__(self, ledger: Ledger, calls: ClusterCalls, elections: Sequence[TopicPartition]) -> None:
        self.ledger = ledger
        self.calls = calls
        self.port = calls.port
        self.options = ledger.options
        # Partitions whose replica order is already the target one but whose leader is not the
        # preferred replica (a rolling restart leaves many): the plan cannot list them, the
        # proposal's leader changes do, and they are elected with the plan's partitions.
        self.elections = elections

    def run(self) -> bool:
        """Reorder replicas of leader-only tasks, then elect preferred leaders in batches.
        Returns False when a stop was requested."""
        ledger = self.ledger
        cluster = self._reorder()
        if cluster is None:
            return False
        need = self._elections_needed(cluster)
        ledger.leaders_total = len(need)
        failures: dict[TopicPartition, KafkaError] = {}
        for attempt in range(self.options.election_attempts):
            if ledger.stopping():
                return False
            if attempt:
                ledger.clock.sleep(next_poll_in(ledger))
            elect = partial(self.port.elect_preferred_leaders, need, batch_size=self.options.election_batch_size)
            errors = ledger.patience.call("electing preferred leaders", elect)
            failures = {tp: e for tp in need if (e := errors.get(tp)) is not None}
            ledger.leaders_done = ledger.leaders_total - len(failures)
            ledger.emit()
            if not failures:
                break
            need = sorted(failures)
        ledger.election_failures.update({str(tp): e.name for tp, e in failures.items()})
        return True

    def _reorder(self) -> ClusterModel | None:
        """The leader-only tasks (same replicas, another order), in batches; the cluster after them, or
        None when a stop was requested."""
        ledger = self.ledger
        states = ledger.record.tasks
        reorders = [t for t in ledger.tasks if t.kind is TaskKind.REORDER and states[t.index] is TaskState.PENDING]
        batch = self.options.election_batch_size
        for start in range(0, len(reorders), batch):
            if ledger.stopping():
                return None
            chunk = reorders[start : start + batch]
            # Same replica set in another order: Kafka completes such a reassignment at once (and sending it
            # again, when the first got no answer, changes nothing).
            targets: dict[TopicPartition, Sequence[int] | None] = {t.tp: t.target for t in chunk}
            errors = ledger.patience.call("reordering replicas", partial(self.port.alter_reassignments, targets))
            ledger.submitted += len(chunk)
            for task in chunk:
                error = errors.get(task.tp)
                if error is not None:
                    states[task.index] = TaskState.DEAD
                    ledger.record.dead_reasons[str(task.tp)] = f"reorder refused: {error}"
        self.calls.wait_reassignments_gone([t.tp for t in reorders])
        cluster = self._reordered_cluster(reorders)
        for task in reorders:
            if states[task.index] is TaskState.PENDING:
                current = partition_replicas(cluster, task.tp)
                if current is None:
                    ledger.give_up(task.index, VANISHED)
                elif current == task.target:
                    states[task.index] = TaskState.COMPLETED
                else:
                    states[task.index] = TaskState.DEAD
                    ledger.record.dead_reasons[str(task.tp)] = f"reorder did not apply; replicas are {list(current)}"
        ledger.save()
        return cluster

    def _reordered_cluster(self, reorders: list[Task]) -> ClusterModel:
        """The cluster once its metadata shows the pending reorders. A broker answers from its own copy
        of the metadata, which may lag the controller after the reassignment is gone (seen on real Kafka
        at load average 16: the old order read back): a partition with the target's replicas in another
        order is read again, until stuck_after_seconds."""
        clock = self.ledger.clock
        deadline = clock.now() + self.options.stuck_after_seconds
        while True:
            cluster = self.calls.read_cluster()
            lagging = [
                t
                for t in reorders
                if self.ledger.record.tasks[t.index] is TaskState.PENDING
                and (current := partition_replicas(cluster, t.tp)) is not None
                and current != t.target
                and set(current) == set(t.target)
            ]
            if not lagging or clock.now() >= deadline:
                return cluster
            clock.sleep(self.options.poll_interval_seconds)

    def _elections_needed(self, cluster: ClusterModel) -> list[TopicPartition]:
        """The plan's moved partitions not led by their preferred replica, and the proposal's other leader changes."""
        ledger = self.ledger
        states = ledger.record.tasks
        need = [
            t.tp
            for t in ledger.tasks
            if states[t.index] is TaskState.COMPLETED
            and partition_replicas(cluster, t.tp) is not None
            and cluster.leader_id(cluster.partition_index(t.tp.topic, t.tp.partition)) != t.target[0]
        ]
        planned = {t.tp for t in ledger.tasks}
        for tp in dict.fromkeys(self.elections):
            if tp in planned:
                continue
            try:
                p = cluster.partition_index(tp.topic, tp.partition)
            except KeyError:
                ledger.election_failures[str(tp)] = "UNKNOWN_TOPIC_OR_PARTITION"
                continue
            replicas = cluster.replica_ids(p)
            if replicas and cluster.leader_id(p) != replicas[0]:
                need.append(tp)
        return need
