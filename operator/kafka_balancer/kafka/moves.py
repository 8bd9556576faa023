"""Moving partitions between brokers: reassignments (which brokers hold a partition) through kafka-python,
which librdkafka lacks, and preferred-leader elections (which of them leads) through librdkafka.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from confluent_kafka import ElectionType
from confluent_kafka import TopicPartition as CkTopicPartition
from kafka import TopicPartition as KpTopicPartition

from kafka_balancer.kafka.clients import Clients, from_confluent
from kafka_balancer.kafka.errors import error_name
from kafka_balancer.kafka.port import DEFAULT_ELECTION_BATCH, KafkaError, OngoingReassignment, TopicPartition


class Moves:
    """Lists, starts and cancels reassignments; elects preferred leaders."""

    def __init__(self, clients: Clients):
        self._clients = clients

    def list_reassignments(self) -> dict[TopicPartition, OngoingReassignment]:
        raw = self._clients.kp_call(lambda kp: kp.list_partition_reassignments())
        return {
            TopicPartition(tp.topic, tp.partition): OngoingReassignment(
                replicas=tuple(r["replicas"]),
                adding=tuple(r["adding_replicas"]),
                removing=tuple(r["removing_replicas"]),
            )
            for tp, r in raw.items()
        }

    def alter_reassignments(
        self, targets: Mapping[TopicPartition, Sequence[int] | None]
    ) -> dict[TopicPartition, KafkaError | None]:
        out: dict[TopicPartition, KafkaError | None] = {}
        request = {}
        for tp, r in targets.items():
            if r is not None and not r:
                # kafka-python refuses an empty list before sending; Kafka would answer this.
                out[tp] = KafkaError("INVALID_REPLICA_ASSIGNMENT", "empty replica list", tp)
            else:
                request[KpTopicPartition(tp.topic, tp.partition)] = None if r is None else [int(b) for b in r]
        if not request:
            return out
        raw = self._clients.kp_call(lambda kp: kp.alter_partition_reassignments(request))
        for kp_tp, err in raw.items():
            tp = TopicPartition(kp_tp.topic, kp_tp.partition)
            out[tp] = None if err is None else KafkaError(error_name(err.errno), err.description, tp)
        for tp in targets:
            out.setdefault(tp, KafkaError("UNKNOWN_SERVER_ERROR", "no result for this partition", tp))
        return out

    def elect_preferred_leaders(
        self, partitions: Sequence[TopicPartition], *, batch_size: int = DEFAULT_ELECTION_BATCH
    ) -> dict[TopicPartition, KafkaError | None]:
        if batch_size < 1:
            raise ValueError(f"election: field 'electionBatchSize' must be >= 1, got {batch_size!r}")
        out: dict[TopicPartition, KafkaError | None] = {}
        for start in range(0, len(partitions), batch_size):
            batch = [CkTopicPartition(tp.topic, tp.partition) for tp in partitions[start : start + batch_size]]
            # No keyword timeouts: confluent-kafka 2.16.1 raises SystemError with request_timeout=.
            result = self._clients.result(self._clients.admin.elect_leaders(ElectionType.PREFERRED, batch))
            for ck, err in result.items():
                tp = TopicPartition(ck.topic, ck.partition)
                if err is None or error_name(err.code()) == "ELECTION_NOT_NEEDED":
                    out[tp] = None
                else:
                    out[tp] = from_confluent(err, tp)
        return out
