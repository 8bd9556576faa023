"""Driver for Yelp kafka-utils' balancers, run offline (no ZooKeeper) inside its own venv.

    bench/peers/.venvs/kafka-utils/bin/python bench/peers/run_kafka_utils.py BALANCER IN.json OUT.json

BALANCER is ``count`` (PartitionCountBalancer) or ``genetic`` (GeneticBalancer). IN.json (written by
bench/peers/compare.py) has ``brokers`` {id: rack}, ``partitions`` [[topic, partition, [replicas], size]].
The ClusterTopology is built directly with a measurer that gives each partition its size as both
weight and size, and racks as replication groups; OUT.json gets the new assignment and the seconds.
"""

import argparse
import json
import sys
import time

from kafka_utils.kafka_cluster_manager.cluster_info.cluster_topology import ClusterTopology
from kafka_utils.kafka_cluster_manager.cluster_info.genetic_balancer import GeneticBalancer
from kafka_utils.kafka_cluster_manager.cluster_info.partition_count_balancer import PartitionCountBalancer
from kafka_utils.kafka_cluster_manager.cluster_info.partition_measurer import PartitionMeasurer


class SizeMeasurer(PartitionMeasurer):
    def __init__(self, sizes):
        self.sizes = sizes

    def get_weight(self, partition_name):
        return self.sizes[partition_name]

    def get_size(self, partition_name):
        return self.sizes[partition_name]


def main():
    balancer_name, source, target = sys.argv[1:4]
    with open(source) as f:
        data = json.load(f)
    assignment = {(t, p): list(r) for t, p, r, _ in data["partitions"]}
    sizes = {(t, p): float(s) for t, p, _, s in data["partitions"]}
    brokers = {int(b): {"rack": rack} for b, rack in data["brokers"].items()}
    topology = ClusterTopology(
        assignment, brokers, SizeMeasurer(sizes), lambda broker: (broker.metadata or {}).get("rack")
    )
    args = argparse.Namespace(
        replication_groups=True,
        brokers=True,
        leaders=True,
        max_partition_movements=10**9,
        max_leader_changes=10**9,
        max_movement_size=None,
        auto_max_movement_size=False,
        score_improvement_threshold=None,
    )
    balancer = {"count": PartitionCountBalancer, "genetic": GeneticBalancer}[balancer_name](topology, args)
    started, cpu = time.perf_counter(), time.process_time()
    balancer.rebalance()
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    out = [[t, p, list(r)] for (t, p), r in topology.assignment.items()]
    with open(target, "w") as f:
        json.dump({"seconds": seconds, "cpuSeconds": cpu, "partitions": out}, f)


if __name__ == "__main__":
    main()
