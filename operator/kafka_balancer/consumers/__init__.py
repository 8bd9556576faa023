"""Consumer-group assignment simulation: Kafka's built-in assignors, balance figures and churn. Pure."""

from kafka_balancer.consumers.eager import range_assign, roundrobin_assign
from kafka_balancer.consumers.group import (
    ASSIGNOR_NAMES,
    Assignment,
    GroupSpec,
    Member,
    TopicPartition,
    parse_group,
)
from kafka_balancer.consumers.simulate import assign, balance, moved, ratio, simulate
from kafka_balancer.consumers.sticky import AssignorError, cooperative_sticky_assign, sticky_assign

__all__ = [
    "ASSIGNOR_NAMES",
    "Assignment",
    "AssignorError",
    "GroupSpec",
    "Member",
    "TopicPartition",
    "assign",
    "balance",
    "cooperative_sticky_assign",
    "moved",
    "parse_group",
    "range_assign",
    "ratio",
    "roundrobin_assign",
    "simulate",
    "sticky_assign",
]
