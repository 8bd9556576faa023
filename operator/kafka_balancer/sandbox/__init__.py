"""The Kafka protocol emulator used by tests and by the demo (see ``sandbox.cluster``)."""

from kafka_balancer.sandbox.cluster import EmulatedCluster, EmulatorOptions
from kafka_balancer.sandbox.replication import ReplicationOptions
from kafka_balancer.sandbox.state import ClusterState, GroupSeed, MemberSeed

__all__ = ["ClusterState", "EmulatedCluster", "EmulatorOptions", "GroupSeed", "MemberSeed", "ReplicationOptions"]
