"""The run's calls to the cluster that its phases share: reads and waits that wait out a cluster that
cannot answer (executor.patience), the log-directory reads and requests, and the throttles the run sets.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from kafka_balancer.executor.ledger import Ledger
from kafka_balancer.executor.log_dirs import View
from kafka_balancer.executor.recovery import order_restores
from kafka_balancer.executor.tasks import Task
from kafka_balancer.executor.throttle import ThrottleManager
from kafka_balancer.kafka.port import KafkaError, KafkaPort, OngoingReassignment, TopicPartition
from kafka_balancer.model import ClusterModel

# Errors after which a submission is simply tried again on a later poll.
RETRIABLE = frozenset(
    {"NOT_CONTROLLER", "REQUEST_TIMED_OUT", "BROKER_NOT_AVAILABLE", "LEADER_NOT_AVAILABLE", "UNKNOWN_SERVER_ERROR"}
)

# AlterReplicaLogDirs errors after which the replica is simply asked again on a later poll: the broker
# does not host it yet (the reassignment adding it is under way), or it is busy.
RETRIABLE_DIR = RETRIABLE | {"REPLICA_NOT_AVAILABLE", "NOT_LEADER_OR_FOLLOWER", "UNKNOWN_TOPIC_OR_PARTITION"}

log = logging.getLogger(__name__)


class ClusterCalls:
    """The port, with the run's patience, clock and options, and the throttles it sets."""

    def __init__(self, port: KafkaPort, ledger: Ledger) -> None:
        self.port = port
        self.options = ledger.options
        self.clock = ledger.clock
        self.patience = ledger.patience
        rate = self.options.throttle_bytes_per_sec
        self.throttles = ThrottleManager(port, rate, ledger.record.throttles, ledger.save)

    def read_start(self, resuming: bool) -> tuple[dict[TopicPartition, OngoingReassignment], ClusterModel]:
        """What is in flight, then the cluster with sizes. Reassignments before metadata: a move that ends
        between the two reads then shows as done in the metadata, never as a partition with extra
        replicas and no reassignment. A resumed run waits for a cluster that cannot answer yet; a new
        one fails at once (nothing is started: the command is simply run again)."""

        def read() -> tuple[dict[TopicPartition, OngoingReassignment], ClusterModel]:
            return self.port.list_reassignments(), self.port.read_cluster(with_sizes=True)

        return self.patience.call("reading the cluster", read) if resuming else read()

    def list_reassignments(self) -> dict[TopicPartition, OngoingReassignment]:
        return self.patience.call("listing reassignments", self.port.list_reassignments)

    def read_cluster(self) -> ClusterModel:
        return self.patience.call("reading the cluster", lambda: self.port.read_cluster(with_sizes=False))

    def wait_reassignments_gone(self, tps: list[TopicPartition]) -> None:
        waiting = set(tps)
        deadline = self.clock.now() + self.options.stuck_after_seconds
        while waiting and self.clock.now() < deadline:
            waiting &= set(self.list_reassignments())
            if waiting:
                self.clock.sleep(self.options.poll_interval_seconds)

    def restore_order(self, cluster: ClusterModel, cancelled: list[Task]) -> None:
        reorder = order_restores(cluster, {t.tp: t.original for t in cancelled})
        if reorder:
            answers = self.patience.call("restoring replica order", lambda: self.port.alter_reassignments(reorder))
            self.wait_reassignments_gone([tp for tp, err in answers.items() if err is None])

    def read_dirs(self, tasks: list[Task]) -> View:
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

    def send_dirs(self, moves: Mapping[tuple[TopicPartition, int], str]) -> dict[TopicPartition, KafkaError]:
        """AlterReplicaLogDirs; the refusals that will not pass by asking again, by partition.
        REPLICA_NOT_AVAILABLE (the replica has not arrived) and transient errors are asked again next poll."""
        if not moves:
            return {}
        refused: dict[TopicPartition, KafkaError] = {}
        for (tp, _), error in self.port.alter_replica_log_dirs(moves).items():
            if error is not None and error.name not in RETRIABLE_DIR:
                refused.setdefault(tp, error)
        return refused
