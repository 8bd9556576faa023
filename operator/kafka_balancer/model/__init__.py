"""Plain data describing a Kafka cluster: brokers, partitions, loads. No I/O."""

from kafka_balancer.model.build import ClusterBuilder
from kafka_balancer.model.cluster import (
    CPU,
    DISK,
    NETWORK_IN,
    NETWORK_OUT,
    NO_BROKER,
    RESOURCES,
    BrokerInfo,
    ClusterModel,
    PartitionInfo,
    TopicSettings,
)
from kafka_balancer.model.errors import ModelError
from kafka_balancer.model.plan import PartitionTarget, ReassignmentPlan
from kafka_balancer.model.snapshot import (
    dumps_snapshot,
    loads_snapshot,
    models_equal,
    parse_snapshot,
    snapshot_to_dict,
)

__all__ = [
    "CPU",
    "DISK",
    "NETWORK_IN",
    "NETWORK_OUT",
    "NO_BROKER",
    "RESOURCES",
    "BrokerInfo",
    "ClusterBuilder",
    "ClusterModel",
    "ModelError",
    "PartitionInfo",
    "PartitionTarget",
    "ReassignmentPlan",
    "TopicSettings",
    "dumps_snapshot",
    "loads_snapshot",
    "models_equal",
    "parse_snapshot",
    "snapshot_to_dict",
]
