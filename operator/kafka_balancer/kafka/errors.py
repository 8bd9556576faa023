"""Kafka error codes by their protocol names (as Kafka's ``Errors`` enum spells them).

Both clients name some errors differently (kafka-python says INVALID_REPLICATION_ASSIGNMENT where
Kafka says INVALID_REPLICA_ASSIGNMENT), so the adapter maps every error through the numeric code
to Kafka's own name; the emulator answers with the same table.
"""

from __future__ import annotations

from typing import Final

ERROR_CODES: Final[dict[str, int]] = {
    "UNKNOWN_SERVER_ERROR": -1,
    "NONE": 0,
    "OFFSET_OUT_OF_RANGE": 1,
    "UNKNOWN_TOPIC_OR_PARTITION": 3,
    "LEADER_NOT_AVAILABLE": 5,
    "NOT_LEADER_OR_FOLLOWER": 6,
    "REQUEST_TIMED_OUT": 7,
    "BROKER_NOT_AVAILABLE": 8,
    "REPLICA_NOT_AVAILABLE": 9,
    "NETWORK_EXCEPTION": 13,
    "COORDINATOR_LOAD_IN_PROGRESS": 14,
    "COORDINATOR_NOT_AVAILABLE": 15,
    "NOT_COORDINATOR": 16,
    "INVALID_TOPIC_EXCEPTION": 17,
    "KAFKA_STORAGE_ERROR": 56,
    "LOG_DIR_NOT_FOUND": 57,
    "NOT_ENOUGH_REPLICAS": 19,
    "GROUP_ID_NOT_FOUND": 69,
    "CLUSTER_AUTHORIZATION_FAILED": 31,
    "UNSUPPORTED_SASL_MECHANISM": 33,
    "ILLEGAL_SASL_STATE": 34,
    "UNSUPPORTED_VERSION": 35,
    "TOPIC_ALREADY_EXISTS": 36,
    "INVALID_PARTITIONS": 37,
    "INVALID_REPLICATION_FACTOR": 38,
    "INVALID_REPLICA_ASSIGNMENT": 39,
    "INVALID_CONFIG": 40,
    "NOT_CONTROLLER": 41,
    "INVALID_REQUEST": 42,
    "SASL_AUTHENTICATION_FAILED": 58,
    "REASSIGNMENT_IN_PROGRESS": 60,
    "FENCED_LEADER_EPOCH": 74,
    "UNKNOWN_LEADER_EPOCH": 75,
    "OFFSET_NOT_AVAILABLE": 78,
    "PREFERRED_LEADER_NOT_AVAILABLE": 80,
    "ELIGIBLE_LEADERS_NOT_AVAILABLE": 83,
    "ELECTION_NOT_NEEDED": 84,
    "NO_REASSIGNMENT_IN_PROGRESS": 85,
    "GROUP_SUBSCRIBED_TO_TOPIC": 86,
    "INVALID_RECORD": 87,
    "UNSTABLE_OFFSET_COMMIT": 88,
}

# Per-partition errors that last only while leadership moves (an election, a broker restarting, a
# reassignment finishing): the same read a moment later succeeds. Real brokers answer ListOffsets
# with OFFSET_NOT_AVAILABLE right after a partition's leader changed, until the new leader's high
# watermark has caught up.
TRANSIENT_PARTITION_ERRORS: Final = frozenset(
    {
        "LEADER_NOT_AVAILABLE",
        "NOT_LEADER_OR_FOLLOWER",
        "REPLICA_NOT_AVAILABLE",
        "FENCED_LEADER_EPOCH",
        "UNKNOWN_LEADER_EPOCH",
        "OFFSET_NOT_AVAILABLE",
    }
)

# Errors Kafka answers when the broker asked, or the controller it forwards to, cannot serve the
# request now (a controller down or moving, a broker hung): the same request later succeeds. The
# adapter raises them as KafkaUnavailableError, which callers wait out as they wait out a cluster that
# does not answer at all. REQUEST_TIMED_OUT is what a KRaft broker answers when the controller it
# forwards an admin request to (ListPartitionReassignments, AlterPartitionReassignments,
# IncrementalAlterConfigs, ElectLeaders) does not answer in time.
UNAVAILABLE_ERRORS: Final = frozenset(
    {
        "REQUEST_TIMED_OUT",
        "BROKER_NOT_AVAILABLE",
        "NETWORK_EXCEPTION",
        "COORDINATOR_LOAD_IN_PROGRESS",
        "COORDINATOR_NOT_AVAILABLE",
        "NOT_CONTROLLER",
    }
)

ERROR_NAMES: Final[dict[int, str]] = {code: name for name, code in ERROR_CODES.items()}


def error_name(code: int) -> str:
    """Kafka's name for an error code; unknown codes keep their number visible."""
    return ERROR_NAMES.get(code, f"KAFKA_ERROR_{code}")


def error_code(name: str) -> int:
    return ERROR_CODES[name]
